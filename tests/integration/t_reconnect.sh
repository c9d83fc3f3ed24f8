#!/bin/sh
# Peer connections cut and restored while tokens move (SIGUSR1 makes a
# daemon close and reopen every peer socket, losing what nng had queued):
# every application's received stream equals what its peers sent, with no
# loss, duplicate or reordering, and snapshots taken across the outages
# conserve the total.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
for i in 0 1 2; do start_app $i 100 --rate 300 --sent-log "$T/sent-p$i.txt"; done
sleep 0.5
ids=""
for round in 1 2 3 4; do
	kill -USR1 "$DAEMON_1" || fail "signal"
	ids="$ids $(snapshot 0)"
	sleep 0.2
	kill -USR1 "$DAEMON_0" "$DAEMON_2" || fail "signal"
	sleep 0.3
done
for id in $ids; do check_snapshot 0 "$id" 300; done
# SIGUSR1 makes tokenbank stop sending and keep receiving; then let the
# links drain: every daemon's channels have nothing unacknowledged.
for i in 0 1 2; do eval "kill -USR1 \$APP_$i"; done
wait_for "for i in 0 1 2; do $CUTCTL --control ipc://$T/p\$i.ctl --json status | tr -d ' \n' | grep -q '\"queued\":[1-9]' && exit 1; done; exit 0" 20 ||
	fail "links did not drain"
sleep 1
for s in 0 1 2; do
	for r in 0 1 2; do
		[ $s = $r ] && continue
		awk -v to="p$r" '$1 == to { print $2 }' "$T/sent-p$s.txt" >"$T/want"
		awk -v from="p$s" '$1 == from { print $3 }' "$T/recv-p$r.txt" >"$T/got"
		n=$(wc -l <"$T/want")
		[ "$n" -gt 50 ] || fail "p$s sent only $n messages to p$r"
		cmp -s "$T/want" "$T/got" ||
			fail "p$s -> p$r: received stream differs from sent stream ($n sent, $(wc -l <"$T/got") received)"
		awk -v from="p$s" '$1 == from { if ($2 != ++k) exit 1 }' "$T/recv-p$r.txt" ||
			fail "p$s -> p$r: sequence numbers out of order"
		echo "ok: p$s -> p$r: $n messages, same order, none lost or repeated"
	done
done
pass "reconnects"
