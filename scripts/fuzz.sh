#!/bin/sh
# Builds the libFuzzer harnesses (tests/fuzz/) with clang in a separate build
# folder and runs each one for a bounded time on a copy of its seed corpus.
#
#   scripts/fuzz.sh [SECONDS_EACH] [HARNESS...]     (default: 60 s; csv money time tzif job zip)
#
# Exits 1 if any harness finds a crash, a leak, a timeout or runs out of
# memory, after running the others; the reproducer's path is printed (replay
# it with `build-fuzz/tests/fuzz/fuzz_<harness> <path>`). Exits 2 when the
# harnesses cannot be built. Environment:
#   RECON_FUZZ_BUILD    build folder (default build-fuzz)
#   RECON_FUZZ_CC       compiler (default clang; must be clang)
#   RECON_FUZZ_CSV_JOB  fuzz_csv: run only these jobs (comma-separated names)
#   RECON_FUZZ_ARGS     extra libFuzzer flags for every harness (e.g. -jobs=2)
set -eu
cd "$(dirname "$0")/.."

secs=${1:-60}
if [ $# -gt 0 ]; then
	shift
fi
harnesses=${*:-csv money time tzif job zip}
build=${RECON_FUZZ_BUILD:-build-fuzz}
cc=${RECON_FUZZ_CC:-clang}

case $secs in
'' | *[!0-9]*)
	echo "fuzz.sh: SECONDS_EACH must be a number, not '$secs'" >&2
	exit 2
	;;
esac
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "fuzz.sh: '$cc' not found; install clang and libclang-rt-14-dev" \
		"(scripts/install-deps.sh --test)" >&2
	exit 2
fi

# Only the harnesses are built; the database backends are left out.
mkdir -p "$build"
if ! cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DRECON_FUZZ=ON -DRECON_TESTS=OFF -DRECON_WITH_POSTGRES=OFF -DRECON_WITH_MYSQL=OFF \
	>"$build/configure.log" 2>&1; then
	cat "$build/configure.log" >&2
	echo "fuzz.sh: cannot configure $build" >&2
	exit 2
fi
targets=
for h in $harnesses; do
	targets="$targets --target fuzz_$h"
done
# shellcheck disable=SC2086 # one word per target
if ! cmake --build "$build" -j"$(nproc)" $targets; then
	echo "fuzz.sh: cannot build the harnesses" >&2
	exit 2
fi

# -max_len per harness: room for the seeds and a little more
max_len() {
	case $1 in
	csv) echo 16384 ;;
	money) echo 256 ;;
	time) echo 512 ;;
	tzif) echo 8192 ;;
	job) echo 8192 ;;
	*) echo 4096 ;;
	esac
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=
for h in $harnesses; do
	bin=$build/tests/fuzz/fuzz_$h
	work=$build/fuzz-work/$h
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	if [ -d "tests/fuzz/corpus/$h" ]; then
		cp "tests/fuzz/corpus/$h"/* "$work/corpus/"
	fi
	dict=
	if [ -f "tests/fuzz/$h.dict" ]; then
		dict=-dict=tests/fuzz/$h.dict
	fi
	echo "== fuzz_$h: ${secs}s on $(find "$work/corpus" -type f | wc -l) seeds (log: $work/log)"
	rc=0
	# shellcheck disable=SC2086 # $dict and $RECON_FUZZ_ARGS may be empty or several words
	"$bin" "$work/corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len="$(max_len "$h")" $dict -artifact_prefix="$work/artifacts/" \
		-print_final_stats=1 ${RECON_FUZZ_ARGS:-} >"$work/log" 2>&1 || rc=$?
	grep -a -E '^fuzz_csv: ([0-9]+ jobs|job )' "$work/log" || true
	grep -a -E '(DONE|pulse|NEW|REDUCE) +cov:' "$work/log" | tail -n 1 || true
	grep -a -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
		"$work/log" | tr '\n' ' ' || true
	echo
	repro=$(find "$work/artifacts" -type f | head -n 1)
	if [ "$rc" -ne 0 ] || [ -n "$repro" ]; then
		grep -a -E 'ERROR: |SUMMARY: |fuzz_[a-z]+: ' "$work/log" | grep -v ' jobs:' | head -n 5 >&2 || true
		if [ -n "$repro" ]; then
			for f in "$work/artifacts"/*; do
				echo "fuzz.sh: fuzz_$h FAILED (exit $rc); reproducer: $f" >&2
			done
		else
			echo "fuzz.sh: fuzz_$h FAILED (exit $rc) without a reproducer; see $work/log" >&2
			tail -n 20 "$work/log" >&2
		fi
		failed="$failed $h"
	fi
done

if [ -n "$failed" ]; then
	echo "fuzz.sh: failed:$failed" >&2
	exit 1
fi
echo "fuzz.sh: all harnesses ran ${secs}s without a finding"
