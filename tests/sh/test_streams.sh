#!/bin/sh
# Inputs that can be read only once (a FIFO, a pipe on stdin) as the local
# flow. A statement listing an entry twice (the example's) makes a run that
# speculated on distinct entry ids read both inputs again: recon must not
# speculate when an input cannot be read twice, and must give the same
# differences as from regular files.
. "$(dirname "$0")/lib.sh"

setup_example
E=$WORK/ex
sqlite3 -header -csv "$E/flow.db" \
	'SELECT out_trade_no, amount_cents, currency, status, created_at FROM payment_flow' \
	> "$E/local.csv"
# the job with the local flow as a CSV file at $1
csv_job() {
	jq --arg p "$1" '.local = {kind: "csv", path: $p, header: true,
		columns: {key: "out_trade_no", amount_minor: "amount_cents", currency: "currency",
			status: "status", time: "created_at"}}' "$SRC/examples/basic/job.json" > "$2"
}
diffs() { # JOB: the differences of its latest run, key and class
	"$RECON" diff --job "$1" --format jsonl | jq -c '[.key, .class]'
}

csv_job "$E/local.csv" "$E/file.json"
expect_exit 0 "local flow from a regular file" \
	timeout 60 "$RECON" run --job "$E/file.json" --date 2024-01-16 --dry-run
check "a regular file is read again after the duplicate entry" \
	grep -q "reading the inputs again" "$WORK/err"
diffs "$E/file.json" > "$WORK/file.diffs"
check "the example's duplicate is found" grep -q '"duplicate"' "$WORK/file.diffs"

rm -rf "$E/state"
mkfifo "$E/local.fifo"
csv_job "$E/local.fifo" "$E/fifo.json"
cat "$E/local.csv" > "$E/local.fifo" &
writer=$!
expect_exit 0 "local flow from a FIFO (written once)" \
	timeout 60 "$RECON" run --job "$E/fifo.json" --date 2024-01-16 --dry-run
kill "$writer" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
check "a FIFO is not read twice" sh -c "! grep -q 'reading the inputs again' '$WORK/err'"
diffs "$E/fifo.json" > "$WORK/fifo.diffs"
check "FIFO: the same differences as from a file" cmp -s "$WORK/file.diffs" "$WORK/fifo.diffs"

rm -rf "$E/state"
csv_job /dev/stdin "$E/stdin.json"
expect_exit 0 "local flow from a pipe on stdin" \
	sh -c "cat '$E/local.csv' | timeout 60 '$RECON' run --job '$E/stdin.json' --date 2024-01-16 --dry-run"
diffs "$E/stdin.json" > "$WORK/stdin.diffs"
check "pipe: the same differences as from a file" cmp -s "$WORK/file.diffs" "$WORK/stdin.diffs"

# compressed, through a FIFO whose writer opens it a second late (read as ended
# until then), and on stdin from a writer that pauses (reads find nothing yet)
gzip -c "$E/local.csv" > "$E/local.csv.gz"
rm -rf "$E/state"
rm -f "$E/local.fifo"
mkfifo "$E/local.fifo"
(sleep 1; cat "$E/local.csv.gz" > "$E/local.fifo") &
writer=$!
expect_exit 0 "gzip local flow from a FIFO whose writer comes late" \
	timeout 60 "$RECON" run --job "$E/fifo.json" --date 2024-01-16 --dry-run
wait "$writer" 2>/dev/null || true
diffs "$E/fifo.json" > "$WORK/fifo-gz.diffs"
check "gzip FIFO: the same differences as from a file" cmp -s "$WORK/file.diffs" "$WORK/fifo-gz.diffs"

rm -rf "$E/state"
expect_exit 0 "gzip local flow from a pipe on stdin that pauses" \
	sh -c "{ head -c 100 '$E/local.csv.gz'; sleep 1; tail -c +101 '$E/local.csv.gz'; } |
		timeout 60 '$RECON' run --job '$E/stdin.json' --date 2024-01-16 --dry-run"
diffs "$E/stdin.json" > "$WORK/stdin-gz.diffs"
check "gzip pipe: the same differences as from a file" cmp -s "$WORK/file.diffs" "$WORK/stdin-gz.diffs"

# a gzip statement (a regular file): its rows are estimated inflated, so the
# run speculates as for the plain file, and reads both again after the duplicate
rm -rf "$E/state"
gzip -c "$E/statements/2024-01-16.csv" > "$E/statements/gz.tmp"
mv "$E/statements/gz.tmp" "$E/statements/2024-01-16.csv"
expect_exit 0 "a gzip statement" \
	timeout 60 "$RECON" run --job "$E/file.json" --date 2024-01-16 --dry-run
check "a gzip statement is read again after the duplicate entry" \
	grep -q "reading the inputs again" "$WORK/err"
diffs "$E/file.json" > "$WORK/gz.diffs"
check "gzip statement: the same differences as from the plain file" \
	cmp -s "$WORK/file.diffs" "$WORK/gz.diffs"

finish
