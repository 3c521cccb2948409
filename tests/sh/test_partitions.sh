#!/bin/sh
# Key-hash partitions (issue 18): N = 1, 2, 4 and 7 partitions run as separate
# processes in parallel must, together, do exactly what one unpartitioned run
# does: the union of their differences (per day and the open items), their
# replays, tickets and outbox events, and their counts of rows read, skipped
# and rejected equal the unpartitioned run's, after sorting. Two days, so the
# ledger carries refunds and open items across a day in each partition.
# Local flow: SQLite (filtered in C after reading) and PostgreSQL (the
# partition pushed down as a predicate; needs RECON_TEST_PG_DSN from
# tests/db/servers.sh: fails under CI=true without it, skips otherwise).
. "$(dirname "$0")/lib.sh"
NS=${RECON_PARTITION_NS:-"1 2 4 7"}
export RECON_NOW=2024-01-18T03:00:00Z
D1=2024-01-16
D2=2024-01-17

# ---- two days with every class ---------------------------------------------
# statements/D.csv for both days and data.sql (the local flow); key K<day><nnnn>
gen_data() {
	dir=$1
	mkdir -p "$dir/statements"
	awk -v dir="$dir" 'BEGIN {
		print "BEGIN;" > (dir "/data.sql")
		for (day = 1; day <= 2; day++) {
			date = day == 1 ? "2024-01-16" : "2024-01-17"
			stmt = dir "/statements/" date ".csv"
			print "trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency" > stmt
			for (i = 1; i <= 1200; i++) {
				key = sprintf("K%d%04d", day, i)
				cents = 100 + (i * 7919) % 99900
				amt = sprintf("%d.%02d", cents / 100, cents % 100)
				t = sprintf("%s %02d:%02d:%02d", date, 1 + int(i / 60) % 22, i % 60, (i * 13) % 60)
				tx = sprintf("TX%d%06d", day, i)
				kind = i % 24
				st = "PAID"; lc = cents; local = 1; up = 1
				if (kind == 10) local = 0                      # missing
				if (kind == 11) up = 0                         # extra
				if (kind == 12) st = "PENDING"                 # stuck
				if (kind == 13) lc = cents + 1                 # amount_mismatch
				if (kind == 14) st = "CLOSED"                  # status_mismatch
				if (kind == 16 || kind == 17) st = "REFUNDED"  # refunded (17: the next day)
				if (kind == 19) st = "CLOSED"                  # revoked the same day
				if (kind == 21) { up = 0; st = "PENDING" }     # in flight, no difference
				if (kind == 22) t = sprintf("%s 23:5%d:00", date, i % 10)  # near midnight
				ukey = key
				if (kind == 23) ukey = " " key " "             # blanks the key normalizing trims
				if (up) {
					printf "%s,%s,%s,PAYMENT,%s,,CNY\n", t, tx, ukey, amt > stmt
					if (kind == 15)                        # duplicate: the same entry twice
						printf "%s,%s,%s,PAYMENT,%s,,CNY\n", t, tx, ukey, amt > stmt
					if (kind == 16)
						printf "%s,%s,%s,REFUND,%s,RF%s,CNY\n", t, tx, key, amt, tx > stmt
					if (kind == 19)
						printf "%s,%s,%s,REVOKED,0.00,,CNY\n", t, tx, key > stmt
				}
				if (kind == 20)                                # a fee line: keyless, skipped
					printf "%s,FEE%d%06d,,FEE,0.%02d,,CNY\n", t, day, i, i % 100 > stmt
				if (i % 400 == 7)                              # rejects: an unknown entry type
					printf "%s,BAD%d%06d,X%s,BOGUS,1.00,,CNY\n", t, day, i, key > stmt
				if (i % 400 == 8)                              # ... a control character in a key
					printf "%s,BAD%d%06d,X%s\001,PAYMENT,1.00,,CNY\n", t, day, i, key > stmt
				# day 1 payments of kind 17 are refunded in day 2 statement
				if (day == 2 && kind == 17)
					printf "%s,TX1%06d,K1%04d,REFUND,%d.%02d,RFX%06d,CNY\n", t, i, i,
						(100 + (i * 7919) % 99900) / 100, (100 + (i * 7919) % 99900) % 100, i > stmt
				if (!local) continue
				lkey = key
				if (kind == 9 && i % 48 == 9) lkey = key " "   # a local key with a trailing blank
				lt = t
				printf "INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES (%c%s%c, %d, %cCNY%c, %c%s%c, %c%s%c);\n", 39, lkey, 39, lc, 39, 39, 39, st, 39, 39, lt, 39 > (dir "/data.sql")
			}
		}
		print "COMMIT;" > (dir "/data.sql")
	}'
}

# setup DIR ENGINE: a job folder with its own flow (a copy of the data)
setup() {
	dir=$1
	engine=$2
	mkdir -p "$dir"
	cp -R "$WORK/data/statements" "$dir/"
	if [ "$engine" = sqlite ]; then
		cat "$SRC/sql/sqlite/payment_flow.sql" "$SRC/sql/sqlite/merchant.sql" "$WORK/data/data.sql" |
			sqlite3 "$dir/flow.db"
		sed 's/"max_rejects": 0/"max_rejects": 100/' "$SRC/examples/basic/job.json" > "$dir/job.json"
		return
	fi
	name=part_$(basename "$dir")_$$
	psql -q -X -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" -c "DROP DATABASE IF EXISTS $name" \
		-c "CREATE DATABASE $name" > /dev/null
	dsn=$(printf '%s' "$RECON_TEST_PG_DSN" | sed "s#/recon_test\$#/$name#")
	var=RECON_PART_DSN_$(basename "$dir")
	export "$var=$dsn"
	cat "$SRC/sql/postgres/payment_flow.sql" "$SRC/sql/postgres/merchant.sql" "$WORK/data/data.sql" |
		psql -q -X -v ON_ERROR_STOP=1 "$dsn" > /dev/null
	sed -e "s#\"kind\": \"sqlite\",#\"kind\": \"postgres\", \"dsn_env\": \"$var\",#" \
		-e "s#\"path\": \"flow.db\",##" -e 's/"max_rejects": 0/"max_rejects": 100/' \
		-e "s#\"state\": \"state/recon.db\",#\"actions\": {\"writer_dsn_env\": \"$var\"},\n  \"state\": \"state/recon.db\",#" \
		"$SRC/examples/basic/job.json" > "$dir/job.json"
}

flowq() {
	if [ "$2" = sqlite ]; then
		sqlite3 "$1/flow.db" "$3"
	else
		eval "psql -At -X -q \"\$RECON_PART_DSN_$(basename "$1")\" -c \"\$3\""
	fi
}

# the merchant's side after the runs: replays, their idempotency records, tickets, events
merchant() {
	flowq "$1" "$2" "SELECT 'flow', out_trade_no, amount_cents, currency, status, created_at FROM payment_flow ORDER BY 2"
	flowq "$1" "$2" "SELECT 'idem', idem_key, biz_type, status FROM idempotency_record ORDER BY 2"
	flowq "$1" "$2" "SELECT 'ticket', job, biz_key, class, severity, status FROM recon_ticket ORDER BY 2, 3, 4"
	flowq "$1" "$2" "SELECT 'outbox', job, biz_key, event FROM recon_outbox ORDER BY 2, 3, 4"
}

# what recon says, for one store (--partition ARG, or none), origins relative to the job
report() {
	job=$1
	shift
	{
		for d in $D1 $D2; do
			"$RECON" diff --job "$job" --date "$d" --format jsonl "$@" | sed "s/^/diff $d /"
		done
		"$RECON" diff --job "$job" --open --format jsonl "$@" | sed 's/^/open /'
		for r in 1 2; do
			"$RECON" rejects --job "$job" --run $r --format jsonl "$@" | sed "s/^/reject $r /"
		done
		"$RECON" tickets --job "$job" --all --format jsonl "$@" |
			jq -c '{key, class, severity, status}' | sed 's/^/state-ticket /'
	} | sed "s#$(dirname "$job")/##g"
}

# sums of the runs' row counts (--json lines on stdin)
counts() {
	jq -s -c '{upstream: (map(.rows.upstream) | add), local: (map(.rows.local) | add),
		skipped: (map(.rows.skipped) | add), rejected: (map(.rows.rejected) | add),
		differences: (map(.differences | to_entries) | flatten | group_by(.key)
			| map({(.[0].key): (map(.value) | add)}) | add)}'
}

one_engine() {
	engine=$1
	whole=$WORK/${engine}_whole
	setup "$whole" "$engine"
	expect_exit 0 "$engine: unpartitioned, day 1" "$RECON" run --job "$whole/job.json" --date $D1 --json
	cp "$WORK/out" "$WORK/${engine}_whole.json"
	expect_exit 0 "$engine: unpartitioned, day 2" "$RECON" run --job "$whole/job.json" --date $D2 --json
	cat "$WORK/out" >> "$WORK/${engine}_whole.json"
	report "$whole/job.json" | sort > "$WORK/${engine}_whole.report"
	merchant "$whole" "$engine" | sort > "$WORK/${engine}_whole.merchant"
	counts < "$WORK/${engine}_whole.json" > "$WORK/${engine}_whole.counts"
	for c in missing extra stuck amount_mismatch status_mismatch duplicate; do
		check "$engine: the unpartitioned run found $c" \
			test "$(jq ".differences.$c" "$WORK/${engine}_whole.counts")" -gt 0
	done
	check "$engine: keyless lines were skipped" \
		test "$(jq .skipped "$WORK/${engine}_whole.counts")" -gt 0
	check "$engine: bad lines were rejected (an unknown entry type, a control character in a key)" \
		test "$(jq .rejected "$WORK/${engine}_whole.counts")" -gt 0

	for n in $NS; do
		dir=$WORK/${engine}_n$n
		setup "$dir" "$engine"
		i=0
		pids=
		# every partition a process of its own, all at once (as an Indexed Job's pods)
		while [ "$i" -lt "$n" ]; do
			( "$RECON" run --job "$dir/job.json" --date $D1 --partition "$i/$n" --json --quiet &&
				"$RECON" run --job "$dir/job.json" --date $D2 --partition "$i/$n" --json --quiet
			) > "$WORK/${engine}_n$n-p$i.json" 2> "$WORK/${engine}_n$n-p$i.err" &
			pids="$pids $!"
			i=$((i + 1))
		done
		failed=0
		for p in $pids; do wait "$p" || failed=$((failed + 1)); done
		check "$engine, $n partitions: every process succeeded" test "$failed" = 0
		[ "$failed" = 0 ] || cat "$WORK/${engine}_n$n"-p*.err
		i=0
		: > "$WORK/${engine}_n$n.report"
		while [ "$i" -lt "$n" ]; do
			report "$dir/job.json" --partition "$i/$n" >> "$WORK/${engine}_n$n.report"
			i=$((i + 1))
		done
		sort -o "$WORK/${engine}_n$n.report" "$WORK/${engine}_n$n.report"
		if cmp -s "$WORK/${engine}_whole.report" "$WORK/${engine}_n$n.report"; then
			ok "$engine, $n partitions: differences, open items and tickets equal the unpartitioned run's ($(wc -l < "$WORK/${engine}_whole.report") lines)"
		else
			not_ok "$engine, $n partitions: differences differ from the unpartitioned run's"
			diff "$WORK/${engine}_whole.report" "$WORK/${engine}_n$n.report" | head -10
		fi
		merchant "$dir" "$engine" | sort > "$WORK/${engine}_n$n.merchant"
		if cmp -s "$WORK/${engine}_whole.merchant" "$WORK/${engine}_n$n.merchant"; then
			ok "$engine, $n partitions: replays, idempotency records, tickets and events equal ($(wc -l < "$WORK/${engine}_whole.merchant") rows)"
		else
			not_ok "$engine, $n partitions: the merchant's tables differ"
			diff "$WORK/${engine}_whole.merchant" "$WORK/${engine}_n$n.merchant" | head -10
		fi
		cat "$WORK/${engine}_n$n"-p*.json | counts > "$WORK/${engine}_n$n.counts"
		check "$engine, $n partitions: rows read, skipped, rejected and differences add up" \
			cmp -s "$WORK/${engine}_whole.counts" "$WORK/${engine}_n$n.counts"
		if [ "$n" -gt 1 ]; then
			check "$engine, $n partitions: each has its own store and heartbeat" \
				test "$(ls "$dir/state/" | grep -c '^recon\.p[0-9]*-of-'"$n"'\.\(db\|prom\)$')" = $((2 * n))
			# node_exporter merges the files: no series may appear in two of them
			check "$engine, $n partitions: no heartbeat series in two partitions' files" \
				test -z "$(cat "$dir"/state/recon.p*-of-$n.prom | grep -v '^#' | sed 's/ [^ ]*$//' | sort | uniq -d)"
			if command -v promtool > /dev/null 2>&1; then
				check "$engine, $n partitions: partition 0's heartbeat passes promtool check metrics" \
					sh -c "promtool check metrics < '$dir/state/recon.p0-of-$n.prom'"
			fi
		fi
	done
}

expect_exit 64 "--partition out of range" "$RECON" run --job "$SRC/examples/basic/job.json" --partition 4/4
expect_exit 64 "--partitions without --sequential" "$RECON" run --job "$SRC/examples/basic/job.json" --partitions 4
expect_exit 64 "diff of a partitioned job names its partition" \
	sh -c "sed 's#\"max_rejects\"#\"partition\": {\"count\": 3}, \"max_rejects\"#' '$SRC/examples/basic/job.json' > '$WORK/pj.json' && '$RECON' diff --job '$WORK/pj.json'"

mkdir -p "$WORK/data"
gen_data "$WORK/data"
one_engine sqlite
if [ -z "${RECON_TEST_PG_DSN:-}" ]; then
	if [ "${CI:-}" = true ]; then
		not_ok "RECON_TEST_PG_DSN is not set (tests/db/servers.sh start)"
	else
		echo "skip - PostgreSQL: RECON_TEST_PG_DSN is not set"
	fi
else
	one_engine postgres
	for v in $(env | sed -n 's/^\(RECON_PART_DSN_[A-Za-z0-9_-]*\)=.*/\1/p'); do
		name=part_${v#RECON_PART_DSN_}_$$
		psql -q -X "$RECON_TEST_PG_DSN" -c "DROP DATABASE IF EXISTS $name" > /dev/null 2>&1 || true
	done
fi
finish
