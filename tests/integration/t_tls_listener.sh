#!/bin/sh
# nng 1.5.2's TLS listener can stop accepting for good (a connection that
# fails its negotiation with NNG_ECLOSED is taken for the listener's own
# close); connections then finish their handshake, which is all their
# dialer sees, and wait unread.  cutd dials its own listener now and then
# and starts it again when the probe is not accepted.
#
# 1. Healthy: the probe runs and changes nothing.  2. p0 is started with
# CUTD_TEST_DEAF_LISTENER, under which its first probe sees the
# listener's accept count stand still, as after the bug: p0 listens
# again, says so, counts it, and p1's next connection is authenticated and
# carries traffic.
. "$(dirname "$0")/lib.sh"
make_certs "$T/certs" p0 p1
tls_cluster 2 "$T/certs"
auth() { [ "$(peer_field "$1" "p$2" authenticated)" = true ] && [ "$(peer_field "$1" "p$2" connected)" = true ]; }
restarts() { ctl "$1" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tls_listener_restarts"])'; }

start_daemons
retry 20 auth 0 1 || fail "p0 does not show p1 authenticated: $(ctl 0 status)"
retry 20 auth 1 0 || fail "p1 does not show p0 authenticated: $(ctl 1 status)"
sleep 7 # past a periodic probe (every 5 s)
[ "$(restarts 0)" = 0 ] || fail "p0 restarted a healthy listener: $(grep 'listener' "$T/cutd-p0.log")"
[ "$(restarts 1)" = 0 ] || fail "p1 restarted a healthy listener: $(grep 'listener' "$T/cutd-p1.log")"
for i in 0 1; do
	eval "kill \$DAEMON_$i; wait \$DAEMON_$i"
done

export CUTD_TEST_DEAF_LISTENER=1
start_daemon 0
unset CUTD_TEST_DEAF_LISTENER
start_daemon 1
for i in 0 1; do
	wait_for "$CUTCTL --control ipc://$T/p$i.ctl status" 10 || fail "p$i did not come up"
done
retry 20 grep -q "TLS: this node's listener takes no connection" "$T/cutd-p0.log" ||
	fail "p0 did not find its listener deaf: $(cat "$T/cutd-p0.log")"
# At least once: on a busy machine a later probe may find the new
# listener slow as well (part 1 checks that a healthy one is left alone).
n=$(restarts 0)
[ "$n" -ge 1 ] || fail "p0's tls_listener_restarts: $n"
ctl 0 status | grep -q "^tls: listener started again [1-9][0-9]* times" || fail "status text: $(ctl 0 status)"
retry 20 auth 0 1 || fail "p0 does not authenticate p1 after listening again: $(ctl 0 status)"
start_app 0 22 --rate 100
start_app 1 22 --rate 100
id=$(snapshot 1)
check_snapshot 1 "$id" 44
pass "the TLS listener is checked and started again when it stops accepting"
