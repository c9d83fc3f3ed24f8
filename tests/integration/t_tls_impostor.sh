#!/bin/sh
# A node that presents another node's certificate is refused: p2 runs with
# p1's certificate and key (both valid, from the cluster's CA).  Its TLS
# handshakes to p0 succeed, but its signed hello names p2 with a
# certificate for p1, so p0 and p1 close those connections; and their
# dialers refuse p2's listener, whose certificate does not name p2.  p2 is
# never heard from; p0 and p1 still talk.
. "$(dirname "$0")/lib.sh"
make_certs "$T/certs" p0 p1 p2
CERT_2=$T/certs/p1.pem KEY_2=$T/certs/p1.key tls_cluster 3 "$T/certs"
start_daemons
start_app 0 18 --rate 100

# refused I: pI refused p2's hello and its dialer refused p2's listener.
refused() {
	grep -q "TLS: p2: connection refused, claimed to come from it: the hello's certificate does not name it" "$T/cutd-p$1.log" &&
		grep -q "TLS: p2: TLS handshake of this node's dialer failed" "$T/cutd-p$1.log" &&
		[ "$(peer_field "$1" "p$((1 - $1))" authenticated)" = true ]
}
retry 20 refused 0 || fail "p0 did not refuse p2 both ways: $(ctl 0 status)"
retry 20 refused 1 || fail "p1 did not refuse p2 both ways: $(ctl 1 status)"
# linked I O: pI has pO connected and authenticated.
linked() {
	[ "$(peer_field "$1" "p$2" connected)" = true ] &&
		[ "$(peer_field "$1" "p$2" authenticated)" = true ]
}
sleep 1
for i in 0 1; do
	o=$((1 - i))
	[ "$(peer_field "$i" p2 connected)" = false ] || fail "p$i: p2 connected"
	[ "$(peer_field "$i" p2 last_seen_ms)" = 0 ] || fail "p$i accepted a batch from p2"
	[ "$(peer_field "$i" p2 authenticated)" = false ] || fail "p$i: p2 authenticated"
	[ "$(peer_field "$i" p2 auth_failures)" -gt 0 ] || fail "p$i counts no failure with p2"
	grep -q "TLS: p2: connection refused, claimed to come from it: the hello's certificate does not name it" "$T/cutd-p$i.log" ||
		fail "p$i did not refuse p2's hello"
	grep -q "TLS: p2: TLS handshake of this node's dialer failed" "$T/cutd-p$i.log" ||
		fail "p$i's dialer did not refuse p2's listener"
	# (On a busy machine a silent spell of 2.5 s makes a daemon drop
	# and dial a link again: the pair must be, or come back, together.)
	retry 10 linked "$i" "$o" || fail "p$i: p$o not connected and authenticated: $(ctl "$i" status)"
	[ "$(peer_field "$i" "p$o" auth_failures)" = 0 ] || fail "p$i: p$o auth failures"
done
# p2 knows its certificate does not name it, and said so at start.
grep -q "does not name node p2: peers will refuse this node" "$T/cutd-p2.log" ||
	fail "p2 did not warn about its certificate"
got=$(ctl 1 status --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
print([c for c in s["channels"] if c["src"] == "p0" and c["dst"] == "p1"][0]["delivered"])')
[ "$got" -gt 0 ] || fail "p1 received nothing from p0"
# A snapshot cannot include p2: it aborts, and says p2 is why.
id=$(snapshot 0)
st=$(wait_done 0 "$id" 20)
[ "$st" = aborted ] || fail "snapshot $id: $st"
sql 0 "SELECT reason FROM snapshots WHERE id = '$id'" | grep -q "p2" ||
	fail "snapshot $id aborted for: $(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'")"
pass "a node presenting another node's certificate is refused"
