#!/bin/sh
# Four initiators start snapshots at the same moment: all complete, each
# conserves the total and passes the audit.
. "$(dirname "$0")/lib.sh"
cluster 4
start_daemons
for i in 0 1 2 3; do start_app $i 25 --rate 200; done
sleep 1
for i in 0 1 2 3; do snapshot $i >"$T/id$i" & done
wait_for "test -s $T/id0 && test -s $T/id1 && test -s $T/id2 && test -s $T/id3" 10 ||
	fail "cutctl snapshot did not answer"
for i in 0 1 2 3; do check_snapshot $i "$(cat "$T/id$i")" 100; done
pass "four concurrent snapshots"
