#!/bin/sh
# The quick start's second command: install what is missing, build with
# warnings as errors and AddressSanitizer + UndefinedBehaviorSanitizer, start
# throwaway PostgreSQL and MariaDB servers, run every test through ctest, and
# stop the servers again.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh --test
build=${RECON_TEST_BUILD:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRECON_SANITIZE=ON -DRECON_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

if [ -x tests/db/servers.sh ]; then
	dbdir=$(mktemp -d /tmp/recon-db.XXXXXX)
	export RECON_DB_DIR="$dbdir"
	# an absolute path: the trap runs after the cd into the build folder (a relative
	# one failed there, quietly, and left MariaDB running on a deleted folder)
	trap '"$root/tests/db/servers.sh" stop >/dev/null 2>&1 || true; rm -rf "$dbdir"' EXIT INT TERM
	eval "$(tests/db/servers.sh start)"
fi

cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --output-on-failure -j2
