#!/bin/sh
# The README's first command: installs what is missing, builds, starts a
# three-node token bank (three cutd daemons and three tokenbank
# applications on loopback, in a temporary directory), takes a snapshot
# from p0 while tokens move, and shows it: each node's recorded balance,
# the messages in transit, the audit's verdict, and a sqlite3 query over
# p0's database that adds it all up to the 44 tokens the bank started
# with.  Then it restores that snapshot into the running cluster and
# prints the restored total (the balances each application was given
# plus the in-flight tokens replayed), and a snapshot after the restore.
# Every process it started is stopped when it ends, also when
# interrupted.
set -eu
cd "$(dirname "$0")/.."

./deploy/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target cutd cutctl tokenbank >/dev/null

T=$(mktemp -d "${TMPDIR:-/tmp}/cutd-demo.XXXXXX")
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

base=$((17000 + ($$ % 1000) * 3)) # below the ephemeral port range
cat >"$T/cluster.ini" <<EOT
[cluster]
name = demo
run_dir = $T
state_dir = $T

[node p0]
peer = tcp://127.0.0.1:$base
[node p1]
peer = tcp://127.0.0.1:$((base + 1))
[node p2]
peer = tcp://127.0.0.1:$((base + 2))
EOT

echo "== a three-node cluster in $T"
for n in p0 p1 p2; do
	build/bin/cutd --cluster "$T/cluster.ini" --node $n \
		--log-level warning 2>>"$T/cutd-$n.log" &
	PIDS="$PIDS $!"
done
ctl() { build/bin/cutctl --control "ipc://$T/$1.ctl" "$@"; }
for n in p0 p1 p2; do
	i=0
	until build/bin/cutctl --control "ipc://$T/$n.ctl" status >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "cutd $n did not start:"; cat "$T/cutd-$n.log"; exit 1; }
		sleep 0.1
	done
done

echo "== token banks p0, p1, p2 start with 18, 14 and 12 tokens (44 in all)"
set -- 18 14 12
for n in p0 p1 p2; do
	build/examples/tokenbank --app "ipc://$T/$n.app" --control "ipc://$T/$n.ctl" \
		--node $n --balance "$1" --rate 200 >/dev/null 2>>"$T/tokenbank-$n.log" &
	PIDS="$PIDS $!"
	shift
done
sleep 2

echo "== snapshot from p0 while tokens move"
# On loopback messages rarely stay in flight long; take a few snapshots
# and show one that caught some on the wire, if any did.
tries=0
while :; do
	id=$(build/bin/cutctl --control "ipc://$T/p0.ctl" snapshot)
	build/bin/cutctl --control "ipc://$T/p0.ctl" wait "$id"
	tries=$((tries + 1))
	n=$(sqlite3 "$T/p0.db" "SELECT count(*) FROM in_transit WHERE snapshot_id = '$id'")
	[ "$n" -gt 0 ] || [ $tries -ge 10 ] && break
	sleep 0.3
done
echo
build/bin/cutctl --control "ipc://$T/p0.ctl" show "$id"

echo
echo "== sqlite3 $T/p0.db: recorded balances plus tokens in transit"
query="SELECT (SELECT sum(json_extract(state, '\$.balance')) FROM recorded_states
                WHERE snapshot_id = '$id' AND is_json)
     + (SELECT coalesce(sum(json_extract(payload, '\$.amount')), 0) FROM in_transit
                WHERE snapshot_id = '$id' AND is_json) AS total;"
echo "$query"
sqlite3 -header -column "$T/p0.db" "$query"

n_inflight=$(sqlite3 "$T/p0.db" "SELECT coalesce(sum(json_extract(payload, '\$.amount')), 0) FROM in_transit WHERE snapshot_id = '$id' AND is_json")
echo
echo "== restore $id into the running cluster: every node goes back to it"
build/bin/cutctl --control "ipc://$T/p0.ctl" restore "$id"
sum=0
for n in p0 p1 p2; do
	i=0
	until grep -q "restored $n to balance .* from $id\$" "$T/tokenbank-$n.log"; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "$n was not restored:"; cat "$T/tokenbank-$n.log"; exit 1; }
		sleep 0.1
	done
	b=$(sed -n "s/^tokenbank: restored $n to balance \([0-9-]*\) from $id\$/\1/p" \
		"$T/tokenbank-$n.log" | tail -1)
	echo "   $n's application was given its recorded balance: $b"
	sum=$((sum + b))
done
restored=$((sum + n_inflight))
echo "   restored total: $sum in the balances + $n_inflight in flight, replayed to their receivers = $restored"
echo
echo "== a snapshot after the restore, while tokens move again"
sleep 1
id2=$(build/bin/cutctl --control "ipc://$T/p0.ctl" snapshot)
build/bin/cutctl --control "ipc://$T/p0.ctl" wait "$id2" >/dev/null
after=$(sqlite3 "$T/p0.db" "$(echo "$query" | sed "s/ AS total;//; s/$id/$id2/g")")
echo "   $id2: total $after"
[ "$restored" = 44 ] && [ "$after" = 44 ] || { echo "tokens not conserved"; exit 1; }
echo "== restored total: $restored"
