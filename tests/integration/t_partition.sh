#!/bin/sh
# A partition that heals: nftables drops every packet to and from p2's
# peer port for 6 s while p0 streams to p2.  Status on p0 says p2 is
# disconnected during the partition; after it heals the stream resumes
# within 2 s (as the receiving application sees it), every message
# arrives once and in order, and a snapshot afterwards is consistent.
# Needs root and nft (deploy/deps.sh).
. "$(dirname "$0")/lib.sh"
BENCH=$BIN/tests/bench/cutbench
command -v nft >/dev/null 2>&1 || fail "nft not installed"
TABLE="cutdtest$$"
heal() { nft delete table inet "$TABLE" 2>/dev/null; }
AT_EXIT=heal
cluster 3
start_daemons
port=$((BASE + 2))
"$BENCH" app --app "ipc://$T/p2.app" --node p2 --expect p0 --linger \
	--done-file "$T/done2" --deadline-ms 90000 >"$T/r2.out" 2>>"$T/r2.log" &
r2=$!
"$BENCH" app --app "ipc://$T/p1.app" --node p1 --linger \
	--deadline-ms 90000 >/dev/null 2>>"$T/r1.log" &
PIDS="$PIDS $! $r2"
"$BENCH" app --app "ipc://$T/p0.app" --node p0 --to p2 --rate 2000 \
	--duration-ms 14000 --size 64 --linger --deadline-ms 90000 \
	>"$T/s0.out" 2>>"$T/s0.log" &
PIDS="$PIDS $!"

# taken: messages p2's application has taken from p0, as p2 says.
taken() {
	ctl 2 --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([c for c in d["channels"] if c["src"] == "p0"][0]["taken"])'
}
# connected N PEER: "True" or "False", as pN sees PEER.
connected() {
	ctl "$1" --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([p for p in d["peers"] if p["node"] == sys.argv[1]][0]["connected"])' "$2"
}

sleep 2
[ "$(connected 0 p2)" = True ] || fail "p2 not connected before the partition"
nft -f - <<NFT || fail "nft"
table inet $TABLE {
	chain input {
		type filter hook input priority -10; policy accept;
		tcp dport $port drop
		tcp sport $port drop
	}
}
NFT
echo "ok: partition of p2's port $port"
wait_for "[ \"\$(BIN=$BIN; $CUTCTL --control ipc://$T/p0.ctl --json status | python3 -c 'import json,sys; print([p for p in json.load(sys.stdin)[\"peers\"] if p[\"node\"] == \"p2\"][0][\"connected\"])')\" = False ]" 10 ||
	fail "p0 still says p2 is connected $((10 * WAIT_SCALE)) s into the partition"
echo "ok: p0 says p2 is disconnected"
sleep 4
# The partition heals at t_heal (taken before, so that the measure can
# only be longer), on the clock cutbench reports arrivals with.
before=$(taken)
t_heal=$("$BENCH" now)
heal
resumed() { [ "$(taken)" -gt "$before" ]; }
retry 10 resumed || fail "the stream did not resume within $((10 * WAIT_SCALE)) s"
echo "ok: the stream resumed"
wait_for "[ -f $T/done2 ]" 60 || fail "p2 did not get the whole stream"
id=$(snapshot 0)
st=$(wait_done 0 "$id" 20)
[ "$st" = complete ] && [ "$(sql 0 "SELECT consistent FROM snapshots WHERE id = '$id'")" = 1 ] ||
	fail "snapshot $id after the partition: $st"
echo "ok: snapshot $id after the partition is consistent"
kill $r2
wait $r2 || fail "p2: $(cat "$T/r2.out")"
grep -q ' ok=1 ' "$T/r2.out" || fail "p2: $(cat "$T/r2.out")"
# When it resumed, as p2's application saw it: the longest time without
# a message is the partition, and the message that ended it came at most
# 2 s after the heal.  The README: a link resumes within about a second
# after a partition heals (a dialer that has not connected within a
# second is replaced); the second second is for a busy machine.
gap_end=$(($(sed -n 's/.* gap_end_ns=\([0-9]*\).*/\1/p' "$T/r2.out") / 1000000))
[ "$gap_end" -ge "$t_heal" ] ||
	fail "p2's longest wait for a message ended $((t_heal - gap_end)) ms before the heal: $(cat "$T/r2.out")"
ms=$((gap_end - t_heal))
[ "$ms" -le 2000 ] ||
	fail "the stream resumed $ms ms after the partition healed, as p2's application saw it (at most 2000)"
echo "ok: the stream resumed $ms ms after the partition healed, as p2's application saw it"
echo "ok: $(sed -n 's/.* recv=\([0-9]*\) .*/\1/p' "$T/r2.out") messages, whole, in order, once"
pass "partition"
