#!/bin/sh
# Plaintext links cannot be silenced.  While three nodes stream numbered
# messages to each other, a stranger on the network dials p0's and p1's
# peer ports again and again and sends batches that claim to come from the
# other members: hellos with new, newer, older and no epochs, data at
# sequence 1, next and far ahead, acks and taken counts beyond what was
# sent, markers, aborts and parts.  The forged connections are counted
# and their batches dropped, a snapshot afterwards is complete and consistent, and every
# stream arrives whole, in order and once (a forged message reaching an
# application would break its stream).
. "$(dirname "$0")/lib.sh"
FORGE=$BIN/tests/cutforge
cluster 3
start_daemons
start_streams 2000 --deadline-ms 120000
sleep 0.5
touch "$T/go"
sleep 1
forged=0
for target in 0 1; do
	for claim in 0 1 2; do
		[ $claim = $target ] && continue
		n=$(timeout 60 "$FORGE" "tcp://127.0.0.1:$((BASE + target))" \
			"test$$" "p$claim" "p$target" 10) ||
			fail "cutforge at p$target as p$claim"
		forged=$((forged + n))
	done
done
echo "ok: $forged forged batches sent on 40 connections"
# The links carry on, and a snapshot of the streaming cluster is whole.
sleep 1
id=$(snapshot 0)
st=$(wait_done 0 "$id" 20)
[ "$st" = complete ] || fail "snapshot $id after the forgeries: $st ($(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'"))"
[ "$(sql 0 "SELECT consistent FROM snapshots WHERE id = '$id'")" = 1 ] ||
	fail "snapshot $id: audit says $(sql 0 "SELECT audit_reason FROM snapshots WHERE id = '$id'")"
echo "ok: snapshot $id complete and consistent, $(sql 0 "SELECT in_transit FROM snapshot_summary WHERE id = '$id'") in transit"
for i in 0 1 2; do
	ctl $i status | grep -q "p[0-2] *connected" || fail "p$i: a peer is disconnected"
done
for target in 0 1; do
	refused=$(ctl $target --json status | python3 -c '
import json, sys
print(sum(p.get("refused_connections", 0) for p in json.load(sys.stdin)["peers"]))')
	[ "$refused" -gt 0 ] || fail "p$target ignored no impostor connection"
	echo "ok: p$target ignored $refused impostor connections"
done
# Then the streams end: every one whole, in order, once.
for i in 0 1 2; do eval "kill -USR1 \$APP_$i"; done
wait_for "[ -f $T/done0 ] && [ -f $T/done1 ] && [ -f $T/done2 ]" 30 ||
	fail "the streams did not end: $(cat "$T"/app*.out)"
total=0
for i in 0 1 2; do
	eval "kill \$APP_$i"
	eval "wait \$APP_$i" || fail "p$i: $(cat "$T/app$i.out")"
	grep -q ' ok=1 ' "$T/app$i.out" || fail "p$i: $(cat "$T/app$i.out")"
	r=$(sed -n 's/.* recv=\([0-9]*\) .*/\1/p' "$T/app$i.out")
	total=$((total + r))
done
echo "ok: every stream whole, in order, once: $total messages"
pass "forged frames"
