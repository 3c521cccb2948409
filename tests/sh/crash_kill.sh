# Crash safety (issue 4), sourced by test_crash_kill_<engine>.sh with ENGINE set
# (sqlite or postgres): SIGKILL recon at random points of a run with thousands
# of actions, at least 20 times, then let it finish; the local flow,
# idempotency records, tickets and outbox must equal those of one clean run,
# and the watermark must never be ahead of committed actions.
#   RECON_KILLS (default 22), RECON_KILL_SEED (default 7)
. "$(dirname "$0")/lib.sh"
: "${ENGINE:?}"
KILLS=${RECON_KILLS:-22}
SEED=${RECON_KILL_SEED:-7}

# ---- a day with thousands of differences --------------------------------------
gen() {
	dir=$1
	mkdir -p "$dir/statements"
	cp "$SRC/examples/basic/job.json" "$dir/job.json"
	awk -v seed="$SEED" -v stmt="$dir/statements/2024-01-16.csv" -v sql="$dir/data.sql" 'BEGIN {
		srand(seed)
		print "trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency" > stmt
		print "BEGIN;" > sql
		for (i = 1; i <= 6000; i++) {
			key = sprintf("K%06d", i)
			cents = 100 + int(rand() * 99900)
			t = sprintf("2024-01-16 %02d:%02d:%02d", int(i / 300) % 24, int(i / 5) % 60, i % 60)
			kind = i % 20   # 0-8 matched, 9-13 missing, 14-16 extra, 17 stuck, 18 amount, 19 status
			if (kind != 14 && kind != 15 && kind != 16)
				printf "%s,TX%08d,%s,PAYMENT,%d.%02d,,CNY\n", t, i, key, cents / 100, cents % 100 > stmt
			if (kind >= 9 && kind <= 13)
				continue
			st = "PAID"; lc = cents
			if (kind == 17) st = "PENDING"
			if (kind == 18) lc = cents + 1
			if (kind == 19) st = "CLOSED"
			printf "INSERT INTO payment_flow (out_trade_no, amount_cents, status, created_at) VALUES (%c%s%c, %d, %c%s%c, %c%s%c);\n", 39, key, 39, lc, 39, st, 39, 39, t, 39 > sql
		}
		print "COMMIT;" > sql
	}'
	if [ "$ENGINE" = sqlite ]; then
		cat "$SRC/sql/sqlite/payment_flow.sql" "$SRC/sql/sqlite/merchant.sql" "$dir/data.sql" |
			sqlite3 "$dir/flow.db"
		return
	fi
	# postgres: a database of its own per directory, written through the job's writer DSN
	name=crash_$(basename "$dir")_$$
	psql -q -X -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" -c "DROP DATABASE IF EXISTS $name" \
		-c "CREATE DATABASE $name" > /dev/null
	dsn=$(printf '%s' "$RECON_TEST_PG_DSN" | sed "s#/recon_test\$#/$name#")
	var=RECON_CRASH_DSN_$(basename "$dir")
	export "$var=$dsn"
	cat "$SRC/sql/postgres/payment_flow.sql" "$SRC/sql/postgres/merchant.sql" "$dir/data.sql" |
		psql -q -X -v ON_ERROR_STOP=1 "$dsn" > /dev/null
	sed -e "s#\"kind\": \"sqlite\",#\"kind\": \"postgres\", \"dsn_env\": \"$var\",#" \
		-e "s#\"path\": \"flow.db\",##" \
		-e "s#\"state\": \"state/recon.db\",#\"actions\": {\"writer_dsn_env\": \"$var\"},\n  \"state\": \"state/recon.db\",#" \
		"$SRC/examples/basic/job.json" > "$dir/job.json"
}

# runs SQL on the directory's flow database, one row per line, fields joined by '|'
flowq() {
	if [ "$ENGINE" = sqlite ]; then
		sqlite3 "$1/flow.db" "$2"
	else
		eval "psql -At -X -q \"\$RECON_CRASH_DSN_$(basename "$1")\" -c \"\$2\""
	fi
}

# what must end identical, whatever the crashes
snapshot() {
	dir=$1
	flowq "$dir" "SELECT 'flow', out_trade_no, amount_cents, currency, status, created_at FROM payment_flow ORDER BY 2"
	flowq "$dir" "SELECT 'idem', idem_key, biz_type, status, result FROM idempotency_record ORDER BY 2"
	flowq "$dir" "SELECT 'ticket', job, biz_key, class, severity FROM recon_ticket ORDER BY 2, 3, 4"
	flowq "$dir" "SELECT 'outbox', job, biz_key, event FROM recon_outbox ORDER BY 2, 3, 4"
	sqlite3 "$dir/state/recon.db" "
		SELECT 'state-ticket', job, key, class, severity, status FROM tickets ORDER BY 2, 3, 4;
		SELECT 'watermark', job, mode, reconciled_until_ms FROM watermarks ORDER BY 2, 3;"
}

now_ms() { date +%s%3N; }

if [ "$ENGINE" = postgres ] && [ -z "${RECON_TEST_PG_DSN:-}" ]; then
	if [ "${CI:-}" = true ]; then
		not_ok "RECON_TEST_PG_DSN is not set (tests/db/servers.sh start)"
		finish
		exit 1
	fi
	echo "skip - RECON_TEST_PG_DSN is not set"
	exit 0
fi
gen "$WORK/clean"
gen "$WORK/killed"
export RECON_NOW=2024-01-17T03:00:00Z

t0=$(now_ms)
expect_exit 0 "one clean run" "$RECON" run --job "$WORK/clean/job.json" --date 2024-01-16 --json
t1=$(now_ms)
clean_ms=$((t1 - t0))
snapshot "$WORK/clean" > "$WORK/clean.snap"
actions=$(sqlite3 "$WORK/clean/state/recon.db" "SELECT count(*) FROM actions")
check "the clean run took thousands of actions ($actions)" test "$actions" -ge 2000
echo "# clean run: ${clean_ms} ms, $actions actions"

# ---- kill it, again and again ------------------------------------------------
killed=0
tries=0
span=$clean_ms
ahead=0
rnd=$SEED
while [ "$killed" -lt "$KILLS" ] && [ "$tries" -lt $((KILLS * 6)) ]; do
	tries=$((tries + 1))
	rnd=$(( (rnd * 1103515245 + 12345) % 2147483648 ))
	# kill points drawn over the length of a run as it is now: each killed run
	# commits some actions, so later runs are shorter; a run that finished
	# before its kill tells how long the rest takes
	delay=$(( rnd % (span + 1) ))
	"$RECON" rerun --job "$WORK/killed/job.json" --from 2024-01-16 --to 2024-01-16 --quiet \
		> /dev/null 2>&1 &
	pid=$!
	started=$(now_ms)
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	if kill -9 "$pid" 2> /dev/null; then
		wait "$pid" 2> /dev/null || true
		killed=$((killed + 1))
		# the watermark may only pass the day's start (2024-01-16 00:00 Shanghai, where
		# the first run seeds it) once every action of the day is committed
		if [ -n "$(sqlite3 "$WORK/killed/state/recon.db" "SELECT 1 FROM watermarks WHERE reconciled_until_ms > 1705334400000" 2> /dev/null)" ]; then
			snapshot "$WORK/killed" > "$WORK/killed.snap"
			cmp -s "$WORK/clean.snap" "$WORK/killed.snap" || ahead=$((ahead + 1))
		fi
	else
		wait "$pid" 2> /dev/null || true
		# it ended before the kill: aim inside a run of this length next time
		span=$(( $(now_ms) - started ))
		[ "$span" -gt 50 ] || span=50
	fi
done
done_actions=$(sqlite3 "$WORK/killed/state/recon.db" "SELECT count(*) FROM actions WHERE outcome = 'done'" 2> /dev/null || echo 0)
echo "# $killed kills in $tries runs; $done_actions actions done before the final run"
check "at least $KILLS kills at different points" test "$killed" -ge "$KILLS"
check "the watermark was never ahead of the committed actions" test "$ahead" = 0

# ---- then let it finish --------------------------------------------------------
expect_exit 0 "the run completes after the kills" \
	"$RECON" rerun --job "$WORK/killed/job.json" --from 2024-01-16 --to 2024-01-16 --quiet
snapshot "$WORK/killed" > "$WORK/killed.snap"
if cmp -s "$WORK/clean.snap" "$WORK/killed.snap"; then
	ok "flow, idempotency records, tickets, outbox and watermark equal one clean run"
else
	not_ok "the state after kills differs from one clean run"
	diff "$WORK/clean.snap" "$WORK/killed.snap" | head -20
fi
for what in flow idem ticket outbox state-ticket; do
	echo "# $what rows: $(grep -c "^$what|" "$WORK/killed.snap")"
done
check "no replay twice" test "$(flowq "$WORK/killed" "SELECT count(*) - count(DISTINCT out_trade_no) FROM payment_flow")" = 0
if [ "$ENGINE" = postgres ]; then
	for d in clean killed; do
		psql -q -X "$RECON_TEST_PG_DSN" -c "DROP DATABASE IF EXISTS crash_${d}_$$" > /dev/null 2>&1 || true
	done
fi
finish
