#!/bin/sh
# recon validate: one line per check, exit 0 or the first failure's code, and
# nothing recorded (no state store created). With the throwaway PostgreSQL
# (RECON_TEST_PG_DSN, from scripts/test.sh): a SELECT-only reader passes, a
# writer without USAGE on the merchant tables' sequences fails with 77, and a
# run with that writer exits 77 with one line, not a line per key.
. "$(dirname "$0")/lib.sh"
setup_example
E=$WORK/ex

expect_exit 0 "the example job validates" "$RECON" validate --job "$JOB"
check "one line per check" test "$(grep -c '^ok ' "$WORK/out")" -ge 6
check "the state check names the state store" grep -q '^ok   state .*state/recon.db' "$WORK/out"
check "validate records nothing (no state store)" test ! -e "$E/state/recon.db"
expect_exit 0 "--quiet prints only problems" "$RECON" validate --job "$JOB" --quiet
check "--quiet printed nothing" test ! -s "$WORK/out"

sed 's#"flow.db"#"missing.db"#' "$JOB" > "$E/nolocal.json"
expect_exit 69 "a missing local file is unavailable" "$RECON" validate --job "$E/nolocal.json"
check "the failure names the file" grep -q '^FAIL local .*missing.db' "$WORK/out"
check "the later checks still run" grep -q '^ok   heartbeat' "$WORK/out"

touch "$E/afile"
sed 's#"state/recon.db"#"afile/recon.db"#' "$JOB" > "$E/nostate.json"
expect_exit 73 "a state store under a file cannot be written" "$RECON" validate --job "$E/nostate.json"

cat > "$E/pg.json" << 'JSON'
{
  "job": "validate_pg",
  "timezone": "Asia/Shanghai",
  "currency": "CNY",
  "upstream": { "kind": "csv", "path": "statements/{date}.csv", "format": "wechatpay-trade-bill" },
  "local": { "kind": "postgres", "dsn_env": "RECON_V_READER", "table": "payment_flow",
             "columns": { "key": "out_trade_no", "amount_minor": "amount_cents",
                          "currency": "currency", "status": "status", "time": "created_at" } },
  "status_map": { "local": { "PAID": "success", "PENDING": "pending",
                             "REFUNDED": "refunded", "CLOSED": "closed" } },
  "actions": { "writer_dsn_env": "RECON_V_WRITER" },
  "state": "state/pg.db"
}
JSON
env -u RECON_V_READER -u RECON_V_WRITER "$RECON" validate --job "$E/pg.json" > "$WORK/out" 2>&1 && rc=0 || rc=$?
check "an unset DSN variable fails with 78 (exit $rc)" test "$rc" = 78
check "it names the variable and the job key" grep -q "^FAIL env .*'RECON_V_READER' (local.dsn_env) is not set" "$WORK/out"
check "profiles are listed" grep -q "^ok   profile .*wechatpay-trade-bill" "$WORK/out"

if [ -n "${RECON_TEST_PG_DSN:-}" ] && command -v psql > /dev/null 2>&1; then
	# a schema of its own: other database tests use the same database at once
	opt='options=-csearch_path%3Drecon_validate'
	psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" > /dev/null << 'SQL'
DROP SCHEMA IF EXISTS recon_validate CASCADE;
DO $$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'recon_v_writer') THEN
    DROP OWNED BY recon_v_writer; DROP ROLE recon_v_writer;
  END IF;
END $$;
CREATE SCHEMA recon_validate;
CREATE ROLE recon_v_writer LOGIN PASSWORD 'v-writer-pw';
SQL
	PGOPTIONS='-c search_path=recon_validate' psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" \
		-f "$SRC/sql/postgres/payment_flow.sql" -f "$SRC/sql/postgres/merchant.sql" > /dev/null
	psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" > /dev/null << 'SQL'
GRANT USAGE ON SCHEMA recon_validate TO recon_ro, recon_v_writer;
GRANT SELECT ON recon_validate.payment_flow TO recon_ro;
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA recon_validate TO recon_v_writer;
SQL
	host=$(echo "$RECON_TEST_PG_DSN" | sed 's#.*@\([^/]*\)/.*#\1#')
	export RECON_V_READER="$RECON_TEST_PG_RO_DSN?$opt"
	export RECON_V_WRITER="postgresql://recon_v_writer:v-writer-pw@$host/recon_test?$opt"
	expect_exit 77 "a writer without USAGE on the sequences fails with 77" \
		"$RECON" validate --job "$E/pg.json"
	check "the reader connects" grep -q "^ok   local .*connected as 'recon_ro'" "$WORK/out"
	check "the reader is SELECT-only" grep -q "^ok   local .*table 'payment_flow': SELECT only" "$WORK/out"
	check "the missing sequence grant is named" \
		grep -q "^FAIL writer .*table 'payment_flow': needs USAGE on sequence recon_validate.payment_flow_id_seq" "$WORK/out"
	check "the password never appears" sh -c "! grep -q 'v-writer-pw' '$WORK/out'"
	# the same writer in a run: exit 77, one line, not one per key
	PGOPTIONS='-c search_path=recon_validate' psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" \
		-f "$E/flow.sql" > /dev/null
	sed -e 's#"kind": "sqlite",#"kind": "postgres", "dsn_env": "RECON_V_READER",#' \
		-e 's#"path": "flow.db",##' \
		-e 's#"state": "state/recon.db",#"actions": {"writer_dsn_env": "RECON_V_WRITER"}, "state": "state/run.db",#' \
		"$JOB" > "$E/pgrun.json"
	expect_exit 77 "a run whose writer lacks a grant exits 77" \
		"$RECON" run --job "$E/pgrun.json" --date 2024-01-16 --quiet
	check "with one line saying so" test "$(grep -c 'permission denied' "$WORK/err")" = 1
	check "which says the other writes were skipped" grep -q "other writes were skipped" "$WORK/err"
	check "naming the grant's object" grep -q 'payment_flow_id_seq' "$WORK/err"
	check "and no line per key" sh -c "! grep -q 'failed:' '$WORK/err'"
	psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" > /dev/null << 'SQL'
GRANT USAGE ON ALL SEQUENCES IN SCHEMA recon_validate TO recon_v_writer;
SQL
	expect_exit 0 "with the README's grants the job validates" "$RECON" validate --job "$E/pg.json"
	check "the writer's tables are checked" \
		grep -q "^ok   writer .*table 'recon_outbox': SELECT, INSERT and sequences granted" "$WORK/out"
	export RECON_V_READER="$RECON_TEST_PG_DSN?$opt"
	expect_exit 0 "a reader that may write is a warning, not a failure" \
		"$RECON" validate --job "$E/pg.json"
	check "the warning says so" grep -q "^warn local .*the reader may write it" "$WORK/out"
	psql -X -q "$RECON_TEST_PG_DSN" > /dev/null 2>&1 << 'SQL' || true
DROP SCHEMA IF EXISTS recon_validate CASCADE;
DROP OWNED BY recon_v_writer; DROP ROLE recon_v_writer;
SQL
elif [ "${CI:-}" = true ]; then
	not_ok "RECON_TEST_PG_DSN is not set (scripts/test.sh starts PostgreSQL)"
else
	echo "skip - no PostgreSQL (RECON_TEST_PG_DSN)"
fi
finish
