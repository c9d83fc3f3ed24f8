#!/bin/sh
# cutctl for scripts: the exit statuses its --help documents (0, 1, 64, 65,
# 69, 75, 78) and the JSON each command prints with --json, checked field
# by field against a running three-node token bank (44 tokens), and
# `wait` printing nothing but its result when not on a terminal.
. "$(dirname "$0")/../integration/lib.sh"
command -v python3 >/dev/null 2>&1 ||
	fail "python3 is missing (deploy/deps.sh installs it)"

# jtest FILE EXPR...: FILE holds exactly one JSON document, d, for which
# each Python expression EXPR is true.
jtest() {
	python3 -c '
import json, sys
with open(sys.argv[1]) as f:
    d = json.load(f)
for e in sys.argv[2:]:
    if not eval(e):
        sys.exit("false: " + e)
' "$@" || fail "$1; the document: $(cat "$1")"
}

SUMMARY_KEYS="{'id', 'initiator', 'status', 'reason', 'started_ms',
	'finished_ms', 'duration_ms', 'deadline_ms', 'parts_received',
	'parts_expected', 'channels_recording', 'audit'}"

# --- without a daemon --------------------------------------------------------

expect_rc 0 "$CUTCTL" --help
grep -q '^usage: cutctl ' "$T/out" || fail "--help: $(cat "$T/out")"
grep -q '64 usage' "$T/out" || fail "--help does not list the exit statuses"
[ -s "$T/err" ] && fail "--help wrote to stderr"
expect_rc 0 "$CUTCTL" snapshot --help
grep -q 'snapshot \[--wait\]' "$T/out" || fail "snapshot --help: $(cat "$T/out")"
expect_rc 0 "$CUTCTL" --version
grep -q '^cutctl [0-9]' "$T/out" || fail "--version: $(cat "$T/out")"

expect_rc 64 "$CUTCTL"
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" frobnicate
grep -q 'unknown command "frobnicate"' "$T/err" || fail "$(cat "$T/err")"
[ -s "$T/out" ] && fail "a usage error wrote to stdout: $(cat "$T/out")"
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" --frobnicate status
grep -q 'unknown option --frobnicate' "$T/err" || fail "$(cat "$T/err")"
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" show
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" show a b
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" --timeout soon status
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" --json=yes status
expect_rc 64 "$CUTCTL" status
expect_rc 64 "$CUTCTL" --control "ipc://$T/p0.ctl" --cluster x --node p0 status
echo "ok: --help and --version exit 0; usage errors exit 64"

expect_rc 69 "$CUTCTL" --control "ipc://$T/nosuch.ctl" status
grep -q 'daemon unavailable' "$T/err" || fail "$(cat "$T/err")"
expect_rc 69 "$CUTCTL" --control "ipc://$T/nosuch.ctl" --json list
[ -s "$T/out" ] && fail "a failed --json command wrote to stdout: $(cat "$T/out")"
expect_rc 65 "$CUTCTL" --control "bogus://x" status
echo "ok: no daemon: 69; a URL that is none: 65"

printf '[cluster]\nname = bad\n[node p0]\n' >"$T/bad.ini"
expect_rc 78 "$CUTCTL" --cluster "$T/bad.ini" --node p0 status
grep -q "^$T/bad.ini:3: " "$T/err" || fail "bad cluster file: $(cat "$T/err")"
expect_rc 78 "$CUTCTL" --cluster "$T/missing.ini" --node p0 status

# --- a running cluster -------------------------------------------------------

cluster 3
expect_rc 78 "$CUTCTL" --cluster "$T/cluster.ini" --node p9 status
echo "ok: a bad cluster file, a missing one, an unknown node: 78"
start_daemons
start_app 0 18 --rate 200
start_app 1 14 --rate 200
# p2's application leaves its first state request unanswered.
start_app 2 12 --rate 200 --ignore-state-requests 1
sleep 0.5

# The first snapshot cannot complete before its 5 s deadline (long enough
# for a loaded machine to make the next two calls within it).  While it
# runs, deleting it and waiting 300 ms for it are refused for now (75);
# then `wait` blocks until the deadline, prints only the outcome, and
# exits 1.
expect_rc 0 ctl 0 snapshot --deadline 5000
id=$(cat "$T/out")
case "$id" in p0:[0-9]*) ;; *) fail "snapshot printed '$id'" ;; esac
expect_rc 75 ctl 0 delete "$id"
grep -q 'in progress' "$T/err" || fail "delete in progress: $(cat "$T/err")"
expect_rc 75 ctl 0 --timeout 300 wait "$id"
grep -q "$id still in progress" "$T/err" || fail "wait --timeout: $(cat "$T/err")"
[ -s "$T/out" ] && fail "a timed-out wait wrote to stdout: $(cat "$T/out")"
echo "ok: delete and wait --timeout on a snapshot in progress: 75"
expect_rc 1 ctl 0 wait "$id" </dev/null
[ -s "$T/err" ] && fail "wait wrote to stderr off a terminal: $(od -c "$T/err" | head)"
[ "$(wc -l <"$T/out")" = 1 ] || fail "wait printed: $(cat "$T/out")"
grep -q "^$id aborted in .*, [0-9]/3 parts, aborted: " "$T/out" ||
	fail "wait printed: $(cat "$T/out")"
echo "ok: wait off a terminal is quiet, prints '$(cat "$T/out")', exits 1"

# snapshot --wait --json: one SUMMARY, complete and consistent.
expect_rc 0 ctl 0 snapshot --wait --json
cp "$T/out" "$T/snap.json"
[ -s "$T/err" ] && fail "snapshot --wait --json wrote to stderr: $(cat "$T/err")"
jtest "$T/snap.json" "$SUMMARY_KEYS <= set(d)" \
	"d['status'] == 'complete' and d['initiator'] == 'p0'" \
	"d['parts_received'] == 3 and d['parts_expected'] == 3" \
	"d['channels_recording'] == 0 and d['reason'] == ''" \
	"d['audit'] == {'consistent': True, 'reason': d['audit']['reason']}" \
	"d['finished_ms'] >= d['started_ms'] > 1600000000000" \
	"d['duration_ms'] == d['finished_ms'] - d['started_ms']"
id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <"$T/snap.json")
check_snapshot 0 "$id" 44
echo "ok: snapshot --wait --json: $id complete, 3/3 parts, consistent"

# wait ID on a finished snapshot: the summary line, or the same SUMMARY.
expect_rc 0 ctl 0 wait "$id"
[ -s "$T/err" ] && fail "wait wrote to stderr: $(cat "$T/err")"
grep -qx "$id complete in .*, 3/3 parts, audit: consistent" "$T/out" ||
	fail "wait printed: $(cat "$T/out")"
expect_rc 0 ctl 0 --json wait "$id"
jtest "$T/out" "d == json.load(open('$T/snap.json'))"

# snapshot --json without --wait: the id and when it started.
expect_rc 0 ctl 0 --json snapshot
jtest "$T/out" "set(d) == {'id', 'started_ms'} and d['id'].startswith('p0:')"
id2=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <"$T/out")
[ "$(wait_done 0 "$id2" 10)" = complete ] || fail "$id2 did not complete"

# list --json: every snapshot, newest first.
expect_rc 0 ctl 0 list --json
jtest "$T/out" "set(d) == {'snapshots'} and len(d['snapshots']) == 3" \
	"all($SUMMARY_KEYS <= set(s) for s in d['snapshots'])" \
	"[s['id'] for s in d['snapshots']] == ['$id2', '$id', '$(sql 0 "SELECT id FROM snapshots WHERE status = 'aborted'")']" \
	"[s['status'] for s in d['snapshots']] == ['complete', 'complete', 'aborted']"
expect_rc 0 ctl 0 list --json --limit 1
jtest "$T/out" "[s['id'] for s in d['snapshots']] == ['$id2']"
echo "ok: list --json"

# show ID --json: SUMMARY, the three nodes with their states and the six
# channels.  A JSON state is embedded as the JSON value it is, an object
# here, not as a string; it is what the database holds.
expect_rc 0 ctl 0 show "$id" --json
for i in 0 1 2; do
	sql 0 "SELECT state FROM recorded_states WHERE snapshot_id = '$id' AND node = 'p$i' AND is_json" >"$T/state-p$i.json"
done
jtest "$T/out" "$SUMMARY_KEYS | {'nodes', 'channels'} <= set(d)" \
	"d['id'] == '$id' and d['status'] == 'complete'" \
	"sorted(n['node'] for n in d['nodes']) == ['p0', 'p1', 'p2']" \
	"all(n['content_type'] == 'application/json' and n['state_size'] > 0 for n in d['nodes'])" \
	"all(set(n['state']) == {'content_type', 'encoding', 'data'} for n in d['nodes'])" \
	"all(n['state']['content_type'] == 'application/json' and n['state']['encoding'] == 'json' for n in d['nodes'])" \
	"all(isinstance(n['state']['data'], dict) and isinstance(n['state']['data']['balance'], int) for n in d['nodes'])" \
	"all(n['state']['data'] == json.load(open('$T/state-%s.json' % n['node'])) for n in d['nodes'])" \
	"sorted((c['src'], c['dst']) for c in d['channels']) == [(s, t) for s in ('p0', 'p1', 'p2') for t in ('p0', 'p1', 'p2') if s != t]" \
	"all(c['count'] == c['n'] - c['m'] and 'messages' not in c for c in d['channels'])"
show_transit=$(python3 -c 'import json,sys; print(sum(c["count"] for c in json.load(sys.stdin)["channels"]))' <"$T/out")
[ "$show_transit" = "$(sql 0 "SELECT in_transit FROM snapshot_summary WHERE id = '$id'")" ] ||
	fail "show counts $show_transit in transit; the database disagrees"
echo "ok: show --json: 3 nodes, 6 channels, $show_transit in transit"

# export ID --json: the states and the messages, which add up to 44.
expect_rc 0 ctl 0 export "$id" --json
cp "$T/out" "$T/export.json"
jtest "$T/export.json" "d['id'] == '$id' and len(d['nodes']) == 3 and len(d['channels']) == 6" \
	"all(n['state']['encoding'] == 'json' and n['state']['data'] == json.load(open('$T/state-%s.json' % n['node'])) for n in d['nodes'])" \
	"all(len(c['messages']) == c['count'] and [m['seq'] for m in c['messages']] == list(range(c['m'] + 1, c['n'] + 1)) for c in d['channels'])" \
	"all(m['content_type'] == m['payload']['content_type'] == 'application/json' and m['payload']['encoding'] == 'json' for c in d['channels'] for m in c['messages'])" \
	"sum(n['state']['data']['balance'] for n in d['nodes']) + sum(m['payload']['data']['amount'] for c in d['channels'] for m in c['messages']) == 44"
# Without --json, export prints the same document.
expect_rc 0 ctl 0 export "$id"
cmp -s "$T/out" "$T/export.json" || fail "export and export --json differ"
echo "ok: export --json: balances plus in-transit amounts = 44"

# status --json: this node, its two peers, its six channels.
expect_rc 0 ctl 0 status --json
jtest "$T/out" "d['node'] == 'p0' and d['cluster'] == 'test$$' and d['app_connected'] is True" \
	"isinstance(d['version'], str) and d['uptime_ms'] > 0" \
	"sorted(p['node'] for p in d['peers']) == ['p1', 'p2'] and all(p['connected'] is True and p['last_seen_ms'] > 0 for p in d['peers'])" \
	"{(c['src'], c['dst']) for c in d['channels']} == {('p0', 'p1'), ('p0', 'p2'), ('p1', 'p0'), ('p2', 'p0')}" \
	"all({'sent', 'acked', 'delivered', 'queued'} <= set(c) for c in d['channels'])" \
	"sum(c['sent'] for c in d['channels'] if c['src'] == 'p0') > 0 and sum(c['delivered'] for c in d['channels'] if c['dst'] == 'p0') > 0" \
	"d['snapshots_in_progress'] == []" \
	"d['bad_frames'] == 0 == d['bad_frames_peer'] + d['bad_frames_app'] + d['bad_frames_control']"
echo "ok: status --json"

# delete ID --json, after which the snapshot is unknown: 65.
expect_rc 0 ctl 0 delete "$id" --json
jtest "$T/out" "d == {'deleted': '$id'}"
expect_rc 65 ctl 0 show "$id"
expect_rc 65 ctl 0 export "$id"
expect_rc 65 ctl 0 delete "$id"
expect_rc 65 ctl 0 show NOSUCH:1 --json
[ -s "$T/out" ] && fail "show NOSUCH:1 --json wrote to stdout: $(cat "$T/out")"
expect_rc 65 ctl 0 wait NOSUCH:1
expect_rc 0 ctl 0 list --json
jtest "$T/out" "'$id' not in [s['id'] for s in d['snapshots']] and len(d['snapshots']) == 2"
echo "ok: delete --json; unknown snapshots: 65"

# No [schedule] in the cluster file: showing it is no error, pausing or
# resuming it is a permanent one, 78 (a configuration error: it exited 75,
# "try again", as if it could pass), UNIMPLEMENTED, with the reason.
expect_rc 0 ctl 0 schedule show
grep -q "the cluster file has no \[schedule\]" "$T/out" || fail "schedule show: $(cat "$T/out")"
for verb in pause resume; do
	expect_rc 78 ctl 0 schedule "$verb"
	[ "$(cat "$T/err")" = "cutctl: the cluster file has no [schedule]" ] ||
		fail "schedule $verb: $(cat "$T/err")"
	expect_rc 78 ctl 0 --json schedule "$verb"
	jtest "$T/err" "d == {'error': {'code': 'UNIMPLEMENTED', 'message': 'the cluster file has no [schedule]', 'exit_status': 78}}"
done
echo "ok: schedule pause/resume without [schedule]: 78, UNIMPLEMENTED"

# The same daemon found through the cluster file.
expect_rc 0 "$CUTCTL" --cluster "$T/cluster.ini" --node p2 --json status
jtest "$T/out" "d['node'] == 'p2'"
pass "cutctl exit statuses and JSON"
