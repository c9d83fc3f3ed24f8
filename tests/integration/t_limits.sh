#!/bin/sh
# Limits on Start: with max_snapshots_in_flight = 3, three snapshots that
# stay in flight (no application has answered yet) are accepted and two
# more are refused with RESOURCE_EXHAUSTED (cutctl exit 75), changing
# nothing; once the applications come the three complete and consistent,
# and a fourth is accepted.  Then a reload sets start_rate = 1 and
# start_burst = 2: two quick starts pass, the third is refused, and one
# passes again a second later.
DEADLINE_MS=30000
. "$(dirname "$0")/lib.sh"
CLUSTER_EXTRA="max_snapshots_in_flight = 3
start_rate = 1000
start_burst = 1000"
cluster 2
start_daemons

# Without applications the snapshots wait for the states, up to 80 % of
# their 30 s deadline.
ids=""
for i in 1 2 3; do ids="$ids $(snapshot 0)"; done
for i in 1 2; do
	expect_rc 75 ctl 0 snapshot
	grep -q "the daemon is at its limit: /cut.v1.Snapshots/Start refused: 3 snapshots started at p0 are still in flight (max_snapshots_in_flight = 3)" "$T/err" ||
		fail "refusal $i: $(cat "$T/err")"
	grep -q RESOURCE_EXHAUSTED "$T/err" || fail "no status name: $(cat "$T/err")"
done
echo "ok: the 4th and 5th starts refused: $(cat "$T/err")"
n=$(sql 0 "SELECT count(*) FROM snapshots")
[ "$n" = 3 ] || fail "$n snapshots after the refusals, want 3"
n=$(ctl 0 --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["snapshots_in_progress"]), d["starts_limited"])')
[ "$n" = "3 2" ] || fail "status: in progress and refused '$n', want '3 2'"
echo "ok: 3 snapshots in flight, 2 starts refused, nothing else changed"

start_app 0 18 --rate 50
start_app 1 26 --rate 50
for id in $ids; do check_snapshot 0 "$id" 44; done
id=$(snapshot 0)
check_snapshot 0 "$id" 44
echo "ok: the slots are free again once the snapshots end"

# The rate: a reload takes the new bucket.
CLUSTER_EXTRA="max_snapshots_in_flight = 3
start_rate = 1
start_burst = 2"
cluster 2
kill -HUP "$DAEMON_0"
wait_for "grep -q 'reloaded' $T/cutd-p0.log" 5 || fail "p0 did not reload"
# Three quick starts: the third is refused, unless the three calls took a
# second or more (a loaded machine), when a token has come back; then the
# round is tried again with a fresh bucket, up to 5 times.
for round in 1 2 3 4 5; do
	sleep 2.1 # whatever was saved is capped at the new burst of 2
	t0=$(date +%s%N)
	a=$(snapshot 0)
	b=$(snapshot 0)
	ctl 0 snapshot >"$T/third" 2>"$T/err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$rc" = 75 ] && break
	[ "$ms" -ge 1000 ] || fail "3rd start within $ms ms not refused (exit $rc)"
	echo "note: 3 starts took $ms ms, a token came back; again"
	check_snapshot 0 "$(cat "$T/third")" 44
	check_snapshot 0 "$a" 44
	check_snapshot 0 "$b" 44
done
[ "$rc" = 75 ] || fail "the 3rd quick start was never refused"
grep -q "Start refused: over start_rate = 1 per second (start_burst = 2); try again in [0-9]* ms" "$T/err" ||
	fail "rate refusal: $(cat "$T/err")"
echo "ok: the 3rd quick start refused ($ms ms for the three): $(cat "$T/err")"
check_snapshot 0 "$a" 44
check_snapshot 0 "$b" 44
sleep 1.1
c=$(snapshot 0)
check_snapshot 0 "$c" 44
echo "ok: a start a second later passes"

# A TCP control endpoint cannot tell who calls: it reads, but refuses
# Start and Delete unless tcp_control = full, which a reload can set.
port=$((BASE + 5))
tcp_ini() {
	printf '[cluster]\nname = tcp%s\nrun_dir = %s\nstate_dir = %s\n%s\n' \
		"$$" "$T" "$T" "$1"
	printf '[node q0]\npeer = tcp://127.0.0.1:%s\n' $((BASE + 6))
	printf 'control = tcp://127.0.0.1:%s\n' "$port"
}
tcp_ini "tcp_control = read-only" >"$T/tcp.ini"
"$CUTD" --cluster "$T/tcp.ini" --node q0 2>>"$T/cutd-q0.log" &
q0=$!
PIDS="$PIDS $q0"
wait_for "$CUTCTL --control tcp://127.0.0.1:$port status" 10 ||
	fail "q0 did not come up"
expect_rc 0 "$CUTCTL" --control "tcp://127.0.0.1:$port" list
expect_rc 77 "$CUTCTL" --control "tcp://127.0.0.1:$port" snapshot
grep -q "Start starts a snapshot, and this control endpoint is TCP" "$T/err" ||
	fail "TCP refusal: $(cat "$T/err")"
echo "ok: over TCP, list works and snapshot is refused: $(cat "$T/err")"
tcp_ini "tcp_control = full" >"$T/tcp.ini"
kill -HUP "$q0"
wait_for "grep -q 'reloaded' $T/cutd-q0.log" 5 || fail "q0 did not reload"
expect_rc 0 "$CUTCTL" --control "tcp://127.0.0.1:$port" snapshot
echo "ok: with tcp_control = full, snapshot over TCP works"
pass "limits on Start"
