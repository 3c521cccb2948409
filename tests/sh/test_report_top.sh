#!/bin/sh
# recon report (issue 15) beyond the top 1,000: HTML and Markdown list the 1,000
# open differences with the most money at stake and summarise the rest; the CSV
# has every one. The store comes from a real run: 1,005 local-only orders of
# 1.00 .. 1005.00 CNY on 2024-03-01 (extra, each with a ticket).
. "$(dirname "$0")/lib.sh"
setup_example
E=$WORK/ex
sqlite3 "$E/flow.db" "DELETE FROM payment_flow"
rm -f "$E/statements/"*.csv
# a statement without entries: this day has none (header only)
sed -i 's/"kind": "csv",/"kind": "csv", "allow_empty": true,/' "$JOB"
echo "trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency" \
	> "$E/statements/2024-03-01.csv"
sqlite3 "$E/flow.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1005)
  INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at)
  SELECT printf('E%04d', i), 100 * i, 'CNY', 'PAID', '2024-03-01 09:00:00' FROM n"
export RECON_NOW=2024-03-02T02:30:00Z
expect_exit 0 "a day with 1,005 extra orders" "$RECON" run --job "$JOB" --date 2024-03-01 --quiet
check "1,005 open items" test "$(sql "SELECT count(*) FROM items WHERE state = 'open'")" = 1005
expect_exit 0 "report --output report.html" "$RECON" report --job "$JOB" --output "$WORK/report.html"
H=$WORK/report.html
check "html: 1,005 open differences, 505,515.00 CNY at stake" \
	grep -q 'id="verdict">2024-03-01 reconciled: 1,005 open differences, 505,515.00 CNY at stake' "$H"
check "html: 1,000 rows listed" \
	test "$(sed -n '/<table id="items"/,/<\/table>/p' "$H" | grep -c '^<tr><td>E[0-9]')" = 1000
check "html: the first is the largest, the last listed the 1,000th" \
	test "$(sed -n '/<table id="items"/,/<\/table>/p' "$H" | grep -o '^<tr><td>E[0-9]*' | sed -n '1p;$p' | tr '\n' ' ')" = "<tr><td>E1005 <tr><td>E0006 "
check "html: the other five summarised" \
	grep -q '<p id="rest">5 more open differences, not listed: 15.00 CNY at stake. The full list: <code>recon report --format csv</code>' "$H"
expect_exit 0 "report --format md" "$RECON" report --job "$JOB" --format md
check "md: 1,000 rows and the rest summarised" \
	test "$(grep -c '^| E[0-9]' "$WORK/out") $(grep -c '^5 more open differences are not listed' "$WORK/out")" = "1000 1"
expect_exit 0 "report --format csv" "$RECON" report --job "$JOB" --format csv
check "csv: every one" test "$(grep -c '^2024-03-01,t1,E' "$WORK/out")" = 1005
check "csv: the smallest last" test "$(tail -n 1 "$WORK/out" | cut -d, -f3,6)" = "E0001,1.00"
finish
