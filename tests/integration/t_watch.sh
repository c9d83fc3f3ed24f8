#!/bin/sh
# cutctl watch detects the termination of a diffusing computation
# (examples/diffuse.c, examples/conditions/termination.sql): never before
# it has really ended, and within two intervals after.  Ground truth: each
# node logs the wall-clock time of every job it received or worked off,
# and of every state it reported; on the snapshot that watch stops at,
# every node must have reported its state after its own last event (so
# the cut is after the end everywhere), and the snapshot must have
# started no later than two intervals after the last event anywhere.
. "$(dirname "$0")/lib.sh"
COND=$(dirname "$0")/../../examples/conditions
EVERY=1000
cluster 3
start_daemons
# p0 starts 6 jobs of 30 hops; 50 ms a job: 180 jobs, some 3 s on 3 nodes.
start_diffuse 0 --jobs 6 --ttl 30 --step-ms 50
start_diffuse 1 --step-ms 50
start_diffuse 2 --step-ms 50
expect_rc 0 ctl 0 watch --every ${EVERY}ms --timeout 90s \
	--condition-file "$COND/termination.sql"
id=$(cat "$T/out")
cp "$T/err" "$T/watch.err"
case "$id" in p0:*) ;; *) fail "watch printed \"$id\"" ;; esac
# The computation was under way when watch began: earlier snapshots did
# not hold, so this test would notice a condition that always holds.
grep -q "does not hold" "$T/watch.err" ||
	fail "no snapshot before $id was judged not to hold: $(cat "$T/watch.err")"
# Every job was worked off (6 jobs x 30 hops), as the snapshot says too.
worked=$(sql 0 "SELECT sum(json_extract(state, '\$.worked')) FROM recorded_states WHERE snapshot_id = '$id'")
[ "$worked" = 180 ] || fail "snapshot $id: $worked jobs worked, want 180"
last_all=0
for i in 0 1 2; do
	f=$T/diffuse-p$i.txt
	last=$(awk '$2 == "recv" || $2 == "work" { t = $1 } END { printf "%.0f\n", t }' "$f")
	rec=$(awk -v id="$id" '$2 == "state" && $3 == id { print $1 }' "$f")
	[ -n "$rec" ] || fail "p$i did not log its state for $id"
	[ "$rec" -ge "$last" ] ||
		fail "p$i reported its state for $id at $rec, before its last event at $last: detected too early"
	[ "$last" -gt "$last_all" ] && last_all=$last
done
started=$(sql 0 "SELECT started_ms FROM snapshots WHERE id = '$id'")
late=$((started - last_all))
[ "$late" -le $((2 * EVERY)) ] ||
	fail "snapshot $id started $late ms after the computation ended (> 2 x $EVERY ms)"
# A snapshot started after the end must hold (every node records after
# its own end): watch stopped at the first such one, or one before.
missed=$(sql 0 "SELECT count(*) FROM snapshots WHERE started_ms > $last_all AND started_ms < $started AND status = 'complete' AND consistent = 1")
[ "$missed" = 0 ] || fail "$missed snapshots started after the end and before $id did not stop watch"
held_not=$(grep -c "does not hold" "$T/watch.err")
echo "ok: $id: terminated at $last_all, snapshot started $late ms later; $held_not earlier snapshots did not hold"
pass "watch detects termination"
