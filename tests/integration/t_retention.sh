#!/bin/sh
# Retention across the cluster: a schedule (rotate, every 100 ms) takes
# 200 snapshots while [retention] keep_last = 5 deletes the older ones at
# their initiator and, through it, at every participant.  At the end each
# node holds exactly its own 5 newest complete snapshots, the 5 newest of
# each other node, and the one marked keep; and the database files stayed
# bounded (their size after 200 snapshots is close to their size after 40).
SECTIONS='[schedule]
interval = 100ms
initiator = rotate
[retention]
keep_last = 5
keep_aborted = 1s'
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 50
start_app 1 14 --rate 50
start_app 2 12 --rate 50

started() {
	s=0
	for n in 0 1 2; do s=$((s + $(sched_field "$n" started))); done
	echo "$s"
}
size() { stat -c %s "$T/p$1.db" "$T/p$1.db-wal" 2>/dev/null | awk '{s += $1} END {print s}'; }
reached() { [ "$(started)" -ge "$1" ]; }

retry 60 reached 12 || fail "the schedule started $(started) snapshots in $((60 * WAIT_SCALE)) s"
# Keep an early one of p1's: it must outlive retention everywhere.  The
# newest complete one, which retention leaves for 5 more of p1's; should
# it still be gone by the time keep reaches p1 (a busy machine), the next.
keep_one() {
	kept=$(sql 1 "SELECT id FROM snapshots WHERE role = 'initiator' AND status = 'complete' ORDER BY started_ms DESC LIMIT 1")
	[ -n "$kept" ] && ctl 1 keep "$kept" >"$T/out" 2>"$T/err"
}
retry 20 keep_one || fail "p1 kept no snapshot: '$kept': $(cat "$T/err")"
retry 120 reached 40 || fail "only $(started) snapshots"
mid0=$(size 0) mid1=$(size 1)
retry 300 reached 200 || fail "only $(started) snapshots in time"
for n in 0 1 2; do expect_rc 0 ctl "$n" schedule pause; done
total=$(started)
echo "started $total scheduled snapshots"

# Each initiator keeps its 5 newest complete ones, and the kept one.
own_complete() { sql "$1" "SELECT count(*) FROM snapshots WHERE role = 'initiator' AND status = 'complete' AND NOT keep"; }
settled() {
	for n in 0 1 2; do
		[ "$(own_complete "$n")" = 5 ] || return 1
		[ "$(sql "$n" "SELECT count(*) FROM snapshots WHERE status = 'complete'")" = $((15 + 1)) ] || return 1
		[ "$(status_field "$n" forgets_pending)" = 0 ] || return 1
	done
}
retry 30 settled || {
	for n in 0 1 2; do
		echo "p$n: $(sql "$n" "SELECT initiator, status, count(*) FROM snapshots GROUP BY 1, 2")" >&2
	done
	fail "retention did not settle at 5 per initiator"
}
# The same snapshots everywhere: each node's list of complete ids.
ids() { sql "$1" "SELECT group_concat(id) FROM (SELECT id FROM snapshots WHERE status = 'complete' ORDER BY id)"; }
[ "$(ids 0)" = "$(ids 1)" ] && [ "$(ids 1)" = "$(ids 2)" ] ||
	fail "nodes hold different snapshots: $(ids 0) / $(ids 1) / $(ids 2)"
for n in 0 1 2; do
	[ "$(sql "$n" "SELECT count(*) FROM snapshots WHERE id = '$kept'")" = 1 ] ||
		fail "p$n lost the kept snapshot $kept"
done
# A kept snapshot can be let go: the next pass deletes it everywhere.
expect_rc 0 ctl 1 unkeep "$kept"
expect_rc 0 ctl 1 schedule resume
gone() { for n in 0 1 2; do [ "$(sql "$n" "SELECT count(*) FROM snapshots WHERE id = '$kept'")" = 0 ] || return 1; done; }
retry 30 gone || fail "$kept, no longer kept, was not deleted"
expect_rc 0 ctl 1 schedule pause

end0=$(size 0) end1=$(size 1)
echo "sizes after 40 and after $total snapshots: p0 $mid0 -> $end0, p1 $mid1 -> $end1 bytes"
for pair in "$mid0 $end0" "$mid1 $end1"; do
	set -- $pair
	[ "$2" -le $(($1 * 2 + 65536)) ] || fail "database grew from $1 to $2 bytes"
done
[ "$end0" -le 4194304 ] || fail "p0's database and WAL take $end0 bytes"
pass "retention"
