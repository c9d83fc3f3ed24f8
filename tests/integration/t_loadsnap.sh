#!/bin/sh
# Snapshots under full load: 8 nodes all-to-all, every application sending
# to every other as fast as the windows let it, and a snapshot every 200 ms.
# Every snapshot completes and is audited consistent, and every stream
# arrives whole, in order, once.
. "$(dirname "$0")/lib.sh"
BENCH=$BIN/tests/bench/cutbench
DURATION_MS=${DURATION_MS:-6000}
# Consistency under load is the subject, not how fast: on a busy machine
# (a second suite beside this one) markers behind full windows on 8 nodes
# can take more than 10 s.
DEADLINE_MS=30000
cluster 8
start_daemons
all="p0,p1,p2,p3,p4,p5,p6,p7"
i=0
while [ $i -lt 8 ]; do
	others=$(echo "$all" | tr ',' '\n' | grep -vx "p$i" | paste -sd, -)
	"$BENCH" app --app "ipc://$T/p$i.app" --node "p$i" --to "$others" \
		--expect "$others" --size 64 --duration-ms "$DURATION_MS" \
		--start-file "$T/go" --done-file "$T/done$i" --linger \
		--deadline-ms $((DURATION_MS + 120000)) >"$T/app$i.out" \
		2>>"$T/app$i.log" &
	PIDS="$PIDS $!"
	eval "APP_$i=$!"
	i=$((i + 1))
done
wait_for "[ -S $T/p7.app ]" 5
sleep 0.5
touch "$T/go"
ids=""
# A snapshot every 200 ms while the applications send, and at least 10
# in all: on a busy machine starting one (cutctl) can take a second, and
# the last ones then come as the streams end.
end=$(($(date +%s%N) + DURATION_MS * 1000000))
n=0
while [ "$(date +%s%N)" -lt "$end" ] || [ $n -lt 10 ]; do
	ids="$ids $(snapshot $((n % 8)))"
	n=$((n + 1))
	sleep 0.2
done
n=0
for id in $ids; do
	node=${id%%:*}
	node=${node#p}
	st=$(wait_done "$node" "$id" 30)
	[ "$st" = complete ] || fail "snapshot $id: $st ($(sql "$node" "SELECT reason FROM snapshots WHERE id = '$id'"))"
	[ "$(sql "$node" "SELECT consistent FROM snapshots WHERE id = '$id'")" = 1 ] ||
		fail "snapshot $id: audit says $(sql "$node" "SELECT audit_reason FROM snapshots WHERE id = '$id'")"
	n=$((n + 1))
done
[ $n -ge 10 ] || fail "only $n snapshots were taken"
transit=0
for id in $ids; do
	node=${id%%:*}
	t=$(sql "${node#p}" "SELECT in_transit FROM snapshot_summary WHERE id = '$id'")
	transit=$((transit + t))
done
echo "ok: $n snapshots under load, all complete and consistent, $transit messages in transit in all"
wait_for "[ -f $T/done0 ] && [ -f $T/done1 ] && [ -f $T/done2 ] && [ -f $T/done3 ] && [ -f $T/done4 ] && [ -f $T/done5 ] && [ -f $T/done6 ] && [ -f $T/done7 ]" 60 ||
	fail "the applications did not finish"
total=0
i=0
while [ $i -lt 8 ]; do
	eval "kill \$APP_$i"
	eval "wait \$APP_$i" || fail "p$i: $(cat "$T/app$i.out")"
	grep -q ' ok=1 ' "$T/app$i.out" || fail "p$i: $(cat "$T/app$i.out")"
	r=$(sed -n 's/.* recv=\([0-9]*\) .*/\1/p' "$T/app$i.out")
	total=$((total + r))
	i=$((i + 1))
done
echo "ok: $total messages received, every stream whole, in order, once"
pass "snapshots under load"
