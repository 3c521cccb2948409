#!/bin/sh
# Scheduling and monitoring (issue 5), with RECON_NOW as the clock: hot windows
# (first run, a tick, bounded catch-up), t1 gap filling, reruns, the run lock,
# recon check's four exit codes, and the heartbeat and alert rules under promtool.
. "$(dirname "$0")/lib.sh"
setup_example
E=$WORK/ex
# a statement for each day after the example's (header only: no entries, which
# this job expects)
sed -i 's/"kind": "csv",/"kind": "csv", "allow_empty": true,/' "$JOB"
for d in 17 18 19 20; do head -n 1 "$E/statements/2024-01-16.csv" > "$E/statements/2024-01-$d.csv"; done
wm() { sql "SELECT reconciled_until_ms FROM watermarks WHERE mode = '$1'"; }
ms() { date -u -d "$1" +%s000; }

# ---- hot -------------------------------------------------------------------
sed 's/"hot": { "size": "5m", "lag": "2m" }/"hot": { "size": "5m", "lag": "2m", "start": "2024-01-16 09:00:00" }/' \
	"$JOB" > "$E/hot.json"
H=$E/hot.json
RECON_NOW=2024-01-16T02:00:00Z expect_exit 0 "first hot run" "$RECON" run --job "$H" --mode hot --json
check "first hot run: 12 windows from hot.start, bounded by max_windows" test "$(wc -l < "$WORK/out")" = 12
check "first window starts at hot.start (09:00 Shanghai)" \
	grep -q '"start":"2024-01-16T01:00:00.000Z","end":"2024-01-16T01:05:00.000Z"' "$WORK/out"
check "the watermark stops at now - lag" test "$(wm hot)" = "$(ms 2024-01-16T01:58:00Z)"
RECON_NOW=2024-01-16T02:05:00Z expect_exit 0 "a normal tick" "$RECON" run --job "$H" --mode hot --json
check "a tick runs one window" test "$(wc -l < "$WORK/out")" = 1
check "the tick's window is [09:58, 10:03)" \
	grep -q '"start":"2024-01-16T01:58:00.000Z","end":"2024-01-16T02:03:00.000Z"' "$WORK/out"
RECON_NOW=2024-01-16T02:05:00Z expect_exit 0 "nothing due" "$RECON" run --job "$H" --mode hot
check "nothing due says so" grep -q "no hot window due" "$WORK/out"
# a two-hour outage: one invocation catches up at most 12 windows, and says it is behind
RECON_NOW=2024-01-16T04:05:00Z expect_exit 0 "catch-up after a 2-hour outage" \
	"$RECON" run --job "$H" --mode hot --json
check "catch-up is bounded to 12 windows" test "$(wc -l < "$WORK/out")" = 12
check "catch-up says how far behind it is" grep -q "hot is behind" "$WORK/err"
check "each window committed its watermark" test "$(wm hot)" = "$(ms 2024-01-16T03:03:00Z)"
RECON_NOW=2024-01-16T04:05:00Z expect_exit 0 "the next tick continues" \
	"$RECON" run --job "$H" --mode hot --json
check "the next tick reaches now - lag" test "$(wm hot)" = "$(ms 2024-01-16T04:03:00Z)"
check "the hot window found ORD-1002 missing and replayed it" \
	test "$(sql "SELECT class || ' ' || state || ' ' || ended_by FROM items WHERE key = 'ORD-1002' AND mode = 'hot'")" = "missing resolved replayed"
check "hot runs are in the run history" \
	test "$(sql "SELECT count(*) FROM runs WHERE mode = 'hot' AND outcome = 'success'")" = 37

# ---- t1 --------------------------------------------------------------------
export RECON_NOW=2024-01-19T03:00:00Z
expect_exit 0 "t1 for 2024-01-16" "$RECON" run --job "$JOB" --date 2024-01-16 --quiet
check "t1 watermark at the end of 2024-01-16" test "$(wm t1)" = "$(ms 2024-01-16T16:00:00Z)"
check "the t1 run finds the key the hot window replayed matched: no open item" \
	test "$(sql "SELECT count(*) FROM items WHERE key = 'ORD-1002' AND state = 'open'")" = 0
expect_exit 0 "t1 without --date fills the gap" "$RECON" run --job "$JOB" --json
check "two days run, oldest first" \
	test "$(sed 's/.*"date":"\([0-9-]*\)".*/\1/' "$WORK/out" | tr '\n' ' ')" = "2024-01-17 2024-01-18 "
check "t1 watermark at the end of yesterday" test "$(wm t1)" = "$(ms 2024-01-18T16:00:00Z)"
# ORD-1016 (created 23:59:45, paid 23:59:50 on the 16th) was settled by the 16th's
# statement: the 17th reads its local row through the margin but must not call it extra;
# ORD-1012 (created 23:56 on the 16th, never paid) is the 17th's to call extra
d17=$(sql "SELECT id FROM runs WHERE mode = 't1' AND business_date = '2024-01-17' ORDER BY id DESC LIMIT 1")
check "a key settled by the previous day's statement is not extra the next day" \
	test "$(sql "SELECT count(*) FROM run_differences WHERE run_id = $d17 AND key = 'ORD-1016'")" = 0
check "a key no statement settled is extra in the window owning it" \
	test "$(sql "SELECT class FROM run_differences WHERE run_id = $d17 AND key = 'ORD-1012'")" = extra
expect_exit 0 "t1 when up to date" "$RECON" run --job "$JOB"
check "up to date says so" grep -q "t1 is up to date" "$WORK/out"
expect_exit 0 "a reconciled day is not run again" "$RECON" run --job "$JOB" --date 2024-01-17
check "and points at rerun" grep -q "already reconciled.*recon rerun --from 2024-01-17" "$WORK/out"
n=$(sql "SELECT count(*) FROM runs WHERE mode = 't1'")
expect_exit 0 "rerun of an old day" "$RECON" rerun --job "$JOB" --from 2024-01-16 --to 2024-01-16 --quiet
check "rerun recorded a run" test "$(sql "SELECT count(*) FROM runs WHERE mode = 't1'")" = $((n + 1))
check "rerun does not move the watermark back" test "$(wm t1)" = "$(ms 2024-01-18T16:00:00Z)"
expect_exit 64 "a day not yet due is refused" "$RECON" run --job "$JOB" --date 2024-01-19
check "it says when the day becomes due" grep -q "2024-01-19 is not due yet: it becomes due at 2024-01-20 00:00:00" "$WORK/err"
check "a refused day records no run" test "$(sql "SELECT count(*) FROM runs WHERE business_date = '2024-01-19'")" = 0
export RECON_NOW=2024-01-21T03:00:00Z
expect_exit 0 "a day ahead of a gap" "$RECON" run --job "$JOB" --date 2024-01-20 --quiet
check "the watermark does not jump over the gap" test "$(wm t1)" = "$(ms 2024-01-18T16:00:00Z)"

# ---- the run lock ----------------------------------------------------------
# a run waits for the lock up to lock_wait (default 10m) before exit 75: 2s here
jq '. + {"lock_wait": "2s"}' "$JOB" > "$E/lockwait.json"
# a statement that is a FIFO keeps the first run waiting while it holds the lock
rm "$E/statements/2024-01-19.csv"
mkfifo "$E/statements/2024-01-19.csv"
"$RECON" run --job "$JOB" --date 2024-01-19 --quiet > "$WORK/first.out" 2>&1 &
first=$!
# a loaded machine may take a while to start it: wait up to 60 s for it to hold the lock
for _ in $(seq 1 600); do
	grep -q "^$first " "$E/state/recon.db.example_payments.lock" 2>/dev/null && break
	sleep 0.1
done
# bounded: had the second one taken the lock, it would wait on the FIFO for ever
expect_exit 75 "a second invocation while the first runs, after lock_wait" \
	timeout 60 "$RECON" run --job "$E/lockwait.json" --date 2024-01-19
check "it names the holder and the wait" grep -q "job 'example_payments' is already running (pid $first, since 2024-01-21T03:00:00.000Z); waited 2 s" "$WORK/err"
# feed the FIFO (bounded: if the first run died, nobody reads it)
timeout 20 sh -c "head -n 1 '$E/statements/2024-01-16.csv' > '$E/statements/2024-01-19.csv'" || true
if wait "$first"; then
	ok "the first run completes"
else
	not_ok "the first run completes"
	sed 's/^/  first: /' "$WORK/first.out"
fi
rm "$E/statements/2024-01-19.csv"
mkfifo "$E/statements/2024-01-19.csv"
"$RECON" rerun --job "$JOB" --from 2024-01-19 --to 2024-01-19 --quiet > /dev/null 2>&1 &
victim=$!
for _ in $(seq 1 600); do
	grep -q "^$victim " "$E/state/recon.db.example_payments.lock" 2>/dev/null && break
	sleep 0.1
done
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
rm "$E/statements/2024-01-19.csv"
head -n 1 "$E/statements/2024-01-16.csv" > "$E/statements/2024-01-19.csv"
expect_exit 0 "a killed run's lock does not block the next run" \
	"$RECON" rerun --job "$JOB" --from 2024-01-19 --to 2024-01-19 --quiet
check "filling the gap moves the watermark over the day already run" \
	test "$(wm t1)" = "$(ms 2024-01-20T16:00:00Z)"
unset RECON_NOW

# ---- recon check -----------------------------------------------------------
# last t1 success at 2024-01-19T03:00Z, watermark 2024-01-20T16:00Z (36h max lag)
RECON_NOW=2024-01-21T04:00:00Z expect_exit 0 "check OK" "$RECON" check --job "$JOB" --max-age 7d
check "check prints one OK line" grep -q "^RECON OK - t1 watermark 12h behind (max 1d12h)" "$WORK/out"
RECON_NOW=2024-01-22T06:00:00Z expect_exit 1 "check WARNING (lag 38h)" "$RECON" check --job "$JOB" --max-age 7d
check "WARNING line with perfdata" grep -q "^RECON WARNING - t1 watermark 1d14h behind.* | lag=136800s;129600;259200" "$WORK/out"
RECON_NOW=2024-01-16T05:00:00Z expect_exit 2 "check CRITICAL (hot)" "$RECON" check --job "$JOB" --mode hot
check "CRITICAL line" grep -q "^RECON CRITICAL - hot watermark 57m behind (max 15m)" "$WORK/out"
sed 's#"state": "state/recon.db"#"state": "state/none.db"#' "$JOB" > "$E/nostate.json"
expect_exit 3 "check UNKNOWN without a state store" "$RECON" check --job "$E/nostate.json"
check "UNKNOWN line" grep -q "^RECON UNKNOWN - state store .* does not exist" "$WORK/out"

# cron starts the hot tick and the daily t1 run in the same second: neither loses its turn
export RECON_NOW=2024-01-22T03:00:00Z
head -n 1 "$E/statements/2024-01-16.csv" > "$E/statements/2024-01-21.csv"
"$RECON" run --job "$H" --mode hot --quiet > "$WORK/hot.out" 2>&1 &
hot_pid=$!
"$RECON" run --job "$JOB" --quiet > "$WORK/t1.out" 2>&1 &
t1_pid=$!
hot_rc=0 t1_rc=0
wait "$hot_pid" || hot_rc=$?
wait "$t1_pid" || t1_rc=$?
check "a hot tick and the t1 run started together both complete" test "$hot_rc $t1_rc" = "0 0"
check "the t1 run reached yesterday" test "$(wm t1)" = "$(ms 2024-01-21T16:00:00Z)"
unset RECON_NOW

# ---- promtool --------------------------------------------------------------
if command -v promtool > /dev/null 2>&1; then
	check "heartbeat passes promtool check metrics" sh -c "promtool check metrics < '$E/state/recon.prom'"
	check "heartbeat has both modes" grep -q 'recon_watermark_timestamp_seconds{recon_job="example_payments",mode="hot"}' "$E/state/recon.prom"
	check "heartbeat labels the job recon_job, never job" sh -c "! grep -q '[{,]job=' '$E/state/recon.prom'"
	check "heartbeat counts differences found" grep -q '^recon_differences_found_total{recon_job="example_payments",mode="t1",class="amount_mismatch"} [1-9]' "$E/state/recon.prom"
	check "heartbeat has open items by class and severity" grep -q '^recon_open_items{recon_job="example_payments",mode="t1",class="amount_mismatch",severity="critical"} [1-9]' "$E/state/recon.prom"
	check "heartbeat has the oldest open item" grep -q '^recon_open_item_oldest_timestamp_seconds{recon_job="example_payments",mode="t1"} ' "$E/state/recon.prom"
	check "alert rules pass promtool check rules" promtool check rules "$SRC/rules/prometheus/recon.rules.yml"
	check "alert rules pass promtool test rules" promtool test rules "$SRC/rules/prometheus/recon.rules.test.yml"
elif [ "${CI:-}" = true ]; then
	not_ok "promtool is not installed (package prometheus)"
else
	echo "skip - promtool not installed"
fi
finish
