#!/bin/sh
# A daemon crash loses no application message.  Four nodes all-to-all
# send numbered streams while snapshots are taken one after another, and
# every daemon in turn is killed with SIGKILL and started again, several
# times.  Afterwards every stream has arrived whole, in order and once
# (cutbench checks each message's number and cut_msg_seq()), every
# snapshot ended complete and consistent or aborted with a reason, and
# every database passes integrity_check.
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-2}
NODES_N=4
DEADLINE_MS=4000
cluster $NODES_N
start_daemons
start_streams 3000 --deadline-ms 180000
sleep 0.5
touch "$T/go"
# Snapshots one after another from p0..p3 in turn, whatever happens.
(
	k=0
	while [ ! -f "$T/stop-snaps" ] && [ -z "${NOSNAP:-}" ]; do
		"$CUTCTL" --control "ipc://$T/p$((k % NODES_N)).ctl" snapshot \
			>>"$T/ids" 2>>"$T/snap-errors" || true
		k=$((k + 1))
		sleep 0.3
	done
) &
PIDS="$PIDS $!"
kills=0
r=0
while [ $r -lt "$ROUNDS" ]; do
	i=0
	while [ $i -lt $NODES_N ]; do
		sleep 1.5
		eval "pid=\$DAEMON_$i"
		kill -9 "$pid"
		wait "$pid" 2>/dev/null
		kills=$((kills + 1))
		sleep 0.3
		start_daemon "$i"
		i=$((i + 1))
	done
	r=$((r + 1))
done
sleep 2
touch "$T/stop-snaps"
# The senders stop; every stream must then end whole.
i=0
while [ $i -lt $NODES_N ]; do
	eval "kill -USR1 \$APP_$i"
	i=$((i + 1))
done
wait_for "[ -f $T/done0 ] && [ -f $T/done1 ] && [ -f $T/done2 ] && [ -f $T/done3 ]" 60 ||
	fail "the applications did not finish: $(cat "$T"/app*.out)"
# The cluster is whole again: a snapshot now completes, consistent.  (How
# many did during the kills depends on how busy the machine is: full-rate
# streams on 4 nodes, 4 s deadlines; this one has 30 s.)
final=$(ctl 0 snapshot --deadline 30000) || fail "cutctl snapshot at p0 failed"
st=$(wait_done 0 "$final" 60)
[ "$st" = complete ] ||
	fail "after the kills, snapshot $final: $st ($(sql 0 "SELECT reason FROM snapshots WHERE id = '$final'"))"
[ "$(sql 0 "SELECT consistent FROM snapshots WHERE id = '$final'")" = 1 ] ||
	fail "after the kills, snapshot $final: audit says $(sql 0 "SELECT audit_reason FROM snapshots WHERE id = '$final'")"
echo "ok: after the kills, snapshot $final complete and consistent"
sent=0
recv=0
i=0
while [ $i -lt $NODES_N ]; do
	eval "kill \$APP_$i"
	eval "wait \$APP_$i" || fail "p$i: $(cat "$T/app$i.out")"
	grep -q ' ok=1 ' "$T/app$i.out" || fail "p$i: $(cat "$T/app$i.out")"
	s=$(sed -n 's/.* sent=\([0-9]*\) .*/\1/p' "$T/app$i.out")
	n=$(sed -n 's/.* recv=\([0-9]*\) .*/\1/p' "$T/app$i.out")
	sent=$((sent + s))
	recv=$((recv + n))
	i=$((i + 1))
done
[ "$sent" -gt 0 ] || fail "nothing was sent"
# Each stream ends with an END message, which recv counts and sent not.
ends=$((NODES_N * (NODES_N - 1)))
[ "$recv" = $((sent + ends)) ] ||
	fail "$sent messages sent, $((recv - ends)) received"
echo "ok: $kills kills; $sent messages sent, $((recv - ends)) received, 0 lost, 0 duplicated, each stream whole and in order"
# Every snapshot ended, complete and consistent or aborted with a reason.
sleep 1
ok=0
aborted=0
for id in $(cat "$T/ids"); do
	node=${id%%:*}
	node=${node#p}
	st=$(wait_done "$node" "$id" 20)
	case "$st" in
	complete)
		[ "$(sql "$node" "SELECT consistent FROM snapshots WHERE id = '$id'")" = 1 ] ||
			fail "snapshot $id: audit says $(sql "$node" "SELECT audit_reason FROM snapshots WHERE id = '$id'")"
		ok=$((ok + 1))
		;;
	aborted)
		why=$(sql "$node" "SELECT reason FROM snapshots WHERE id = '$id'")
		[ -n "$why" ] || fail "snapshot $id aborted without a reason"
		aborted=$((aborted + 1))
		;;
	*) fail "snapshot $id: $st" ;;
	esac
done
[ $((ok + aborted)) -ge 3 ] || fail "only $((ok + aborted)) snapshots were taken"
i=0
while [ $i -lt $NODES_N ]; do
	[ "$(sql "$i" "PRAGMA integrity_check")" = ok ] || fail "p$i's database is damaged"
	i=$((i + 1))
done
echo "ok: $ok snapshots complete and consistent, $aborted aborted with a reason"
pass "daemon crashes lose nothing"
