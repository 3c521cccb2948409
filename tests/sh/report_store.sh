# A state store for the report tests (sourced after lib.sh), built through real
# t1 runs with RECON_NOW over four days (Asia/Shanghai, 2024-03-01 .. 03-04):
#   A1  100.00 CNY paid, local 90.00 (03-01): amount_mismatch, 10.00 CNY at stake
#   B1  250.50 CNY paid, no local row (03-01): missing, replayed, resolved that day
#   X1  12.34 CNY local only (03-01): extra; the provider lists it on 03-03: resolved
#   M1  5.00 CNY on both sides (03-02): matched
#   U1  30.00 USD paid, local 25.00 USD (03-02): amount_mismatch, 5.00 USD
#   U2  7.25 USD paid, local CLOSED (03-02): status_mismatch, 7.25 USD
#   X2  1000.00 CNY local only (03-02): extra, 1000.00 CNY
#   S1  3.00 CNY paid, local 2.50 (03-03): amount_mismatch, 0.50 CNY
#   03-04: a statement line whose amount is junk: the run fails (exit 65)
# At the end of 03-03: 5 open differences, 1010.50 CNY and 12.25 USD at stake,
# the oldest A1; by money: X2, A1, U2, U1, S1.
setup_example
E=$WORK/ex
sqlite3 "$E/flow.db" "DELETE FROM payment_flow"
rm -f "$E/statements/"*.csv
H=trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency
printf '%s\n%s\n%s\n%s\n' "$H" \
	"2024-03-01 10:00:00,T-A1,A1,PAYMENT,100.00,,CNY" \
	"2024-03-01 11:00:00,T-B1,B1,PAYMENT,250.50,,CNY" \
	"2024-03-01 12:00:00,T-F1,,FEE,0.60,,CNY" > "$E/statements/2024-03-01.csv"
printf '%s\n%s\n%s\n%s\n' "$H" \
	"2024-03-02 10:00:00,T-M1,M1,PAYMENT,5.00,,CNY" \
	"2024-03-02 11:00:00,T-U1,U1,PAYMENT,30.00,,USD" \
	"2024-03-02 12:00:00,T-U2,U2,PAYMENT,7.25,,USD" > "$E/statements/2024-03-02.csv"
printf '%s\n%s\n%s\n' "$H" \
	"2024-03-03 08:00:00,T-X1,X1,PAYMENT,12.34,,CNY" \
	"2024-03-03 10:00:00,T-S1,S1,PAYMENT,3.00,,CNY" > "$E/statements/2024-03-03.csv"
printf '%s\n%s\n' "$H" \
	"2024-03-04 10:00:00,T-Z1,Z1,PAYMENT,12.3O,,CNY" > "$E/statements/2024-03-04.csv"
sqlite3 "$E/flow.db" "INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('A1', 9000, 'CNY', 'PAID', '2024-03-01 09:59:50'),
  ('X1', 1234, 'CNY', 'PAID', '2024-03-01 09:00:00'),
  ('M1', 500, 'CNY', 'PAID', '2024-03-02 09:59:00'),
  ('U1', 2500, 'USD', 'PAID', '2024-03-02 10:59:00'),
  ('U2', 725, 'USD', 'CLOSED', '2024-03-02 11:59:00'),
  ('X2', 100000, 'CNY', 'PAID', '2024-03-02 09:00:00'),
  ('S1', 250, 'CNY', 'PAID', '2024-03-03 09:59:00')"
for d in 01 02 03; do
	RECON_NOW=2024-03-0$((${d#0} + 1))T02:30:00Z "$RECON" run --job "$JOB" --date 2024-03-$d \
		--quiet > /dev/null 2>&1
done
set +e
RECON_NOW=2024-03-05T02:30:00Z "$RECON" run --job "$JOB" --date 2024-03-04 --quiet > /dev/null 2>&1
DAY4=$?
set -e
