#!/bin/sh
# cutctl and libcut without ceremony (issue 11, point 4): --help lists
# every exit status cutctl can return; which daemon cutctl and
# cut_open(NULL, NULL, ...) talk to when the flags do not say (flag >
# environment > the cluster file and the unit's /run/cutd), and what they
# say when nothing works; errors in plain words, with the gRPC code in
# --json's error document; deadline_ms filled in; status per direction;
# show --dot that dot accepts; the bash completion.
. "$(dirname "$0")/../integration/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CUTOPEN=$BIN/tests/cutopen
command -v python3 >/dev/null 2>&1 ||
	fail "python3 is missing (deploy/deps.sh installs it)"
command -v bash >/dev/null 2>&1 || fail "bash is missing"
unset CUTD_CONTROL CUTD_APP CUTD_NODE CUTD_CLUSTER
export CUTD_RUN_DIR="$T/none"
# The default cluster file is this host's business: the cases that need
# it absent are skipped when it is there.
NO_ETC=1
[ -e /etc/cutd/cluster.ini ] && NO_ETC=0

# jtest FILE EXPR...: FILE holds one JSON document, d, for which each
# Python expression EXPR is true.
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

# node_is NODE: the JSON status in $T/out is NODE's.
node_is() {
	jtest "$T/out" "d['node'] == '$1'"
}

# --- --help and every exit status ---------------------------------------

expect_rc 0 "$CUTCTL" --help
cp "$T/out" "$T/help"
# cutctl's own sources, and the error table (proto/errtab.h), which gives
# the exit status of every failure that has a CUT_E* code.
codes=$(python3 - "$SRC/libclient/cutctl" "$SRC/proto/errtab.h" <<'PY'
import os, re, sys
names = {}
for line in open("/usr/include/sysexits.h"):
    m = re.match(r"#define\s+(EX_\w+)\s+(\d+)", line)
    if m:
        names[m.group(1)] = int(m.group(2))
used = set()
src = open(sys.argv[2]).read()
for f in os.listdir(sys.argv[1]):
    if f.endswith(".c"):
        src += open(os.path.join(sys.argv[1], f)).read()
for m in re.finditer(r"#define\s+(EXIT_\w+)\s+(\d+)", src):
    names[m.group(1)] = int(m.group(2))
for m in re.finditer(r"\b(EX_[A-Z]+|EXIT_[A-Z_]+)\b", src):
    if m.group(1) in names:
        used.add(names[m.group(1)])
print(" ".join(str(c) for c in sorted(used)))
PY
) || fail "cannot list cutctl's exit statuses"
[ -n "$codes" ] || fail "no exit status found in cutctl's sources"
for c in $codes; do
	grep -qE "^ +$c [a-z]" "$T/help" || fail "--help does not list exit status $c"
done
echo "ok: --help lists every exit status cutctl uses: $codes"

# --- nothing to find ----------------------------------------------------

if [ $NO_ETC = 1 ]; then
	expect_rc 64 "$CUTCTL" status
	grep -q "no control socket: --control not given, CUTD_CONTROL unset, /etc/cutd/cluster.ini: No such file or directory, no control sockets in $T/none" "$T/err" ||
		fail "nothing found: $(cat "$T/err")"
	expect_rc 64 "$CUTCTL" --json status
	[ -s "$T/out" ] && fail "a --json error went to stdout: $(cat "$T/out")"
	jtest "$T/err" "d['error']['code'] is None" \
		"d['error']['exit_status'] == 64" \
		"d['error']['message'].startswith('no control socket')"
	expect_rc 1 "$CUTOPEN"
	grep -q 'cut_open: daemon unavailable' "$T/err" || fail "cutopen: $(cat "$T/err")"
fi
printf '[cluster]\nname = bad\n[node p0]\n' >"$T/bad.ini"
CUTD_CLUSTER=$T/bad.ini expect_rc 78 "$CUTCTL" status
grep -q "^$T/bad.ini:3: " "$T/err" || fail "bad cluster file: $(cat "$T/err")"
echo "ok: nothing found: 64, saying what was tried (text and JSON); a bad CUTD_CLUSTER: 78"

# --- a cluster ----------------------------------------------------------

cluster 3
start_daemons
start_app 0 18 --rate 200
start_app 1 14 --rate 200
sleep 0.5
export CUTD_CLUSTER="$T/cluster.ini"

expect_rc 64 "$CUTCTL" status
grep -q "names 3 nodes and more than one of their control sockets are on this host; say which with --node" "$T/err" ||
	fail "three nodes here: $(cat "$T/err")"
CUTD_NODE=p1 expect_rc 0 "$CUTCTL" --json status
node_is p1
CUTD_NODE=p1 expect_rc 0 "$CUTCTL" --node p2 --json status
node_is p2
CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 0 "$CUTCTL" --json status
node_is p2
CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 0 "$CUTCTL" --node p0 --json status
node_is p0
CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 0 "$CUTCTL" --control "ipc://$T/p1.ctl" --json status
node_is p1
CUTD_NODE=p1 CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 0 "$CUTCTL" --json status
node_is p2
expect_rc 78 "$CUTCTL" --node p9 status
grep -q "cluster.ini: no node \"p9\"" "$T/err" || fail "p9: $(cat "$T/err")"
expect_rc 64 "$CUTCTL" --control "ipc://$T/p1.ctl" --node p0 status
# A cluster file of one node needs no --node; one whose other nodes run
# elsewhere neither.
sed '/^\[node p2\]/,$d' "$T/cluster.ini" | sed '/^\[node p0\]/,/^\[node p1\]/{/^\[node p1\]/!d}' >"$T/one.ini"
CUTD_CLUSTER=$T/one.ini expect_rc 0 "$CUTCTL" --json status
node_is p1
sed "s|^\[node p2\]|&\ncontrol = ipc://$T/elsewhere/p2.ctl|; s|^\[node p1\]|&\ncontrol = ipc://$T/elsewhere/p1.ctl|" \
	"$T/cluster.ini" >"$T/here.ini"
CUTD_CLUSTER=$T/here.ini expect_rc 0 "$CUTCTL" --json status
node_is p0
echo "ok: --control > --cluster/--node > CUTD_CONTROL > CUTD_CLUSTER + CUTD_NODE > the only node here"

# The unit's run directory, without a cluster file.
mkdir "$T/rd" "$T/rd2"
ln -s "$T/p2.ctl" "$T/rd/p2.ctl"
ln -s "$T/p2.app" "$T/rd/p2.app"
ln -s "$T/p0.ctl" "$T/rd2/p0.ctl"
ln -s "$T/p1.ctl" "$T/rd2/p1.ctl"
unset CUTD_CLUSTER
if [ $NO_ETC = 1 ]; then
	CUTD_RUN_DIR=$T/rd expect_rc 0 "$CUTCTL" --json status
	node_is p2
	CUTD_RUN_DIR=$T/rd2 expect_rc 64 "$CUTCTL" status
	grep -q "several control sockets in $T/rd2" "$T/err" || fail "rd2: $(cat "$T/err")"
	CUTD_RUN_DIR=$T CUTD_NODE=p1 expect_rc 0 "$CUTCTL" --json status
	node_is p1
	echo "ok: without a cluster file, the only socket in CUTD_RUN_DIR, or CUTD_NODE's"
fi

# libcut: cut_open(NULL, NULL, ...) at p2, which has no application.
CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 0 "$CUTOPEN"
grep -q "^p2 test$$ " "$T/out" || fail "cutopen with CUTD_CONTROL: $(cat "$T/out")"
CUTD_RUN_DIR=$T CUTD_NODE=p2 expect_rc 0 "$CUTOPEN"
grep -q "^p2 " "$T/out" || fail "cutopen with CUTD_NODE: $(cat "$T/out")"
CUTD_RUN_DIR=$T expect_rc 0 "$CUTOPEN" p2
grep -q "^p2 " "$T/out" || fail "cutopen p2: $(cat "$T/out")"
CUTD_RUN_DIR=$T/rd expect_rc 0 "$CUTOPEN"
grep -q "^p2 " "$T/out" || fail "cutopen in rd: $(cat "$T/out")"
CUTD_CONTROL=ipc://$T/p2.ctl expect_rc 1 "$CUTOPEN" p1
grep -q "cut_open: no such node" "$T/err" || fail "cutopen p1 at p2: $(cat "$T/err")"
CUTD_CONTROL=tcp://127.0.0.1:1 expect_rc 1 "$CUTOPEN"
grep -q "cut_open: invalid argument" "$T/err" || fail "cutopen tcp: $(cat "$T/err")"
echo "ok: cut_open(NULL, NULL, NULL) from CUTD_CONTROL, CUTD_NODE, the node given, the run directory"

# --- errors in plain words ------------------------------------------------

start_app 2 12 --rate 200
sleep 0.5

expect_rc 65 ctl 0 show p0:999
[ "$(cat "$T/err")" = "cutctl: no such snapshot: p0:999" ] || fail "show p0:999: $(cat "$T/err")"
expect_rc 65 ctl 0 --json show p0:999
[ -s "$T/out" ] && fail "a --json error went to stdout: $(cat "$T/out")"
jtest "$T/err" "d == {'error': {'code': 'NOT_FOUND', 'message': 'no such snapshot: p0:999', 'exit_status': 65}}"
expect_rc 65 ctl 0 export p0:999
[ "$(cat "$T/err")" = "cutctl: no such snapshot: p0:999" ] || fail "export p0:999: $(cat "$T/err")"
expect_rc 65 ctl 0 --json delete p0:999
jtest "$T/err" "d['error']['code'] == 'NOT_FOUND'"
expect_rc 69 "$CUTCTL" --json --control "ipc://$T/nosuch.ctl" status
jtest "$T/err" "d['error']['code'] is None" "d['error']['exit_status'] == 69" \
	"'daemon unavailable' in d['error']['message']"
expect_rc 64 "$CUTCTL" --json --frobnicate
jtest "$T/err" "d['error']['exit_status'] == 64" \
	"'unknown option --frobnicate' in d['error']['message']"
echo "ok: errors in plain words; --json errors on stderr with the gRPC code"

# --- deadline_ms ----------------------------------------------------------

expect_rc 0 ctl 0 --json snapshot --wait --deadline 4000
jtest "$T/out" "d['status'] == 'complete'" \
	"isinstance(d['deadline_ms'], int)" \
	"abs(d['deadline_ms'] - d['started_ms'] - 4000) <= 5"
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/out")
expect_rc 0 ctl 0 --json show "$ID"
jtest "$T/out" "isinstance(d['deadline_ms'], int)"
expect_rc 0 ctl 0 --json snapshot
jtest "$T/out" "isinstance(d['id'], str)"
ID2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/out")
expect_rc 0 ctl 0 --json wait "$ID2"
jtest "$T/out" "abs(d['deadline_ms'] - d['started_ms'] - 5000) <= 5"
echo "ok: deadline_ms is a number: --deadline's, else the cluster's"

# --- status per direction -------------------------------------------------

expect_rc 0 ctl 0 status
grep -q '^outgoing channels (2)' "$T/out" || fail "status: $(cat "$T/out")"
grep -q '^incoming channels (2)' "$T/out" || fail "status: $(cat "$T/out")"
grep -A1 '^outgoing' "$T/out" | grep -qE '^ +to +sent +acked +queued' || fail "status: $(cat "$T/out")"
grep -A1 '^incoming' "$T/out" | grep -qE '^ +from +delivered +taken +waiting' || fail "status: $(cat "$T/out")"
grep -A1 '^incoming' "$T/out" | grep -q 'sent\|acked' && fail "incoming has sender columns: $(cat "$T/out")"
expect_rc 0 ctl 0 --json status
jtest "$T/out" "[c['direction'] for c in d['channels'] if c['src'] == 'p0'] == ['out', 'out']" \
	"[c['direction'] for c in d['channels'] if c['dst'] == 'p0'] == ['in', 'in']"
echo "ok: status has a table per direction, JSON a direction per channel"

# --- show --dot -----------------------------------------------------------

expect_rc 0 ctl 0 show --dot "$ID"
cp "$T/out" "$T/cut.dot"
head -n 1 "$T/cut.dot" | grep -q "^digraph \"$ID\" {" || fail "dot: $(cat "$T/cut.dot")"
[ "$(grep -c ' -> .*label="m=[0-9]* n=[0-9]*\\nin transit [0-9]*"' "$T/cut.dot")" = 6 ] ||
	fail "dot: not 6 channels: $(cat "$T/cut.dot")"
[ "$(grep -c '^  "p[0-2]" \[label=' "$T/cut.dot")" = 3 ] || fail "dot: not 3 nodes: $(cat "$T/cut.dot")"
if command -v dot >/dev/null 2>&1; then
	dot -Tsvg "$T/cut.dot" >"$T/cut.svg" 2>"$T/dot.err" || fail "dot: $(cat "$T/dot.err")"
	[ -s "$T/dot.err" ] && fail "dot warns: $(cat "$T/dot.err")"
	grep -q '<svg' "$T/cut.svg" || fail "dot made no SVG"
	echo "ok: show --dot: dot -Tsvg accepts it"
else
	echo "ok: show --dot: 3 nodes, 6 channels (graphviz not installed)"
fi
expect_rc 64 ctl 0 show --dot --json "$ID"
expect_rc 64 ctl 0 list --dot

# --- bash completion ------------------------------------------------------

cat >"$T/comp.bash" <<BASH
. "$SRC/deploy/cutctl.bash"
PATH="$BIN/bin:\$PATH"
# comp LINE: COMPREPLY for LINE, with the cursor at its end, words split
# at colons as bash does.
comp() {
	COMP_LINE=\$1
	COMP_POINT=\${#COMP_LINE}
	local IFS=' '
	read -ra COMP_WORDS <<<"\${COMP_LINE//:/ : }"
	[[ \$COMP_LINE == *' ' ]] && COMP_WORDS+=("")
	COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1))
	_cutctl
	printf '%s\n' "\${COMPREPLY[@]}"
}
echo "commands: \$(comp 'cutctl sn' | tr '\n' ' ')"
echo "options: \$(comp 'cutctl --js' | tr '\n' ' ')"
echo "schedule: \$(comp 'cutctl schedule p' | tr '\n' ' ')"
echo "nodes: \$(comp 'cutctl --cluster $T/cluster.ini --node ' | tr '\n' ' ')"
echo "ids: \$(comp 'cutctl --control ipc://$T/p0.ctl show ' | tr '\n' ' ')"
echo "colon: \$(comp 'cutctl --control ipc://$T/p0.ctl show ${ID%%:*}:' | tr '\n' ' ')"
echo "status: \$(comp 'cutctl --control ipc://$T/p0.ctl status ' | tr '\n' ' ')"
echo "complete: \$(complete -p cutctl)"
BASH
bash "$T/comp.bash" >"$T/comp.out" 2>&1 || fail "completion: $(cat "$T/comp.out")"
grep -qx 'commands: snapshot ' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -qx 'options: --json ' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -qx 'schedule: pause ' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -qx 'nodes: p0 p1 p2 ' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -q "^ids: .*$ID " "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -q "^ids: .*$ID2 " "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -q "^colon: .*${ID#*:} " "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -qE '^status: +$' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
grep -qx 'complete: complete -F _cutctl cutctl' "$T/comp.out" || fail "completion: $(cat "$T/comp.out")"
echo "ok: bash completion: commands, options, schedule verbs, nodes, ids (also after a colon)"

pass "cutctl and libcut without ceremony"
