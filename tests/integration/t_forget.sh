#!/bin/sh
# Deleting a snapshot at its initiator deletes every node's copy, also
# that of a node whose daemon was down at the time: the initiator keeps the
# deletion (forget_pending) and sends it again when the node is back.
# Deleting another node's snapshot deletes only the local copy.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100
sleep 0.5
id_a=$(snapshot 0)
check_snapshot 0 "$id_a" 44
id_b=$(snapshot 0)
check_snapshot 0 "$id_b" 44
id_c=$(snapshot 1)
check_snapshot 1 "$id_c" 44
has() { [ "$(sql "$1" "SELECT count(*) FROM snapshots WHERE id = '$2'")" = 1 ]; }
gone() { [ "$(sql "$1" "SELECT count(*) FROM snapshots WHERE id = '$2'")" = 0 ]; }
for n in 0 1 2; do
	retry 10 has "$n" "$id_a" || fail "p$n has no $id_a"
done

# Everyone up: the delete reaches both participants.
expect_rc 0 ctl 0 delete "$id_a"
for n in 1 2; do
	retry 10 gone "$n" "$id_a" || fail "p$n still holds $id_a"
done
pend() { [ "$(status_field 0 forgets_pending)" = "$1" ]; }
retry 10 pend 0 || fail "p0 still waits for deletions: $(status_field 0 forgets_pending)"
echo "ok: $id_a deleted on every node"

# p2 down (SIGTERM, a real stop): p1 deletes at once, p2 when it is back.
kill "$DAEMON_2"
wait "$DAEMON_2"
expect_rc 0 ctl 0 delete "$id_b"
retry 10 gone 1 "$id_b" || fail "p1 still holds $id_b"
has 2 "$id_b" || fail "p2's copy of $id_b went while p2 was down?"
# p1's answer may still be on its way to p0 (p1 deletes, then answers):
# p0 clears p1's row when it reads it, p2's stays.
only_p2() { [ "$(sql 0 "SELECT group_concat(node) FROM forget_pending WHERE snapshot_id = '$id_b'")" = p2 ]; }
retry 10 only_p2 ||
	fail "p0's pending deletions: $(sql 0 "SELECT * FROM forget_pending")"
# And p0 restarts too, so that only its database remembers.
kill "$DAEMON_0"
wait "$DAEMON_0"
start_daemon 0
start_daemon 2
wait_for "$CUTCTL --control ipc://$T/p0.ctl status" 10 || fail "p0 did not come back"
retry 20 gone 2 "$id_b" || fail "p2 still holds $id_b after it came back"
retry 10 pend 0 || fail "p0 still waits: $(sql 0 "SELECT * FROM forget_pending")"
has 2 "$id_c" || fail "p2 lost $id_c, which nobody deleted"
echo "ok: $id_b deleted at p2 once it was back"

# A participant's delete is its own: p1's snapshot stays at p1.
expect_rc 0 ctl 0 delete "$id_c"
has 1 "$id_c" || fail "p0's delete of p1's $id_c reached p1"
gone 0 "$id_c" || fail "p0 still holds $id_c"
expect_rc 65 ctl 0 keep "$id_c"
pass "forget"
