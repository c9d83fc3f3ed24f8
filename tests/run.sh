#!/bin/sh
# The README's test command: installs what is missing, builds, and runs the
# whole suite through ctest.  "--asan" builds and runs it under
# AddressSanitizer and UBSan in build-asan/ instead of build/.
# Exits non-zero when anything fails.
set -eu
cd "$(dirname "$0")/.."

build=build
flags=""
case "${1:-}" in
--asan)
	build=build-asan
	flags="-DCUT_SANITIZE=ON"
	;;
"") ;;
*)
	echo "usage: $0 [--asan]" >&2
	exit 64
	;;
esac

./deploy/deps.sh
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo $flags >/dev/null
cmake --build "$build" -j "$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
