#!/bin/sh
# [schedule]: snapshots start by themselves at p0 every 300 ms, ordinary
# ones (ids, audit); while one started by the schedule is still running
# (p2 stopped with SIGSTOP) the ticks are skipped and counted, never
# stacked; pause and resume act at p0 only and need the Start permission.
DEADLINE_MS=2000
SECTIONS='[schedule]
interval = 300ms
initiator = p0
timeout = 2s'
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100

own() { sql 0 "SELECT count(*) FROM snapshots WHERE role = 'initiator' AND status = '$1'"; }
at_least() { [ "$(own complete)" -ge "$1" ]; }
retry 30 at_least 3 || fail "fewer than 3 scheduled snapshots in $((30 * WAIT_SCALE)) s"
id=$(sql 0 "SELECT id FROM snapshots WHERE role = 'initiator' AND status = 'complete' ORDER BY started_ms LIMIT 1")
check_snapshot 0 "$id" 44
[ "$(sched_field 1 configured)" = true ] || fail "p1 does not see the schedule"
[ "$(sched_field 1 ticks)" = 0 ] || fail "p1 counts ticks of p0's schedule"
[ "$(sql 1 "SELECT count(*) FROM snapshots WHERE role = 'initiator'")" = 0 ] ||
	fail "p1 started snapshots of p0's schedule"

# The skip rule: p2 stopped, the running snapshot waits for its 2 s
# timeout while ticks come every 300 ms: they are skipped, and no more
# than one scheduled snapshot is ever in flight at p0.  The window is at
# least 4 s of wall time, measured: on a busy machine the reads in it
# take longer, and the bound on starts follows the time it really took.
ms() { echo $(($(date +%s%N) / 1000000)); }
kill -STOP "$DAEMON_2"
t0=$(ms)
skipped0=$(sched_field 0 skipped)
started0=$(sched_field 0 started)
while [ $(($(ms) - t0)) -lt 4000 ]; do
	n=$(sql 0 "SELECT count(*) FROM snapshots WHERE role = 'initiator' AND status = 'in_progress'")
	[ "$n" -le 1 ] || { kill -CONT "$DAEMON_2"; fail "$n scheduled snapshots in flight at once"; }
	sleep 0.2
done
# Counted before p2 wakes: once it does, ticks start snapshots again.
skipped1=$(sched_field 0 skipped)
started1=$(sched_field 0 started)
elapsed=$(($(ms) - t0))
kill -CONT "$DAEMON_2"
[ "$skipped1" -gt "$skipped0" ] || fail "no tick skipped while p2 was stopped ($skipped0 -> $skipped1)"
# One start per 2 s timeout at most, plus the one running when it began
# (stacked ticks would start one every 300 ms).
max=$((1 + (elapsed + 1999) / 2000))
[ $((started1 - started0)) -le $max ] ||
	fail "$((started1 - started0)) starts in $elapsed ms with 2 s timeouts (at most $max)"
[ "$(own aborted)" -ge 1 ] || fail "no scheduled snapshot aborted while p2 was stopped"
ctl 0 status | grep -q "skipped" || fail "status does not show the schedule"
echo "ok: skipped $skipped0 -> $skipped1, started $started0 -> $started1 in $elapsed ms"

# Pause: no new snapshot at p0; the ticks are counted as paused.
expect_rc 0 ctl 0 schedule pause
grep -q PAUSED "$T/out" || fail "schedule pause: $(cat "$T/out")"
sleep 2.5 # any snapshot started before the pause ends within its 2 s
before=$(sql 0 "SELECT count(*) FROM snapshots WHERE role = 'initiator'")
p0=$(sched_field 0 paused_ticks)
sleep 1.5
after=$(sql 0 "SELECT count(*) FROM snapshots WHERE role = 'initiator'")
[ "$after" = "$before" ] || fail "snapshots started while paused ($before -> $after)"
[ "$(sched_field 0 paused_ticks)" -gt "$p0" ] || fail "paused ticks not counted"
[ "$(sched_field 0 paused)" = true ] || fail "schedule show does not say paused"
expect_rc 0 ctl 0 schedule resume
more() { [ "$(sql 0 "SELECT count(*) FROM snapshots WHERE role = 'initiator'")" -gt "$after" ]; }
retry 20 more || fail "no snapshot after resume"
expect_rc 64 ctl 0 schedule stop
# Pause and Resume need what Start needs: a uid outside the daemon's
# user, root, the admin group and the application's user is refused.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 0777 "$T" "$T/p0.ctl"
	expect_rc 77 setpriv --reuid 65533 --regid 65533 --clear-groups \
		"$CUTCTL" --control "ipc://$T/p0.ctl" schedule pause
	expect_rc 0 setpriv --reuid 65533 --regid 65533 --clear-groups \
		"$CUTCTL" --control "ipc://$T/p0.ctl" schedule show
fi
[ "$(sched_field 0 paused)" = false ] || fail "an unprivileged caller paused the schedule"
pass "schedule"
