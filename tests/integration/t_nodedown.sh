#!/bin/sh
# A node that does not answer at all (its daemon stopped with SIGSTOP):
# the snapshot ends aborted naming that node first, and once it runs again
# a later snapshot succeeds and conserves the total.
DEADLINE_MS=2000
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100
sleep 0.5
kill -STOP "$DAEMON_2"
id=$(snapshot 0)
st=$(wait_done 0 "$id" 10)
kill -CONT "$DAEMON_2"
[ "$st" = aborted ] || fail "snapshot $id: $st, want aborted"
reason=$(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'")
case "$reason" in
"p2: no part and no word by the deadline"*) ;;
*) fail "snapshot $id: reason '$reason'" ;;
esac
echo "ok: $id aborted: $reason"
sleep 1
id=$(snapshot 0)
check_snapshot 0 "$id" 44
pass "node down"
