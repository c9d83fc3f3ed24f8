#!/bin/sh
# The systemd unit deploy/cutd@.service: `systemd-analyze verify` finds
# nothing to say about it, `systemd-analyze security --offline=yes` rates
# its exposure 3.5 or lower, and it keeps the settings the daemon relies
# on.  Neither needs a running systemd.  A machine without systemd-analyze
# fails this test instead of skipping it: deploy/deps.sh installs it (the
# systemd package).
set -u
: "${BIN:?BIN must name the build directory}"
# UNIT may name another copy, e.g. the one cmake configured for install.
UNIT=${UNIT:-$(dirname "$0")/../../deploy/cutd@.service}
CUTD=$BIN/bin/cutd
MAX_EXPOSURE=3.5

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

command -v systemd-analyze >/dev/null 2>&1 ||
	fail "systemd-analyze is missing; install Debian's systemd package" \
		"(deploy/deps.sh does)"
[ -f "$UNIT" ] || fail "no unit at $UNIT"
[ -x "$CUTD" ] || fail "no cutd at $CUTD; build first"
# ExecStart= takes only an absolute path.
CUTD=$(cd "$(dirname "$CUTD")" && pwd)/cutd

T=$(mktemp -d "${TMPDIR:-/tmp}/cutd-unit.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

# The unit as shipped names /usr/local/sbin/cutd, which verify requires to
# exist and be executable; on a build machine it is not installed.  The
# copy runs the built cutd instead and is otherwise unchanged.
sed "s|^ExecStart=[^ ]*/cutd |ExecStart=$CUTD |" "$UNIT" >"$T/cutd@.service"
n=$(grep -c "^ExecStart=$CUTD " "$T/cutd@.service")
[ "$n" = 1 ] || fail "expected one 'ExecStart=.../cutd ...' line in $UNIT, found $n"

# The settings the daemon and the issue rely on are there.
for line in "Type=notify" "ExecReload=/bin/kill -HUP \$MAINPID" \
	"RestartPreventExitStatus=78" "StateDirectory=cutd" \
	"RuntimeDirectory=cutd" "User=cutd" "Group=cutd" "UMask=0027" \
	"NoNewPrivileges=yes" "ProtectSystem=strict" "ProtectHome=yes" \
	"PrivateTmp=yes" "PrivateDevices=yes" "CapabilityBoundingSet=" \
	"SystemCallFilter=@system-service" "Documentation=man:cutd(8)"; do
	grep -qxF -- "$line" "$T/cutd@.service" || fail "$UNIT lacks '$line'"
done
grep -q '^WatchdogSec=[1-9]' "$T/cutd@.service" || fail "$UNIT lacks WatchdogSec="
# The control service tells callers apart by uid and groups; a private
# user namespace would show them all as nobody.
grep -q '^PrivateUsers=' "$T/cutd@.service" &&
	fail "$UNIT sets PrivateUsers=, which hides the callers' uids from cutd"
grep -q '^RestrictAddressFamilies=' "$T/cutd@.service" ||
	fail "$UNIT lacks RestrictAddressFamilies="
echo "ok: the unit has the settings cutd relies on"

# verify exits 0 on warnings (an unknown key, a bad value it ignores), so
# any output at all fails the test.  --man=no: Documentation=man:cutd(8)
# is checked by running man, and the page is installed only by
# `cmake --install`; the line itself is checked above.  The instance
# cutd@p0.service is verified, loaded from the template beside it.
out=$(cd "$T" && systemd-analyze verify --man=no --no-pager \
	"$T/cutd@p0.service" 2>&1)
rc=$?
if [ "$rc" != 0 ] || [ -n "$out" ]; then
	fail "systemd-analyze verify exited $rc: $out"
fi
echo "ok: systemd-analyze verify cutd@p0.service: no complaints"

out=$(systemd-analyze security --offline=yes --no-pager \
	"$T/cutd@p0.service" 2>&1)
rc=$?
[ "$rc" = 0 ] || fail "systemd-analyze security exited $rc: $out"
score=$(printf '%s\n' "$out" |
	sed -n 's/.*Overall exposure level for cutd@p0\.service: \([0-9][0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "no exposure level in: $out"
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s + 0 <= m + 0) }' ||
	fail "exposure level $score, want <= $MAX_EXPOSURE:
$(printf '%s\n' "$out" | grep '✗')"
echo "PASS: systemd unit verifies; exposure $score <= $MAX_EXPOSURE"
