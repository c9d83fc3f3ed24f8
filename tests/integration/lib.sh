# Shared pieces of the integration tests: a cluster of real cutd daemons
# and tokenbank applications on loopback, in a temporary directory that is
# removed, with every process, when the test ends (also on failure or
# interruption).
#
# A test sources this file with BIN set to the build directory, then calls
# cluster, start_daemons, start_apps, ... and fail/pass.

set -u
: "${BIN:?BIN must name the build directory}"
CUTD=$BIN/bin/cutd
CUTCTL=$BIN/bin/cutctl
TOKENBANK=$BIN/examples/tokenbank
CUTFUZZ=$BIN/tests/cutfuzz

T=$(mktemp -d "${TMPDIR:-/tmp}/cutd-test.XXXXXX")
# The tests call python3 many times, often in loops: when python3 is a
# version manager's shim (pyenv, asdf), each call first runs the manager,
# which costs ten times the interpreter's start (0.8 s on a busy machine).
# $T/bin/python3 is the interpreter the shim picks: CUT_PYTHON, which CMake
# found once for the suite, or found here.
if py=${CUT_PYTHON:-$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)} &&
	[ -x "$py" ] && mkdir -p "$T/bin" && ln -s "$py" "$T/bin/python3"; then
	PATH=$T/bin:$PATH
	export PATH
fi
PIDS=""
DAEMON_PIDS=""
NODES=0
# Ports: each test holds a block of PORT_SPAN ports of its own, BASE to
# BASE + PORT_SPAN - 1, and uses no others.  The blocks lie below the
# ephemeral range (where outgoing connections take their ports), and a
# block is held with flock(1) on a lock file shared by every copy of the
# suite on this machine (PORT_LOCKS): two tests, of one suite or of two
# suites in other build directories, never hold the same block, also while
# one of them has a daemon stopped and its port free.  The lock is on fd 9,
# which the daemons inherit, so it lasts until the last of them is gone; a
# killed test leaves no stale lock.  A block where anything else listens is
# skipped.  tests/unit/test_tls.c takes its ports the same way.
PORT_SPAN=64
PORT_LOCKS=${CUT_PORT_LOCKS:-/tmp/cutd-ports}
# busy_ports LO HI: 0 if something listens on a TCP port in [LO, HI).
busy_ports() {
	ss -ltnH 2>/dev/null | awk -v lo="$1" -v hi="$2" '
		{ n = split($4, a, ":"); p = a[n] + 0; if (p >= lo && p < hi) f = 1 }
		END { exit !f }'
}
claim_ports() {
	top=32768
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	[ -n "$lo" ] && [ "$lo" -lt "$top" ] && [ "$lo" -gt $((20000 + PORT_SPAN)) ] && top=$lo
	nblocks=$(((top - 20000) / PORT_SPAN))
	mkdir -p "$PORT_LOCKS" 2>/dev/null && chmod 1777 "$PORT_LOCKS" 2>/dev/null
	k=$(($$ % nblocks))
	tries=0
	while [ $tries -lt "$nblocks" ]; do
		b=$((20000 + k * PORT_SPAN))
		f=$PORT_LOCKS/block-$b.lock
		[ -e "$f" ] || { : >>"$f" && chmod 0666 "$f"; } 2>/dev/null
		# (A failed redirection of exec would end the shell: test first.)
		if [ -r "$f" ] && exec 9<"$f"; then
			if flock -n 9 && ! busy_ports "$b" $((b + PORT_SPAN)); then
				BASE=$b
				return 0
			fi
			exec 9<&-
		fi
		k=$(((k + 1) % nblocks))
		tries=$((tries + 1))
	done
	echo "FAIL: no free block of $PORT_SPAN ports in 20000-$top" >&2
	exit 1
}
claim_ports

# Sanitizer reports: ASan, LeakSanitizer (at exit) and UBSan all write to
# stderr, which every daemon's log receives.
SANITIZER_RE='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'

# sanitizer_check: 1 (and the reports on stderr) if a daemon's log holds
# a sanitizer report.  stopped lists the daemons that cleanup stopped
# with SIGTERM and that did not exit 0 (cutd exits 0 on SIGTERM): a
# leak, a crash or a hang at exit.
sanitizer_check() {
	bad=0
	for f in "$T"/cutd*.log; do
		[ -f "$f" ] || continue
		if grep -qE "$SANITIZER_RE" "$f"; then
			echo "FAIL: sanitizer report in $f:" >&2
			grep -E -A 12 "$SANITIZER_RE" "$f" | head -n 60 >&2
			bad=1
		fi
	done
	for s in $stopped; do
		echo "FAIL: daemon $s on SIGTERM" >&2
		bad=1
	done
	return $bad
}

# Stops everything; a test that passed fails here when one of its daemons
# did not stop cleanly or a sanitizer reported on one.  $1 is the test's
# exit status.  A test that must undo something of its own (a mount, an
# nft table, users) puts the commands in AT_EXIT: they run after the
# processes are gone and before the directory is removed.
cleanup() {
	rc=${1:-$?}
	# The daemons still running get SIGTERM, the normal shutdown, and
	# must exit 0; those that already ended (a zombie is not running)
	# were the test's business.
	running=""
	for p in $DAEMON_PIDS; do
		st=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && running="$running $p"
	done
	# (A process the test left stopped gets SIGTERM once it continues.)
	for p in $PIDS; do kill "$p" 2>/dev/null && kill -CONT "$p" 2>/dev/null; done
	# Give them 30 seconds to stop (a daemon stops in well under one, but
	# a busy machine can hold a process back for seconds), then make sure.
	i=0
	while [ $i -lt 300 ]; do
		alive=0
		for p in $PIDS; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	stopped=""
	for p in $PIDS; do
		wait "$p" 2>/dev/null
		st=$?
		case " $running " in
		*" $p "*) [ "$st" = 0 ] || stopped="$stopped $p:exit-$st" ;;
		esac
	done
	if ! sanitizer_check; then
		KEEP=1
		[ "$rc" = 0 ] && rc=1
	fi
	[ -n "${AT_EXIT:-}" ] && eval "$AT_EXIT"
	# A failed test's logs, whole (fail() shows their tails), stay in the
	# build directory: $BIN/failed/TEST.PID/.
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		keep=$BIN/failed/$(basename "$0" .sh).$$
		mkdir -p "$keep" 2>/dev/null &&
			find "$T" -maxdepth 1 -type f \( -name '*.log' -o -name '*.out' \
				-o -name '*.txt' -o -name '*.ini' \) \
				-exec cp {} "$keep/" \; 2>/dev/null &&
			echo "logs kept in $keep" >&2
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
	exit "$rc"
}
trap 'cleanup $?' EXIT
trap 'exit 130' INT TERM

fail() {
	echo "FAIL: $*" >&2
	for f in "$T"/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 20 "$f" >&2
	done
	exit 1
}

# cluster N [CHANNEL_LINES...]: writes $T/cluster.ini for nodes p0..pN-1;
# without channel lines every ordered pair is a channel.  DEADLINE_MS and
# CLUSTER_EXTRA (lines for [cluster]) adjust it; SECTIONS is appended
# (e.g. a [schedule] and a [retention] section).
cluster() {
	NODES=$1
	shift
	{
		printf '[cluster]\nname = test%s\nrun_dir = %s\nstate_dir = %s\n' "$$" "$T" "$T"
		printf 'deadline_ms = %s\n' "${DEADLINE_MS:-5000}"
		# More [cluster] settings, one "key = value" per line.
		[ -n "${CLUSTER_EXTRA:-}" ] && printf '%s\n' "$CLUSTER_EXTRA"
		i=0
		while [ "$i" -lt "$NODES" ]; do
			printf '[node p%s]\npeer = tcp://127.0.0.1:%s\n' "$i" $((BASE + i))
			i=$((i + 1))
		done
		[ -n "${SECTIONS:-}" ] && printf '%s\n' "$SECTIONS"
		if [ $# -gt 0 ]; then
			printf '[channels]\n'
			for c in "$@"; do printf 'channel = %s\n' "$c"; done
		fi
	} >"$T/cluster.ini"
}

start_daemon() {
	"$CUTD" --cluster "$T/cluster.ini" --node "p$1" --log-level info \
		2>>"$T/cutd-p$1.log" &
	PIDS="$PIDS $!"
	DAEMON_PIDS="$DAEMON_PIDS $!"
	eval "DAEMON_$1=$!"
}

start_daemons() {
	i=0
	while [ "$i" -lt "$NODES" ]; do
		start_daemon "$i"
		i=$((i + 1))
	done
	i=0
	while [ "$i" -lt "$NODES" ]; do
		wait_for "$CUTCTL --control ipc://$T/p$i.ctl status" 10 ||
			fail "daemon p$i did not come up"
		i=$((i + 1))
	done
}

# start_app I BALANCE [tokenbank options...]
start_app() {
	n=$1
	bal=$2
	shift 2
	"$TOKENBANK" --app "ipc://$T/p$n.app" --control "ipc://$T/p$n.ctl" \
		--node "p$n" --balance "$bal" --seed "$((n + 1))" \
		--log "$T/recv-p$n.txt" "$@" >"$T/tokenbank-p$n.out" \
		2>>"$T/tokenbank-p$n.log" &
	PIDS="$PIDS $!"
	eval "APP_$n=$!"
}

# start_diffuse I [diffuse options...]: examples/diffuse at pI (APP_I),
# logging every event to $T/diffuse-pI.txt.
start_diffuse() {
	n=$1
	shift
	"$BIN/examples/diffuse" --app "ipc://$T/p$n.app" --node "p$n" \
		--seed "$((n + 1))" --log "$T/diffuse-p$n.txt" "$@" \
		>"$T/diffuse-p$n.out" 2>>"$T/diffuse-p$n.log" &
	PIDS="$PIDS $!"
	eval "APP_$n=$!"
}

# start_streams RATE [cutbench options...]: one cutbench application per
# node (APP_i, output in $T/appI.out), each sending numbered 64-byte
# messages to every other node at RATE messages a second in all, and
# checking that every stream it receives is whole, in order and once.
# They start together once $T/go exists; each creates $T/doneI when the
# streams it expects have ended (after SIGUSR1 to the senders).
start_streams() {
	rate=$1
	shift
	all=$(i=0; while [ "$i" -lt "$NODES" ]; do echo "p$i"; i=$((i + 1)); done)
	i=0
	while [ "$i" -lt "$NODES" ]; do
		others=$(echo "$all" | grep -vx "p$i" | paste -sd, -)
		"$BIN/tests/bench/cutbench" app --app "ipc://$T/p$i.app" \
			--node "p$i" --to "$others" --expect "$others" --size 64 \
			--rate "$rate" --start-file "$T/go" --done-file "$T/done$i" \
			--linger "$@" >"$T/app$i.out" 2>>"$T/app$i.log" &
		PIDS="$PIDS $!"
		eval "APP_$i=$!"
		i=$((i + 1))
	done
}

# The waits below (wait_for, retry, wait_done) end as soon as what they
# wait for is there; they give up after their SECONDS times WAIT_SCALE,
# so that a busy machine (a second copy of the suite) slows a test down
# instead of failing it.
WAIT_SCALE=${CUT_WAIT_SCALE:-3}

# wait_for COMMAND SECONDS: retries COMMAND until it succeeds.
wait_for() {
	end=$(($(date +%s) + $2 * WAIT_SCALE))
	while [ "$(date +%s)" -le "$end" ]; do
		if sh -c "$1" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	return 1
}

ctl() {
	n=$1
	shift
	"$CUTCTL" --control "ipc://$T/p$n.ctl" "$@"
}

# look I ARGS...: a read-only call (status, schedule show) to pI, asked
# again when it times out (exit 75): on a busy machine a daemon can take
# longer than cutctl's 5 s to answer, and a helper that reads a field
# must not take a timeout for the field's value.
look() {
	k=0
	while :; do
		lout=$(ctl "$@")
		lrc=$?
		k=$((k + 1))
		if [ "$lrc" = 0 ] || [ "$lrc" != 75 ] || [ $k -ge 5 ]; then
			printf '%s\n' "$lout"
			return "$lrc"
		fi
	done
}

# snapshot I: starts a snapshot at pI and prints its id.
snapshot() {
	ctl "$1" snapshot || fail "cutctl snapshot at p$1 failed"
}

sql() {
	sqlite3 -batch -noheader "$T/p$1.db" "$2"
}

# wait_done I ID SECONDS: waits until snapshot ID is no longer in progress
# in pI's database; prints its status.
wait_done() {
	end=$(($(date +%s) + $3 * WAIT_SCALE))
	while [ "$(date +%s)" -le "$end" ]; do
		s=$(sql "$1" "SELECT status FROM snapshots WHERE id = '$2'" 2>/dev/null)
		case "$s" in
		complete | aborted)
			echo "$s"
			return 0
			;;
		esac
		sleep 0.1
	done
	echo "timeout"
}

# total I ID: balances plus in-transit amounts of ID, from pI's database.
total() {
	sql "$1" "SELECT (SELECT sum(json_extract(state, '\$.balance'))
	                    FROM recorded_states WHERE snapshot_id = '$2' AND is_json)
	               + (SELECT coalesce(sum(json_extract(payload, '\$.amount')), 0)
	                    FROM in_transit WHERE snapshot_id = '$2' AND is_json)"
}

# check_snapshot I ID EXPECTED_TOTAL: complete, audited consistent, every
# node and channel recorded, and the total conserved.
check_snapshot() {
	st=$(wait_done "$1" "$2" 20)
	[ "$st" = complete ] || fail "snapshot $2: $st ($(sql "$1" "SELECT reason FROM snapshots WHERE id = '$2'"))"
	c=$(sql "$1" "SELECT consistent FROM snapshots WHERE id = '$2'")
	[ "$c" = 1 ] || fail "snapshot $2: audit says $(sql "$1" "SELECT audit_reason FROM snapshots WHERE id = '$2'")"
	parts=$(sql "$1" "SELECT nodes_recorded FROM snapshot_summary WHERE id = '$2'")
	[ "$parts" = "$NODES" ] || fail "snapshot $2: $parts node states, want $NODES"
	tot=$(total "$1" "$2")
	[ "$tot" = "$3" ] || fail "snapshot $2: total $tot, want $3"
	echo "ok: snapshot $2 complete, consistent, total $tot, $(sql "$1" "SELECT in_transit FROM snapshot_summary WHERE id = '$2'") in transit"
}

# stop_apps: stops the applications and waits for their final lines.
stop_apps() {
	i=0
	while [ "$i" -lt "$NODES" ]; do
		eval "p=\${APP_$i:-}"
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
		i=$((i + 1))
	done
}

# expect_rc WANT COMMAND...: runs COMMAND with stdout in $T/out and
# stderr in $T/err, and fails unless it exits WANT.
expect_rc() {
	want=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = "$want" ] || fail "$* exited $rc, want $want;" \
		"stdout: $(cat "$T/out"); stderr: $(cat "$T/err")"
}

pass() {
	echo "PASS: $*"
	exit 0
}

# tls_cluster N DIR: like cluster N, with tls+tcp:// peers and the CA and
# certificates deploy/make-certs.sh made in DIR (ca.pem, pI.pem, pI.key).
# CA_FILE overrides the CA; CERT_I and KEY_I node pI's certificate and key.
tls_cluster() {
	NODES=$1
	{
		printf '[cluster]\nname = test%s\nrun_dir = %s\nstate_dir = %s\n' "$$" "$T" "$T"
		printf 'deadline_ms = %s\ntls_ca = %s\n' "${DEADLINE_MS:-5000}" "${CA_FILE:-$2/ca.pem}"
		i=0
		while [ "$i" -lt "$NODES" ]; do
			eval "cert=\${CERT_$i:-$2/p$i.pem} key=\${KEY_$i:-$2/p$i.key}"
			printf '[node p%s]\npeer = tls+tcp://127.0.0.1:%s\n' "$i" $((BASE + i))
			printf 'tls_cert = %s\ntls_key = %s\n' "$cert" "$key"
			i=$((i + 1))
		done
	} >"$T/cluster.ini"
}

# make_certs DIR NODE...: a CA and certificates in DIR (deploy/make-certs.sh).
make_certs() {
	sh "$(dirname "$0")/../../deploy/make-certs.sh" "$@" >/dev/null ||
		fail "make-certs.sh $* failed"
}

# peer_field I PEER FIELD: FIELD of PEER in pI's `cutctl status --json`
# (JSON values: true, false, null, numbers; strings bare).
peer_field() {
	look "$1" status --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
p = [x for x in s["peers"] if x["node"] == sys.argv[1]][0]
v = p.get(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$2" "$3"
}

# status_field I FIELD: a top-level FIELD of pI's `cutctl status --json`.
status_field() {
	look "$1" status --json | python3 -c '
import json, sys
print(json.dumps(json.load(sys.stdin).get(sys.argv[1])))' "$2"
}

# sched_field I FIELD: FIELD of pI's `cutctl schedule show --json`.
sched_field() {
	look "$1" --json schedule show | python3 -c '
import json, sys
v = json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))' "$2"
}

# retry SECONDS COMMAND...: runs COMMAND (a shell function may do) every
# 0.1 s until it succeeds; fails after SECONDS.
retry() {
	end=$(($(date +%s) + $1 * WAIT_SCALE))
	shift
	until "$@"; do
		[ "$(date +%s)" -le "$end" ] || return 1
		sleep 0.1
	done
}

# http_keys PORT: gives node pI of $T/cluster.ini (written by cluster) the
# key http = http://127.0.0.1:PORT+I, its metrics and HTTP API listener.
http_keys() {
	i=0
	while [ "$i" -lt "$NODES" ]; do
		sed -i "/^\[node p$i\]\$/a http = http://127.0.0.1:$(($1 + i))" \
			"$T/cluster.ini"
		i=$((i + 1))
	done
}

# metric FILE NAME [LABEL=VALUE...]: the value of one sample of a scrape
# saved in FILE (tests/tools/promtext.py).
metric() {
	python3 "$(dirname "$0")/../tools/promtext.py" get "$@"
}
