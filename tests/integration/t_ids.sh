#!/bin/sh
# Snapshot ids are never reused: after the newest snapshot is deleted and
# the initiator restarts, the next id is new (above every earlier one),
# the participants take part in it (they would ignore a repeated id) and
# it completes; the counter in the meta table is above every id issued.
# An id that comes back anyway is refused by the participant holding it,
# with a reason the initiator reports.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 50
start_app 1 14 --rate 50
start_app 2 12 --rate 50
sleep 1
ids=""
for k in 1 2 3; do
	id=$(snapshot 0)
	check_snapshot 0 "$id" 44
	ids="$ids $id"
done
expect_rc 0 ctl 0 delete "$id"
[ "$(sql 0 "SELECT count(*) FROM snapshots WHERE id = '$id'")" = 0 ] ||
	fail "$id not deleted"
# The node restarts whole: its application and its daemon.
kill "$APP_0"
wait "$APP_0" 2>/dev/null
kill "$DAEMON_0"
wait "$DAEMON_0"
start_daemon 0
wait_for "$CUTCTL --control ipc://$T/p0.ctl status" 10 || fail "p0 restart"
start_app 0 18 --rate 50
wait_for "$CUTCTL --control ipc://$T/p0.ctl status | grep -q '^application: connected'" 10 ||
	fail "the application did not connect"
# A snapshot started before the peers' first messages reach the new run
# is aborted (its channel counts resume under it); let them arrive.
wait_for "[ \$($CUTCTL --control ipc://$T/p0.ctl status | grep -c ' connected') -ge 2 ]" 10 ||
	fail "p0's peers did not reconnect"
sleep 1
new=$(snapshot 0)
for old in $ids; do
	[ "$new" != "$old" ] || fail "id $new reused after delete and restart"
	[ "${new#p0:}" -gt "${old#p0:}" ] || fail "$new not above $old"
done
# The new application starts from 18 again, so the total is not 44;
# the cut must be complete and consistent, with every node's part.
st=$(wait_done 0 "$new" 20)
[ "$st" = complete ] || fail "snapshot $new: $st ($(sql 0 "SELECT reason FROM snapshots WHERE id = '$new'"))"
[ "$(sql 0 "SELECT consistent || ' ' || nodes_recorded FROM snapshot_summary WHERE id = '$new'")" = "1 3" ] ||
	fail "snapshot $new: $(sql 0 "SELECT consistent, audit_reason, nodes_recorded FROM snapshot_summary WHERE id = '$new'")"
for n in 1 2; do
	[ "$(sql $n "SELECT status FROM snapshots WHERE id = '$new'")" = complete ] ||
		fail "p$n did not take part in $new"
done
counter=$(sql 0 "SELECT value FROM meta WHERE key = 'last_snapshot'")
[ "$counter" = "${new#p0:}" ] || fail "meta counter $counter, last id $new"
[ "$(sql 0 "PRAGMA user_version")" = 3 ] || fail "schema version"
echo "ok: after delete of $id and a restart: $new"

# Should an id come back all the same (a lost database and a clock set
# back), a participant that already holds it says so: here p0's counter
# is set just below an id p1 already holds.
x=$(( ${new#p0:} + 1000000000 ))
sql 1 "INSERT INTO snapshots (id, initiator, role, status, started_ms,
        finished_ms, parts_expected) VALUES ('p0:$x', 'p0', 'participant',
        'complete', 1, 2, 3)"
sql 0 "UPDATE meta SET value = $((x - 1)) WHERE key = 'last_snapshot'"
dup=$(snapshot 0)
[ "$dup" = "p0:$x" ] || fail "the counter gave $dup, not p0:$x"
expect_rc 1 ctl 0 --json wait "$dup"
grep -q "p1: already holds an older snapshot p0:$x" "$T/out" ||
	fail "$dup: $(cat "$T/out")"
echo "ok: a reused id is reported by the participant that holds it"
pass "ids never reused"
