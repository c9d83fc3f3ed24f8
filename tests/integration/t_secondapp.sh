#!/bin/sh
# Status tells the truth about the application link.  A second
# application that tries to connect as a node whose application is
# connected is refused ("another application is connected") without
# disturbing the first: the first keeps its connection, status keeps
# saying so, and a snapshot afterwards completes with the first one's
# state.
. "$(dirname "$0")/lib.sh"
cluster 2
start_daemons
start_app 0 18 --rate 100
start_app 1 14 --rate 100
wait_for "$CUTCTL --control ipc://$T/p0.ctl status | grep -q '^application: connected'" 10 ||
	fail "p0's application did not connect"
# The second one, as p0.
"$TOKENBANK" --app "ipc://$T/p0.app" --control "ipc://$T/p0.ctl" \
	--node p0 --balance 99 --seed 9 --rate 100 >"$T/second.out" 2>"$T/second.log"
rc=$?
[ "$rc" != 0 ] || fail "the second application was let in"
grep -q "another application is connected" "$T/second.log" ||
	fail "the second application was not told why: $(cat "$T/second.log")"
echo "ok: the second application exited $rc: $(tail -n 1 "$T/second.log")"
kill -0 "$APP_0" || fail "the first application died"
ctl 0 status | grep -q '^application: connected' ||
	fail "status no longer shows the first application: $(ctl 0 status)"
echo "ok: p0 still shows its application connected"
sleep 0.5
id=$(snapshot 0)
check_snapshot 0 "$id" 32
pass "second application"
