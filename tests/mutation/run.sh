#!/bin/bash
# tests/mutation/run.sh - the mutation self-check: plants each bug of
# tests/mutation/bugs/NN-name.patch, one at a time, in a copy of this tree
# and says whether the simulation (cutlab sim) or else the unit tests catch
# it.  Not part of the default ctest suite; see tests/mutation/README.md.
#
#   tests/mutation/run.sh [--only REGEX] [--list] [--keep] [--jobs N]
#                         [--no-unit] [--no-sim] [--no-baseline]
#
# The tree is copied once from the working tree (tracked files as they are
# now, uncommitted changes included, and untracked files that are not
# ignored) into a temporary directory, built once (RelWithDebInfo, its own
# build directory), and checked unmutated: the simulation plan below and
# the unit tests must pass there.  Then, for each bug: `git apply --check`
# (a patch that no longer applies is reported and makes the exit status
# non-zero), apply, rebuild incrementally, run the simulation plan (stop at
# the first failing invocation), and only if it passes, the unit tests
# whose binaries the bug changed (stop at the first failing test); then
# revert.  Every step runs under
# timeout(1); a hang counts as caught, and is reported as a hang.
#
# Exit status: 0 when every patch applied and built and the unmutated tree
# passed; 1 otherwise; 64 for bad usage.  The targets (simulation alone
# >= 80 %, simulation plus unit tests >= 95 %) are printed, not enforced.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bugs_dir="$here/bugs"

only=""
list=0
keep=0
jobs=2
unit=1
sim=1
baseline=1

usage() {
	echo "usage: $0 [--only REGEX] [--list] [--keep] [--jobs N]" \
		"[--no-unit] [--no-sim] [--no-baseline]" >&2
	exit 64
}

while [ $# -gt 0 ]; do
	case "$1" in
	--only) [ $# -ge 2 ] || usage; only=$2; shift ;;
	--only=*) only=${1#--only=} ;;
	--list) list=1 ;;
	--keep) keep=1 ;;
	--jobs) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
	--jobs=*) jobs=${1#--jobs=} ;;
	--no-unit) unit=0 ;;
	--no-sim) sim=0 ;;
	--no-baseline) baseline=0 ;;
	-h|--help) usage ;;
	*) usage ;;
	esac
	shift
done
case "$jobs" in ''|*[!0-9]*) usage ;; esac

# ---- The simulation plan: label and arguments of each invocation ----
#
# Fresh seeds (none of ctest's sim_* tests use these), spread over node
# counts, topologies (drawn per seed), cuts and fault mixes, then the
# suite's regression seeds; 429 runs, some 10-20 s of CPU when nothing
# fails.  Each invocation runs in
# chunks of SIM_CHUNK seeds, so that a bug caught early costs little.
SIM_PLAN=(
	"small|--nodes 2-4 --seed 100000 --runs 100"
	"crash|--nodes 3-5 --seed 110000 --runs 40 --faults crash"
	"partition|--nodes 3-5 --seed 120000 --runs 40 --faults partition,drop"
	"storage|--nodes 2-4 --seed 130000 --runs 60 --faults storage,crash"
	"apps|--nodes 2-4 --seed 140000 --runs 40 --faults slow,applink --rate 300"
	"aligned|--nodes 2-5 --seed 150000 --runs 40 --cut aligned"
	"unaligned|--nodes 2-5 --seed 160000 --runs 40 --cut unaligned --rate 300"
	"medium|--nodes 5-8 --seed 170000 --runs 20"
	"appkill|--nodes 2-4 --seed 180000 --runs 60 --faults appkill,applink,slow --rate 300"
	"long|--nodes 2-4 --seed 200000 --runs 30 --latency 20-80 --rate 1000 --faults slow,applink,appkill"
	"reboot|--nodes 2-4 --seed 210000 --runs 40 --faults reboot,appkill,applink,crash"
	"lose|--nodes 2-4 --seed 230000 --runs 40 --faults lose,crash,drop"
	# The seeds of the bugs the simulation found (tests/CMakeLists.txt,
	# sim_regress_*): one run each.
	"regress_window|--nodes 3 --faults crash,partition,drop --seed 153"
	"regress_lostwrite_end|--nodes 3 --faults storage,crash --seed 196"
	"regress_lostwrite_channel|--nodes 3 --faults storage --seed 273"
	"regress_passed|--nodes 2-3 --faults slow,applink --rate 300 --cut aligned --seed 1480"
	"regress_unfinished|--nodes 3 --faults storage,crash --seed 23"
	"regress_epoch|--nodes 2-4 --faults crash,partition --seed 313"
	"regress_lostpart|--nodes 2-6 --faults partition,drop,storage --rate 400 --seed 10186"
	"regress_replies_resume|--nodes 2-3 --faults applink --seed 40000"
	"regress_replies_open|--nodes 2-3 --faults applink --seed 40002"
	"regress_reboot_old_numbering|--nodes 2-6 --seed 1242 --faults crash,partition,drop,storage,slow,applink,appkill,restore,delete,schedule,handshake,reboot"
	"regress_reboot_old_numbering2|--nodes 2-6 --seed 602 --faults crash,partition,drop,storage,slow,applink,appkill,restore,delete,schedule,handshake,reboot"
	"regress_reboot_late_marker|--nodes 2-6 --seed 8033 --cut unaligned --faults crash,partition,drop,storage,slow,applink,appkill,restore,delete,schedule,handshake,reboot"
	"regress_reboot_silent|--nodes 2-6 --seed 536 --faults crash,partition,drop,storage,slow,applink,appkill,restore,delete,schedule,handshake,reboot"
)
SIM_CHUNK=20
SIM_TIMEOUT=180    # seconds of wall time for one chunk
BUILD_TIMEOUT=1800 # seconds for one build (a loaded 2-core machine)
UNIT_TIMEOUT=900   # seconds for the unit tests, all of them
# The unit tests: Criterion binaries (tests/unit), the engine's property
# runs and cutlab's golden files.
UNIT_REGEX='^(test_|cutlab_props|golden_)'

# ---- The bugs ----

shopt -s nullglob
all_patches=("$bugs_dir"/*.patch)
patches=()
for p in "${all_patches[@]}"; do
	name=$(basename "$p" .patch)
	if [ -n "$only" ] && ! [[ $name =~ $only ]]; then
		continue
	fi
	patches+=("$p")
done

field() { # field FILE KEY: the value of "# KEY: ..." in a patch's header
	sed -n "/^diff --git/q; s/^# $2: //p" "$1" | head -n 1
}

if [ "$list" = 1 ]; then
	for p in "${patches[@]}"; do
		printf '%-32s %-14s %s\n' "$(basename "$p" .patch)" \
			"$(field "$p" area)" "$(field "$p" breaks)"
	done
	exit 0
fi
if [ ${#patches[@]} -eq 0 ]; then
	echo "mutation: no patch name matches '$only' in $bugs_dir" >&2
	exit 1
fi

# ---- The copy ----

work=$(mktemp -d "${TMPDIR:-/tmp}/cutd-mutation.XXXXXX")
# Readable by all: test_errtab runs cutctl as uid 65534 when root, which
# mktemp's 0700 would keep out.
chmod 755 "$work"
tree="$work/src"
build="$work/build"
logs="$work/logs"
mkdir -p "$tree" "$logs"
cleanup() {
	if [ "$keep" = 1 ]; then
		echo "mutation: kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_all=$(date +%s)
echo "mutation: copying $repo to $tree"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) |
	(cd "$repo" && while IFS= read -r -d '' f; do
		[ -e "$f" ] && printf '%s\0' "$f"
	done) | (cd "$repo" && xargs -0 cp --parents -t "$tree")
git -C "$tree" init -q
git -C "$tree" add -A
git -C "$tree" -c user.name=mutation -c user.email=mutation@localhost \
	commit -q -m "unmutated" || { echo "mutation: cannot commit the copy" >&2; exit 1; }

# ---- Steps ----

do_build() { # do_build LOG [TARGET]: 0 if it built
	local target=()
	[ $# -ge 2 ] && target=(--target "$2")
	timeout "$BUILD_TIMEOUT" cmake --build "$build" -j "$jobs" \
		"${target[@]}" >>"$1" 2>&1
}

# run_sim LOG: runs the plan; sets sim_result to "" (passed) or a short
# description of the first failure.
run_sim() {
	local log=$1 entry label args lo runs seed k n rv out fail
	sim_result=""
	for entry in "${SIM_PLAN[@]}"; do
		label=${entry%%|*}
		args=${entry#*|}
		# --seed S --runs R are split into chunks.
		seed=$(sed -n 's/.*--seed \([0-9]*\).*/\1/p' <<<"$args")
		runs=$(sed -n 's/.*--runs \([0-9]*\).*/\1/p' <<<"$args")
		rest=$(sed 's/ *--seed [0-9]*//; s/ *--runs [0-9]*//' <<<"$args")
		[ -n "$runs" ] || runs=1
		for ((k = 0; k < runs; k += SIM_CHUNK)); do
			n=$((runs - k < SIM_CHUNK ? runs - k : SIM_CHUNK))
			lo=$((seed + k))
			echo "+ cutlab sim $rest --seed $lo --runs $n" >>"$log"
			# shellcheck disable=SC2086
			out=$(timeout "$SIM_TIMEOUT" "$build/bin/cutlab" sim \
				$rest --seed "$lo" --runs "$n" 2>&1)
			rv=$?
			printf '%s\n' "$out" >>"$log"
			[ $rv -eq 0 ] && continue
			if [ $rv -eq 124 ]; then
				sim_result="$label: HANG (no end in ${SIM_TIMEOUT} s, seeds $lo..$((lo + n - 1)))"
			elif fail=$(grep -m1 '^FAIL seed' <<<"$out"); then
				sim_result="$label: ${fail#FAIL }"
			elif [ $rv -gt 128 ]; then
				sim_result="$label: crashed (signal $((rv - 128)), seeds $lo..$((lo + n - 1)))"
			else
				sim_result="$label: exit $rv (seeds $lo..$((lo + n - 1)))"
			fi
			return
		done
	done
}

# unit_regex STAMP: the unit tests whose binaries were rebuilt since
# STAMP (a bug that changes no binary of a test cannot fail it), as a
# ctest regex, or "" when there are none.
unit_regex() {
	local names=() f
	for f in $(find "$build" -type f -perm -u+x -newer "$1" -printf '%f\n' |
		sort -u); do
		case "$f" in
		cutlab) names+=("cutlab_props.*" "golden_.*") ;;
		test_*) names+=("$f") ;;
		esac
	done
	[ ${#names[@]} -gt 0 ] || return 0
	local IFS='|'
	echo "^(${names[*]})\$"
}

# run_unit LOG [REGEX]: sets unit_result to "" (passed) or the failing
# tests.
run_unit() {
	local log=$1 rv failed first regex=${2:-$UNIT_REGEX}
	unit_result=""
	echo "+ ctest -R '$regex'" >>"$log"
	timeout "$UNIT_TIMEOUT" ctest --test-dir "$build" -R "$regex" \
		-j "$jobs" --timeout 300 --stop-on-failure \
		--output-on-failure >>"$log" 2>&1
	rv=$?
	[ $rv -eq 0 ] && return
	if [ $rv -eq 124 ]; then
		unit_result="HANG (no end in ${UNIT_TIMEOUT} s)"
		return
	fi
	failed=$(sed -n '/The following tests FAILED/,$ s/^[[:space:]]*[0-9]* - \([^ ]*\).*/\1/p' \
		"$log" | sort -u | tr '\n' ' ')
	first=$(grep -m1 -o '\[FAIL\] [^ ]*' "$log" | sed 's/\[FAIL\] //')
	unit_result="${failed% }"
	[ -n "$unit_result" ] || unit_result="exit $rv"
	[ -n "$first" ] && unit_result="$unit_result ($first)"
}

# ---- The unmutated tree ----

status=0
sim_result="" unit_result=""
echo "mutation: configuring and building the unmutated tree in $build"
if ! timeout "$BUILD_TIMEOUT" cmake -S "$tree" -B "$build" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$logs/00-baseline.log" 2>&1 ||
	! do_build "$logs/00-baseline.log"; then
	echo "mutation: the unmutated tree does not build; see" \
		"$logs/00-baseline.log (--keep keeps it)" >&2
	keep=1
	exit 1
fi
base_sum=$(sha256sum <"$build/bin/cutlab")
if [ "$baseline" = 1 ]; then
	t0=$(date +%s)
	[ "$sim" = 1 ] && run_sim "$logs/00-baseline.log"
	echo "mutation: unmutated simulation plan: $((
		$(date +%s) - t0)) s${sim_result:+, FAILED: $sim_result}"
	if [ -n "$sim_result" ]; then
		status=1
		echo "mutation: the unmutated tree fails the simulation plan:" \
			"$sim_result" >&2
	fi
	if [ "$unit" = 1 ]; then
		t0=$(date +%s)
		run_unit "$logs/00-baseline.log"
		echo "mutation: unmutated unit tests: $((
			$(date +%s) - t0)) s${unit_result:+, FAILED: $unit_result}"
		if [ -n "$unit_result" ]; then
			status=1
			echo "mutation: the unmutated tree fails its unit tests:" \
				"$unit_result" >&2
		fi
	fi
	if [ $status -ne 0 ]; then
		echo "mutation: a check that fails unmutated tells nothing" \
			"about the bugs; stopping (see $logs/00-baseline.log)" >&2
		keep=1
		exit 1
	fi
fi

# ---- Each bug ----

names=() areas=() sims=() units=() verdicts=() secs=()
n_sim=0 n_unit=0 n_surv=0 n_err=0
for p in "${patches[@]}"; do
	name=$(basename "$p" .patch)
	area=$(field "$p" area)
	log="$logs/$name.log"
	t0=$(date +%s)
	sim_result="" unit_result="" verdict=""
	echo "mutation: $name ($area)"
	touch "$work/stamp"
	sleep 1 # a rebuilt file's time must be after the stamp's
	if ! git -C "$tree" apply --check "$p" >"$log" 2>&1; then
		echo "mutation: *** $name: PATCH DOES NOT APPLY ***" >&2
		sed 's/^/    /' "$log" >&2
		verdict="NO-APPLY"
	else
		git -C "$tree" apply "$p"
		if ! do_build "$log" cutlab; then
			verdict="NO-BUILD"
			echo "mutation: *** $name: DOES NOT BUILD (see $log) ***" >&2
		else
			if [ "$(sha256sum <"$build/bin/cutlab")" = "$base_sum" ]; then
				echo "note: cutlab is byte-identical to the unmutated one" >>"$log"
			fi
			[ "$sim" = 1 ] && run_sim "$log"
			if [ -n "$sim_result" ]; then
				verdict="SIM"
			elif [ "$unit" = 1 ]; then
				if ! do_build "$log"; then
					verdict="NO-BUILD"
				else
					regex=$(unit_regex "$work/stamp")
					if [ -n "$regex" ]; then
						run_unit "$log" "$regex"
					else
						echo "no unit test binary changed" >>"$log"
					fi
					if [ -n "$unit_result" ]; then
						verdict="UNIT"
					else
						verdict="SURVIVED"
					fi
				fi
			else
				verdict="SURVIVED"
			fi
		fi
		# Revert, and make sure the copy is unmutated again.
		if ! git -C "$tree" apply -R "$p" 2>>"$log" ||
			! git -C "$tree" diff --quiet; then
			git -C "$tree" checkout -q -- .
		fi
	fi
	case "$verdict" in
	SIM) n_sim=$((n_sim + 1)) ;;
	UNIT) n_unit=$((n_unit + 1)) ;;
	SURVIVED) n_surv=$((n_surv + 1)) ;;
	*) n_err=$((n_err + 1)); status=1 ;;
	esac
	names+=("$name") areas+=("$area") sims+=("${sim_result:--}")
	units+=("${unit_result:--}") verdicts+=("$verdict")
	elapsed=$(( $(date +%s) - t0 ))
	secs+=("$elapsed")
	echo "  -> $verdict ${sim_result:+(sim: $sim_result)}${unit_result:+(unit: $unit_result)}"
done

# ---- The table ----

total=${#names[@]}
pct() { # pct N TOTAL: N as a percentage of TOTAL, one decimal
	awk -v n="$1" -v t="$2" 'BEGIN { printf "%.1f", t ? 100 * n / t : 0 }'
}
{
	echo
	echo "| bug | area | caught by the simulation | caught by a unit test | verdict | s |"
	echo "|---|---|---|---|---|---:|"
	for ((i = 0; i < total; i++)); do
		sim=${sims[i]//|/\\|}
		printf '| %s | %s | %s | %s | %s | %s |\n' "${names[i]}" \
			"${areas[i]}" "${sim:0:110}" "${units[i]//|/\\|}" \
			"${verdicts[i]}" "${secs[i]}"
	done
	echo
	judged=$((total - n_err))
	if [ $n_err -gt 0 ]; then
		echo "bugs: $total ($judged judged; $n_err did not apply or build)"
	else
		echo "bugs: $total"
	fi
	echo "caught by the simulation alone: $n_sim of $judged ($(pct $n_sim $judged) %; target 80 %)"
	echo "caught by the simulation or a unit test: $((n_sim + n_unit)) of $judged ($(pct $((n_sim + n_unit)) $judged) %; target 95 %)"
	echo "survived: $n_surv"
	for ((i = 0; i < total; i++)); do
		[ "${verdicts[i]}" = SURVIVED ] && echo "  SURVIVED ${names[i]}: $(field "$bugs_dir/${names[i]}.patch" breaks)"
	done
	echo "wall time: $(($(date +%s) - start_all)) s on $(nproc) cores" \
		"($(uname -m), $(date -u +%Y-%m-%d))"
} | tee "$work/table.md"
[ "$keep" = 1 ] && echo "mutation: logs in $logs"
exit $status
