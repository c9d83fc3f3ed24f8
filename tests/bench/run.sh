#!/bin/bash
# tests/bench/run.sh - the benchmark of cutd against a plain nng baseline.
# A separate command, not part of the test suite (ctest never runs it).
#
# usage: tests/bench/run.sh [--quick] [--reps N] [--only SECTION[,SECTION...]]
#                           [--raw FILE] [--rss-cap MB] [--keep] [--help]
#
#   --quick      a ~2-minute version: 2 repetitions (unless --reps), 1 s
#                runs, 5 snapshots a series, the receiver paused 10 s
#   --reps N     repetitions of every workload (default 5)
#   --only LIST  run only these sections (comma-separated):
#                  throughput    msg/s with one sender, 64 B and 1 KiB:
#                                cutd vs a 3-hop nng relay chain vs one nng
#                                hop; also the CPU figures of those runs
#                  alltoall      3 nodes each sending to both others,
#                                aggregate msg/s: cutd vs an nng mesh of
#                                relays of the same shape; also CPU
#                  latency       one-way latency p50/p99 at 1000 msg/s, 64 B:
#                                cutd vs chain vs one hop
#                  snapshot      snapshot latency p50/p99 (start to
#                                complete), 3 and 16 nodes, idle and with
#                                one sender at full rate
#                  snapinterval  1 KiB throughput with a snapshot every
#                                100 ms vs none
#                  memory        daemon (relay) RSS: idle, under load, and
#                                with a receiver that stops reading for 60 s
#                                while 10 KB messages come at full rate, then
#                                reads everything (checked: nothing lost,
#                                duplicated or reordered)
#                (default: all of them)
#   --raw FILE   where the raw per-repetition numbers go (default:
#                $BUILD/bench-results/bench-DATE.tsv); the path is printed
#   --rss-cap MB in the paused-receiver run, stop the sender early (and say
#                so) once any daemon or relay exceeds MB of RSS (default
#                4096), so that an unbounded queue cannot exhaust the machine
#   --keep       keep the temporary directory (logs, cluster files)
#
# Environment: BUILD=DIR uses that build directory (configured here, like
# the default, if it is not yet; one of your own must have CUT_TESTS on,
# the default), otherwise build-bench/ at the top of the source tree,
# configured with -DCMAKE_BUILD_TYPE=Release.  Only the targets the
# benchmark needs are built: cutd, cutctl, cutbench and nngrelay
# (tests/bench/).  deploy/deps.sh installs missing Debian packages first.
#
# What runs: every workload runs through cutd (apps using libcut's public
# API, tests/bench/cutbench.c, against real daemons on loopback: app to
# daemon over IPC, daemon to daemon over TCP) and through the baseline
# (tests/bench/nngrelay.c: plain nng push/pull, the same payloads, relays
# doing nng_recvmsg/nng_sendmsg one message at a time, IPC for the app
# hops and TCP for the middle one), interleaved: cutd, baseline, cutd,
# baseline, ...  Every run gets fresh processes, a fresh directory and
# fresh ports.  Throughput is messages received over the time from the
# first message's send to the last one's receipt, and every run checks that
# each stream arrived complete, in order and once (payload numbers, and
# cut_msg_seq() on the cutd side).  The baseline has no protocol, no
# acknowledgements, no persistence and no batching: each relay moves one
# nng message at a time.  Snapshot latency is timed by the client, from
# cut_snapshot_start() to cut_snapshot_wait()'s return, and also as the
# daemon timed it (cut_snapshot_finished_ms - started_ms); each series'
# percentiles, then the median over the repetitions (with 20 snapshots a
# series, p99 is the slowest one).  CPU is utime+stime from /proc/PID/stat
# over the run, RSS is VmHWM from /proc/PID/status at its end.
#
# Output: a markdown table of medians over the repetitions and the ratio
# cutd/baseline on stdout; progress and failures on stderr.  A run that
# fails (a deadline passed, a message lost, a process died) is reported on
# stderr with the tail of its logs, shows as FAIL in the raw file and the
# table, and makes the exit status 1; the other runs go on.
#
# Timing: the default (5 repetitions) takes about 25 minutes, half of it
# in the memory section's paused receiver (60 s per run); --quick about 2.
# Loopback only: TCP ports 20000-32000 on 127.0.0.1, picked free per
# cluster, and IPC sockets in a temporary directory, removed at the end
# with every process (also on failure or interruption).
set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)
REPS=5
QUICK=0
ONLY=""
RAW=""
CAP_MB=4096
KEEP=0
ALL_SECTIONS="throughput alltoall latency snapshot snapinterval memory"

usage() {
	sed -n '2,/^set -u$/p' "$0" | sed -e '/^set -u$/d' -e 's/^# \{0,1\}//'
	exit "${1:-0}"
}

reps_given=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--reps)
		[ $# -ge 2 ] || usage 64
		REPS=$2
		reps_given=1
		shift
		;;
	--only)
		[ $# -ge 2 ] || usage 64
		ONLY=$2
		shift
		;;
	--raw)
		[ $# -ge 2 ] || usage 64
		RAW=$2
		shift
		;;
	--rss-cap)
		[ $# -ge 2 ] || usage 64
		CAP_MB=$2
		shift
		;;
	--keep) KEEP=1 ;;
	-h | --help) usage 0 ;;
	*)
		echo "run.sh: unknown option $1" >&2
		usage 64
		;;
	esac
	shift
done
case "$REPS" in '' | *[!0-9]* | 0)
	echo "run.sh: --reps wants a positive number" >&2
	exit 64
	;;
esac
case "$CAP_MB" in '' | *[!0-9]* | 0)
	echo "run.sh: --rss-cap wants a positive number of MB" >&2
	exit 64
	;;
esac
SECTIONS=${ONLY//,/ }
[ -n "$SECTIONS" ] || SECTIONS=$ALL_SECTIONS
for s in $SECTIONS; do
	case " $ALL_SECTIONS " in *" $s "*) ;; *)
		echo "run.sh: unknown section $s (sections: $ALL_SECTIONS)" >&2
		exit 64
		;;
	esac
done
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

# Workload sizes.
if [ $QUICK = 1 ]; then
	[ $reps_given = 1 ] || REPS=2
	DUR_MS=1000     # throughput, all-to-all, snapshot interval runs
	LAT_MS=1000     # latency runs at 1000 msg/s
	SNAPS=5         # snapshots per series
	IDLE_MS=1000    # idle RSS
	PAUSE_MS=10000  # paused receiver
else
	DUR_MS=5000
	LAT_MS=5000
	SNAPS=20
	IDLE_MS=3000
	PAUSE_MS=60000
fi
LAT_RATE=1000
SLOW_SIZE=10000
DRAIN_S=60       # how long a run may take beyond its sending time
CTL=10           # seconds for daemons, relays and apps to come up

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() {
	echo "run.sh: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- build
BUILD=${BUILD:-$SRC/build-bench}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	"$SRC/deploy/deps.sh" || die "deploy/deps.sh failed"
	log "configuring $BUILD (Release)"
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCUT_TESTS=ON \
		>"$BUILD.configure.log" 2>&1 ||
		die "cmake configure failed; see $BUILD.configure.log"
	mv "$BUILD.configure.log" "$BUILD/" 2>/dev/null
fi
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[ "$btype" = Release ] || log "note: $BUILD is a '$btype' build, not Release"
log "building cutd cutctl cutbench nngrelay in $BUILD"
cmake --build "$BUILD" -j "$(nproc)" --target cutd cutctl cutbench nngrelay \
	>"$BUILD/bench-build.log" 2>&1 ||
	die "build failed; see $BUILD/bench-build.log:
$(grep -m5 -E 'error|Error' "$BUILD/bench-build.log")"
CUTD=$BUILD/bin/cutd
CUTCTL=$BUILD/bin/cutctl
CUTBENCH=$BUILD/tests/bench/cutbench
NNGRELAY=$BUILD/tests/bench/nngrelay
for b in "$CUTD" "$CUTCTL" "$CUTBENCH" "$NNGRELAY"; do
	[ -x "$b" ] || die "$b was not built"
done

if [ -z "$RAW" ]; then
	mkdir -p "$BUILD/bench-results"
	RAW=$BUILD/bench-results/bench-$(date +%Y%m%d-%H%M%S).tsv
fi
COMMIT=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	COMMIT="$COMMIT+uncommitted"
fi
{
	printf '# cutd benchmark %s, source %s at %s, build %s (%s)\n' \
		"$(date '+%F %T')" "$SRC" "$COMMIT" "$BUILD" "$btype"
	printf '# reps %s quick %s sections %s\n' "$REPS" "$QUICK" "$SECTIONS"
	printf '# key\tvariant\trep\tvalue\n'
} >"$RAW" || die "cannot write $RAW"

# ---------------------------------------------------------- processes
T=$(mktemp -d "${TMPDIR:-/tmp}/cutbench.XXXXXX") || die "mktemp failed"
declare -A PROC=()
RC=0
RUN=0
D=""

# spawn NAME COMMAND...: starts COMMAND in the background, stdout in
# $D/NAME.out and stderr in $D/NAME.err.
spawn() {
	local name=$1
	shift
	"$@" >"$D/$name.out" 2>"$D/$name.err" &
	PROC[$name]=$!
}

# alive PID: running (not gone, not a zombie).
alive() {
	local l
	read -r l 2>/dev/null <"/proc/$1/stat" || return 1
	l=${l##*) }
	[ "${l%% *}" != Z ]
}

# stop_procs: ends every process spawned for this run: the applications
# first, then the daemons and relays (d*, r*, n*), so that no application
# sees its daemon vanish first; SIGTERM, then after 5 s SIGKILL; reaps them.
stop_procs() {
	local name apps=() srvs=()
	for name in "${!PROC[@]}"; do
		case "$name" in
		d[0-9]* | r[0-9]* | n[0-9]*) srvs+=("${PROC[$name]}") ;;
		*) apps+=("${PROC[$name]}") ;;
		esac
	done
	stop_pids "${apps[@]}"
	stop_pids "${srvs[@]}"
	PROC=()
}
stop_pids() {
	local p i any
	for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
	for ((i = 0; i < 100; i++)); do
		any=0
		for p in "$@"; do alive "$p" && any=1; done
		[ $any = 0 ] && break
		sleep 0.05
	done
	for p in "$@"; do kill -KILL "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null; done
}

cleanup() {
	stop_procs
	if [ $KEEP = 1 ]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM

# newrun DESCRIPTION: a fresh directory for one run.
newrun() {
	RUN=$((RUN + 1))
	D=$T/run$RUN
	mkdir -p "$D"
	echo "$*" >"$D/what"
	RUN_WHAT=$*
}

# fail_run MESSAGE: reports a failed run with the tail of its logs.
fail_run() {
	local f
	RC=1
	{
		echo "FAIL: $RUN_WHAT (rep $REP): $*"
		for f in "$D"/*.err "$D"/*.out; do
			[ -s "$f" ] || continue
			echo "  --- ${f##*/}"
			tail -n 5 "$f" | sed 's/^/  /'
		done
	} >&2
	stop_procs
	return 1
}

# wait_files SECONDS FILE...: until every FILE exists.
wait_files() {
	local end=$((SECONDS + $1)) f
	shift
	for f in "$@"; do
		while [ ! -e "$f" ]; do
			[ $SECONDS -ge $end ] && return 1
			sleep 0.02
		done
	done
}

# Ports: a fresh block per cluster, below the ephemeral range, skipping
# ports something listens on.
PORT_NEXT=$((20000 + ($$ % 400) * 25))
take_ports() {
	local n=$1 tries=0 b p ok listening
	while :; do
		[ $((PORT_NEXT + n)) -gt 32000 ] && PORT_NEXT=20000
		b=$PORT_NEXT
		PORT_NEXT=$((PORT_NEXT + n))
		listening=" $(ss -Htln 2>/dev/null | awk '{n = split($4, a, ":"); printf "%s ", a[n]}') "
		ok=1
		for ((p = b; p < b + n; p++)); do
			case "$listening" in *" $p "*) ok=0 ;; esac
		done
		if [ $ok = 1 ]; then
			PORT0=$b
			return 0
		fi
		tries=$((tries + 1))
		[ $tries -lt 200 ] || die "no free block of $n ports"
	done
}

# field FILE KEY: the value of KEY=VALUE in a program's output line.
field() {
	awk -v k="$2" '{for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) {print substr($i, length(k) + 2); exit}}' "$1" 2>/dev/null
}
errtext() { sed -n 's/.* error="\(.*\)"$/\1/p' "$1" 2>/dev/null | head -n 1; }

# cpu_ticks NAME: utime + stime of a spawned process, in clock ticks.
cpu_ticks() {
	local l
	read -r l 2>/dev/null <"/proc/${PROC[$1]}/stat" || {
		echo 0
		return
	}
	l=${l##*) }
	set -- $l
	echo $((${12} + ${13}))
}
TCK=$(getconf CLK_TCK)
declare -A CPU0=() CPU=() HWM=() MAXRSS=()
cpu_mark() {
	local n
	for n in "$@"; do CPU0[$n]=$(cpu_ticks "$n"); done
}
# cpu_done NAME...: CPU[NAME] = seconds since cpu_mark.
cpu_done() {
	local n t
	for n in "$@"; do
		t=$(cpu_ticks "$n")
		CPU[$n]=$(awk -v a="${CPU0[$n]}" -v b="$t" -v h="$TCK" 'BEGIN {printf "%.3f", (b - a) / h}')
	done
}
# vm NAME KEY: sets VM to VmRSS or VmHWM of a spawned process in kB (0 if
# gone), without a fork.
vm() {
	local k v rest
	VM=0
	[ -n "${PROC[$1]:-}" ] || return 0
	while read -r k v rest; do
		if [ "$k" = "$2:" ]; then
			VM=$v
			return 0
		fi
	done 2>/dev/null <"/proc/${PROC[$1]}/status"
	return 0
}
hwm_done() {
	local n
	for n in "$@"; do
		vm "$n" VmHWM
		HWM[$n]=$VM
	done
}

# watch NAME FILE SECONDS [CAP_SENDER]: waits until FILE exists (process
# NAME is done), up to SECONDS; meanwhile samples the RSS of the processes
# in SERVERS (into MAXRSS) and, with CAP_SENDER, sends that process SIGUSR1
# (stop sending) once one of them exceeds CAP_MB.  Returns 0; 1 if NAME
# ended first; 124 when the time ran out.
CAPPED_AT=""
watch() {
	local pid=${PROC[$1]} file=$2 end=$((SECONDS + $3)) capsnd=${4:-}
	local t0=$SECONDS n r
	CAPPED_AT=""
	for n in "${SERVERS[@]}"; do MAXRSS[$n]=0; done
	while [ ! -e "$file" ]; do
		alive "$pid" || return 1
		[ $SECONDS -ge $end ] && return 124
		for n in "${SERVERS[@]}"; do
			vm "$n" VmRSS
			r=$VM
			[ "$r" -gt "${MAXRSS[$n]}" ] && MAXRSS[$n]=$r
			if [ -n "$capsnd" ] && [ -z "$CAPPED_AT" ] &&
				[ "$r" -gt $((CAP_MB * 1024)) ]; then
				CAPPED_AT=$((SECONDS - t0))
				log "  $n exceeded $CAP_MB MB after ${CAPPED_AT} s: stopping the sender"
				kill -USR1 "${PROC[$capsnd]}" 2>/dev/null
			fi
		done
		sleep 0.1
	done
	return 0
}

# wait_done NAME SECONDS: waits for a process to end and reaps it; its
# exit status, or 124 (then it is still running).
wait_done() {
	local pid=${PROC[$1]} end=$((SECONDS + $2))
	while alive "$pid"; do
		[ $SECONDS -ge $end ] && return 124
		sleep 0.05
	done
	reap "$1"
}

# reap NAME: waits for a process that ended and forgets its id, so that
# stop_procs never signals an id the system may have given to another.
reap() {
	local pid=${PROC[$1]}
	unset "PROC[$1]"
	wait "$pid"
}

# check_ok NAME...: each printed ok=1.
check_ok() {
	local n
	for n in "$@"; do
		if [ "$(field "$D/$n.out" ok)" != 1 ]; then
			fail_run "$n reported: $(errtext "$D/$n.out")${CAPPED_AT:+ (sender stopped by the RSS cap)}"
			return 1
		fi
	done
}

# --------------------------------------------------------------- cutd
# cutd_up N [CHANNEL...]: a cluster of N daemons p0..pN-1 in $D, up, with
# every peer connected.
cutd_up() {
	local n=$1 i st end
	shift
	take_ports "$n"
	{
		printf '[cluster]\nname = bench%s\nrun_dir = %s\nstate_dir = %s\n' "$$" "$D" "$D"
		printf 'deadline_ms = 10000\n'
		# Latency series take snapshots back to back, faster than the
		# default start_rate (10 a second, bursts of 20) allows.
		printf 'start_rate = 100000\nstart_burst = 100000\n'
		for ((i = 0; i < n; i++)); do
			printf '[node p%s]\npeer = tcp://127.0.0.1:%s\n' "$i" $((PORT0 + i))
		done
		if [ $# -gt 0 ]; then
			printf '[channels]\n'
			for c in "$@"; do printf 'channel = %s\n' "$c"; done
		fi
	} >"$D/cluster.ini"
	for ((i = 0; i < n; i++)); do
		spawn "d$i" "$CUTD" --cluster "$D/cluster.ini" --node "p$i" --log-level notice
	done
	for ((i = 0; i < n; i++)); do
		wait_files $CTL "$D/p$i.app" "$D/p$i.ctl" ||
			{ fail_run "cutd p$i did not open its sockets within $CTL s"; return 1; }
	done
	end=$((SECONDS + CTL + n))
	for ((i = 0; i < n; i++)); do
		while :; do
			st=$(timeout 10 "$CUTCTL" --control "ipc://$D/p$i.ctl" status --json 2>/dev/null) &&
				! grep -q '"connected": *false' <<<"$st" && break
			[ $SECONDS -ge $end ] &&
				{ fail_run "cutd p$i: peers not all connected within $((CTL + n)) s"; return 1; }
			sleep 0.05
		done
	done
}

# ------------------------------------------------------------ one stream
# stream VARIANT SIZE DURATION_MS RATE LATENCY PAUSE_MS SNAP_INTERVAL_MS
#
# One sender, one receiver.  VARIANT: cutd (app -> cutd p0 -> cutd p1 ->
# app), chain (app -> relay1 -ipc/tcp-> relay2 -> app) or hop (app -> app).
# RATE 0: full rate; LATENCY 1 keeps latencies; PAUSE_MS: the receiver
# stops reading that long first (and the RSS cap applies); a
# SNAP_INTERVAL_MS > 0 takes a snapshot that often (cutd only).
# Sets SERVERS and R_* (rate, recv, sent, lat_p50/p99, snaps, snap_p50).
stream() {
	local v=$1 size=$2 dur=$3 rate=$4 lat=$5 pause=$6 snapint=$7
	local limit=$(((dur + pause) / 1000 + DRAIN_S)) dl rcv snd extra=() s
	dl=$(((limit + 15) * 1000))
	newrun "$v: $size B for $dur ms, rate $rate, pause $pause, snapshots every $snapint ms"
	R_RATE="" R_RECV="" R_SENT="" R_P50="" R_P99="" R_SNAPS="" R_SNAP50=""
	case $v in
	cutd)
		cutd_up 2 || return 1
		SERVERS=(d0 d1)
		rcv=("$CUTBENCH" app --app "ipc://$D/p1.app" --node p1 --expect p0)
		snd=("$CUTBENCH" app --app "ipc://$D/p0.app" --node p0 --to p1)
		;;
	chain)
		take_ports 1
		spawn r2 "$NNGRELAY" relay --in "listen:tcp://127.0.0.1:$PORT0" \
			--out "listen:ipc://$D/r2.out" --deadline-ms $dl
		wait_files $CTL "$D/r2.out" || { fail_run "relay2 did not listen"; return 1; }
		spawn r1 "$NNGRELAY" relay --in "listen:ipc://$D/r1.in" \
			--out "dial:tcp://127.0.0.1:$PORT0" --deadline-ms $dl
		wait_files $CTL "$D/r1.in" || { fail_run "relay1 did not listen"; return 1; }
		SERVERS=(r1 r2)
		rcv=("$NNGRELAY" app --pull "dial:ipc://$D/r2.out" --expect 0)
		snd=("$NNGRELAY" app --push "dial:ipc://$D/r1.in" --src 0 --to 1)
		;;
	hop)
		SERVERS=()
		rcv=("$NNGRELAY" app --pull "listen:ipc://$D/hop" --expect 0)
		snd=("$NNGRELAY" app --push "dial:ipc://$D/hop" --src 0 --to 1)
		;;
	esac
	[ "$lat" = 1 ] && extra+=(--latency)
	[ "$pause" -gt 0 ] && extra+=(--pause-ms "$pause")
	spawn rcv "${rcv[@]}" "${extra[@]}" --ready-file "$D/rcv.ready" \
		--done-file "$D/rcv.done" --linger --deadline-ms $dl
	wait_files $CTL "$D/rcv.ready" || { fail_run "the receiver did not connect within $CTL s"; return 1; }
	if [ "$snapint" -gt 0 ]; then
		spawn snap "$CUTBENCH" snap --control "ipc://$D/p0.ctl" \
			--interval-ms "$snapint" --duration-ms $((limit * 1000)) --deadline-ms $dl
	fi
	cpu_mark "${SERVERS[@]}"
	extra=(--size "$size" --duration-ms "$dur" --linger --deadline-ms "$dl")
	[ "$rate" -gt 0 ] && extra+=(--rate "$rate")
	spawn snd "${snd[@]}" "${extra[@]}"
	if [ "$pause" -gt 0 ]; then
		watch rcv "$D/rcv.done" "$limit" snd
	else
		watch rcv "$D/rcv.done" "$limit"
	fi
	s=$?
	cpu_done "${SERVERS[@]}"
	hwm_done "${SERVERS[@]}"
	if [ "$snapint" -gt 0 ]; then
		kill -USR1 "${PROC[snap]}" 2>/dev/null
		wait_done snap 30
	fi
	[ $s = 124 ] && { fail_run "the receiver was not done within $limit s"; return 1; }
	[ $s = 1 ] && { reap rcv; fail_run "the receiver ended before the stream did"; return 1; }
	stop_procs
	check_ok rcv snd || return 1
	[ "$snapint" -gt 0 ] && { check_ok snap || return 1; }
	R_RATE=$(field "$D/rcv.out" rate)
	R_RECV=$(field "$D/rcv.out" recv)
	R_SENT=$(field "$D/snd.out" sent)
	R_P50=$(field "$D/rcv.out" lat_p50_us)
	R_P99=$(field "$D/rcv.out" lat_p99_us)
	if [ "$snapint" -gt 0 ]; then
		R_SNAPS=$(field "$D/snap.out" complete)
		R_SNAP50=$(field "$D/snap.out" snap_p50_ms)
	fi
	# Every message sent arrived (plus the END).
	if [ "$R_RECV" != $((R_SENT + 1)) ]; then
		fail_run "sent $R_SENT (+1 END) but received $R_RECV"
		return 1
	fi
	return 0
}

# ------------------------------------------------------------ recording
REP=0
rec() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$REP" "$3" >>"$RAW"; }
# per_m CPU_SECONDS MESSAGES: CPU seconds per million messages.
per_m() { awk -v c="$1" -v n="$2" 'BEGIN {if (n > 0) printf "%.2f", c / n * 1e6; else print "FAIL"}'; }
mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
maxof() { printf '%s\n' "$@" | sort -n | tail -n 1; }

# The rows of the table, in order: KEY|CUTD_VARIANT|BASE_VARIANT|LABEL.
ROWS=()
row() { ROWS+=("$1|$2|$3|$4"); }

# ------------------------------------------------------------ sections
sec_throughput() {
	local size v key
	for size in 64 1024; do
		key=tput$size
		for v in cutd chain hop; do
			log "throughput $size B: $v (rep $REP)"
			if stream $v $size $DUR_MS 0 0 0 0; then
				rec $key.rate $v "$R_RATE"
				case $v in
				cutd)
					rec cpu$size.send cutd "$(per_m "${CPU[d0]}" "$R_RECV")"
					rec cpu$size.recv cutd "$(per_m "${CPU[d1]}" "$R_RECV")"
					rec rss.tput$size cutd "$(mb "$(maxof "${HWM[d0]}" "${HWM[d1]}")")"
					;;
				chain)
					rec cpu$size.send chain "$(per_m "${CPU[r1]}" "$R_RECV")"
					rec cpu$size.recv chain "$(per_m "${CPU[r2]}" "$R_RECV")"
					rec rss.tput$size chain "$(mb "$(maxof "${HWM[r1]}" "${HWM[r2]}")")"
					;;
				esac
			else
				rec $key.rate $v FAIL
				[ $v = hop ] || rec cpu$size.send $v FAIL
				[ $v = hop ] || rec cpu$size.recv $v FAIL
			fi
		done
	done
}

# a2a VARIANT: 3 nodes, each app sending 64 B messages to both others in
# turn at full rate for DUR_MS and receiving from both.
a2a() {
	local v=$1 i j others oidx limit=$((DUR_MS / 1000 + DRAIN_S)) dl s n
	dl=$(((limit + 15) * 1000))
	newrun "all-to-all $v"
	SERVERS=()
	if [ $v = cutd ]; then
		cutd_up 3 || return 1
		SERVERS=(d0 d1 d2)
	else
		take_ports 3
		for i in 0 1 2; do
			local peers=()
			for j in 0 1 2; do
				[ $j = $i ] || peers+=(--peer "$j=dial:tcp://127.0.0.1:$((PORT0 + j))")
			done
			spawn "n$i" "$NNGRELAY" router --app-in "listen:ipc://$D/n$i.up" \
				--app-out "listen:ipc://$D/n$i.down" \
				--peer-in "listen:tcp://127.0.0.1:$((PORT0 + i))" "${peers[@]}" \
				--deadline-ms $dl
			SERVERS+=("n$i")
		done
		for i in 0 1 2; do
			wait_files $CTL "$D/n$i.up" "$D/n$i.down" ||
				{ fail_run "router $i did not listen"; return 1; }
		done
		sleep 0.3 # the routers' dialers connect
	fi
	for i in 0 1 2; do
		others="" oidx=""
		for j in 0 1 2; do
			[ $j = $i ] && continue
			others="$others${others:+,}p$j"
			oidx="$oidx${oidx:+,}$j"
		done
		if [ $v = cutd ]; then
			spawn "a$i" "$CUTBENCH" app --app "ipc://$D/p$i.app" --node "p$i" \
				--to "$others" --expect "$others" --size 64 --duration-ms $DUR_MS \
				--start-file "$D/go" --ready-file "$D/a$i.ready" \
				--done-file "$D/a$i.done" --linger --deadline-ms $dl
		else
			spawn "a$i" "$NNGRELAY" app --push "dial:ipc://$D/n$i.up" \
				--pull "dial:ipc://$D/n$i.down" --src $i --to "$oidx" \
				--expect "$oidx" --size 64 --duration-ms $DUR_MS \
				--start-file "$D/go" --ready-file "$D/a$i.ready" \
				--done-file "$D/a$i.done" --linger --deadline-ms $dl
		fi
	done
	wait_files $CTL "$D/a0.ready" "$D/a1.ready" "$D/a2.ready" ||
		{ fail_run "the applications did not connect within $CTL s"; return 1; }
	sleep 0.2
	cpu_mark "${SERVERS[@]}"
	touch "$D/go"
	if ! wait_files "$limit" "$D/a0.done" "$D/a1.done" "$D/a2.done"; then
		fail_run "the applications were not done within $limit s"
		return 1
	fi
	cpu_done "${SERVERS[@]}"
	hwm_done "${SERVERS[@]}"
	stop_procs
	check_ok a0 a1 a2 || return 1
	# Aggregate: every message received / (last receipt - first send).
	R_RATE=$(cat "$D/a0.out" "$D/a1.out" "$D/a2.out" | awk '
		{for (i = 1; i <= NF; i++) {split($i, kv, "="); f[kv[1]] = kv[2]}
		 n += f["recv"]
		 if (first == "" || f["t_first_send_ns"] < first) first = f["t_first_send_ns"]
		 if (f["t_last_recv_ns"] > last) last = f["t_last_recv_ns"]}
		END {if (last > first) printf "%.1f", n / ((last - first) / 1e9); else print "FAIL"}')
	R_RECV=$(cat "$D/a0.out" "$D/a1.out" "$D/a2.out" | awk '{for (i = 1; i <= NF; i++) if (index($i, "recv=") == 1) n += substr($i, 6)} END {print n + 0}')
	s=0
	for n in "${SERVERS[@]}"; do s=$(awk -v a=$s -v b="${CPU[$n]}" 'BEGIN {print a + b}'); done
	R_CPU=$(per_m "$(awk -v s=$s 'BEGIN {print s / 3}')" "$R_RECV")
	for n in "${SERVERS[@]}"; do R_CPU_EACH+=("$n:$(per_m "${CPU[$n]}" "$R_RECV")"); done
	return 0
}

sec_alltoall() {
	local v e
	for v in cutd nng; do
		log "all-to-all 3 nodes: $v (rep $REP)"
		R_CPU_EACH=()
		if a2a $v; then
			rec a2a.rate $v "$R_RATE"
			rec cpu.a2a $v "$R_CPU"
			for e in "${R_CPU_EACH[@]}"; do rec "cpu.a2a.${e%%:*}" $v "${e#*:}"; done
		else
			rec a2a.rate $v FAIL
			rec cpu.a2a $v FAIL
		fi
	done
}

sec_latency() {
	local v
	for v in cutd chain hop; do
		log "latency at $LAT_RATE msg/s: $v (rep $REP)"
		if stream $v 64 $LAT_MS $LAT_RATE 1 0 0; then
			rec lat.p50 $v "$R_P50"
			rec lat.p99 $v "$R_P99"
		else
			rec lat.p50 $v FAIL
			rec lat.p99 $v FAIL
		fi
	done
}

# snapseries N LOAD: N nodes (3: every pair a channel; 16: a ring plus
# chords), an application at each; SNAPS snapshots from p0, one after the
# other; with LOAD, p0's application sends to p1 at full rate meanwhile
# (and p1's checks that stream).
snapseries() {
	local n=$1 load=$2 i ch=() ready=() dl limit=$((SNAPS * 12 + 20)) s
	dl=$(((limit + DRAIN_S + 15) * 1000))
	newrun "snapshots, $n nodes, load $load"
	if [ "$n" -gt 3 ]; then
		for ((i = 0; i < n; i++)); do ch+=("p$i -> p$(((i + 1) % n))"); done
		for ((i = 0; i < n; i += 2)); do ch+=("p$i -> p$(((i + n / 2) % n))"); done
		for ((i = 1; i < n; i += 4)); do ch+=("p$i -> p$(((i + n - 3) % n))"); done
	fi
	cutd_up "$n" "${ch[@]}" || return 1
	SERVERS=()
	for ((i = 0; i < n; i++)); do
		SERVERS+=("d$i")
		if [ "$load" = 1 ] && [ $i = 0 ]; then
			spawn a0 "$CUTBENCH" app --app "ipc://$D/p0.app" --node p0 \
				--to p1 --size 64 --duration-ms $((limit * 1000)) \
				--start-file "$D/go" --linger --ready-file "$D/a0.ready" \
				--deadline-ms $dl
		elif [ "$load" = 1 ] && [ $i = 1 ]; then
			spawn a1 "$CUTBENCH" app --app "ipc://$D/p1.app" --node p1 \
				--expect p0 --ready-file "$D/a1.ready" --deadline-ms $dl
		else
			spawn "a$i" "$CUTBENCH" app --app "ipc://$D/p$i.app" --node "p$i" \
				--linger --ready-file "$D/a$i.ready" --deadline-ms $dl
		fi
		ready+=("$D/a$i.ready")
	done
	wait_files $((CTL + n)) "${ready[@]}" ||
		{ fail_run "the applications did not connect within $((CTL + n)) s"; return 1; }
	touch "$D/go"
	[ "$load" = 1 ] && sleep 0.5 # the stream is under way
	spawn snap "$CUTBENCH" snap --control "ipc://$D/p0.ctl" --count "$SNAPS" \
		--snap-timeout-ms 10000 --deadline-ms $((limit * 1000))
	wait_done snap "$limit"
	s=$?
	[ $s = 124 ] && { fail_run "$SNAPS snapshots not done within $limit s"; return 1; }
	if [ "$load" = 1 ]; then
		kill -USR1 "${PROC[a0]}" 2>/dev/null
		wait_done a1 $DRAIN_S ||
			{ fail_run "the loaded stream did not end well within $DRAIN_S s after the snapshots: $(errtext "$D/a1.out")"; return 1; }
	fi
	stop_procs
	check_ok snap || return 1
	[ "$load" = 1 ] && { check_ok a0 a1 || return 1; }
	R_P50=$(field "$D/snap.out" snap_p50_ms)
	R_P99=$(field "$D/snap.out" snap_p99_ms)
	R_DP50=$(field "$D/snap.out" daemon_p50_ms)
	R_DP99=$(field "$D/snap.out" daemon_p99_ms)
	R_STATE=$(field "$D/a0.out" state_reply_max_ms)
	return 0
}

sec_snapshot() {
	local n load name
	for n in 3 16; do
		for load in 0 1; do
			name=idle
			[ $load = 1 ] && name=load
			log "snapshot latency, $n nodes, $name (rep $REP)"
			if snapseries $n $load; then
				rec snap$n$name.p50 cutd "$R_P50"
				rec snap$n$name.p99 cutd "$R_P99"
				rec snap$n$name.daemon_p50 cutd "$R_DP50"
				rec snap$n$name.daemon_p99 cutd "$R_DP99"
				# How long p0's state reply waited for libcut's send
				# lock (the sender thread's), the slowest of the series.
				rec snap$n$name.state_reply_max_ms cutd "$R_STATE"
			else
				rec snap$n$name.p50 cutd FAIL
				rec snap$n$name.p99 cutd FAIL
				rec snap$n$name.daemon_p50 cutd FAIL
				rec snap$n$name.daemon_p99 cutd FAIL
			fi
		done
	done
}

sec_snapinterval() {
	local v int
	for v in none every100ms; do
		int=0
		[ $v = every100ms ] && int=100
		log "1 KiB throughput, snapshots: $v (rep $REP)"
		if stream cutd 1024 $DUR_MS 0 0 0 $int; then
			rec snapint.rate $v "$R_RATE"
			[ $int -gt 0 ] && rec snapint.snaps $v "$R_SNAPS"
			[ $int -gt 0 ] && rec snapint.p50 $v "$R_SNAP50"
		else
			rec snapint.rate $v FAIL
		fi
	done
}

# idle VARIANT: daemons (relays) with their applications connected and
# nothing sent, for IDLE_MS.
idle() {
	local v=$1
	newrun "idle $v"
	if [ $v = cutd ]; then
		cutd_up 2 || return 1
		SERVERS=(d0 d1)
		spawn a0 "$CUTBENCH" app --app "ipc://$D/p0.app" --node p0 --linger --ready-file "$D/a0.ready"
		spawn a1 "$CUTBENCH" app --app "ipc://$D/p1.app" --node p1 --linger --ready-file "$D/a1.ready"
	else
		take_ports 1
		spawn r2 "$NNGRELAY" relay --in "listen:tcp://127.0.0.1:$PORT0" --out "listen:ipc://$D/r2.out"
		wait_files $CTL "$D/r2.out" || { fail_run "relay2 did not listen"; return 1; }
		spawn r1 "$NNGRELAY" relay --in "listen:ipc://$D/r1.in" --out "dial:tcp://127.0.0.1:$PORT0"
		wait_files $CTL "$D/r1.in" || { fail_run "relay1 did not listen"; return 1; }
		SERVERS=(r1 r2)
		spawn a0 "$NNGRELAY" app --push "dial:ipc://$D/r1.in" --src 0 --to 1 --count 1 --linger --ready-file "$D/a0.ready"
		spawn a1 "$NNGRELAY" app --pull "dial:ipc://$D/r2.out" --linger --ready-file "$D/a1.ready"
	fi
	wait_files $CTL "$D/a0.ready" "$D/a1.ready" ||
		{ fail_run "the applications did not connect within $CTL s"; return 1; }
	sleep "$(awk -v m=$IDLE_MS 'BEGIN {print m / 1000}')"
	hwm_done "${SERVERS[@]}"
	stop_procs
	return 0
}

sec_memory() {
	local v r
	for v in cutd chain; do
		log "RSS idle: $v (rep $REP)"
		if idle $v; then
			if [ $v = cutd ]; then r=$(maxof "${HWM[d0]}" "${HWM[d1]}"); else r=$(maxof "${HWM[r1]}" "${HWM[r2]}"); fi
			rec rss.idle $v "$(mb "$r")"
		else
			rec rss.idle $v FAIL
		fi
	done
	for v in cutd chain; do
		log "RSS under load (1 KiB, full rate): $v (rep $REP)"
		if stream $v 1024 $DUR_MS 0 0 0 0; then
			if [ $v = cutd ]; then r=$(maxof "${HWM[d0]}" "${HWM[d1]}"); else r=$(maxof "${HWM[r1]}" "${HWM[r2]}"); fi
			rec rss.load $v "$(mb "$r")"
		else
			rec rss.load $v FAIL
		fi
	done
	for v in cutd chain; do
		log "RSS with the receiver paused $((PAUSE_MS / 1000)) s ($SLOW_SIZE B, full rate): $v (rep $REP)"
		if stream $v $SLOW_SIZE $PAUSE_MS 0 0 $PAUSE_MS 0; then
			if [ $v = cutd ]; then r=$(maxof "${HWM[d0]}" "${HWM[d1]}"); else r=$(maxof "${HWM[r1]}" "${HWM[r2]}"); fi
			rec rss.slow $v "$(mb "$r")"
			rec slow.sent $v "$R_SENT"
			rec slow.send_retries $v "$(field "$D/snd.out" send_retries)"
			for r in "${SERVERS[@]}"; do rec "rss.slow.$r" $v "$(mb "${HWM[$r]}")"; done
			rec slow.ok $v 1
			[ -n "$CAPPED_AT" ] && rec slow.capped_at_s $v "$CAPPED_AT"
		else
			rec rss.slow $v FAIL
			rec slow.ok $v 0
		fi
	done
}

# --------------------------------------------------------------- table
row tput64.rate cutd chain "throughput 64 B, msg/s (baseline: 3-hop chain)"
row tput64.rate cutd hop "throughput 64 B, msg/s (baseline: one hop)"
row tput1024.rate cutd chain "throughput 1 KiB, msg/s (baseline: 3-hop chain)"
row tput1024.rate cutd hop "throughput 1 KiB, msg/s (baseline: one hop)"
row a2a.rate cutd nng "all-to-all 3 nodes 64 B, aggregate msg/s (baseline: nng mesh)"
row lat.p50 cutd chain "one-way latency p50 at 1000 msg/s, µs (baseline: chain)"
row lat.p99 cutd chain "one-way latency p99 at 1000 msg/s, µs (baseline: chain)"
row lat.p50 cutd hop "one-way latency p50 at 1000 msg/s, µs (baseline: one hop)"
row lat.p99 cutd hop "one-way latency p99 at 1000 msg/s, µs (baseline: one hop)"
row snap3idle.p50 cutd - "snapshot latency p50, 3 nodes idle, ms"
row snap3idle.p99 cutd - "snapshot latency p99, 3 nodes idle, ms"
row snap3idle.daemon_p50 cutd - "  the same, p50 as the daemon timed it, ms"
row snap3idle.daemon_p99 cutd - "  the same, p99 as the daemon timed it, ms"
row snap3load.p50 cutd - "snapshot latency p50, 3 nodes, one sender at full rate, ms"
row snap3load.p99 cutd - "snapshot latency p99, 3 nodes, one sender at full rate, ms"
row snap3load.daemon_p50 cutd - "  the same, p50 as the daemon timed it, ms"
row snap3load.daemon_p99 cutd - "  the same, p99 as the daemon timed it, ms"
row snap16idle.p50 cutd - "snapshot latency p50, 16 nodes idle, ms"
row snap16idle.p99 cutd - "snapshot latency p99, 16 nodes idle, ms"
row snap16idle.daemon_p50 cutd - "  the same, p50 as the daemon timed it, ms"
row snap16idle.daemon_p99 cutd - "  the same, p99 as the daemon timed it, ms"
row snap16load.p50 cutd - "snapshot latency p50, 16 nodes, one sender at full rate, ms"
row snap16load.p99 cutd - "snapshot latency p99, 16 nodes, one sender at full rate, ms"
row snap16load.daemon_p50 cutd - "  the same, p50 as the daemon timed it, ms"
row snap16load.daemon_p99 cutd - "  the same, p99 as the daemon timed it, ms"
row snapint.rate every100ms none "throughput 1 KiB with a snapshot every 100 ms, msg/s (baseline: cutd without snapshots)"
row snapint.snaps every100ms - "snapshots completed during that run"
row snapint.p50 every100ms - "their latency p50, ms"
row rss.idle cutd chain "RSS idle, MB, max of the 2 daemons (baseline: the 2 relays)"
row rss.load cutd chain "RSS under load (1 KiB, full rate), MB, max of the 2 daemons (relays)"
row rss.slow cutd chain "RSS with the receiver paused $((PAUSE_MS / 1000)) s, 10 KB at full rate, MB, max of the daemons (relays)"
row slow.sent cutd chain "messages sent while the receiver was paused (all then received, in order)"
row slow.capped_at_s cutd chain "sender stopped by --rss-cap after, s"
row cpu64.send cutd chain "CPU s per million msgs, 64 B, sending daemon (baseline: relay1)"
row cpu64.recv cutd chain "CPU s per million msgs, 64 B, receiving daemon (baseline: relay2)"
row cpu1024.send cutd chain "CPU s per million msgs, 1 KiB, sending daemon (baseline: relay1)"
row cpu1024.recv cutd chain "CPU s per million msgs, 1 KiB, receiving daemon (baseline: relay2)"
row cpu.a2a cutd nng "CPU s per million msgs, all-to-all, per daemon (baseline: per router)"

print_table() {
	local r key a b label
	echo
	echo "## cutd vs plain nng: medians of $REPS repetition(s)"
	echo
	echo "Source $SRC at $COMMIT, build $BUILD ($btype), $(nproc) cores, $(date '+%F %T')."
	[ $QUICK = 1 ] && echo "Quick mode: ${DUR_MS} ms runs, $SNAPS snapshots a series, receiver paused $((PAUSE_MS / 1000)) s."
	echo "Raw numbers: $RAW"
	echo
	echo "Ratios are cutd/baseline: below 1 means fewer msg/s for cutd, above 1"
	echo "more latency, CPU or memory.  Latencies and snapshot times are each run's"
	echo "percentile, then the median over the runs; with few snapshots a series,"
	echo "p99 is the series' slowest.  Snapshot latency is what the client sees,"
	echo "from cut_snapshot_start to cut_snapshot_wait's return; the daemon's own"
	echo "figure (its started/finished times, whole ms) follows each."
	echo
	echo "| figure | cutd | baseline | cutd/baseline |"
	echo "|---|---:|---:|---:|"
	for r in "${ROWS[@]}"; do
		IFS='|' read -r key a b label <<<"$r"
		awk -F'\t' -v key="$key" -v a="$a" -v b="$b" -v label="$label" '
			function med(v, n,   i, j, t) {
				for (i = 2; i <= n; i++) {t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t}
				return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			}
			function fmt(x) {
				if (x == int(x) || x >= 1000) return sprintf("%.0f", x)
				if (x >= 100) return sprintf("%.1f", x)
				return sprintf("%.2f", x)
			}
			/^#/ {next}
			$1 == key && $2 == a {if ($4 == "FAIL") fa++; else va[++na] = $4 + 0}
			$1 == key && $2 == b {if ($4 == "FAIL") fb++; else vb[++nb] = $4 + 0}
			END {
				if (na + fa + nb + fb == 0) exit
				ma = na ? med(va, na) : ""
				mb = nb ? med(vb, nb) : ""
				sa = na ? fmt(ma) : "FAIL"
				if (fa) sa = sa " (" fa " FAIL)"
				sb = "–"
				if (b != "-") { sb = nb ? fmt(mb) : (fb ? "FAIL" : "–"); if (fb) sb = sb " (" fb " FAIL)" }
				ratio = (na && nb && mb != 0) ? sprintf("%.2f", ma / mb) : "–"
				printf "| %s | %s | %s | %s |\n", label, sa, sb, ratio
			}' "$RAW"
	done
	echo
}

# ---------------------------------------------------------------- main
log "raw numbers go to $RAW"
START=$SECONDS
for ((REP = 1; REP <= REPS; REP++)); do
	for s in $ALL_SECTIONS; do
		want "$s" && "sec_$s"
	done
done
log "done in $((SECONDS - START)) s"
print_table
echo "Raw per-repetition numbers: $RAW" >&2
exit $RC
