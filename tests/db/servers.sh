#!/bin/sh
# Throwaway PostgreSQL and MariaDB servers for the database tests.
#
#   eval "$(tests/db/servers.sh start)"   # starts both, prints export lines
#   tests/db/servers.sh env               # prints the export lines again
#   tests/db/servers.sh stop              # stops both, removes the folder
#
# Installs nothing: it needs the Debian packages postgresql (15) and
# mariadb-server. Everything lives under one folder ($RECON_DB_DIR, or a new
# mktemp -d one): own data directories, Unix sockets in that folder, TCP on
# 127.0.0.1 on free ports. A system instance is never touched (--no-defaults,
# own ports and sockets). As root, PostgreSQL runs as the `postgres` user
# (initdb refuses root) and MariaDB with --user=root.
#
# Accounts (database recon_test on both):
#   RECON_TEST_PG_DSN / RECON_TEST_MYSQL_DSN        owner, with a password, TCP
#   RECON_TEST_PG_RO_DSN / RECON_TEST_MYSQL_RO_DSN  recon_ro: no table rights;
#       tests GRANT SELECT on the tables it may read, nothing else
#   RECON_TEST_MYSQL_SOCKET_DSN                     owner over the Unix socket
#   RECON_TEST_PG_SOCKET_DSN                        superuser over the Unix socket
set -eu

PG_VERSION=${RECON_PG_VERSION:-15}
PG_BIN=${RECON_PG_BIN:-/usr/lib/postgresql/$PG_VERSION/bin}
TIMEOUT=${RECON_DB_TIMEOUT:-60}
PG_PASS=pg-owner-pw
PG_RO_PASS=pg-ro-pw
MY_PASS=my-owner-pw
MY_RO_PASS=my-ro-pw

die() {
	echo "servers.sh: $*" >&2
	exit 1
}

need() {
	[ -x "$1" ] || die "'$1' not found: install $2 (apt-get install $2)"
}

# A TCP port on 127.0.0.1 nobody listens on.
free_port() {
	i=0
	while [ $i -lt 200 ]; do
		p=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 + 30000 ))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
			# bash-less shells lack /dev/tcp: fall back on ss when present
			if command -v ss >/dev/null 2>&1; then
				ss -ltn 2>/dev/null | grep -q "[:.]$p " || { echo $p; return 0; }
			else
				echo $p
				return 0
			fi
		fi
		i=$((i + 1))
	done
	die "no free TCP port found"
}

as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

print_env() {
	dir=$1
	[ -f "$dir/env" ] || die "no servers under '$dir' (run: servers.sh start)"
	cat "$dir/env"
}

start_pg() {
	dir=$1
	port=$(free_port)
	need "$PG_BIN/initdb" postgresql
	need "$PG_BIN/pg_ctl" postgresql
	mkdir -p "$dir/pg"
	if [ "$(id -u)" = 0 ]; then
		id postgres >/dev/null 2>&1 || die "user 'postgres' missing (install postgresql)"
		chown postgres: "$dir/pg"
	fi
	echo "$PG_PASS" >"$dir/pg.pw"
	chmod 644 "$dir/pg.pw"
	as_pg "$PG_BIN/initdb" -D "$dir/pg/data" -U postgres --auth-local=trust \
		--auth-host=scram-sha-256 --pwfile="$dir/pg.pw" -E UTF8 --locale=C.UTF-8 \
		>"$dir/pg-initdb.log" 2>&1 || { cat "$dir/pg-initdb.log" >&2; die "initdb failed"; }
	as_pg "$PG_BIN/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/server.log" -w -t "$TIMEOUT" \
		-o "-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB -c max_connections=50" \
		start >"$dir/pg-start.log" 2>&1 ||
		{ cat "$dir/pg/server.log" >&2 2>/dev/null; die "PostgreSQL did not start"; }
	i=0
	until "$PG_BIN/pg_isready" -q -h "$dir/pg" -p "$port"; do
		i=$((i + 1))
		[ $i -lt $((TIMEOUT * 5)) ] || die "PostgreSQL not ready after ${TIMEOUT}s"
		sleep 0.2
	done
	as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/pg" -p "$port" -U postgres -d postgres <<SQL >/dev/null || die "PostgreSQL setup failed"
CREATE DATABASE recon_test;
CREATE ROLE recon_ro LOGIN PASSWORD '$PG_RO_PASS';
GRANT CONNECT ON DATABASE recon_test TO recon_ro;
SQL
	cat >>"$dir/env" <<ENV
export RECON_TEST_PG_DSN='postgresql://postgres:$PG_PASS@127.0.0.1:$port/recon_test'
export RECON_TEST_PG_RO_DSN='postgresql://recon_ro:$PG_RO_PASS@127.0.0.1:$port/recon_test'
export RECON_TEST_PG_SOCKET_DSN='host=$dir/pg port=$port dbname=recon_test user=postgres'
ENV
}

start_my() {
	dir=$1
	port=$(free_port)
	need /usr/bin/mariadb-install-db mariadb-server
	need /usr/sbin/mariadbd mariadb-server
	need /usr/bin/mariadb-admin mariadb-client
	mkdir -p "$dir/my"
	user=$(id -un)
	if [ "$(id -u)" = 0 ]; then
		user=root
	fi
	mariadb-install-db --no-defaults --datadir="$dir/my/data" --user="$user" \
		--auth-root-authentication-method=normal --skip-test-db \
		--skip-name-resolve >"$dir/my-install.log" 2>&1 ||
		{ cat "$dir/my-install.log" >&2; die "mariadb-install-db failed"; }
	sock="$dir/my/mysqld.sock"
	# setsid: the server outlives this script and ignores the caller's signals
	setsid /usr/sbin/mariadbd --no-defaults --datadir="$dir/my/data" --user="$user" \
		--socket="$sock" --port="$port" --bind-address=127.0.0.1 \
		--pid-file="$dir/my/mysqld.pid" --log-error="$dir/my/error.log" \
		--skip-name-resolve --skip-log-bin --innodb-buffer-pool-size=128M \
		--innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
		--max-connections=50 </dev/null >/dev/null 2>&1 &
	i=0
	until mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -ge $((TIMEOUT * 5)) ]; then
			cat "$dir/my/error.log" >&2 2>/dev/null
			die "MariaDB not ready after ${TIMEOUT}s"
		fi
		sleep 0.2
	done
	mariadb --no-defaults --socket="$sock" -uroot <<SQL || die "MariaDB setup failed"
CREATE DATABASE recon_test CHARACTER SET utf8mb4;
CREATE USER 'recon'@'%' IDENTIFIED BY '$MY_PASS';
CREATE USER 'recon'@'localhost' IDENTIFIED BY '$MY_PASS';
GRANT ALL ON recon_test.* TO 'recon'@'%' WITH GRANT OPTION;
GRANT ALL ON recon_test.* TO 'recon'@'localhost' WITH GRANT OPTION;
CREATE USER 'recon_ro'@'%' IDENTIFIED BY '$MY_RO_PASS';
CREATE USER 'recon_ro'@'localhost' IDENTIFIED BY '$MY_RO_PASS';
SQL
	cat >>"$dir/env" <<ENV
export RECON_TEST_MYSQL_DSN='mysql://recon:$MY_PASS@127.0.0.1:$port/recon_test'
export RECON_TEST_MYSQL_RO_DSN='mysql://recon_ro:$MY_RO_PASS@127.0.0.1:$port/recon_test'
export RECON_TEST_MYSQL_SOCKET_DSN='mysql://recon:$MY_PASS@localhost/recon_test?socket=$sock'
ENV
}

stop_all() {
	dir=$1
	[ -d "$dir" ] || return 0
	if [ -f "$dir/pg/data/postmaster.pid" ]; then
		as_pg "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m immediate -w -t "$TIMEOUT" stop \
			>/dev/null 2>&1 || echo "servers.sh: PostgreSQL stop failed" >&2
	fi
	if [ -f "$dir/my/mysqld.pid" ]; then
		pid=$(cat "$dir/my/mysqld.pid")
		mariadb-admin --no-defaults --socket="$dir/my/mysqld.sock" -uroot shutdown \
			>/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			if [ $i -ge $((TIMEOUT * 5)) ]; then
				kill -9 "$pid" 2>/dev/null || true
				break
			fi
			sleep 0.2
		done
	fi
	case $dir in
	/ | "") die "refusing to remove '$dir'" ;;
	esac
	rm -rf "$dir"
}

cmd=${1:-}
case $cmd in
start)
	if [ -n "${RECON_DB_DIR:-}" ]; then
		dir=$RECON_DB_DIR
		[ ! -f "$dir/env" ] || die "servers already started under '$dir' (servers.sh stop first)"
		mkdir -p "$dir"
	else
		dir=$(mktemp -d "${TMPDIR:-/tmp}/recon-db.XXXXXX")
	fi
	chmod 755 "$dir" # the postgres user must reach its folder
	trap 'status=$?; [ $status = 0 ] || stop_all "$dir"; exit $status' EXIT
	: >"$dir/env"
	echo "export RECON_DB_DIR='$dir'" >>"$dir/env"
	start_pg "$dir"
	start_my "$dir"
	print_env "$dir"
	;;
env)
	print_env "${RECON_DB_DIR:?RECON_DB_DIR is not set (eval the output of servers.sh start)}"
	;;
stop)
	stop_all "${RECON_DB_DIR:?RECON_DB_DIR is not set (eval the output of servers.sh start)}"
	;;
*)
	echo "usage: servers.sh start|env|stop" >&2
	exit 2
	;;
esac
