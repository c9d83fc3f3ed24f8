#!/bin/sh
# Three nodes, every ordered pair a channel: snapshots from two initiators
# while tokens move conserve the 44 tokens and pass the audit.
. "$(dirname "$0")/lib.sh"
cluster 3
start_daemons
start_app 0 18 --rate 200
start_app 1 14 --rate 200
start_app 2 12 --rate 200
sleep 1
id=$(snapshot 0)
check_snapshot 0 "$id" 44
id=$(snapshot 1)
check_snapshot 1 "$id" 44
pass "three nodes"
