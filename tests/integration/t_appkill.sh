#!/bin/sh
# An application killed (kill -9, its daemon left running) and started
# again, KILLS times (default 20), while three nodes send to each other
# at 500 messages a second per channel and p0 starts a snapshot every
# 200 ms.  The daemon must notice each death at once and never crash on
# it: each new application's cut_open() succeeds within OPEN_MS (no
# CUT_EBUSY from a daemon still holding the dead connection), every
# daemon is alive at the end, and a last snapshot completes consistent.
#
# The killed application's streams start again from 1, so the receivers'
# order checks are not looked at here (t_crash covers daemon deaths).
# MEASURE=1 counts crashes and missed deaths instead of failing at the
# first (starting p1 afresh after each), for runs outside the suite, e.g.
# KILLS=100 MEASURE=1 OPEN_MS=5000.
. "$(dirname "$0")/lib.sh"
KILLS=${KILLS:-20}
# A death missed leaves the daemon answering CUT_EBUSY for good (the 10 s
# check below); a noticed one lets a new application in within a second or
# two, and a busy machine may double that (WAIT_SCALE, lib.sh).
OPEN_MS=${OPEN_MS:-$((2000 * WAIT_SCALE))}
DEADLINE_MS=2000
cluster 3
start_daemons
now_ms() { date +%s%3N; }
# alive PID: running (a crashed child stays a zombie until waited for).
alive() {
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# app I [cutbench options]: node pI's cutbench, sending to the others at
# 1,000 messages a second in all (500 per channel), until SIGTERM.
app() {
	i=$1
	shift
	others=$(for k in 0 1 2; do [ "$k" = "$i" ] || echo "p$k"; done | paste -sd, -)
	"$BIN/tests/bench/cutbench" app --app "ipc://$T/p$i.app" --node "p$i" \
		--to "$others" --size 64 --rate 1000 --linger \
		--deadline-ms 3600000 "$@" >>"$T/app$i.out" 2>>"$T/app$i.log" &
	PIDS="$PIDS $!"
	eval "APP_$i=$!"
}
app 0
app 1 --ready-file "$T/ready.0"
app 2
retry 10 test -f "$T/ready.0" || fail "p1's first application did not connect: $(cat "$T/app1.log")"
# A snapshot every 200 ms at p0, whatever happens.
(
	while [ ! -f "$T/stop-snaps" ]; do
		"$CUTCTL" --control "ipc://$T/p0.ctl" snapshot >>"$T/ids" 2>>"$T/snap-errors" || true
		sleep 0.2
	done
) &
PIDS="$PIDS $!"
sleep 1

# problem WHAT: fails the test; with MEASURE=1 counts it instead and
# starts p1's daemon and application afresh, so the run goes on.
crashes=0
missed=0
problem() {
	[ "${MEASURE:-0}" = 1 ] || fail "$1"
	echo "measure: $1"
	case "$1" in *died*) crashes=$((crashes + 1)) ;; *) missed=$((missed + 1)) ;; esac
	kill -9 "$APP_1" "$DAEMON_1" 2>/dev/null
	wait "$APP_1" "$DAEMON_1" 2>/dev/null
	start_daemon 1
	wait_for "$CUTCTL --control ipc://$T/p1.ctl status" 10 || fail "p1 did not come up again"
	app 1
}
k=0
worst=0
total=0
t_start=$(date +%s)
while [ $k -lt "$KILLS" ]; do
	k=$((k + 1))
	# Between 0.3 and 1.2 s of traffic first, a different moment each time.
	sleep "0.$((3 + (k * 7) % 10))"
	kill -9 "$APP_1"
	wait "$APP_1" 2>/dev/null
	t0=$(now_ms)
	app 1 --ready-file "$T/ready.$k"
	why=""
	while [ ! -f "$T/ready.$k" ]; do
		if ! alive "$DAEMON_1"; then
			why="kill $k: daemon p1 died (crashed on its application's death)"
		elif ! alive "$APP_1"; then
			why="kill $k: the new application gave up: $(tail -n 1 "$T/app1.out")"
		elif [ $(($(now_ms) - t0)) -gt 10000 ]; then
			why="kill $k: the new application not connected after 10 s"
		fi
		[ -z "$why" ] || break
		sleep 0.02
	done
	dt=$(($(now_ms) - t0))
	[ -z "$why" ] && [ "$dt" -gt "$OPEN_MS" ] &&
		why="kill $k: cut_open() took $dt ms after the kill (want <= $OPEN_MS)"
	if [ -n "$why" ]; then
		problem "$why"
		continue
	fi
	total=$((total + dt))
	[ "$dt" -gt "$worst" ] && worst=$dt
	[ "${MEASURE:-0}" = 1 ] && [ "$dt" -gt 1000 ] &&
		echo "measure: kill $k: the new application connected after $dt ms"
	for i in 0 1 2; do
		eval "alive \$DAEMON_$i" || fail "kill $k: daemon p$i died: $(tail -n 20 "$T/cutd-p$i.log")"
	done
done
elapsed=$(($(date +%s) - t_start))
# A kill can stop nng's reaper (shell/ipcprobe.h): the daemon then runs
# again in its own process, which is counted, not failed.
again=$(grep -c "starting cutd again in this process" "$T/cutd-p1.log")
echo "ok: $KILLS kills in $elapsed s; the new application connected after $((total / KILLS)) ms on average, $worst ms at worst; $crashes daemon crashes, $missed deaths missed, p1 started again $again times (nng stopped reaping)"
touch "$T/stop-snaps"
sleep 0.5
n=$(wc -l <"$T/ids")
echo "ok: $n snapshots started during the kills"

# That last resort, on demand: p2 started with CUTD_TEST_STUCK_REAPER,
# under which its first probe's connection is taken for never reaped.
eval "kill \$DAEMON_2; wait \$DAEMON_2" || fail "p2 did not stop cleanly"
CUTD_TEST_STUCK_REAPER=1 start_daemon 2
retry 15 grep -q "starting cutd again in this process" "$T/cutd-p2.log" ||
	fail "p2 did not start again: $(tail -n 5 "$T/cutd-p2.log")"
retry 10 sh -c "[ \$(grep -c ' ready\$' '$T/cutd-p2.log') -ge 3 ]" ||
	fail "p2 not ready after starting again: $(tail -n 5 "$T/cutd-p2.log")"
alive "$DAEMON_2" || fail "p2's process is gone"
retry 10 sh -c "$CUTCTL --control ipc://$T/p2.ctl --json status | grep -q '\"app_connected\": *true'" ||
	fail "p2's application did not reconnect: $(ctl 2 status)"
echo "ok: p2 found nng's reaper stopped (test hook), ran again in its process, its application reconnected"
# A last snapshot, everything running: complete and consistent.
tries=0
while :; do
	id=$(snapshot 0)
	st=$(wait_done 0 "$id" 20)
	tries=$((tries + 1))
	[ "$st" = complete ] || [ $tries -ge 3 ] || { sleep 1; continue; }
	break
done
[ "$st" = complete ] || fail "last snapshot $id: $st ($(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'"))"
[ "$(sql 0 "SELECT consistent FROM snapshots WHERE id = '$id'")" = 1 ] ||
	fail "last snapshot $id: audit says $(sql 0 "SELECT audit_reason FROM snapshots WHERE id = '$id'")"
[ "$(status_field 1 app_connected)" = true ] || fail "p1 shows no application"
[ $((crashes + missed)) = 0 ] || fail "$KILLS kills: $crashes daemon crashes, $missed deaths missed or noticed late"
pass "$KILLS application kills: no daemon crashed, each death noticed (worst $worst ms to a new cut_open)"
