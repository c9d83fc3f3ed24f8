#!/bin/sh
# cutd as a daemon an operator can trust with its configuration:
# --check-config prints the cluster or says FILE:LINE: why not and exits 78;
# SIGHUP applies a changed deadline, refuses a changed topology, a changed
# max_message and a broken file, each refusal naming the key and its
# values, and says which changes wait for a restart, and the daemon keeps working on the old
# configuration; --log-level filters; under the journal (JOURNAL_STREAM
# naming stderr) every line starts with its <priority>.
DEADLINE_MS=20000
. "$(dirname "$0")/../integration/lib.sh"

# has FILE TEXT: FILE has a line that is exactly TEXT.
has() {
	grep -qxF -- "$2" "$1" || fail "$1 has no line '$2': $(cat "$1")"
}

# --- --check-config --------------------------------------------------------

cluster 2
expect_rc 0 "$CUTD" --cluster "$T/cluster.ini" --check-config
has "$T/out" "cluster test$$ ($T/cluster.ini)"
has "$T/out" "  deadline_ms = 20000"
has "$T/out" "2 nodes:"
has "$T/out" "  p0"
has "$T/out" "    peer     = tcp://127.0.0.1:$BASE"
has "$T/out" "    control  = ipc://$T/p1.ctl"
has "$T/out" "2 channels (every ordered pair):"
has "$T/out" "  p0 -> p1"
has "$T/out" "  p1 -> p0"
has "$T/out" "strongly connected: yes"
[ -s "$T/err" ] && fail "--check-config wrote to stderr: $(cat "$T/err")"
echo "ok: --check-config on a valid file"

# Declared channels: a ring is strongly connected.
printf '[cluster]\nname = ring\n[node a]\npeer = tcp://127.0.0.1:1\n[node b]\npeer = tcp://127.0.0.1:2\n[node c]\npeer = tcp://127.0.0.1:3\n[channels]\nchannel = a -> b\nchannel = b -> c\nchannel = c -> a\n' >"$T/ring.ini"
expect_rc 0 "$CUTD" --cluster "$T/ring.ini" --check-config
has "$T/out" "3 channels:"
has "$T/out" "  c -> a"
has "$T/out" "strongly connected: yes"
echo "ok: --check-config on a declared ring"

# Two errors, each reported as FILE:LINE: message, nothing on stdout.
printf '[cluster]\nname = bad\ndeadline_ms = soon\n[node p0]\npeer = tcp://127.0.0.1:1\n[node p1]\n' >"$T/bad.ini"
expect_rc 78 "$CUTD" --cluster "$T/bad.ini" --check-config
has "$T/err" "$T/bad.ini:3: [cluster] deadline_ms must be a whole number from 100 to 3600000 (milliseconds), not 'soon'; use a value in that range, or remove the line for the default (10000)"
has "$T/err" "$T/bad.ini:6: [node p1] has no 'peer' key"
[ -s "$T/out" ] && fail "--check-config on a bad file wrote to stdout: $(cat "$T/out")"
echo "ok: --check-config on a bad file: 78, FILE:LINE: message"

# p1 can be reached but cannot reach p0: refused, with the reason.
printf '[cluster]\nname = oneway\n[node p0]\npeer = tcp://127.0.0.1:1\n[node p1]\npeer = tcp://127.0.0.1:2\n[channels]\nchannel = p0 -> p1\n' >"$T/oneway.ini"
expect_rc 78 "$CUTD" --cluster "$T/oneway.ini" --check-config
has "$T/err" "$T/oneway.ini:7: the channel graph is not strongly connected: node p1 cannot reach node p0"
echo "ok: --check-config on a graph that is not strongly connected: 78"

expect_rc 78 "$CUTD" --cluster "$T/missing.ini" --check-config
grep -q "^$T/missing.ini: " "$T/err" || fail "missing file: $(cat "$T/err")"
expect_rc 78 "$CUTD" --cluster "$T/cluster.ini" --node nosuch
has "$T/err" "$T/cluster.ini: no node named nosuch"
expect_rc 64 "$CUTD" --check-config
expect_rc 64 "$CUTD" --cluster "$T/cluster.ini" --node p0 --log-level loud
echo "ok: a missing file and an unknown node exit 78, usage errors 64"

# --- --log-level and the journal -------------------------------------------

# run_p0 LOG [cutd options...]: runs node p0 alone, with stderr appended
# to LOG, until its control socket answers; then stops it with SIGTERM.
run_p0() {
	log=$1
	shift
	"$CUTD" --cluster "$T/cluster.ini" --node p0 "$@" 2>>"$log" &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for "$CUTCTL --control ipc://$T/p0.ctl status" 10 ||
		fail "p0 did not come up with $*"
	kill "$pid"
	wait "$pid"
	rc=$?
	[ "$rc" = 0 ] || fail "p0 ($*) exited $rc after SIGTERM"
}

run_p0 "$T/level-error.log" --log-level error
[ -s "$T/level-error.log" ] &&
	fail "--log-level error printed: $(cat "$T/level-error.log")"
run_p0 "$T/level-debug.log" --log-level debug
has "$T/level-debug.log" "cutd: notice: node p0 of cluster test$$ ready"
has "$T/level-debug.log" "cutd: notice: stopping"
echo "ok: --log-level error is silent on a clean run, debug shows notices"

: >"$T/journal.log"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/journal.log") \
	run_p0 "$T/journal.log" --log-level info
has "$T/journal.log" "<5>node p0 of cluster test$$ ready"
has "$T/journal.log" "<5>stopping"
grep -qv '^<[0-7]>' "$T/journal.log" &&
	fail "a journal line without a priority: $(grep -v '^<[0-7]>' "$T/journal.log")"
# A JOURNAL_STREAM that is not stderr (a shell redirected it): plain.
JOURNAL_STREAM=1:1 run_p0 "$T/notjournal.log" --log-level info
has "$T/notjournal.log" "cutd: notice: node p0 of cluster test$$ ready"
echo "ok: <N> prefixes exactly when stderr is the JOURNAL_STREAM"

# --- SIGHUP ----------------------------------------------------------------

cp "$T/cluster.ini" "$T/cluster.orig"
start_daemons
start_app 0 18 --rate 100
# p1's application leaves its first state request unanswered, so that a
# snapshot can only end by a deadline.
start_app 1 14 --rate 100 --ignore-state-requests 1
sleep 0.3

# hup TEXT: sends SIGHUP to p0 and waits until its log has a line
# containing TEXT after the lines it had; p0 must still be running.
hup() {
	before=$(wc -l <"$T/cutd-p0.log")
	kill -HUP "$DAEMON_0"
	wait_for "tail -n +$((before + 1)) '$T/cutd-p0.log' | grep -qF -- '$1'" 5 ||
		fail "after SIGHUP no log line '$1'"
	sleep 0.2
	kill -0 "$DAEMON_0" 2>/dev/null || fail "p0 died on SIGHUP ($1)"
}

# A new deadline applies to the next snapshot: with 300 ms instead of
# 20 s, the unanswered snapshot aborts at once.
sed 's/^deadline_ms = .*/deadline_ms = 300/' "$T/cluster.orig" >"$T/cluster.ini"
hup "cutd: notice: reloaded: deadline_ms 300"
id=$(snapshot 0)
st=$(wait_done 0 "$id" 10)
[ "$st" = aborted ] || fail "snapshot $id with a 300 ms deadline: $st"
# Timed by the daemon's own clock, from its start to its abort: starting
# cutctl and looking at the database take seconds on a busy machine.
took=$(sql 0 "SELECT finished_ms - started_ms FROM snapshots WHERE id = '$id'")
[ "$took" -le 3000 ] || fail "the 300 ms deadline took $took ms"
reason=$(sql 0 "SELECT reason FROM snapshots WHERE id = '$id'")
case "$reason" in
*"no marker on channel p1 -> p0"* | *"by the deadline"* | *"did not answer"*) ;;
*) fail "snapshot $id: reason '$reason'" ;;
esac
echo "ok: SIGHUP applied deadline_ms 300: $id aborted: $reason"
sed 's/^deadline_ms = .*/deadline_ms = 5000/' "$T/cluster.orig" >"$T/cluster.ini"
hup "cutd: notice: reloaded: deadline_ms 5000"
cp "$T/cluster.ini" "$T/cluster.running"

# A changed endpoint is refused; the daemon keeps the old one.
sed "s|tcp://127.0.0.1:$((BASE + 1))|tcp://127.0.0.1:$((BASE + 5))|" \
	"$T/cluster.running" >"$T/cluster.ini"
grep -q ":$((BASE + 5))" "$T/cluster.ini" || fail "sed did not move p1"
hup "cutd: error: reload refused: [node p1] peer changed from tcp://127.0.0.1:$((BASE + 1)) to tcp://127.0.0.1:$((BASE + 5)); restart cutd to change it"
id=$(snapshot 0)
check_snapshot 0 "$id" 32

# So is a changed max_message, which sized the sockets.
sed '/^\[cluster\]$/a max_message = 4096' "$T/cluster.running" >"$T/cluster.ini"
grep -q '^max_message = 4096' "$T/cluster.ini" || fail "sed did not add max_message"
hup "cutd: error: reload refused: [cluster] max_message changed from 1048576 to 4096; restart cutd to change it"

# A changed start_rate takes effect and says so; a schedule added is kept
# for the next start, with a warning.
sed '/^\[cluster\]$/a start_rate = 99' "$T/cluster.running" >"$T/cluster.ini"
printf '[schedule]\ninterval = 1h\ninitiator = rotate\n' >>"$T/cluster.ini"
hup "cutd: notice: reloaded: deadline_ms 5000"
has "$T/cutd-p0.log" "cutd: notice: reload: [cluster] start_rate changed from 10 to 99"
has "$T/cutd-p0.log" "cutd: warning: reload: [schedule] interval changed from (none) to 1h; it takes effect when cutd restarts"

# Garbage: each error is logged as FILE:LINE: message, then refused.
printf '\001\002 not an ini file\n[cluster\n=\n' >"$T/cluster.ini"
hup "cutd: error: reload refused: the file is not valid"
grep -q "^cutd: error: $T/cluster.ini:[0-9]*: " "$T/cutd-p0.log" ||
	fail "the reload's errors were not logged as FILE:LINE"
id=$(snapshot 0)
check_snapshot 0 "$id" 32

# A missing file likewise, and a good file afterwards reloads again.
rm "$T/cluster.ini"
hup "cutd: error: reload refused: the file is not valid"
sed 's/^deadline_ms = .*/deadline_ms = 6000/' "$T/cluster.orig" >"$T/cluster.ini"
hup "cutd: notice: reloaded: deadline_ms 6000"
kill -0 "$DAEMON_1" 2>/dev/null || fail "p1 died"
pass "check-config, reload, log levels, journal prefixes"
