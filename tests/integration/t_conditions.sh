#!/bin/sh
# Conditions on the token bank: a bad condition, and every kind of write,
# are refused before the first snapshot (exit 65, no snapshot taken,
# nothing changed); the conservation condition (examples/conditions/
# conservation.sql) holds, and a wrong total never does (exit 2 at
# --timeout); a runaway query is stopped at its deadline and the daemon
# goes on answering; a participant refuses to judge a snapshot it holds
# only its part of.
. "$(dirname "$0")/lib.sh"
COND=$(dirname "$0")/../../examples/conditions
cluster 3
start_daemons
start_app 0 18 --rate 50
start_app 1 14 --rate 50
start_app 2 12 --rate 50
sleep 1
count() { sql 0 "SELECT count(*) FROM snapshots"; }

expect_rc 64 ctl 0 watch
expect_rc 64 ctl 0 watch --condition 'SELECT :snapshot' --condition-file "$T/x.sql"
expect_rc 64 ctl 0 watch --every 50ms --condition 'SELECT :snapshot'
expect_rc 64 ctl 0 watch --every 2h --condition 'SELECT :snapshot'
expect_rc 64 ctl 0 evaluate --condition 'SELECT :snapshot'

expect_rc 65 ctl 0 watch --every 200ms --timeout 10s --condition 'SELEC 1'
grep -q 'syntax error' "$T/err" || fail "no syntax error: $(cat "$T/err")"
expect_rc 65 ctl 0 watch --timeout 10s --condition 'SELECT 1'
grep -q ':snapshot' "$T/err" || fail "no word of :snapshot: $(cat "$T/err")"
expect_rc 65 ctl 0 watch --timeout 10s \
	--condition 'SELECT count(*) FROM no_such_view WHERE snapshot_id = :snapshot'
grep -q 'no such table: no_such_view' "$T/err" || fail "$(cat "$T/err")"
expect_rc 66 ctl 0 watch --timeout 10s --condition-file "$T/no-such-file.sql"
before=$(sql 0 "SELECT group_concat(key || '=' || value) FROM meta")
for q in "DELETE FROM snapshots WHERE id = :snapshot" \
	"INSERT INTO meta (key, value) SELECT :snapshot, 1" \
	"UPDATE meta SET value = 0 WHERE key = :snapshot" \
	"ATTACH '$T/other.db' AS other" \
	"PRAGMA query_only = OFF" \
	"PRAGMA user_version = 9" \
	"DROP VIEW in_transit" \
	"SELECT load_extension('$T/x.so') WHERE :snapshot IS NOT NULL" \
	"SELECT :snapshot; DELETE FROM snapshots"; do
	expect_rc 65 ctl 0 watch --timeout 10s --condition "$q"
	grep -qE 'may only read|one statement' "$T/err" ||
		fail "$q: $(cat "$T/err")"
done
[ "$(count)" = 0 ] || fail "$(count) snapshots taken by refused watches"
[ ! -e "$T/other.db" ] || fail "ATTACH made $T/other.db"
[ "$(sql 0 "SELECT group_concat(key || '=' || value) FROM meta")" = "$before" ] ||
	fail "meta changed"
[ "$(sql 0 'PRAGMA user_version')" = 3 ] || fail "user_version changed"
echo "ok: bad and writing conditions refused before any snapshot"

expect_rc 0 ctl 0 watch --every 500ms --timeout 30s \
	--condition-file "$COND/conservation.sql"
id=$(cat "$T/out")
check_snapshot 0 "$id" 44
expect_rc 0 ctl 0 evaluate "$id" --condition-file "$COND/conservation.sql"
grep -q '^value 1|44|' "$T/out" || fail "evaluate: $(cat "$T/out")"
# The same check against a wrong total: never holds.
sed 's/total = 44/total = 45/' "$COND/conservation.sql" >"$T/wrong.sql"
expect_rc 1 ctl 0 evaluate "$id" --condition-file "$T/wrong.sql"
expect_rc 2 ctl 0 watch --every 500ms --timeout 3s --condition-file "$T/wrong.sql"
judged=$(grep -c "does not hold (0|44|" "$T/err")
[ "$judged" -ge 2 ] || fail "want 2 or more snapshots judged, got $judged: $(cat "$T/err")"
# p1 holds only its own part of p0's snapshot.
expect_rc 65 ctl 1 evaluate "$id" --condition-file "$COND/conservation.sql"
grep -q 'evaluate at its initiator, p0' "$T/err" || fail "$(cat "$T/err")"
expect_rc 65 ctl 0 evaluate p0:1 --condition-file "$COND/conservation.sql"
echo "ok: conservation holds on $id, a wrong total on none of $judged"

# A runaway query: stopped at its deadline (1 s), and the daemon answers.
t0=$(date +%s)
expect_rc 75 ctl 0 evaluate "$id" --condition \
	"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n WHERE :snapshot IS NOT NULL"
t1=$(date +%s)
grep -q 'deadline of 1000 ms' "$T/err" || fail "$(cat "$T/err")"
# The daemon's words say its deadline stopped it (a call that timed out
# would say otherwise); the wall clock only that it did not run on: on a
# loaded machine starting cutctl alone can take seconds.
[ $((t1 - t0)) -le 15 ] || fail "the runaway query took $((t1 - t0)) s"
expect_rc 0 ctl 0 status
id2=$(snapshot 0)
check_snapshot 0 "$id2" 44
pass "conditions"
