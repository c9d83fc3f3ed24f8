#!/bin/sh
# Conditions named in the cluster file: a condition that may not run
# (it writes) stops cutd at start (exit 78, naming the section); the
# others are judged by each initiator, within a shared time budget (two
# runaway queries use it up, and the condition after them is not judged), on every complete snapshot it
# started, recorded in snapshot_conditions (held 1, 0, NULL when it could
# not be judged), counted in status, and shown by show; a participant
# records nothing for snapshots it did not start.
. "$(dirname "$0")/lib.sh"
COND=$(dirname "$0")/../../examples/conditions
cluster 3
cp "$COND/conservation.sql" "$T/conservation.sql"
cp "$T/cluster.ini" "$T/bad.ini"
mkdir "$T/bad"
sed -i "s|^state_dir = .*|state_dir = $T/bad|; s|^run_dir = .*|run_dir = $T/bad|" "$T/bad.ini"
printf '[condition sneaky]\nsql = DELETE FROM snapshots WHERE id = :snapshot\n' >>"$T/bad.ini"
expect_rc 78 "$CUTD" --cluster "$T/bad.ini" --node p0
grep -q "bad.ini:.*\[condition sneaky\] a condition may only read: DELETE" "$T/err" ||
	fail "cutd did not name the bad condition: $(cat "$T/err")"
cat >>"$T/cluster.ini" <<'INI'
[condition conserved]
file = conservation.sql
[condition wrong]
sql = SELECT count(*) = 99 FROM recorded_states WHERE snapshot_id = :snapshot
[condition broken]
sql = SELECT json_extract('{', '$') WHERE :snapshot IS NOT NULL
[condition slow1]
sql = WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n WHERE :snapshot IS NOT NULL
[condition slow2]
sql = WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n WHERE :snapshot IS NOT NULL
[condition late]
sql = SELECT 1 WHERE :snapshot IS NOT NULL
INI
http_keys $((BASE + 4))
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
id1=$(snapshot 1)
check_snapshot 1 "$id1" 44
rows() { sql "$1" "SELECT group_concat(name || '=' || coalesce(held, 'NULL'), ',') FROM (SELECT name, held FROM snapshot_conditions WHERE snapshot_id = '$2' ORDER BY name)"; }
for id in $ids; do
	retry 10 sh -c "[ \"\$(sqlite3 '$T/p0.db' \"SELECT count(*) FROM snapshot_conditions WHERE snapshot_id = '$id'\")\" = 6 ]" ||
		fail "$id: no condition rows at p0"
	r=$(rows 0 "$id")
	[ "$r" = "broken=NULL,conserved=1,late=NULL,slow1=NULL,slow2=NULL,wrong=0" ] ||
		fail "$id at p0: $r"
	r=$(rows 1 "$id")
	[ -z "$r" ] || fail "participant p1 recorded $r for $id"
done
retry 10 sh -c "[ \"\$(sqlite3 '$T/p1.db' \"SELECT count(*) FROM snapshot_conditions WHERE snapshot_id = '$id1'\")\" = 6 ]" ||
	fail "$id1: no condition rows at p1"
d=$(sql 0 "SELECT detail FROM snapshot_conditions WHERE name = 'broken' LIMIT 1")
case "$d" in *"malformed JSON"*) ;; *) fail "broken: detail \"$d\"" ;; esac
d=$(sql 0 "SELECT detail FROM snapshot_conditions WHERE name = 'slow1' LIMIT 1")
case "$d" in *"deadline of 1000 ms"*) ;; *) fail "slow1: detail \"$d\"" ;; esac
d=$(sql 0 "SELECT detail FROM snapshot_conditions WHERE name = 'late' LIMIT 1")
case "$d" in *"2000 ms on this snapshot were used up"*) ;; *) fail "late: detail \"$d\"" ;; esac
d=$(sql 0 "SELECT detail FROM snapshot_conditions WHERE name = 'conserved' LIMIT 1")
case "$d" in "1|44|"*) ;; *) fail "conserved: detail \"$d\"" ;; esac
last=${ids##* }
ctl 0 status --json >"$T/status.json" || fail "status"
python3 - "$T/status.json" "$last" <<'PY' || fail "status: $(cat "$T/status.json")"
import json, sys
c = {x["name"]: x for x in json.load(open(sys.argv[1]))["conditions"]}
assert set(c) == {"conserved", "wrong", "broken", "slow1", "slow2", "late"}, c
assert c["late"]["failed"] == 3, c
assert (c["conserved"]["evaluated"], c["conserved"]["held"]) == (3, 3), c
assert (c["wrong"]["not_held"], c["wrong"]["held"]) == (3, 0), c
assert (c["broken"]["failed"], c["broken"]["last_held"]) == (3, None), c
assert all(x["last_snapshot_id"] == sys.argv[2] for x in c.values()), c
assert c["conserved"]["last_held"] is True, c
PY
ctl 0 status | grep -q "conserved *3 / 0 / 0  $last holds" || fail "status text: $(ctl 0 status)"
ctl 0 show "$last" | grep -q "wrong *does not hold" || fail "show: $(ctl 0 show "$last")"
ctl 0 show --json "$last" | python3 -c '
import json, sys
c = {x["name"]: x["held"] for x in json.load(sys.stdin)["conditions"]}
assert c == {"broken": None, "conserved": True, "wrong": False,
             "slow1": None, "slow2": None, "late": None}, c' || fail "show --json"
grep -q "condition conserved holds" "$T/cutd-p0.log" || fail "p0 did not log the results"
# The metrics count the same.
curl -sf "http://127.0.0.1:$((BASE + 4))/metrics" >"$T/m0.txt" || fail "cannot scrape p0"
for want in conserved:held:3 conserved:not_held:0 wrong:not_held:3 \
	broken:failed:3 late:failed:3; do
	name=${want%%:*}
	rest=${want#*:}
	got=$(metric "$T/m0.txt" cutd_condition_evaluations_total node=p0 \
		condition="$name" result="${rest%%:*}")
	[ "$got" = "${rest#*:}" ] || fail "metric $want: $got"
done
pass "cluster-file conditions"
