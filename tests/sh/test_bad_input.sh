#!/bin/sh
# Bad input (issue 6): every defect fails the run with exit 65 and a message
# naming file:line, loses no row (rows read = compared + keyless skipped +
# rejected, in the summary and in the stored run), and, when rejects are
# allowed, leaves the class of every key it does not touch unchanged.
# Statements: the WeChat Pay, Alipay and plain-CSV cases of tests/cases/.
. "$(dirname "$0")/lib.sh"
FMT=$SRC/rules/formats
DAY=2024-01-16

# setup NAME CASE: a fresh copy of tests/cases/CASE in $WORK/NAME with its flow.db
setup() {
	D=$WORK/$1
	rm -rf "$D"
	cp -R "$SRC/tests/cases/$2" "$D"
	mkdir -p "$D/formats"
	cp "$FMT"/*.json "$D/formats/"
	cat "$SRC/sql/sqlite/payment_flow.sql" "$D/flow.sql" | sqlite3 "$D/flow.db"
	JOB=$D/job.json
	DB=$D/state/recon.db
	STMT=$D/statements/$DAY.csv
}

run() { expect_exit "$1" "$2" "$RECON" run --job "$JOB" --date $DAY --dry-run; }

# counts READ COMPARED REJECTED SKIPPED: the summary's upstream line and the stored run
counts() {
	line="upstream *$1 read: $2 compared, $3 rejected"
	[ "$4" != 0 ] && line="$line, $4 keyless skipped"
	check "summary: $1 read = $2 compared + $4 skipped + $3 rejected" grep -q "$line" "$WORK/out"
	check "the stored run: $1 read, $3 rejected, $4 skipped" test \
		"$(sql 'SELECT rows_upstream, rows_rejected, rows_skipped FROM runs ORDER BY id DESC LIMIT 1')" = \
		"$1|$3|$4"
}

# says TEXT: the error names it (file:line and reason)
says() { check "message: $1" grep -qF -- "$1" "$WORK/err"; }

# classes_kept KEY: the differences other than KEY's are the baseline's
classes_kept() {
	"$RECON" diff --job "$JOB" --format jsonl | grep -v "\"key\":\"$1\"" > "$WORK/now" || true
	grep -v "\"key\":\"$1\"" "$WORK/base" > "$WORK/base_wo" || true
	check "other keys keep their class ($1 touched)" cmp -s "$WORK/base_wo" "$WORK/now"
	check "$1 gets no class" sh -c "! grep -q '\"key\":\"$1\"' '$WORK/now'"
}

allow_rejects() { sed -i 's/"max_rejects": 0/"max_rejects": 5/' "$JOB"; }

# wx_cell LINE CELL VALUE: sets one cell of a WeChat bill line (cells split on ",`")
wx_cell() {
	printf '%s' "$3" > "$WORK/cell"
	wx_cell_file "$1" "$2" "$WORK/cell"
}
wx_cell_file() { # LINE CELL FILE: the value is FILE's text (too long for an argument)
	awk -v l="$1" -v c="$2" -v f="$3" 'BEGIN { FS = ",`"; OFS = ",`"; getline v < f }
		NR == l { $c = v } { print }' "$STMT" > "$STMT.new" && mv "$STMT.new" "$STMT"
}

# ---- WeChat Pay: baseline -------------------------------------------------
setup wx wechatpay_bill
run 0 "wechat: the clean bill"
counts 20 20 0 0
"$RECON" diff --job "$JOB" --format jsonl > "$WORK/base"
check "wechat: the duplicate entry is the duplicate class" grep -q '"key":"DUP-1","class":"duplicate"' "$WORK/base"
check "wechat: the stored run counts one duplicate" \
	test "$(sql 'SELECT n_duplicate FROM runs ORDER BY id DESC LIMIT 1')" = 1
"$RECON" status --job "$JOB" > "$WORK/status"
check "status shows the statement's sha256" \
	grep -q "upstream_sha256 $(sha256sum "$STMT" | cut -d' ' -f1)" "$WORK/status"
check "status shows the config's sha256" grep -q "config_sha256 *[0-9a-f]\{64\}" "$WORK/status"
check "a sqlite flow has no file hash" sh -c "! grep -q local_sha256 '$WORK/status'"

# truncated last line: the file stops inside line 21, before the trailer
head -c "$(($(head -n 20 "$STMT" | wc -c) + 60))" "$STMT" > "$STMT.cut" && mv "$STMT.cut" "$STMT"
run 65 "wechat: truncated last line"
says "statements/$DAY.csv:21: the file ends without its control totals (no line starting with '总交易单数'): truncated?"
counts 20 0 1 0
check "the failed run still records the file's sha256" test \
	"$(sql 'SELECT upstream_sha256 FROM runs ORDER BY id DESC LIMIT 1')" = "$(sha256sum "$STMT" | cut -d' ' -f1)"
check "the rejected truncated record is stored" \
	test "$(sql "SELECT count(*) FROM rejects WHERE origin LIKE '%.csv:21' AND reason LIKE 'expected 27 fields%'")" = 1

# wrong column count (a cell lost), trailer intact
setup wx wechatpay_bill
sed -i '5s/,`0.60%//' "$STMT"
run 65 "wechat: wrong column count"
says "statements/$DAY.csv:5: expected 27 fields, found 26 (the control totals cannot be verified)"
counts 20 0 1 0

# non-numeric amounts
for bad in 12.3O N/A; do
	setup wx wechatpay_bill
	wx_cell 6 25 "$bad"
	run 65 "wechat: amount '$bad'"
	says "statements/$DAY.csv:6: '订单金额': '$bad' is not an amount (the control totals cannot be verified)"
	counts 20 0 1 0
done

# mixed encoding: a GBK product name inside the UTF-8 bill
setup wx wechatpay_bill
wx_cell 7 21 "$(printf '\300\266\311\253')"
run 65 "wechat: a GBK cell in a UTF-8 bill"
says "statements/$DAY.csv:7: invalid UTF-8 byte 0xC0 at field 21"
counts 20 0 1 0

# empty key: the totals still agree, so the row is a reject
setup wx wechatpay_bill
wx_cell 6 7 ""
run 65 "wechat: empty key"
says "statements/$DAY.csv:6: 'key': empty key '商户订单号'"
counts 20 19 1 0
allow_rejects
run 0 "wechat: empty key, rejects allowed"
counts 20 19 1 0
classes_kept K0

# a 1 MiB product name: read, matched, nothing else changes
setup wx wechatpay_bill
head -c 1048576 /dev/zero | tr '\0' 'x' > "$WORK/big"
wx_cell_file 8 21 "$WORK/big"
run 0 "wechat: a 1 MiB field"
counts 20 20 0 0
"$RECON" diff --job "$JOB" --format jsonl > "$WORK/now"
check "wechat: a 1 MiB field changes no class" cmp -s "$WORK/base" "$WORK/now"

# trailer that disagrees: a row dropped, a count edited, a sum edited
setup wx wechatpay_bill
sed -i '11d' "$STMT"
run 65 "wechat: a detail row removed"
says "statements/$DAY.csv:22: control total '总交易单数' is 20, but the file has 19 detail records"
counts 19 0 0 0
check "no difference recorded when the totals disagree" \
	test "$(sql 'SELECT count(*) FROM run_differences')" = 0
setup wx wechatpay_bill
sed -i '23s/`70.00,`0.00,/`70.01,`0.00,/' "$STMT"
run 65 "wechat: a refund total edited"
says "statements/$DAY.csv:23: control total '退款总金额' is 70.01, but the records' '退款金额' sum to 70.00"
setup wx wechatpay_bill
sed -i '23s/`128850.91488,/`128850.91489,/' "$STMT"
run 65 "wechat: the 5-decimal fee total edited"
says "control total '手续费总金额' is 128850.91489, but the records' '手续费' sum to 128850.91488"

# empty file, header-only file, a file in another provider's format
setup wx wechatpay_bill
: > "$STMT"
run 65 "wechat: empty file"
says "statements/$DAY.csv:1: empty file: no header line"
counts 0 0 0 0
setup wx wechatpay_bill
head -n 1 "$STMT" > "$STMT.h" && mv "$STMT.h" "$STMT"
run 65 "wechat: header-only file"
says "statements/$DAY.csv:1: the file ends without its control totals"
counts 0 0 0 0
setup wx wechatpay_bill
cp "$SRC/tests/cases/alipay_bill/statements/$DAY.csv" "$STMT"
run 65 "wechat: an Alipay file"
says "statements/$DAY.csv:1: column '商户订单号' (role 'key') not found in header"
setup wx wechatpay_bill
cp "$SRC/tests/cases/stripe_itemized/statements/$DAY.csv" "$STMT"
run 65 "wechat: a Stripe file"
says "statements/$DAY.csv:1: column '商户订单号' (role 'key') not found in header"

# ---- Alipay: GBK -----------------------------------------------------------
setup ali alipay_bill
run 0 "alipay: the clean bill"
counts 10 10 0 0
# an invalid GBK byte (0xFF) in a product name of line 8
awk 'NR == 8 { sub(/,/, ",\377") } { print }' "$STMT" > "$STMT.new" && mv "$STMT.new" "$STMT"
run 65 "alipay: invalid GBK byte"
says "statements/$DAY.csv:8: invalid GBK byte sequence at byte"
counts 10 0 1 0
check "the invalid byte is never a '?'" \
	sh -c "! sqlite3 '$DB' \"SELECT raw FROM rejects\" | grep -q '?'"
setup ali alipay_bill
iconv -f GBK -t UTF-8 "$STMT" | sed 's/#交易合计：8笔/#交易合计：9笔/' | iconv -f UTF-8 -t GBK > "$STMT.new"
mv "$STMT.new" "$STMT"
run 65 "alipay: the footer count disagrees"
says "statements/$DAY.csv:17: control total '#交易合计：' is 9, but the file has 8 交易 records"
setup ali alipay_bill
head -n 12 "$STMT" > "$STMT.new" && mv "$STMT.new" "$STMT"
run 65 "alipay: truncated (no footer)"
says "statements/$DAY.csv:12: the file ends without its control totals (no '#交易合计：' line): truncated?"
counts 7 0 0 0
setup ali alipay_bill_zip
Z=$D/statements/2088_20240116.zip
head -c 1000 "$Z" > "$Z.cut" && mv "$Z.cut" "$Z"
run 65 "alipay: a truncated zip"
says "2088_20240116.zip: damaged or unsupported zip archive"

# ---- plain CSV: row defects are rejects; the other keys keep their class ---
setup gc generic_csv
run 0 "plain: the clean statement"
"$RECON" diff --job "$JOB" --format jsonl > "$WORK/base"
plain_case() { # DESC LINE-TEXT MESSAGE
	setup gc generic_csv
	printf '%s\r\n' "$2" >> "$STMT"
	run 65 "plain: $1"
	says "statements/$DAY.csv:5: $3"
	counts 4 3 1 0
	allow_rejects
	run 0 "plain: $1, rejects allowed"
	counts 4 3 1 0
	classes_kept G-BAD
}
plain_case "wrong column count" 'G-BAD,2024-01-16 10:00:00,1.00,OK,t9,x,extra' \
	"'row': expected 6 fields, found 7"
plain_case "amount 12.3O" 'G-BAD,2024-01-16 10:00:00,12.3O,OK,t9,x' "'amount':"
plain_case "amount N/A" 'G-BAD,2024-01-16 10:00:00,N/A,OK,t9,x' "'amount':"
plain_case "empty key" ',2024-01-16 10:00:00,1.00,OK,t9,x' "'key': empty key 'order_no'"
plain_case "invalid UTF-8" "$(printf 'G-BAD,2024-01-16 10:00:00,1.00,OK,t9,\377')" \
	"'row': invalid UTF-8 byte 0xFF at field 6"
plain_case "1 MiB key" "G-BAD$(head -c 1048576 /dev/zero | tr '\0' '7'),2024-01-16 10:00:00,1.00,OK,t9,x" \
	"'key': key longer than 1024 bytes"
plain_case "unterminated quote" 'G-BAD,2024-01-16 10:00:00,1.00,OK,t9,"never closed' \
	"'row': unterminated quoted field"
# a truncated last line (no newline, cells missing)
setup gc generic_csv
printf 'G-BAD,2024-01-16 10:0' >> "$STMT"
run 65 "plain: truncated last line"
says "statements/$DAY.csv:5: 'row': expected 6 fields, found 2"
counts 4 3 1 0
# a defect on an existing key: only that key loses its class
setup gc generic_csv
sed -i '3s/,5.00,/,5.0O,/' "$STMT"
allow_rejects
run 0 "plain: a bad amount on G-2, rejects allowed"
counts 3 2 1 0
classes_kept G-2
# empty and header-only
setup gc generic_csv
: > "$STMT"
run 65 "plain: empty file"
says "statements/$DAY.csv:1: empty file: no header line"
setup gc generic_csv
head -n 1 "$STMT" > "$STMT.h" && mv "$STMT.h" "$STMT"
run 65 "plain: a header-only file is a statement without entries"
says "statements/$DAY.csv:1: no records: no entries"
counts 0 0 0 0
sed -i 's/"kind": *"csv",/"kind": "csv", "allow_empty": true,/' "$JOB"
run 0 "plain: a header-only file where the job expects empty days"
counts 0 0 0 0
finish
