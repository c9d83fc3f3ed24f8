#!/bin/sh
# Eight nodes on a ring plus chords: snapshots from three initiators
# conserve the 80 tokens and pass the audit.
. "$(dirname "$0")/lib.sh"
cluster 8 "p0 -> p1" "p1 -> p2" "p2 -> p3" "p3 -> p4" "p4 -> p5" \
	"p5 -> p6" "p6 -> p7" "p7 -> p0" "p0 -> p4" "p2 -> p6" "p5 -> p1" \
	"p7 -> p3" "p3 -> p0"
start_daemons
i=0
while [ $i -lt 8 ]; do
	start_app $i 10 --rate 100
	i=$((i + 1))
done
sleep 1
for n in 0 3 6; do
	id=$(snapshot $n)
	check_snapshot $n "$id" 80
done
pass "eight nodes"
