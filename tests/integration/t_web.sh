#!/bin/sh
# The web view in a real browser: headless chromium loads / from p0 of a
# three-node cluster after a snapshot taken under traffic, and the page
# it built (the dumped DOM, after its scripts ran and polled the API)
# must name every node, show the snapshot's in-flight count as the
# export has it and its audit verdict, and list it.  Then a 16-node
# cluster must draw all 16 nodes.  Screenshots stay in
# $BIN/artifacts/web.png and web16.png.  Without chromium (deploy/deps.sh
# --browser installs it) the test is skipped (77).
. "$(dirname "$0")/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	"$(dirname "$0")/../../deploy/deps.sh" --browser >/dev/null 2>&1
	CHROME=$(command -v chromium || true)
fi
if [ -z "$CHROME" ] ||
	! HOME="$T" timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu \
		--user-data-dir="$T/chrome-probe" \
		--dump-dom about:blank >/dev/null 2>&1; then
	echo "SKIP: chromium is not installed or does not start" >&2
	exit 77
fi
mkdir -p "$BIN/artifacts"
# browse PORT NAME: dumps the page's DOM to $T/NAME.html and a screenshot
# to $BIN/artifacts/NAME.png.
browse() {
	for what in dump-dom screenshot; do
		arg=--dump-dom
		[ $what = screenshot ] && arg="--screenshot=$BIN/artifacts/$2.png"
		HOME="$T" timeout 90 "$CHROME" --headless --no-sandbox \
			--disable-gpu --user-data-dir="$T/chrome-$2" \
			--window-size=1280,1000 --virtual-time-budget=6000 \
			$arg "http://127.0.0.1:$1/" >"$T/$2.$what" \
			2>>"$T/chrome.log" || fail "chromium failed on $2"
	done
	mv "$T/$2.dump-dom" "$T/$2.html"
}
# dom FILE: what the page shows, as KEY=VALUE lines: nodes (the names
# drawn, sorted, comma-separated), verdict, inflight, snapshots.
dom() {
	python3 - "$1" <<'PY'
import html, re, sys
d = open(sys.argv[1]).read()
def text(id):
    m = re.search(r'id="%s"[^>]*>(.*?)</' % id, d, re.S)
    return html.unescape(m.group(1)).strip() if m else ""
names = re.findall(r'<text[^>]*class="node-name"[^>]*>([^<]*)</text>', d)
print("nodes=" + ",".join(sorted(names, key=lambda n: int(n[1:]))))
print("verdict=" + text("verdict"))
print("inflight=" + text("inflight-total"))
rows = re.findall(r'<tr class="snap[^"]*"><td>([^<]*)</td><td[^>]*>([^<]*)</td>', d)
print("snapshots=" + ";".join("%s %s" % r for r in rows))
PY
}

cluster 3
http_keys $((BASE + 4))
start_daemons
"$BIN/tests/bench/cutbench" app --app "ipc://$T/p1.app" --node p1 \
	--expect p0 --recv-delay-us 1000 --linger >"$T/app1.out" \
	2>>"$T/app1.log" &
PIDS="$PIDS $!"
"$BIN/tests/bench/cutbench" app --app "ipc://$T/p0.app" --node p0 \
	--to p1,p2 --count 3000 --size 100 --linger >"$T/app0.out" \
	2>>"$T/app0.log" &
PIDS="$PIDS $!"
"$BIN/tests/bench/cutbench" app --app "ipc://$T/p2.app" --node p2 \
	--expect p0 --linger >"$T/app2.out" 2>>"$T/app2.log" &
PIDS="$PIDS $!"
sleep 0.5
id=$(snapshot 0)
[ "$(wait_done 0 "$id" 20)" = complete ] || fail "snapshot $id"
inflight=$(ctl 0 --json show "$id" | python3 -c '
import json, sys
print(sum(c["count"] for c in json.load(sys.stdin)["channels"]))')
[ "$inflight" -gt 0 ] || fail "nothing in flight in $id"
browse $((BASE + 4)) web
dom "$T/web.html" >"$T/web.txt"
cat "$T/web.txt" >&2
grep -qx "nodes=p0,p1,p2" "$T/web.txt" || fail "the page does not draw p0, p1, p2"
grep -qx "verdict=audit verdict: complete, consistent" "$T/web.txt" ||
	fail "the page does not show the verdict"
grep -q "^inflight=in-flight messages recorded: $inflight on " "$T/web.txt" ||
	fail "the page does not show $inflight messages in flight"
grep -q "^snapshots=$id complete, consistent" "$T/web.txt" ||
	fail "the page does not list $id"
[ -s "$BIN/artifacts/web.png" ] || fail "no screenshot"
grep -q "$id" "$T/web.html" || fail "no snapshot id on the page"

# Sixteen nodes, every pair a channel: all drawn, on p0's page.
for p in $PIDS; do kill "$p" 2>/dev/null; done
for p in $PIDS; do wait "$p" 2>/dev/null; done
PIDS=""
DAEMON_PIDS=""
rm -f "$T"/p*.db* "$T"/cutd-p*.log
# 32 ports of this test's block (lib.sh) that the first cluster did not
# use: 16 peers, 16 listeners.
BASE=$((BASE + 20))
cluster 16
http_keys $((BASE + 16))
start_daemons
i=0
while [ $i -lt 16 ]; do
	start_app $i 10 --rate 20
	i=$((i + 1))
done
sleep 1
id=$(snapshot 0)
[ "$(wait_done 0 "$id" 30)" = complete ] || fail "16 nodes: snapshot $id"
browse $((BASE + 16)) web16
dom "$T/web16.html" >"$T/web16.txt"
cat "$T/web16.txt" >&2
want=$(i=0; while [ $i -lt 16 ]; do printf 'p%s' $i; [ $i -lt 15 ] && printf ,; i=$((i + 1)); done)
grep -qx "nodes=$want" "$T/web16.txt" || fail "16 nodes: not all drawn"
grep -qx "verdict=audit verdict: complete, consistent" "$T/web16.txt" ||
	fail "16 nodes: no verdict"
pass "web view"
