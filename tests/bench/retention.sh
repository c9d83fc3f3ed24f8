#!/bin/sh
# retention.sh [SNAPSHOTS [KEEP [INTERVAL]]]: the database size under a
# schedule with retention, a soak run outside the suite.  A 3-node cluster
# on loopback (tokenbank applications trading at 50 messages a second
# each), [schedule] initiator = rotate every INTERVAL (default 100ms, the shortest),
# [retention] keep_last = KEEP (default 20), until the schedule has
# started SNAPSHOTS snapshots (default 10000).  Every 1000 it prints p0's
# database and WAL sizes, its page and free-list counts and how many
# snapshot rows it holds; at the end the same for every node.
#
#   BIN=build sh tests/bench/retention.sh            # the README's run
#   BIN=build sh tests/bench/retention.sh 2000 5 100ms
N=${1:-10000}
KEEP=${2:-20}
IV=${3:-100ms}
BIN=${BIN:-$(cd "$(dirname "$0")/../.." && pwd)/build}
SECTIONS="[schedule]
interval = $IV
initiator = rotate
[retention]
keep_last = $KEEP
keep_aborted = 10s"
. "$(dirname "$0")/../integration/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 50
start_app 1 14 --rate 50
start_app 2 12 --rate 50

started() {
	s=0
	for n in 0 1 2; do
		v=$(sched_field "$n" started) || v=0
		s=$((s + v))
	done
	echo "$s"
}
row() {
	db=$(stat -c %s "$T/p$1.db")
	wal=$(stat -c %s "$T/p$1.db-wal" 2>/dev/null || echo 0)
	pages=$(sql "$1" "PRAGMA page_count")
	free=$(sql "$1" "PRAGMA freelist_count")
	rows=$(sql "$1" "SELECT count(*) FROM snapshots")
	printf '%10s %6s %12s %12s %8s %8s %8s\n' "$2" "p$1" "$db" "$wal" "$pages" "$free" "$rows"
}
printf '%10s %6s %12s %12s %8s %8s %8s\n' snapshots node db_bytes wal_bytes pages free rows
t0=$(date +%s)
next=1000
while :; do
	s=$(started)
	if [ "$s" -ge "$next" ]; then
		row 0 "$s"
		next=$((next + 1000))
	fi
	[ "$s" -ge "$N" ] && break
	sleep 1
done
for n in 0 1 2; do ctl "$n" schedule pause >/dev/null; done
sleep 3
s=$(started)
echo "# $s snapshots in $(($(date +%s) - t0)) s; after the schedule stopped:"
for n in 0 1 2; do row "$n" "$s"; done
for n in 0 1 2; do
	echo "# p$n: $(sql "$n" "SELECT count(*) FROM snapshots WHERE role = 'initiator' AND status = 'complete'") own complete," \
		"$(sql "$n" "SELECT count(*) FROM snapshots WHERE status = 'aborted'") aborted," \
		"$(status_field "$n" forgets_pending) deletions pending," \
		"skipped $(sched_field "$n" skipped), failed $(sched_field "$n" failed)"
done
pass "retention soak"
