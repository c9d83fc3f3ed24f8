#!/bin/sh
# Restore, with the token bank (44 tokens in all):
#  1. A snapshot taken under load is restored into the running cluster:
#     every application gets its recorded balance, the recorded in-flight
#     amounts are delivered again, and a snapshot right after the restore
#     and another after more traffic both total 44.  The restores table
#     says generation 1 on every node.
#  2. Refusals change nothing: an unknown id, a restore at a participant,
#     a node whose application is gone, a node that is not reachable.
#  3. The whole cluster stopped and started afresh (new daemons, new
#     applications with their initial balances, now sending as fast as
#     their small windows let them, so that sends wait for room when the
#     restore comes) and restored with `cutctl restore`: the restored
#     balances, then 44 again.
. "$(dirname "$0")/lib.sh"
CLUSTER_EXTRA="window = 65536"
cluster 3
http_keys $((BASE + 4))
start_daemons
# gen_metric I: pI's cutd_restore_generation, scraped.
gen_metric() {
	curl -sf "http://127.0.0.1:$((BASE + 4 + $1))/metrics" >"$T/m$1.txt" ||
		fail "cannot scrape p$1"
	metric "$T/m$1.txt" cutd_restore_generation node="p$1"
}
[ "$(gen_metric 1)" = 0 ] || fail "p1's generation before any restore: $(gen_metric 1)"
start_app 0 18 --rate 200
start_app 1 14 --rate 200
start_app 2 12 --rate 200
sleep 1

# balance_of I ID: pI's recorded balance in ID, from p0's database.
balance_of() {
	sql 0 "SELECT json_extract(state, '\$.balance') FROM recorded_states
	       WHERE snapshot_id = '$2' AND node = 'p$1'"
}
# restored_to I ID: the balance pI's application says it was restored to
# from ID (empty if it did not say).
restored_to() {
	sed -n "s/^tokenbank: restored p$1 to balance \([0-9-]*\) from $2\$/\1/p" \
		"$T/tokenbank-p$1.log" | tail -1
}
# check_restored ID: every application took its recorded balance.
check_restored() {
	for n in 0 1 2; do
		want=$(balance_of "$n" "$1")
		wait_for "[ -n \"\$(sed -n 's/^tokenbank: restored p$n to balance .* from $1\$/x/p' '$T/tokenbank-p$n.log')\" ]" 10 ||
			fail "p$n's application never said it was restored from $1"
		got=$(restored_to "$n" "$1")
		[ "$got" = "$want" ] || fail "p$n restored to $got, recorded $want"
	done
}

# 1. Restore under load.
id1=""
for try in 1 2 3 4 5; do
	id=$(snapshot 0)
	check_snapshot 0 "$id" 44 >/dev/null
	id1=$id
	# A snapshot with messages in flight shows the replay.
	[ "$(sql 0 "SELECT in_transit FROM snapshot_summary WHERE id = '$id'")" -gt 0 ] && break
done
check_snapshot 0 "$id1" 44
inflight=$(sql 0 "SELECT in_transit FROM snapshot_summary WHERE id = '$id1'")
sleep 1
ctl 0 --json restore "$id1" >"$T/restore.json" ||
	fail "restore $id1: $(cat "$T/restore.json")"
python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
assert d['snapshot_id'] == sys.argv[2], d
assert d['generation'] == 1 and d['nodes'] == 3, d
assert d['replayed'] == int(sys.argv[3]), (d, sys.argv[3])
" "$T/restore.json" "$id1" "$inflight" || fail "restore reply: $(cat "$T/restore.json")"
check_restored "$id1"
for n in 0 1 2; do
	[ "$(sql "$n" "SELECT generation || ' ' || snapshot_id || ' ' || restorer FROM restores")" = "1 $id1 p0" ] ||
		fail "p$n's restores table: $(sql "$n" "SELECT * FROM restores")"
done
for n in 0 1 2; do
	ctl "$n" --json status | python3 -c "import json, sys
d = json.load(sys.stdin)
assert d['restore_generation'] == 1 and d['restore_phase'] == 'idle', d
assert d['app_restorable'] is True, d
assert d['restore_app_waits'] is False, d
if sys.argv[1] == '0':
    assert d['last_restore'] == sys.argv[2] and d['last_restore_result'] == 'done', d
" "$n" "$id1" || fail "p$n's status after the restore: $(ctl "$n" --json status)"
done
ctl 0 status | grep -q "^restore: generation 1, idle; application can restore; last: $id1 done" ||
	fail "status text: $(ctl 0 status | grep restore)"
for n in 0 1 2; do
	[ "$(gen_metric "$n")" = 1 ] || fail "p$n's cutd_restore_generation: $(gen_metric "$n")"
done
echo "ok: restored $id1 ($inflight in flight replayed): every balance as recorded"
id2=$(snapshot 0)
check_snapshot 0 "$id2" 44
sleep 1.5
id3=$(snapshot 0)
check_snapshot 0 "$id3" 44
# Traffic goes on after the restore: p1 received messages since.
before=$(wc -l <"$T/recv-p1.txt")
grew() { [ "$(wc -l <"$T/recv-p1.txt")" -gt "$before" ]; }
retry 5 grew || fail "no traffic after the restore"
echo "ok: after the restore, $id2 and $id3 total 44"

# 2. Refusals, each leaving the cluster as it was.
timeout 60 "$CUTCTL" --control "ipc://$T/p0.ctl" restore p0:999999 >"$T/out" 2>"$T/err" && fail "restore of an unknown id succeeded"
grep -qi "no such snapshot" "$T/err" || fail "unknown id said: $(cat "$T/err")"
timeout 60 "$CUTCTL" --control "ipc://$T/p1.ctl" restore "$id1" >"$T/out" 2>"$T/err" && fail "restore at a participant succeeded"
grep -q "run the restore at p0" "$T/err" || fail "restore at p1 said: $(cat "$T/err")"
kill "$APP_2"
# Bounded: an application that does not exit on SIGTERM is a failure of
# its own, not a reason to hang the suite.  30 s: a cut_send() may wait
# its 10 s send timeout, and cut_close() lingers, before it notices.
k=0
while st=$(ps -o stat= -p "$APP_2" 2>/dev/null) && [ -n "$st" ] && [ "${st#Z}" = "$st" ]; do
	k=$((k + 1))
	[ $k -lt 300 ] || { kill -9 "$APP_2"; fail "p2's application did not exit on SIGTERM within 30 s"; }
	sleep 0.1
done
wait "$APP_2" 2>/dev/null
timeout 60 "$CUTCTL" --control "ipc://$T/p0.ctl" restore "$id3" >"$T/out" 2>"$T/err" &&
	fail "restore without p2's application succeeded"
grep -q "p2: no application connected" "$T/err" || fail "restore without p2's application said: $(cat "$T/err")"
for n in 0 1; do
	[ "$(restored_to "$n" "$id3")" = "" ] || fail "p$n restored from $id3 though the restore failed"
	[ "$(sql "$n" "SELECT count(*) FROM restores")" = 1 ] || fail "p$n recorded a failed restore"
done
kill -STOP "$DAEMON_2"
# Until p0 finds p2 silent (2.5 s without a word).
p2_gone() { [ "$(peer_field 0 p2 connected)" = false ]; }
retry 10 p2_gone || { kill -CONT "$DAEMON_2"; fail "p0 still shows p2 connected"; }
timeout 60 "$CUTCTL" --control "ipc://$T/p0.ctl" restore "$id3" >"$T/out" 2>"$T/err" &&
	{ kill -CONT "$DAEMON_2"; fail "restore with p2 stopped succeeded"; }
grep -q "p2 is not reachable" "$T/err" ||
	{ kill -CONT "$DAEMON_2"; fail "restore with p2 stopped said: $(cat "$T/err")"; }
kill -CONT "$DAEMON_2"
echo "ok: refusals (unknown id, at a participant, no application, a node unreachable) change nothing"

# 3. Everything stopped, started afresh, and restored.
stop_apps
for p in $DAEMON_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
DAEMON_PIDS=""
start_daemons
start_app 0 18 --rate 20000
start_app 1 14 --rate 20000
start_app 2 12 --rate 20000
# Every application connected (a restore needs them all) and sending.
apps_up() {
	for n in 0 1 2; do
		[ "$(status_field "$n" app_connected)" = true ] || return 1
	done
}
retry 10 apps_up || fail "the applications did not connect"
sleep 0.5
ctl 0 --json restore "$id3" >"$T/restore.json" ||
	fail "restore of $id3 after a restart: $(cat "$T/restore.json") $(cat "$T/err" 2>/dev/null)"
grep -q '"generation": 2' "$T/restore.json" || fail "restore reply: $(cat "$T/restore.json")"
check_restored "$id3"
id4=$(snapshot 0)
check_snapshot 0 "$id4" 44
sleep 1.5
id5=$(snapshot 0)
check_snapshot 0 "$id5" 44
echo "ok: the cluster restarted from scratch and restored to $id3 totals 44"
pass "restore"
