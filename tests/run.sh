#!/bin/sh
# The README's test command: installs what is missing, builds, and runs the
# whole suite through ctest.  "--asan" builds and runs it under
# AddressSanitizer and UBSan in build-asan/ instead of build/.  "--werror"
# (implied when CI=true, as .ci/run is run) makes compiler warnings errors.
# Options go in any order.  Exits non-zero when anything fails.
set -eu
cd "$(dirname "$0")/.."

build=build
asan=OFF
werror=OFF
if [ "${CI:-}" = true ]; then
	werror=ON
fi
for arg in "$@"; do
	case "$arg" in
	--asan) asan=ON ;;
	--werror) werror=ON ;;
	*)
		echo "usage: $0 [--asan] [--werror]" >&2
		exit 64
		;;
	esac
done
if [ "$asan" = ON ]; then
	build="build-asan"
fi

./deploy/deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCUT_SANITIZE="$asan" -DCUT_WERROR="$werror" >/dev/null
cmake --build "$build" -j "$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
