#!/bin/sh
# Runs of the example job against the state store: dry runs are repeatable and
# move nothing; a failed run moves no watermark; a later run resolves.
. "$(dirname "$0")/lib.sh"
setup_example

expect_exit 0 "dry run 1" "$RECON" run --job "$JOB" --date 2024-01-16 --dry-run --quiet
expect_exit 0 "dry run 2" "$RECON" run --job "$JOB" --date 2024-01-16 --dry-run --quiet
"$RECON" diff --job "$JOB" --run 1 --format jsonl > "$WORK/d1"
"$RECON" diff --job "$JOB" --run 2 --format jsonl > "$WORK/d2"
check "two dry runs print byte-identical differences" cmp -s "$WORK/d1" "$WORK/d2"
check "the differences are the six classes" \
	test "$(sed 's/.*"class":"\([a-z_]*\)".*/\1/' "$WORK/d1" | LC_ALL=C sort | tr '\n' ' ')" = \
	"amount_mismatch duplicate extra missing status_mismatch stuck "
"$RECON" status --job "$JOB" > "$WORK/status0"
check "status shows the two runs read identical inputs (same SHA-256)" \
	test "$(grep -cE '^ +[12] t1 +2024-01-16 success +[0-9a-f]{12} ' "$WORK/status0")" = 2 -a \
	"$(grep -E '^ +[12] t1 ' "$WORK/status0" | awk '{print $5}' | sort -u | wc -l)" = 1
check "a dry run moves no watermark" test "$(sql 'SELECT count(*) FROM watermarks')" = 0
check "a dry run writes no heartbeat" test ! -e "$WORK/ex/state/recon.prom"
check "a dry run leaves the ledger alone" test "$(sql 'SELECT count(*) FROM differences')" = 0

mv "$WORK/ex/statements/2024-01-16.csv" "$WORK/stmt.csv"
expect_exit 69 "a missing statement fails the run" "$RECON" run --job "$JOB" --date 2024-01-16
check "the failure names the file" grep -q "cannot open '.*2024-01-16.csv'" "$WORK/err"
check "a failed run moves no watermark: it stays at the day's start" \
	test "$(sql "SELECT reconciled_until_ms FROM watermarks WHERE mode = 't1'")" = 1705334400000
check "a failed run is recorded" \
	test "$(sql "SELECT outcome FROM runs ORDER BY id DESC LIMIT 1")" = failed
mv "$WORK/stmt.csv" "$WORK/ex/statements/2024-01-16.csv"

expect_exit 0 "a real run" "$RECON" run --job "$JOB" --date 2024-01-16 --quiet
check "the watermark is the day's end" \
	test "$(sql "SELECT reconciled_until_ms FROM watermarks WHERE mode = 't1'")" = 1705420800000
check "the heartbeat file exists" test -s "$WORK/ex/state/recon.prom"
check "five open differences (the replayed missing order is resolved by its replay)" \
	test "$(sql "SELECT count(*) FROM items WHERE state = 'open' AND severity <> 'info'")" = 5
check "the replay resolved its item" \
	test "$(sql "SELECT ended_by FROM items WHERE key = 'ORD-1002'")" = replayed

# run 1 acted: the missing order replayed with its idempotency record, tickets opened,
# the stuck order re-pushed through the outbox
flow() { sqlite3 "$WORK/ex/flow.db" "$1"; }
check "run 1 replayed ORD-1002 as PAID at its upstream time" \
	test "$(flow "SELECT amount_cents || ' ' || status || ' ' || created_at FROM payment_flow WHERE out_trade_no = 'ORD-1002'")" = "5000 PAID 2024-01-16 09:30:11"
check "with its idempotency record" \
	test "$(flow "SELECT idem_key || ' ' || biz_type FROM idempotency_record")" = "recon:example_payments:replay:ORD-1002 recon_replay"
check "run 1 opened four tickets in the flow database" \
	test "$(flow "SELECT group_concat(biz_key || ':' || class || ':' || severity, ' ') FROM (SELECT * FROM recon_ticket ORDER BY biz_key)")" = \
	"ORD-1003:extra:normal ORD-1005:amount_mismatch:critical ORD-1006:status_mismatch:normal ORD-1007:duplicate:normal"
check "and in the state store" test "$(sql "SELECT count(*) FROM tickets WHERE status = 'open'")" = 4
check "run 1 re-pushed the stuck order" \
	test "$(flow "SELECT biz_key || ' ' || event FROM recon_outbox")" = "ORD-1004 recon.repush"
check "the amount mismatch raised an alert" grep -q "ALERT amount_mismatch job 'example_payments' key 'ORD-1005'" "$WORK/err"
"$RECON" tickets --job "$JOB" --format csv > "$WORK/tickets.csv"
check "recon tickets lists them" test "$(grep -c '^ORD-' "$WORK/tickets.csv")" = 4

# the amount is corrected by hand: a rerun resolves it, and ORD-1002 (replayed) too
flow "UPDATE payment_flow SET amount_cents = 8800 WHERE out_trade_no = 'ORD-1005'"
expect_exit 0 "rerun of the day" "$RECON" rerun --job "$JOB" --from 2024-01-16 --to 2024-01-16 --json
check "run 2 replays nothing and opens nothing" \
	grep -q '"actions":{"replay":{},"ticket":{"already":3},"repush":{"already":1},"transition":{},"alert":{},"retries":0}' "$WORK/out"
check "nothing written twice" \
	test "$(flow "SELECT (SELECT count(*) FROM payment_flow) || ' ' || (SELECT count(*) FROM idempotency_record) || ' ' || (SELECT count(*) FROM recon_ticket) || ' ' || (SELECT count(*) FROM recon_outbox)")" = "15 1 4 1"
check "ORD-1002 and ORD-1005 are resolved" \
	test "$(sql "SELECT group_concat(key) FROM (SELECT key FROM items WHERE state = 'resolved' ORDER BY key)")" = "ORD-1002,ORD-1005"
check "four stay open" \
	test "$(sql "SELECT count(*) FROM items WHERE state = 'open' AND severity <> 'info'")" = 4
"$RECON" status --job "$JOB" > "$WORK/status"
check "status shows the t1 watermark" grep -q "watermark 2024-01-16T16:00:00.000Z" "$WORK/status"
check "status shows open differences" grep -q "missing 0, extra 1, stuck 1, amount_mismatch 0" "$WORK/status"

# bad input: an unknown local status is a reject that fails the run (exit 65)
sqlite3 "$WORK/ex/flow.db" "UPDATE payment_flow SET status = 'WEIRD' WHERE out_trade_no = 'ORD-1001'"
expect_exit 65 "a reject over max_rejects fails the run" \
	"$RECON" rerun --job "$JOB" --from 2024-01-16 --to 2024-01-16
check "the reject names origin, field and word" \
	grep -q "payment_flow: 'status': unknown status 'WEIRD'" "$WORK/err"
check "the reject is stored" \
	test "$(sql "SELECT count(*) FROM rejects WHERE reason LIKE 'unknown status%'")" = 1
check "the watermark did not move back" \
	test "$(sql "SELECT reconciled_until_ms FROM watermarks WHERE mode = 't1'")" = 1705420800000

# a bad job file: exit 78 with file:line: 'key'
sed 's/"margin": "10m"/"margin": "10 minutes"/' "$JOB" > "$WORK/ex/bad.json"
expect_exit 78 "a bad job file" "$RECON" run --job "$WORK/ex/bad.json" --date 2024-01-16
check "the error names file, line and key" grep -q "bad.json:[0-9]*: 'margin'" "$WORK/err"
finish
