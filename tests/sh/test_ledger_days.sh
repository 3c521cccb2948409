#!/bin/sh
# Keys across days (issue: the open-items ledger), day by day with RECON_NOW on a
# small hand-checkable history (Asia/Shanghai, 2024-03-01 .. 03-03):
#   K-A  100.00 paid, local 90.00; a 90.00 refund the next day: stays amount_mismatch
#   K-R  100.00 paid, local REFUNDED; 30.00 and 70.00 refunded on the next two days
#   K-P  50.00 paid, local REFUNDED; two id-less partial refunds (10 + 40) next day
#   K-V  45.00 paid; revoked (0.00) the next day, local CLOSED by then
#   K-M  paid 23:55, no local row: replayed, never extra afterwards
#   K-E  paid 23:59:58, local row written 00:00:05: matched, never extra
#   K-S1/K-S2 two orders sharing one provider transaction id
#   K-X  local only on 03-01; the provider lists it on 03-02: its ticket resolves
#   K-L  local only at 23:58: awaited on 03-01, extra on 03-02
. "$(dirname "$0")/lib.sh"
setup_example
E=$WORK/ex
sqlite3 "$E/flow.db" "DELETE FROM payment_flow"
rm -f "$E/statements/"*.csv
H=trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency
cat > "$E/statements/2024-03-01.csv" <<CSV
$H
2024-03-01 10:00:00,T-A,K-A,PAYMENT,100.00,,CNY
2024-03-01 11:00:00,T-R,K-R,PAYMENT,100.00,,CNY
2024-03-01 12:00:00,T-V,K-V,PAYMENT,45.00,,CNY
2024-03-01 13:00:00,T-S,K-S1,PAYMENT,10.00,,CNY
2024-03-01 13:00:00,T-S,K-S2,PAYMENT,11.00,,CNY
2024-03-01 14:00:00,T-P,K-P,PAYMENT,50.00,,CNY
2024-03-01 23:55:00,T-M,K-M,PAYMENT,20.00,,CNY
2024-03-01 23:59:58,T-E,K-E,PAYMENT,15.00,,CNY
CSV
cat > "$E/statements/2024-03-02.csv" <<CSV
$H
2024-03-02 08:00:00,T-X,K-X,PAYMENT,7.00,,CNY
2024-03-02 09:00:00,T-A,K-A,REFUND,90.00,R-A1,CNY
2024-03-02 10:00:00,T-R,K-R,REFUND,30.00,R-R1,CNY
2024-03-02 10:00:00,T-V,K-V,REVOKED,0.00,,CNY
2024-03-02 11:00:00,T-P,K-P,REFUND,10.00,,CNY
2024-03-02 12:00:00,T-P,K-P,REFUND,40.00,,CNY
CSV
cat > "$E/statements/2024-03-03.csv" <<CSV
$H
2024-03-03 09:00:00,T-R,K-R,REFUND,70.00,R-R2,CNY
CSV
sqlite3 "$E/flow.db" "INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('K-A', 9000, 'CNY', 'PAID', '2024-03-01 09:59:50'),
  ('K-R', 10000, 'CNY', 'REFUNDED', '2024-03-01 10:59:50'),
  ('K-V', 4500, 'CNY', 'PAID', '2024-03-01 11:59:50'),
  ('K-S1', 1000, 'CNY', 'PAID', '2024-03-01 12:59:50'),
  ('K-P', 5000, 'CNY', 'REFUNDED', '2024-03-01 13:59:50'),
  ('K-E', 1500, 'CNY', 'PAID', '2024-03-02 00:00:05'),
  ('K-X', 700, 'CNY', 'PAID', '2024-03-01 09:00:00'),
  ('K-L', 800, 'CNY', 'PAID', '2024-03-01 23:58:00')"
open_items() { sql "SELECT group_concat(key || ':' || class, ' ') FROM (SELECT key, class FROM items WHERE state = 'open' AND mode = 't1' ORDER BY key)"; }
flow() { sqlite3 "$E/flow.db" "$1"; }

# ---- days and watermarks -----------------------------------------------------
export RECON_NOW=2024-03-02T02:30:00Z
expect_exit 64 "today is not due" "$RECON" run --job "$JOB" --date 2024-03-02
check "it says when it becomes due" grep -q "2024-03-02 is not due yet: it becomes due at 2024-03-03 00:00:00" "$WORK/err"
expect_exit 64 "a mistyped future day is refused" "$RECON" run --job "$JOB" --date 2042-03-01
check "a refused day leaves no watermark and no run" test "$(sql "SELECT count(*) FROM watermarks") $(sql "SELECT count(*) FROM runs")" = "0 0"

# ---- day 1 -----------------------------------------------------------------
expect_exit 0 "day 1" "$RECON" run --job "$JOB" --date 2024-03-01
check "day 1: the open items" test "$(open_items)" = "K-A:amount_mismatch K-L:awaiting K-P:awaiting K-R:awaiting K-X:extra"
check "day 1: the alert names the amounts" grep -q "recon: ALERT amount_mismatch job 'example_payments' key 'K-A': upstream 100.00 CNY, local 90.00 CNY" "$WORK/err"
check "day 1: an alert is not an error" sh -c "! grep -q 'error:' '$WORK/err'"
check "day 1: a shared transaction id is no duplicate; K-S2 replayed" \
	test "$(flow "SELECT amount_cents || ' ' || status FROM payment_flow WHERE out_trade_no = 'K-S2'")" = "1100 PAID"
check "day 1: K-M replayed at its upstream time" \
	test "$(flow "SELECT created_at FROM payment_flow WHERE out_trade_no = 'K-M'")" = "2024-03-01 23:55:00"
check "day 1: the replays closed their items" \
	test "$(sql "SELECT group_concat(key || ':' || ended_by, ' ') FROM (SELECT key, ended_by FROM items WHERE state = 'resolved' ORDER BY key)")" = "K-M:replayed K-S2:replayed"
check "day 1: tickets in both stores" test "$(sql "SELECT group_concat(key, ' ') FROM (SELECT key FROM tickets WHERE status = 'open' ORDER BY key)") / $(flow "SELECT group_concat(biz_key, ' ') FROM (SELECT biz_key FROM recon_ticket WHERE status = 'open' ORDER BY biz_key)")" = "K-A K-X / K-A K-X"
check "day 1: both stores name the same opening run" \
	test "$(sql "SELECT opened_run FROM tickets WHERE key = 'K-X'")" = "$(flow "SELECT run_id FROM recon_ticket WHERE biz_key = 'K-X'")"

# ---- day 2 -----------------------------------------------------------------
sqlite3 "$E/flow.db" "UPDATE payment_flow SET status = 'CLOSED' WHERE out_trade_no = 'K-V'"
export RECON_NOW=2024-03-03T02:30:00Z
expect_exit 0 "day 2" "$RECON" run --job "$JOB"
d2=$(sql "SELECT max(id) FROM runs")
check "day 2: a refund of 90.00 does not resolve the 100.00 vs 90.00 mismatch" \
	test "$(open_items)" = "K-A:amount_mismatch K-L:extra K-R:awaiting"
check "day 2: the mismatch item is the one day 1 opened" \
	test "$(sql "SELECT opened_run FROM items WHERE key = 'K-A' AND state = 'open'")" = 1
check "day 2: resolved counts only what became matched" grep -q "^resolved   1 earlier difference now matched" "$WORK/out"
check "day 2: K-X's ticket is resolved in both stores, naming the run" \
	test "$(sql "SELECT status || ' ' || resolved_run FROM tickets WHERE key = 'K-X'") / $(flow "SELECT status || ' ' || resolved_run FROM recon_ticket WHERE biz_key = 'K-X'")" = "resolved $d2 / resolved $d2"
check "day 2: the revocation (0.00) closes K-V: no amount mismatch" \
	test "$(sql "SELECT count(*) FROM run_differences WHERE run_id = $d2 AND key = 'K-V'")" = 0
check "day 2: two id-less partial refunds add up (K-P matched)" \
	test "$(sql "SELECT ended_by FROM items WHERE key = 'K-P'")" = matched
check "day 2: the order paid 23:59:58 with its row written 00:00:05 is not extra" \
	test "$(sql "SELECT count(*) FROM items WHERE key = 'K-E'")" = 0
check "day 2: recon's own replays are not extra" \
	test "$(sql "SELECT count(*) FROM items WHERE key IN ('K-M', 'K-S2') AND state = 'open'")" = 0
check "day 2: the awaited local-only key is extra now, with a ticket" \
	test "$(sql "SELECT status FROM tickets WHERE key = 'K-L'")" = open

# ---- day 3 -----------------------------------------------------------------
export RECON_NOW=2024-03-04T02:30:00Z
expect_exit 0 "day 3" "$RECON" run --job "$JOB"
check "day 3: 30.00 + 70.00 over two days make the refund whole" \
	test "$(open_items)" = "K-A:amount_mismatch K-L:extra"
check "day 3: no status_mismatch was ever raised for K-R" \
	test "$(sql "SELECT count(*) FROM run_differences WHERE key = 'K-R'")" = 0
"$RECON" status --job "$JOB" > "$WORK/status"
check "status counts the open items" grep -q "missing 0, extra 1, stuck 0, amount_mismatch 1" "$WORK/status"
expect_exit 0 "diff --open" "$RECON" diff --job "$JOB" --open --format jsonl
check "diff --open lists every open difference" test "$(wc -l < "$WORK/out")" = 2
expect_exit 0 "diff --date" "$RECON" diff --job "$JOB" --date 2024-03-01 --format jsonl
check "diff --date prints that day's latest run" grep -q '"key":"K-X","class":"extra"' "$WORK/out"

# ---- a rerun of day 1 cannot close what later days found ----------------------
expect_exit 0 "rerun of day 1" "$RECON" rerun --job "$JOB" --from 2024-03-01 --to 2024-03-01
check "the rerun keeps the later days' view" test "$(open_items)" = "K-A:amount_mismatch K-L:extra"
check "the rerun resolved nothing" sh -c "! grep -q '^resolved' '$WORK/out'"
check "the rerun does not move the watermark back" \
	test "$(sql "SELECT reconciled_until_ms FROM watermarks WHERE mode = 't1'")" = "$(date -u -d 2024-03-03T16:00:00Z +%s000)"

# ---- never reconciled vs already reconciled ------------------------------------
printf '%s\n2024-02-28 10:00:00,T-F,K-F,PAYMENT,1.00,,CNY\n' "$H" > "$E/statements/2024-02-28.csv"
sqlite3 "$E/flow.db" "INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES ('K-F', 100, 'CNY', 'PAID', '2024-02-28 09:59:00')"
expect_exit 0 "a day before the first run, never reconciled, runs" "$RECON" run --job "$JOB" --date 2024-02-28
check "it was run, not called reconciled" test "$(sql "SELECT count(*) FROM runs WHERE business_date = '2024-02-28' AND outcome = 'success'")" = 1
expect_exit 0 "a reconciled day" "$RECON" run --job "$JOB" --date 2024-03-02
check "is said to be reconciled, by which run" grep -q "2024-03-02 is already reconciled (run $d2)" "$WORK/out"

# ---- a person closes a ticket ---------------------------------------------------
expect_exit 0 "tickets close" "$RECON" tickets close --job "$JOB" --key K-L --class extra --note "reversed by finance, case 42"
check "closed in both stores with the note" \
	test "$(sql "SELECT status || ' ' || note FROM tickets WHERE key = 'K-L'") / $(flow "SELECT status || ' ' || note FROM recon_ticket WHERE biz_key = 'K-L'")" = "closed reversed by finance, case 42 / closed reversed by finance, case 42"
expect_exit 0 "tickets lists the open ones" "$RECON" tickets --job "$JOB"
check "with amounts and the next step" grep -q "K-A .*100.00 CNY .*90.00 CNY  compare with the provider" "$WORK/out"
check "not the closed one" sh -c "! grep -q '^K-L ' '$WORK/out'"
expect_exit 0 "tickets --all" "$RECON" tickets --job "$JOB" --all --format csv
check "--all lists every ticket" test "$(($(wc -l < "$WORK/out") - 1))" = 3

# ---- a heartbeat the last run could not write is written by the next invocation --
rm -f "$E/state/recon.prom"
expect_exit 0 "an invocation with nothing to run" "$RECON" run --job "$JOB"
check "rewrites the missing heartbeat" test -s "$E/state/recon.prom"

# ---- recon check never reads a future watermark as "0 s behind" ---------------
sql "UPDATE watermarks SET reconciled_until_ms = $(date -u -d 2030-01-01 +%s000) WHERE mode = 't1'"
expect_exit 2 "check: a watermark in the future is critical" "$RECON" check --job "$JOB" --max-age 30d
check "and says so" grep -q "is in the future" "$WORK/out"

# ---- a date the zone skipped is no day to reconcile ----------------------------
jq '.timezone = "Pacific/Apia" | .upstream.allow_empty = true | .state = "state/apia.db" | .heartbeat = "state/apia.prom"' "$JOB" > "$E/apia.json"
for d in 2011-12-29 2011-12-31; do echo "$H" > "$E/statements/$d.csv"; done
RECON_NOW=2012-01-02T00:00:00Z expect_exit 0 "a rerun over Samoa's skipped day" "$RECON" rerun --job "$E/apia.json" --from 2011-12-29 --to 2011-12-31
check "says the day does not exist" grep -q "2011-12-30 does not exist in Pacific/Apia (skipped)" "$WORK/out"
check "runs the days around it" test "$(sqlite3 "$E/state/apia.db" "SELECT group_concat(business_date, ' ') FROM runs")" = "2011-12-29 2011-12-31"
unset RECON_NOW
finish
