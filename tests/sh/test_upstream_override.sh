#!/bin/sh
# run --upstream FILE|-: one run reads another statement, or standard input
# (a downloaded statement piped in). A pipe is read once: no speculative
# re-read, same differences as from the job's own file. The example's
# statement lists an entry twice, so a regular file is read again.
. "$(dirname "$0")/lib.sh"

setup_example
E=$WORK/ex
STMT=$E/statements/2024-01-16.csv
diffs() { "$RECON" diff --job "$JOB" --format jsonl | jq -c '[.key, .class]'; }

expect_exit 0 "the job's own statement" \
	"$RECON" run --job "$JOB" --date 2024-01-16 --dry-run
diffs > "$WORK/own.diffs"

mv "$STMT" "$WORK/elsewhere.csv"
rm -rf "$E/state"
expect_exit 0 "--upstream FILE" \
	"$RECON" run --job "$JOB" --date 2024-01-16 --dry-run --upstream "$WORK/elsewhere.csv"
diffs > "$WORK/file.diffs"
check "same differences from another file" cmp -s "$WORK/own.diffs" "$WORK/file.diffs"
check "the origin names the file read" \
	sh -c "'$RECON' diff --job '$JOB' --format jsonl | grep -q elsewhere.csv"

rm -rf "$E/state"
set +e
cat "$WORK/elsewhere.csv" | timeout 60 "$RECON" run --job "$JOB" --date 2024-01-16 \
	--dry-run --upstream - > "$WORK/out" 2> "$WORK/err"
rc=$?
set -e
check "--upstream - from a pipe exits 0" [ "$rc" = 0 ]
check "a pipe is not read again" sh -c "! grep -q 'reading the inputs again' '$WORK/err'"
diffs > "$WORK/pipe.diffs"
check "same differences from a pipe" cmp -s "$WORK/own.diffs" "$WORK/pipe.diffs"

rm -rf "$E/state"
gzip -c "$WORK/elsewhere.csv" > "$WORK/elsewhere.csv.gz"
set +e
cat "$WORK/elsewhere.csv.gz" | timeout 60 "$RECON" run --job "$JOB" --date 2024-01-16 \
	--dry-run --upstream - > "$WORK/out" 2> "$WORK/err"
rc=$?
set -e
check "--upstream - from a gzip pipe exits 0" [ "$rc" = 0 ]
diffs > "$WORK/gz.diffs"
check "same differences from a gzip pipe" cmp -s "$WORK/own.diffs" "$WORK/gz.diffs"

printf 'PK\003\004rest' > "$WORK/fake.zip"
set +e
cat "$WORK/fake.zip" | "$RECON" run --job "$JOB" --date 2024-01-16 --dry-run \
	--upstream - > "$WORK/out" 2> "$WORK/err"
rc=$?
set -e
check "a .zip from a pipe is refused (exit 65)" [ "$rc" = 65 ]
check "... saying to give its path" grep -q "a .zip cannot be read from a pipe" "$WORK/err"

expect_exit 64 "--upstream without --date (several days could run)" \
	"$RECON" run --job "$JOB" --dry-run --upstream "$WORK/elsewhere.csv"
expect_exit 64 "--upstream in hot mode" \
	"$RECON" run --job "$JOB" --mode hot --dry-run --upstream "$WORK/elsewhere.csv"
expect_exit 64 "rerun --upstream over several days" \
	"$RECON" rerun --job "$JOB" --from 2024-01-15 --to 2024-01-16 --upstream - < /dev/null
finish
