#!/bin/sh
# How long a tokenbank application takes to exit after SIGTERM, measured
# many times on a 3-node cluster of real daemons (not part of the suite:
# run it by hand, e.g. BIN=build ITER=60 sh tests/soak/close_exit.sh).
#
# Three tokenbanks send to each other at RATE messages a second (default
# 300).  Each iteration stops one of them (in turn) in one of these ways
# and starts it again:
#
#   plain  SIGTERM;
#   flood  the application is stopped (SIGSTOP) for a while so that its
#          daemon holds a backlog for it, then SIGTERM and SIGCONT: it
#          closes while the daemon is sending it a lot;
#   snap   a snapshot is requested at its node and SIGTERM follows at
#          once (within 0-40 ms);
#   dstop  its daemon is stopped (SIGSTOP), the application gets SIGTERM,
#          and the daemon continues once the application is gone.
#
# The exit time is the time from the signal (from SIGCONT for flood) until
# the process is gone or a zombie (an exited process its parent has not
# waited for yet is not running).  One that is still running after
# HANG_S seconds (default 5) has every thread's backtrace written to
# $OUT/hang-N.bt (gdb), and is then killed.  The distribution is printed
# at the end; the script exits 1 if any iteration hung.
# VARIANTS (default "plain flood snap dstop") picks the variants.
BIN=${BIN:-$(dirname "$0")/../../build}
BIN=$(cd "$BIN" && pwd)
. "$(dirname "$0")/../integration/lib.sh"
ITER=${ITER:-60}
RATE=${RATE:-300}
HANG_S=${HANG_S:-5}
VARIANTS=${VARIANTS:-plain flood snap dstop}
OUT=${OUT:-/tmp/close_exit.$$}
mkdir -p "$OUT"
DEADLINE_MS=3000
cluster 3
start_daemons
for i in 0 1 2; do start_app "$i" 1000 --rate "$RATE"; done
sleep 1

now_ms() { date +%s%3N; }
# running PID: neither gone nor a zombie.
running() {
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}
# measure PID T0: prints the ms from T0 until PID stopped running, or
# "hang" (after taking the backtraces) if it still runs after HANG_S.
measure() {
	lim=$(($2 + HANG_S * 1000))
	while running "$1"; do
		if [ "$(now_ms)" -gt "$lim" ]; then
			echo hang
			return
		fi
		sleep 0.01
	done
	echo $(($(now_ms) - $2))
}

hangs=0
it=0
: >"$OUT/times"
while [ "$it" -lt "$ITER" ]; do
	for v in $VARIANTS; do
		[ "$it" -lt "$ITER" ] || break
		i=$((it % 3))
		eval "p=\$APP_$i"
		eval "d=\$DAEMON_$i"
		case $v in
		plain)
			t0=$(now_ms)
			kill -TERM "$p"
			;;
		flood)
			kill -STOP "$p"
			sleep 2
			kill -TERM "$p"
			t0=$(now_ms)
			kill -CONT "$p"
			;;
		snap)
			ctl "$i" snapshot >/dev/null 2>&1 &
			snap_pid=$!
			sleep "0.0$((it % 5))"
			t0=$(now_ms)
			kill -TERM "$p"
			;;
		dstop)
			kill -STOP "$d"
			sleep 0.3
			t0=$(now_ms)
			kill -TERM "$p"
			;;
		esac
		ms=$(measure "$p" "$t0")
		if [ "$ms" = hang ]; then
			hangs=$((hangs + 1))
			gdb -p "$p" -batch -ex 'thread apply all bt' \
				>"$OUT/hang-$it.bt" 2>&1
			cp "$T/tokenbank-p$i.out" "$OUT/hang-$it.out" 2>/dev/null
			cat "/proc/$p/status" >"$OUT/hang-$it.status" 2>/dev/null
			echo "iteration $it ($v, p$i, pid $p): still running after" \
				"${HANG_S}s; backtraces in $OUT/hang-$it.bt"
			kill -9 "$p"
		fi
		[ "$v" = dstop ] && kill -CONT "$d"
		wait "$p" 2>/dev/null
		rc=$?
		last=$(tail -n 1 "$T/tokenbank-p$i.out" 2>/dev/null)
		echo "$it $v p$i $ms rc=$rc ${last:-no-final-line}" | tee -a "$OUT/times"
		[ "$v" = snap ] && wait "$snap_pid" 2>/dev/null
		# The daemon must have let the old application go before the
		# new one can connect.
		start_app "$i" 1000 --rate "$RATE"
		sleep 0.7
		it=$((it + 1))
	done
done

echo "--- exit times (ms) by variant, $ITER iterations at rate $RATE:"
for v in $VARIANTS; do
	awk -v v="$v" '$2 == v && $4 != "hang" { print $4 }' "$OUT/times" |
		sort -n | awk -v v="$v" '
		{ a[NR] = $1 }
		END { if (NR) printf "%-6s n=%d min=%d median=%d p90=%d max=%d\n",
			v, NR, a[1], a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.5) ? int(NR * 0.9 + 0.5) : 1], a[NR] }'
done
echo "hangs: $hangs (logs in $OUT)"
[ "$hangs" = 0 ]
