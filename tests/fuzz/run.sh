#!/bin/sh
# Builds the libFuzzer harnesses with clang in build-fuzz/ and runs each
# for SECONDS (default 10), one after the other, starting from the seed
# corpus in tests/fuzz/corpus/<harness>/.  What a run finds that is new
# goes to build-fuzz/corpus/<harness>/ (kept between runs), never into the
# repository; a crash leaves its input in build-fuzz/crashes/ and makes
# this script exit 1.
#
#   tests/fuzz/run.sh [SECONDS] [HARNESS...]
#
# FUZZ_BUILD names another build directory and
# FUZZ_ARGS adds libFuzzer options (e.g. -max_len=4096).  Exits 77 when
# clang or its libFuzzer runtime is missing and cannot be installed.
set -eu
cd "$(dirname "$0")/../.."
src=$(pwd)

secs=10
case "${1:-}" in
'' | *[!0-9]*) ;;
*)
	secs=$1
	shift
	;;
esac
harnesses=${*:-fuzz_peer_batch fuzz_app_batch fuzz_control fuzz_daemon_mix
fuzz_config fuzz_engine fuzz_libcut_frame}
build=${FUZZ_BUILD:-$src/build-fuzz}

# clang and libclang-rt-14-dev come with deploy/deps.sh --fuzz.
have_fuzzer() {
	command -v clang >/dev/null 2>&1 &&
		echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
		clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1
}
if ! have_fuzzer; then
	./deploy/deps.sh --fuzz || true
	if ! have_fuzzer; then
		echo "fuzz: SKIPPED: clang with libFuzzer is not available" \
			"(deploy/deps.sh --fuzz installs it)" >&2
		exit 77
	fi
fi

# Warnings are errors under CI, as in tests/run.sh.
werror=OFF
[ "${CI:-}" = true ] && werror=ON
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCUT_FUZZ=ON -DCUT_TESTS=OFF -DCUT_WERROR="$werror" >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzzers >/dev/null

mkdir -p "$build/crashes"
status=0
for h in $harnesses; do
	work="$build/corpus/$h"
	mkdir -p "$work"
	log="$build/$h.log"
	echo "fuzz: $h for ${secs}s" >&2
	# A leak in one input is a finding too; UBSan stops at the first
	# report, as in the suite.
	# shellcheck disable=SC2086
	if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$build/tests/fuzz/$h" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=1024 \
		-artifact_prefix="$build/crashes/$h-" -print_final_stats=1 \
		${FUZZ_ARGS:-} "$work" "tests/fuzz/corpus/$h" >"$log" 2>&1; then
		echo "fuzz: $h: $(grep -E '^stat::number_of_executed_units' "$log" |
			awk '{print $2}') executions, nothing found" >&2
	else
		echo "FAIL: $h found something; see $log and $build/crashes/" >&2
		grep -E -A 15 'ERROR:|runtime error|fuzz_engine:|deadly signal' \
			"$log" | head -n 40 >&2
		status=1
	fi
done
exit $status
