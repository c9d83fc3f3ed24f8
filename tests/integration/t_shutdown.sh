#!/bin/sh
# SIGTERM while a snapshot is in flight: cutd exits 0 within seconds, the
# snapshot is stored aborted with the reason, the database is left clean
# (its integrity check passes),
# and a restarted daemon continues the ids instead of repeating them.
DEADLINE_MS=60000
. "$(dirname "$0")/lib.sh"
cluster 2
start_daemons
# No applications: nobody answers the state request, so it stays open.
id=$(snapshot 0)
[ "$(sql 0 "SELECT status FROM snapshots WHERE id = '$id'")" = in_progress ] ||
	fail "snapshot $id is not in progress"
kill -TERM "$DAEMON_0"
i=0
while kill -0 "$DAEMON_0" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 50 ] || fail "cutd did not stop within 5 s of SIGTERM"
	sleep 0.1
done
wait "$DAEMON_0"
rc=$?
[ $rc = 0 ] || fail "cutd exited $rc on SIGTERM"
st=$(sql 0 "SELECT status || ': ' || reason FROM snapshots WHERE id = '$id'")
[ "$st" = "aborted: daemon stopped" ] || fail "snapshot $id: $st"
[ "$(sql 0 "PRAGMA integrity_check")" = ok ] || fail "integrity check"
echo "ok: $id $st"
start_daemon 0
wait_for "$CUTCTL --control ipc://$T/p0.ctl status" 10 || fail "restart"
id2=$(snapshot 0)
[ "$id2" != "$id" ] || fail "id $id repeated after a restart"
echo "ok: next id $id2"
pass "shutdown"
