#!/bin/sh
# Participants know the outcome: after a complete snapshot and after an
# aborted one, every participant's list and show say what the initiator's
# say (status, reason, parts, audit), and that only the initiator holds
# the whole snapshot.
DEADLINE_MS=2000
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100
sleep 0.5

# summary I ID: the fields of ID in pI's `cutctl list --json` that must
# agree between nodes, on one line.
summary() {
	ctl "$1" --json list | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin)["snapshots"] if x["id"] == sys.argv[1]][0]
print(json.dumps([s["status"], s["reason"], s["parts_received"],
                  s["parts_expected"], s["audit"], s["initiator"]]))' "$2"
}
# field I ID FIELD: FIELD of `cutctl show --json ID` at pI.
field() {
	ctl "$1" --json show "$2" | python3 -c '
import json, sys
v = json.load(sys.stdin)[sys.argv[1]]
print(v if isinstance(v, str) else json.dumps(v))' "$3"
}
heard() { [ "$(field "$1" "$2" outcome_known)" = true ]; }
same() {
	want=$(summary 0 "$1")
	for n in 1 2; do
		retry 10 heard "$n" "$1" || fail "p$n never heard the outcome of $1"
		got=$(summary "$n" "$1")
		[ "$got" = "$want" ] || fail "p$n lists $1 as $got, p0 as $want"
		[ "$(field "$n" "$1" holds_all)" = false ] || fail "p$n claims all of $1"
		ps=$(field "$n" "$1" part_status)
		eval "case \$ps in $2) ;; *) fail \"p\$n: part of \$1 \$ps, want $2\" ;; esac"
		ctl "$n" show "$1" >"$T/show" || fail "show $1 at p$n"
		grep -q "the initiator p0 holds the whole snapshot" "$T/show" ||
			fail "p$n's show of $1 does not name the initiator: $(cat "$T/show")"
		if grep -q "audit pending\|outcome not heard" "$T/show"; then
			fail "p$n's show of $1: $(cat "$T/show")"
		fi
	done
	[ "$(field 0 "$1" holds_all)" = true ] || fail "p0 does not hold all of $1"
	echo "ok: $1 on every node: $want"
}

id=$(snapshot 0)
check_snapshot 0 "$id" 44
same "$id" complete
ctl 1 list | grep "$id" | grep -q "3/3 *consistent" || fail "p1's list: $(ctl 1 list)"

# Aborted: p2 stopped; p1's own part gives up with its own reason, the
# initiator's verdict names p2; p1 ends up saying what p0 says.
kill -STOP "$DAEMON_2"
id=$(snapshot 0)
st=$(wait_done 0 "$id" 10)
[ "$st" = aborted ] || { kill -CONT "$DAEMON_2"; fail "snapshot $id: $st"; }
want=$(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'")
retry 10 heard 1 "$id" || { kill -CONT "$DAEMON_2"; fail "p1 never heard $id"; }
[ "$(sql 1 "SELECT reason FROM snapshots WHERE id = '$id'")" = "$want" ] ||
	{ kill -CONT "$DAEMON_2"; fail "p1's reason differs from '$want'"; }
[ "$(sql 1 "SELECT part_status FROM snapshots WHERE id = '$id'")" = aborted ] ||
	{ kill -CONT "$DAEMON_2"; fail "p1's part of $id not aborted"; }
kill -CONT "$DAEMON_2"
# p2 wakes up: the markers, the abort and the outcome are queued for it;
# its own part may complete before it reads the abort, which changes
# nothing of the outcome.
same "$id" "aborted|complete"
echo "ok: $id aborted everywhere: $want"
id=$(snapshot 0)
check_snapshot 0 "$id" 44
same "$id" complete

# A participant that restarts loses what was on its link, outcomes too:
# p2's application does not answer, so p2's part waits; once p2 holds
# the snapshot its daemon is stopped, so the outcome (aborted) cannot
# reach it, and killed; started again, it marks its part aborted
# ("daemon restarted"), and p0 tells it the outcome again on the new
# link: p2 then says what p0 says.
kill -STOP "$APP_2"
id=$(snapshot 0)
wait_for "[ \"\$(sqlite3 $T/p2.db \"SELECT status FROM snapshots WHERE id = '$id'\")\" = in_progress ]" 5 ||
	fail "p2 never held $id"
kill -STOP "$DAEMON_2"
st=$(wait_done 0 "$id" 10)
[ "$st" = aborted ] || fail "snapshot $id with p2 stopped: $st"
kill -9 "$DAEMON_2"
wait "$DAEMON_2" 2>/dev/null
start_daemon 2
wait_for "$CUTCTL --control ipc://$T/p2.ctl status" 10 || fail "p2 did not come back"
kill -CONT "$APP_2"
same "$id" "aborted"
echo "ok: $id's outcome reached p2 after p2 restarted"
pass "outcome"
