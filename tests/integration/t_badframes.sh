#!/bin/sh
# Garbage, truncated, oversized and out-of-place frames on every socket of
# a daemon: it stays up, counts them, and the next snapshot succeeds.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
n=$(CUTFUZZ_CLUSTER="test$$" timeout 30 "$CUTFUZZ" peer "tcp://127.0.0.1:$BASE") ||
	fail "cutfuzz peer"
m=$(timeout 30 "$CUTFUZZ" app "ipc://$T/p0.app") || fail "cutfuzz app"
k=$(timeout 30 "$CUTFUZZ" control "ipc://$T/p0.ctl") || fail "cutfuzz control"
echo "sent $n peer, $m app, $k control frames"
sleep 0.5
kill -0 "$DAEMON_0" || fail "the daemon died"
status=$(ctl 0 --json status) || fail "status after the fuzz"
for f in bad_frames_peer bad_frames_app bad_frames_control; do
	v=$(printf '%s' "$status" | tr -d ' \n' | sed -n "s/.*\"$f\":\([0-9]*\).*/\1/p")
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "$f is '$v' after the fuzz: $status"
	echo "ok: $f = $v"
done
start_app 0 18 --rate 100
start_app 1 14 --rate 100
start_app 2 12 --rate 100
sleep 1
id=$(snapshot 0)
check_snapshot 0 "$id" 44
pass "bad frames"
