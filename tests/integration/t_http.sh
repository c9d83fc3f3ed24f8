#!/bin/sh
# The HTTP JSON API: /v1/status, /v1/snapshots and /v1/snapshots/ID answer
# what cutctl --json prints (the same JSON code, ctljson.c), pages of
# channel messages put together give the whole export, bad requests get
# JSON errors with the right status (400, 404, 405, 413, 414), and
# floods, oversized heads and idle connections leave the daemon
# answering.  The listener is off without the http key, and bad http
# keys are refused with the line and the reason.
. "$(dirname "$0")/lib.sh"
SIZE=100
cluster 2
# Only p0 gets a listener: p1 shows that the default is off.
sed -i "/^\[node p0\]\$/a http = http://127.0.0.1:$((BASE + 4))" \
	"$T/cluster.ini"
H="http://127.0.0.1:$((BASE + 4))"
"$CUTD" --cluster "$T/cluster.ini" --check-config >"$T/check.out" ||
	fail "check-config"
[ "$(grep -c 'http     =' "$T/check.out")" = 1 ] ||
	fail "expected one http listener in: $(cat "$T/check.out")"

# Bad keys: each refused with its line, status 78.
bad_key() { # bad_key VALUE EXPECTED-WORDS
	sed "s|^http = .*|http = $1|" "$T/cluster.ini" >"$T/bad.ini"
	"$CUTD" --cluster "$T/bad.ini" --check-config >/dev/null 2>"$T/bad.err"
	rc=$?
	[ $rc = 78 ] || fail "http = $1: exit $rc, expected 78"
	grep -q "$2" "$T/bad.err" || fail "http = $1: $(cat "$T/bad.err")"
}
bad_key "tcp://127.0.0.1:8080" "http must be http://HOST:PORT, not 'tcp://127.0.0.1:8080'"
bad_key "http://127.0.0.1:8080/metrics" "http must be http://HOST:PORT"
bad_key "http://127.0.0.1:99999" "http must be http://HOST:PORT"
# Two nodes on one http endpoint.
sed "/^\[node p1\]\$/a http = http://127.0.0.1:$((BASE + 4))" "$T/cluster.ini" \
	>"$T/bad.ini"
"$CUTD" --cluster "$T/bad.ini" --check-config >/dev/null 2>"$T/bad.err" &&
	fail "two nodes on one http endpoint accepted"
grep -q "\[node p1\] http endpoint http://127.0.0.1:$((BASE + 4)) is already the http endpoint of node p0" \
	"$T/bad.err" || fail "duplicate http: $(cat "$T/bad.err")"
start_daemons

req() { # req METHOD PATH [curl args]: body to $T/body, prints the status
	m=$1 p=$2
	shift 2
	curl -s -o "$T/body" -w '%{http_code}' -X "$m" "$@" "$H$p"
}
# json_err STATUS: the body is {"status": STATUS, "error": "..."}.
json_err() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == int(sys.argv[2]) and d["error"], d' "$T/body" "$1" ||
		fail "not a JSON error $1: $(cat "$T/body")"
}
expect() { # expect STATUS METHOD PATH [curl args]
	want=$1
	shift
	got=$(req "$@")
	[ "$got" = "$want" ] || fail "$*: HTTP $got, expected $want: $(cat "$T/body")"
	[ "$want" = 200 ] || json_err "$want"
}

# Traffic p0 -> p1 with a slow reader, and a snapshot holding messages
# in flight.
"$BIN/tests/bench/cutbench" app --app "ipc://$T/p1.app" --node p1 \
	--expect p0 --recv-delay-us 1000 --linger >"$T/app1.out" \
	2>>"$T/app1.log" &
PIDS="$PIDS $!"
"$BIN/tests/bench/cutbench" app --app "ipc://$T/p0.app" --node p0 \
	--to p1 --count 3000 --size $SIZE --linger >"$T/app0.out" \
	2>>"$T/app0.log" &
PIDS="$PIDS $!"
sleep 0.5
id=$(snapshot 0)
[ "$(wait_done 0 "$id" 20)" = complete ] || fail "snapshot $id"
ctl 0 --json export "$id" >"$T/export.json" || fail "cutctl export"
count=$(python3 -c '
import json, sys
print(sum(c["count"] for c in json.load(open(sys.argv[1]))["channels"]))' \
	"$T/export.json")
[ "$count" -gt 20 ] || fail "only $count messages in flight"

# The same JSON as cutctl's.
expect 200 GET /v1/status
ctl 0 --json status >"$T/status.json"
python3 - "$T/body" "$T/status.json" <<'PY' || fail "status differs from cutctl's"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert list(a) == list(b), (list(a), list(b))
for k in ("node", "cluster", "version", "app_connected"):
    assert a[k] == b[k], k
assert [p["node"] for p in a["peers"]] == [p["node"] for p in b["peers"]]
PY
curl -s -D "$T/headers" -o /dev/null "$H/v1/status"
grep -qi '^content-type: application/json' "$T/headers" || fail "content type"
expect 200 GET /v1/snapshots
ctl 0 --json list >"$T/list.json"
python3 - "$T/body" "$T/list.json" <<'PY' || fail "list differs from cutctl's"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert (a.pop("offset"), a.pop("limit"), a.pop("more")) == (0, 100, False)
assert a == b, (a, b)
PY
expect 200 GET "/v1/snapshots/$id?limit=1000"
python3 - "$T/body" "$T/export.json" <<'PY' || fail "snapshot differs from cutctl export"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert (a.pop("messages_offset"), a.pop("messages_limit")) == (0, 1000)
assert a == b
PY
# Pages of 7 put together are the export's messages, in order; the id
# may be written with %3A.
enc=$(echo "$id" | sed 's/:/%3A/')
python3 - "$H/v1/snapshots/$enc" "$T/export.json" <<'PY' || fail "paging"
import json, sys, urllib.request
base, export = sys.argv[1], json.load(open(sys.argv[2]))
want = {(c["src"], c["dst"]): c["messages"] for c in export["channels"]}
got = {k: [] for k in want}
off = 0
while True:
    with urllib.request.urlopen(f"{base}?offset={off}&limit=7") as r:
        d = json.load(r)
    assert d["messages_offset"] == off and d["messages_limit"] == 7
    n = 0
    for c in d["channels"]:
        assert len(c["messages"]) <= 7
        got[(c["src"], c["dst"])] += c["messages"]
        n = max(n, len(c["messages"]))
    if n == 0:
        break
    off += 7
assert got == want, "pages differ from the export"
PY
expect 200 GET "/v1/snapshots/$id?limit=0"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert all("messages" not in c for c in d["channels"]) and d["nodes"]' \
	"$T/body" || fail "limit=0 should give no messages"

# Bad requests.
expect 404 GET /nope
# The hint names every path there is, from the methods' table.
grep -q '"no such resource: try /metrics, /v1/snapshots/ID, /v1/snapshots or /v1/status"' "$T/body" ||
	fail "404's hint: $(cat "$T/body")"
expect 404 GET /v1
expect 404 GET /v1/snapshots/p0:1
expect 400 GET /v1/snapshots/not%20an%20id
expect 400 GET "/v1/snapshots/$id?limit=1001"
expect 400 GET "/v1/snapshots/$id?offset=-1"
expect 400 GET "/v1/snapshots/$id?offset=1x"
expect 400 GET "/v1/snapshots?limit=0"
expect 400 GET "/v1/snapshots?bogus=1"
expect 400 GET "/v1/snapshots/%zz"
expect 405 POST /v1/snapshots
expect 400 GET /v1/status -d x
expect 405 DELETE "/v1/snapshots/$id"
expect 405 PUT /metrics -d x
expect 413 POST /v1/snapshots --data-binary @"$T/export.json"
long=$(python3 -c 'print("a" * 3000)')
expect 414 GET "/v1/snapshots?$long"
grep -qi '^allow: GET' "$T/headers" 2>/dev/null || true
curl -s -D "$T/headers" -o /dev/null -X POST "$H/v1/snapshots"
grep -qi '^allow: GET' "$T/headers" || fail "405 without Allow: GET"

# A flood of parallel requests: each answered 200 or 503, never lost.
seq 1 300 | xargs -P 60 -I{} curl -s -o /dev/null -w '%{http_code}\n' \
	"$H/v1/status" >"$T/flood"
bad=$(grep -cvE '^(200|503)$' "$T/flood")
[ "$bad" = 0 ] || fail "flood: $(sort "$T/flood" | uniq -c)"
# An enormous request head, idle connections, a connection that sends
# half a request and goes: the daemon goes on answering.
python3 - "127.0.0.1" "$((BASE + 4))" <<'PY' || fail "abuse"
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port))
s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 +
          b"\r\n\r\n")
s.settimeout(5)
try:
    s.recv(100)
except OSError:
    pass
idle = [socket.create_connection((host, port)) for _ in range(50)]
half = socket.create_connection((host, port))
half.sendall(b"GET /v1/sta")
half.close()
PY
expect 200 GET /v1/status
expect 200 GET /metrics
kill -0 "$DAEMON_0" || fail "p0 died"
# p1 has no listener (off by default): nothing answers on its port.
curl -s -o /dev/null "http://127.0.0.1:$((BASE + 5))/metrics" &&
	fail "p1 listens without an http key"
# SIGTERM while requests pour in: those waiting are answered 503, the
# daemon exits 0 and (under ASan) leaks nothing.
seq 1 400 | xargs -P 20 -I{} curl -s -o /dev/null "$H/metrics" &
FLOOD=$!
sleep 0.3
kill -TERM "$DAEMON_0"
wait "$DAEMON_0"
rc=$?
[ "$rc" = 0 ] || fail "p0 exited $rc on SIGTERM under requests"
kill "$FLOOD" 2>/dev/null
wait "$FLOOD"
pass "http"
