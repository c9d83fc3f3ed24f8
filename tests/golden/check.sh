#!/bin/sh
# Golden-file check: runs "CUTLAB ARGS..." in this directory and compares
# its stdout, stderr and exit status with EXPECTED.
#   check.sh CUTLAB EXPECTED ARGS...
set -u
cutlab=$1
expected=$2
shift 2
cd "$(dirname "$0")"
actual=$("$cutlab" "$@" 2>&1; echo "exit $?")
if [ "$actual" != "$(cat "$expected")" ]; then
	echo "golden mismatch for: cutlab $*"
	printf '%s\n' "$actual" | diff -u "$expected" - || true
	exit 1
fi
