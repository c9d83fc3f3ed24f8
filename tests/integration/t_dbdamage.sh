#!/bin/sh
# A database page damaged under a running daemon: every control call that
# meets the damage answers UNAVAILABLE (cutctl exits 69; --json says
# UNAVAILABLE) with "storage" and SQLite's words, whichever method it is
# (List answered INTERNAL once), and so does the HTTP API (503); Start is
# refused while the file is damaged, and status says "storage: DAMAGED"
# with the reason (JSON storage_damaged) until the daemon stops; the
# daemon keeps running and its peer is not disturbed.
#
# The root page of the snapshots table is overwritten with 0xff bytes
# after a checkpoint has copied every page into the file (so no newer
# copy in the WAL hides the damage), and another connection then writes,
# which makes the daemon's connection drop its page cache and read the
# file again, as it would after any eviction.
. "$(dirname "$0")/lib.sh"
cluster 2
http_keys $((BASE + 4))
H="http://127.0.0.1:$((BASE + 4))"
start_daemons
start_app 0 10 --rate 100
start_app 1 10 --rate 100
sleep 0.5
for k in 1 2 3; do
	id=$(snapshot 0)
	check_snapshot 0 "$id" 20
done
[ "$(status_field 0 storage_damaged)" = null ] || fail "damaged before the damage"

# Every page into the file: retried while the daemon is writing.
retry 10 sh -c "sqlite3 '$T/p0.db' 'PRAGMA wal_checkpoint(TRUNCATE)' | grep -q '^0|'" ||
	fail "the WAL would not checkpoint"
pagesize=$(sql 0 "PRAGMA page_size")
root=$(sql 0 "SELECT rootpage FROM sqlite_schema WHERE name = 'snapshots'")
[ "$root" -gt 1 ] || fail "no root page for snapshots: $root"
head -c "$pagesize" /dev/zero | tr '\0' '\377' |
	dd of="$T/p0.db" bs="$pagesize" seek=$((root - 1)) count=1 conv=notrunc 2>/dev/null ||
	fail "dd"
sqlite3 "$T/p0.db" "INSERT INTO meta(key, value) VALUES ('test_touch', 1)" ||
	fail "the other connection's write"

# expect_unavailable WHAT ARGS...: cutctl exits 69 with SQLite's words,
# and the daemon's answer is UNAVAILABLE (--json's code).
expect_unavailable() {
	ctl 0 "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 69 ] || fail "$*: exit $rc, want 69 (UNAVAILABLE): $(cat "$T/out" "$T/err")"
	grep -q "storage.*: database disk image is malformed" "$T/err" ||
		fail "$*: no storage error with SQLite's words: $(cat "$T/err")"
	ctl 0 --json "$@" >"$T/out" 2>"$T/err.json"
	python3 - "$T/err.json" <<'PY' || fail "$* --json: $(cat "$T/err.json")"
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["code"] == "UNAVAILABLE" and e["exit_status"] == 69, e
assert "storage" in e["message"], e
assert "database disk image is malformed" in e["message"], e
PY
	echo "ok: $* -> 69, UNAVAILABLE: $(cat "$T/err")"
}
expect_unavailable list
expect_unavailable show "$id"
expect_unavailable wait "$id"
expect_unavailable export "$id"
expect_unavailable snapshot
expect_unavailable evaluate "$id" --condition "SELECT count(*) > 0 FROM snapshots WHERE id = :snapshot"
expect_unavailable delete "$id"
expect_unavailable keep "$id"
expect_unavailable unkeep "$id"
expect_unavailable restore "$id"
# The HTTP API: 503 (UNAVAILABLE), with the same words.
for path in /v1/snapshots "/v1/snapshots/$id"; do
	code=$(curl -s -o "$T/body" -w '%{http_code}' "$H$path")
	[ "$code" = 503 ] || fail "GET $path: $code, want 503: $(cat "$T/body")"
	python3 - "$T/body" <<'PY' || fail "GET $path: $(cat "$T/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == 503, d
assert d["error"].startswith("storage: database disk image is malformed"), d
PY
	echo "ok: GET $path -> 503: $(tr -d '\n' <"$T/body")"
done

ctl 0 status >"$T/out" || fail "status: $(cat "$T/out")"
grep -q "^storage: DAMAGED: database disk image is malformed" "$T/out" ||
	fail "status does not show the damage: $(cat "$T/out")"
why=$(status_field 0 storage_damaged)
echo "$why" | grep -q "database disk image is malformed" || fail "JSON storage_damaged: $why"
grep -q "storage damaged: database disk image is malformed (found at run time)" "$T/cutd-p0.log" ||
	fail "the damage is not logged: $(cat "$T/cutd-p0.log")"
echo "ok: status: $(grep '^storage' "$T/out")"
# Still damaged a while later (a damaged page does not mend), and the
# daemon and its peer carry on.
sleep 1.5
[ "$(status_field 0 storage_damaged)" != null ] || fail "the damage was forgotten"
kill -0 "$DAEMON_0" || fail "p0 died"
[ "$(status_field 1 storage_damaged)" = null ] || fail "p1 says damaged"
[ "$(peer_field 1 p0 connected)" = true ] || fail "p1 lost p0"
pass "a database damaged at run time answers UNAVAILABLE and shows in status"
