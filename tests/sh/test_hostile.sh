#!/bin/sh
# Issue 12: compensations that cannot be fooled. Each block is one finding of
# the issue, run against the example job (a CSV statement, a SQLite flow):
#   replays refused when the upstream order does not justify them (mixed
#   currencies, a sum beyond int64, zero or negative amounts, over-refunds):
#   a critical ticket, never an insert;
#   keys with invisible or invalid characters rejected, named by code point;
#   an empty statement is bad input unless expected or its trailer says 0 rows;
#   a 0-byte state store is an error naming it, never silently re-created;
#   the state store, its folder and the heartbeat are not world-readable;
#   a misspelt SQLite column is exit 78 naming it, not a string constant;
#   a circuit breaker stops the action phase when the writer stays unavailable,
#   and the state store is never locked while recon waits on the writer;
#   a FIFO statement nobody writes to times out, a device is no statement.
. "$(dirname "$0")/lib.sh"
DAY=2024-01-16
flow() { sqlite3 "$WORK/ex/flow.db" "$1"; }

# ---- replays the upstream does not justify (findings 2 and 3) --------------
setup_example
STMT=$WORK/ex/statements/$DAY.csv
cat >> "$STMT" <<'CSV'
2024-01-16 12:00:00,4200000001202401169001,ORD-9001,PAYMENT,50.00,,CNY
2024-01-16 12:00:01,4200000001202401169002,ORD-9001,PAYMENT,10.00,,USD
2024-01-16 12:01:00,4200000001202401169003,ORD-9002,PAYMENT,20.00,,CNY
2024-01-16 12:02:00,4200000001202401169003,ORD-9002,REFUND,20.00,5030000001202401169001,USD
2024-01-16 12:03:00,4200000001202401169004,ORD-9003,PAYMENT,50000000000000000.00,,CNY
2024-01-16 12:03:01,4200000001202401169005,ORD-9003,PAYMENT,50000000000000000.00,,CNY
2024-01-16 12:04:00,4200000001202401169006,ORD-9004,PAYMENT,-50.00,,CNY
2024-01-16 12:05:00,4200000001202401169007,ORD-9005,PAYMENT,0.00,,CNY
2024-01-16 12:06:00,4200000001202401169008,ORD-9006,PAYMENT,-92233720368547758.08,,CNY
2024-01-16 12:07:00,4200000001202401169009,ORD-9007,PAYMENT,30.00,,CNY
2024-01-16 12:08:00,4200000001202401169009,ORD-9007,REFUND,40.00,5030000001202401169002,CNY
CSV
expect_exit 0 "refused replays: the run succeeds with alerts" "$RECON" run --job "$JOB" --date $DAY
check "the summary counts 7 refused replays next to the good one" \
	grep -q "replay 1 done, 7 refused" "$WORK/out"
check "nothing inserted for the refused keys" test "$(flow "SELECT count(*) FROM payment_flow WHERE out_trade_no LIKE 'ORD-900%'")" = 0
check "the good missing order is replayed" test "$(flow "SELECT count(*) FROM payment_flow WHERE out_trade_no = 'ORD-1002'")" = 1
check "no idempotency record claims a refused order" \
	test "$(flow "SELECT count(*) FROM idempotency_record WHERE idem_key LIKE '%ORD-900%'")" = 0
check "a critical missing ticket per refused key" \
	test "$(sql "SELECT count(*) FROM tickets WHERE key LIKE 'ORD-900%' AND class = 'missing' AND severity = 'critical'")" = 7
check "each refusal is recorded with its reason" \
	test "$(sql "SELECT count(*) FROM actions WHERE action = 'replay' AND outcome = 'refused' AND error LIKE '%replay refused:%'")" = 7
for k in ORD-9001:mixed ORD-9002:mixed ORD-9003:overflow ORD-9004:zero ORD-9005:zero ORD-9006:zero ORD-9007:more; do
	key=${k%%:*}
	case ${k#*:} in
	mixed | overflow) why="mixed currencies or their sums overflow" ;;
	zero) why="zero or less" ;;
	more) why="refunds more than was paid" ;;
	esac
	check "$key: ALERT naming the reason ($why)" grep -q "ALERT missing job 'example_payments' key '$key': replay refused: .*$why" "$WORK/err"
done
expect_exit 0 "a dry run says the same" "$RECON" run --job "$JOB" --date $DAY --dry-run
check "dry run: refused, not would" grep -q "replay 7 refused" "$WORK/out"

# ---- invisible characters in keys (finding 5) ------------------------------
setup_example
STMT=$WORK/ex/statements/$DAY.csv
printf '2024-01-16 12:00:00,4200000001202401169101,ORD-\342\200\2131001,PAYMENT,100.00,,CNY\n' >> "$STMT"
expect_exit 65 "a zero-width space inside a key is a reject" "$RECON" run --job "$JOB" --date $DAY
check "the reject names the code point and the line" \
	grep -q "2024-01-16.csv:18.*invisible format character U+200B at offset 4 in key 'ORD-\\\\xe2\\\\x80\\\\x8b1001'" "$WORK/err"
check "no look-alike order replayed" test "$(flow "SELECT count(*) FROM payment_flow WHERE out_trade_no LIKE 'ORD-%1001'")" = 1
setup_example
STMT=$WORK/ex/statements/$DAY.csv
printf '2024-01-16 12:00:00,4200000001202401169102,\357\273\277ORD-1001,PAYMENT,100.00,,CNY\n' >> "$STMT"
expect_exit 65 "a BOM at the start of a key is a reject" "$RECON" run --job "$JOB" --date $DAY
check "the reject names U+FEFF" grep -q "U+FEFF at offset 0" "$WORK/err"

# ---- an empty statement does not close the day (finding 4) -----------------
wm() { sql "SELECT count(*) FROM watermarks WHERE mode = 't1' AND reconciled_until_ms > 1705334400000"; }
setup_example
STMT=$WORK/ex/statements/$DAY.csv
: > "$STMT"
expect_exit 65 "a 0-byte statement is bad input" "$RECON" run --job "$JOB" --date $DAY
check "it names the file and says what to set" grep -q "$DAY.csv:1: empty file: no entries.*\"allow_empty\": true" "$WORK/err"
check "the watermark does not move" test "$(wm)" = 0
head -n 1 "$SRC/examples/basic/statements/$DAY.csv" > "$STMT"
expect_exit 65 "a header-only statement is bad input" "$RECON" run --job "$JOB" --date $DAY
check "the watermark still does not move" test "$(wm)" = 0
cp "$SRC/examples/basic/statements/$DAY.csv" "$STMT"
expect_exit 0 "the real file, published later, is reconciled" "$RECON" run --job "$JOB" --date $DAY
check "and its missing order replayed" test "$(flow "SELECT count(*) FROM payment_flow WHERE out_trade_no = 'ORD-1002'")" = 1
setup_example
STMT=$WORK/ex/statements/$DAY.csv
: > "$STMT"
sed -i 's/"kind": "csv",/"kind": "csv", "allow_empty": true,/' "$JOB"
expect_exit 0 "a job that expects empty days reconciles an empty file" "$RECON" run --job "$JOB" --date $DAY
# a WeChat bill whose trailer says 0 rows is a day without trades
W=$WORK/wx
rm -rf "$W"
cp -R "$SRC/tests/cases/wechatpay_bill" "$W"
mkdir -p "$W/formats"
cp "$SRC/rules/formats/"*.json "$W/formats/"
cat "$SRC/sql/sqlite/payment_flow.sql" "$W/flow.sql" | sqlite3 "$W/flow.db"
WX=$W/statements/$DAY.csv
{ head -n 1 "$WX"; tail -n 2 "$WX" | head -n 1; printf '`0,`0.00,`0.00,`0.00,`0.00000,`0.00,`0.00\r\n'; } > "$WX.new"
mv "$WX.new" "$WX"
expect_exit 0 "a bill whose trailer states 0 rows is a day without trades" "$RECON" run --job "$W/job.json" --date $DAY --dry-run

# ---- the state store does not start over (finding 7), file modes (12) ------
setup_example
(umask 022 && "$RECON" run --job "$JOB" --date $DAY --quiet > /dev/null 2>&1) || true
check "the state store is 0640" test "$(stat -c %a "$DB")" = 640
check "its folder is 0750" test "$(stat -c %a "$WORK/ex/state")" = 750
# metrics only, read by node_exporter as another user (the state store stays 0640)
check "the heartbeat is 0644" test "$(stat -c %a "$WORK/ex/state/recon.prom")" = 644
rm -f "$DB-wal" "$DB-shm"
: > "$DB"
expect_exit 1 "a 0-byte state store is an error" "$RECON" run --job "$JOB" --date 2024-01-17
check "it names the file" grep -qF "state store '$DB' is an empty file (0 bytes)" "$WORK/err"
check "and leaves it alone" test ! -s "$DB"

# ---- a misspelt SQLite column is not a string constant (finding 9) ---------
setup_example
sed -i 's/"key": "out_trade_no", "amount_minor"/"key": "out_trade_nr", "amount_minor"/' "$JOB"
expect_exit 78 "a misspelt key column of the SQLite flow" "$RECON" run --job "$JOB" --date $DAY --dry-run
check "it names the column and the table" grep -q "column 'out_trade_nr' not found in table 'payment_flow'" "$WORK/err"

# ---- circuit breaker: the writer unavailable (finding 10) -------------------
setup_example
sed -i 's/"max_rejects": 0,/"max_rejects": 0, "actions": {"timeout": "1s", "attempts": 2, "breaker": 2},/' "$JOB"
# the state store exists (schema and all) before the run under test
"$RECON" run --job "$JOB" --date 2024-01-15 --dry-run --quiet > /dev/null 2>&1 || true
# another writer holds the flow's write lock (readers still read)
mkfifo "$WORK/hold"
sqlite3 "$WORK/ex/flow.db" < "$WORK/hold" > /dev/null 2>&1 &
holder=$!
exec 9> "$WORK/hold"
echo "BEGIN IMMEDIATE; INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES ('LOCK', 1, 'CNY', 'PAID', '2024-01-01 00:00:00');" >&9
sleep 0.3
start=$(date +%s)
# while recon waits for the locked writer (about 2 s per action), another
# writer of the state store (a second job, an operator) must not wait for it
( sleep 3; sqlite3 -cmd ".timeout 300" "$DB" "CREATE TABLE IF NOT EXISTS probe (x); INSERT INTO probe VALUES (1);" > "$WORK/probe" 2>&1; echo "rc=$?" >> "$WORK/probe" ) &
prober=$!
expect_exit 69 "the writer stays locked: the action phase stops" timeout 60 "$RECON" run --job "$JOB" --date $DAY
took=$(($(date +%s) - start))
wait "$prober" || true
check "the state store stayed writable while recon waited on the writer" grep -q "^rc=0" "$WORK/probe"
exec 9>&-
wait "$holder" 2> /dev/null || true
check "it says how many differences are left" grep -q "actions stopped after 2 in a row failed on an unavailable writer; 4 of 6 differences left for the next run" "$WORK/err"
check "within seconds ($took s), not per difference" test "$took" -lt 20
check "the watermark does not move" test "$(sql "SELECT count(*) FROM watermarks WHERE reconciled_until_ms > 1705334400000")" = 0
expect_exit 0 "the writer back: the rerun acts on everything" "$RECON" run --job "$JOB" --date $DAY
check "the missing order is replayed once" test "$(flow "SELECT count(*) FROM payment_flow WHERE out_trade_no = 'ORD-1002'")" = 1

# ---- statements that would keep a run busy forever (finding 10) ------------
setup_example
STMT=$WORK/ex/statements/$DAY.csv
rm "$STMT"
mkfifo "$STMT"
sed -i 's/"kind": "csv",/"kind": "csv", "idle_timeout": "1s",/' "$JOB"
start=$(date +%s)
expect_exit 69 "a FIFO statement without a writer times out" timeout 60 "$RECON" run --job "$JOB" --date $DAY
check "within the idle timeout ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 10
check "it says so" grep -q "no data from '.*$DAY.csv' for 1000 ms (idle_timeout)" "$WORK/err"
( sleep 0.3; cat "$SRC/examples/basic/statements/$DAY.csv" > "$STMT" ) &
expect_exit 0 "a FIFO with a writer is read" timeout 60 "$RECON" run --job "$JOB" --date $DAY --dry-run
wait
rm "$STMT"
ln -s /dev/zero "$STMT"
expect_exit 65 "/dev/zero is no statement" timeout 60 "$RECON" run --job "$JOB" --date $DAY
check "it says what it is" grep -q "is a character device, not a statement file" "$WORK/err"

finish
