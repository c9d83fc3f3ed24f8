#!/bin/sh
# Installs the Debian 12 packages cutd needs to build, test and run, but
# only those that are missing.  Quiet when everything is present.  Uses sudo
# when not run as root.  "--fuzz" installs instead what tests/fuzz/run.sh
# needs: clang and its libFuzzer and sanitizer runtimes.  "--browser"
# installs what the web view's test (tests/integration/t_web.sh) needs:
# chromium, run headless, and a font for its screenshot.
set -eu

# systemd brings systemd-analyze, which checks the unit, and python3 parses
# cutctl's JSON: both for the tests in tests/ops.  nftables makes the
# partition of tests/integration/t_partition.sh.  libssl-dev brings the
# libcrypto that signs and checks the TLS hello between daemons; openssl
# makes certificates (deploy/make-certs.sh) and checks the TLS tests.
# libjansson-dev writes the JSON of cutctl and cutlab.
# graphviz checks `cutctl show --dot`, groff and man-db the man pages.
pkgs="build-essential cmake pkg-config libnng-dev libprotobuf-c-dev
protobuf-c-compiler libsqlite3-dev sqlite3 libcriterion-dev libinih-dev
libjansson-dev libsystemd-dev systemd python3 nftables libssl-dev openssl
graphviz groff-base man-db"
if [ "${1:-}" = --fuzz ]; then
	pkgs="clang libclang-rt-14-dev"
elif [ "${1:-}" = --browser ]; then
	pkgs="chromium fonts-dejavu-core"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "deps.sh: need root or sudo to install:$missing" >&2
	exit 1
fi
echo "deps.sh: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
