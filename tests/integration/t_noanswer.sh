#!/bin/sh
# An application that never answers its state request: the snapshot ends
# aborted, naming the node, and a later snapshot succeeds.
DEADLINE_MS=2000
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100 --ignore-state-requests 1
sleep 0.5
id=$(snapshot 0)
st=$(wait_done 0 "$id" 10)
[ "$st" = aborted ] || fail "snapshot $id: $st, want aborted"
reason=$(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'")
case "$reason" in
*"p2: the application did not answer the state request"*) ;;
"p2: no part and no word by the deadline"*)
	# p2 gives up on its application at 80 % of the deadline and says so
	# to p0; on a busy machine that word can come after p0's deadline.
	# Then p2's own reason (its log) must be its application.
	grep -q "snapshot $id: aborted: .*p2: the application did not answer the state request" \
		"$T/cutd-p2.log" ||
		fail "snapshot $id: reason '$reason', and p2 gave up for: $(grep "snapshot $id: aborted" "$T/cutd-p2.log")"
	;;
*) fail "snapshot $id: reason '$reason'" ;;
esac
echo "ok: $id aborted: $reason"
c=$(sql 0 "SELECT coalesce(consistent, 'null') FROM snapshots WHERE id = '$id'")
[ "$c" = null ] || fail "an aborted snapshot was audited ($c)"
id=$(snapshot 0)
check_snapshot 0 "$id" 44
pass "unanswered state request"
