#!/bin/sh
# Peak memory of the database readers against the rows read: loads tables of
# 100,000 and 1,000,000 rows (one business day, 2024-01-16 Asia/Shanghai)
# into PostgreSQL and MariaDB, drains each with tests/db/bigread.c under
# /usr/bin/time -v, and prints rows, rows/s and maximum RSS. Flat memory
# means the two RSS figures match.
#
#   eval "$(tests/db/servers.sh start)"
#   tests/db/bigread.sh BUILD_DIR        # a build without sanitizers, e.g.
#                                        # cmake -S . -B /tmp/build-rel && cmake --build /tmp/build-rel
#
# Also runs `recon run --dry-run` over the 1M-row table for the whole
# engine's figure (that one grows with the window by design: the compare
# keeps one window's rows in memory).
set -eu

build=${1:?usage: bigread.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
: "${RECON_TEST_PG_DSN:?eval \"\$(tests/db/servers.sh start)\" first}"
: "${RECON_TEST_MYSQL_DSN:?eval \"\$(tests/db/servers.sh start)\" first}"
[ -x /usr/bin/time ] || { echo "bigread.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/recon-bigread.XXXXXX")
trap 'rm -rf "$work"' EXIT

# the driver, linked against the built core library
pkgs="jansson sqlite3 libpq mysqlclient"
# shellcheck disable=SC2046
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I"$src/include" -o "$work/bigread" \
	"$src/tests/db/bigread.c" "$build/librecon_core.a" $(pkg-config --cflags --libs $pkgs) -lcsv -lm

my() {
	# mysql://user:pass@host:port/db -> mariadb client options
	u=${RECON_TEST_MYSQL_DSN#mysql://}
	user=${u%%:*}; u=${u#*:}; pass=${u%%@*}; u=${u#*@}
	host=${u%%:*}; u=${u#*:}; port=${u%%/*}; db=${u#*/}
	MYSQL_PWD=$pass mariadb --no-defaults -h"$host" -P"$port" -u"$user" "$db" "$@"
}

echo "loading..." >&2
for n in 100000 1000000; do
	psql -X -q -v ON_ERROR_STOP=1 "$RECON_TEST_PG_DSN" <<SQL
SET client_min_messages = warning;
DROP TABLE IF EXISTS bigread_$n;
CREATE UNLOGGED TABLE bigread_$n (id bigint PRIMARY KEY, out_trade_no text NOT NULL,
  amount numeric(18,2) NOT NULL, status text NOT NULL, created_at timestamp NOT NULL);
INSERT INTO bigread_$n SELECT g, 'ORD-' || lpad(g::text, 9, '0'), (g % 100000) / 100.0, 'PAID',
  timestamp '2024-01-16 00:00:00' + (g * interval '1 millisecond' * (86000000 / $n))
  FROM generate_series(1, $n) g;
CREATE INDEX ON bigread_$n (created_at);
ANALYZE bigread_$n;
SQL
	my <<SQL
DROP TABLE IF EXISTS bigread_$n;
CREATE TABLE bigread_$n (id BIGINT PRIMARY KEY, out_trade_no VARCHAR(32) NOT NULL,
  amount DECIMAL(18,2) NOT NULL, status VARCHAR(16) NOT NULL, created_at DATETIME(3) NOT NULL,
  KEY (created_at)) ENGINE=InnoDB;
INSERT INTO bigread_$n SELECT seq, CONCAT('ORD-', LPAD(seq, 9, '0')), (seq % 100000) / 100, 'PAID',
  TIMESTAMPADD(MICROSECOND, seq * (86000000000 DIV $n), '2024-01-16 00:00:00')
  FROM seq_1_to_$n;
SQL
done

measure() { # kind dsn table
	BIGREAD_DSN=$2 /usr/bin/time -v "$work/bigread" "$1" "$3" 2024-01-16 2>"$work/time" |
		tr -d '\n'
	printf '; peak RSS %s KiB\n' "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")"
}

for n in 100000 1000000; do
	measure postgres "$RECON_TEST_PG_DSN" bigread_$n
	measure mysql "$RECON_TEST_MYSQL_DSN" bigread_$n
done

# the whole engine: a local flow of 1M rows in one day against an empty
# statement, every row mapped to pending (in flight, not a difference), so the
# figure is read + normalize + compare, not 1M differences being recorded
mkdir -p "$work/job/statements"
echo "trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency" \
	>"$work/job/statements/2024-01-16.csv"
for kind in postgres mysql; do
	env=RECON_TEST_PG_DSN
	[ $kind = postgres ] || env=RECON_TEST_MYSQL_DSN
	sed -e "s/\"kind\": \"sqlite\"/\"kind\": \"$kind\", \"dsn_env\": \"$env\"/" \
		-e '/"path": "flow.db",/d' \
		-e 's/"table": "payment_flow"/"table": "bigread_1000000"/' \
		-e 's/"amount_minor": "amount_cents"/"amount": "amount"/' \
		-e 's/"currency": "currency", "status"/"status"/' \
		-e 's/"PAID": "success"/"PAID": "pending"/' \
		"$src/examples/basic/job.json" >"$work/job/job.json"
	rm -rf "$work/job/state"
	/usr/bin/time -v "$build/recon" run --job "$work/job/job.json" --date 2024-01-16 --dry-run \
		--quiet >/dev/null 2>"$work/time" || { cat "$work/time" >&2; exit 1; }
	printf 'recon run (%s local, 1000000 rows): %s s elapsed; peak RSS %s KiB\n' "$kind" \
		"$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time")" \
		"$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")"
done

psql -X -q "$RECON_TEST_PG_DSN" -c "DROP TABLE bigread_100000, bigread_1000000"
my -e "DROP TABLE bigread_100000, bigread_1000000"
