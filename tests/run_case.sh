#!/bin/sh
# One end-to-end case: tests/cases/<name>/ holds a job (job.json) and its inputs.
#   from            optional: a folder of the repo copied in first (e.g. examples/basic)
#   flow.sql        optional: SQL piped into sqlite3 to build flow.db (after
#                   sql/sqlite/payment_flow.sql when the file starts with "-- uses payment_flow")
#   args            arguments for `recon run` (default: none)
#   now             optional: the clock for every command (RECON_NOW), so a case whose
#                   outcome depends on the time of day (hot mode) does not depend on
#                   when the suite runs
#   expected_exit   the exit code of `recon run` (default 0)
#   expected.jsonl  `recon diff --format jsonl` after the run, byte for byte
#   expected_stderr lines that must each appear in run's stderr (fixed strings)
#   expected_stdout lines that must each appear in run's stdout (fixed strings)
#   check.sql       optional: SQL run by sqlite3 on flow.db after the run; its output
#                   must equal expected_check byte for byte (what actions wrote)
# usage: run_case.sh RECON CASE_DIR WORK_DIR
set -eu
recon=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
case_dir=$(cd "$2" && pwd)
work=$3
src=$(cd "$(dirname "$0")/.." && pwd)

fail() {
	echo "case $(basename "$case_dir"): $*" >&2
	for f in run.out run.err diff.jsonl; do
		[ -f "$work/$f" ] && { echo "--- $f" >&2; cat "$work/$f" >&2; }
	done
	exit 1
}

rm -rf "$work"
mkdir -p "$work"
if [ -f "$case_dir/from" ]; then
	cp -R "$src/$(cat "$case_dir/from")"/. "$work"/
	rm -rf "$work/state" "$work/flow.db"
fi
cp -R "$case_dir"/. "$work"/
cd "$work"
if [ -f flow.sql ]; then
	if head -n 1 flow.sql | grep -q '^-- uses payment_flow'; then
		cat "$src/sql/sqlite/payment_flow.sql" "$src/sql/sqlite/merchant.sql" flow.sql | sqlite3 flow.db
	elif [ -f "$case_dir/from" ]; then
		cat "$src/sql/sqlite/payment_flow.sql" "$src/sql/sqlite/merchant.sql" flow.sql | sqlite3 flow.db
	else
		sqlite3 flow.db < flow.sql
	fi
fi
args=$(cat args 2>/dev/null || true)
if [ -f now ]; then
	RECON_NOW=$(cat now)
	export RECON_NOW
fi
expect_exit=$(cat expected_exit 2>/dev/null || echo 0)

set +e
# shellcheck disable=SC2086
"$recon" run --job job.json $args > run.out 2> run.err
rc=$?
set -e
[ "$rc" = "$expect_exit" ] || fail "recon run exited $rc, expected $expect_exit"
if [ -f expected_stderr ]; then
	while IFS= read -r line; do
		[ -z "$line" ] && continue
		grep -qF -- "$line" run.err || fail "stderr lacks: $line"
	done < expected_stderr
fi
if [ -f expected_stdout ]; then
	while IFS= read -r line; do
		[ -z "$line" ] && continue
		grep -qF -- "$line" run.out || fail "stdout lacks: $line"
	done < expected_stdout
fi
if [ -f expected.jsonl ]; then
	"$recon" diff --job job.json --format jsonl > diff.jsonl 2>> run.err ||
		fail "recon diff failed"
	cmp -s expected.jsonl diff.jsonl || {
		diff -u expected.jsonl diff.jsonl >&2 || true
		fail "differences are not the expected ones"
	}
fi
if [ -f check.sql ]; then
	sqlite3 flow.db < check.sql > check.out 2>> run.err || fail "check.sql failed"
	cmp -s expected_check check.out || {
		diff -u expected_check check.out >&2 || true
		fail "flow.db does not hold what the actions should have written"
	}
fi
echo "case $(basename "$case_dir"): ok"
