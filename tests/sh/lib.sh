# Shared helpers for tests/sh/test_*.sh (sourced). Each test gets a fresh
# $WORK with a copy of examples/basic and its flow.db.
set -eu
: "${RECON_SOURCE_DIR:?}" "${RECON_BINARY:?}"
SRC=$RECON_SOURCE_DIR
RECON=$RECON_BINARY
WORK=${RECON_WORK:-$(mktemp -d)}
rm -rf "$WORK"
mkdir -p "$WORK"
FAILS=0
PASSES=0

setup_example() {
	rm -rf "$WORK/ex"
	cp -R "$SRC/examples/basic" "$WORK/ex"
	rm -rf "$WORK/ex/state" "$WORK/ex/flow.db"
	cat "$SRC/sql/sqlite/payment_flow.sql" "$SRC/sql/sqlite/merchant.sql" "$WORK/ex/flow.sql" |
		sqlite3 "$WORK/ex/flow.db"
	JOB=$WORK/ex/job.json
	DB=$WORK/ex/state/recon.db
}

ok() { PASSES=$((PASSES + 1)); echo "ok - $*"; }
not_ok() { FAILS=$((FAILS + 1)); echo "not ok - $*"; }

# check DESCRIPTION COMMAND...: passes when the command succeeds
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# expect_exit CODE DESCRIPTION COMMAND...: runs it, output to $WORK/out and $WORK/err
expect_exit() {
	want=$1
	desc=$2
	shift 2
	set +e
	"$@" > "$WORK/out" 2> "$WORK/err"
	got=$?
	set -e
	if [ "$got" = "$want" ]; then
		ok "$desc (exit $got)"
	else
		not_ok "$desc: exit $got, expected $want"
		sed 's/^/  out: /' "$WORK/out"
		sed 's/^/  err: /' "$WORK/err"
	fi
}

sql() { sqlite3 "$DB" "$1"; }

finish() {
	echo "$PASSES passed, $FAILS failed"
	[ "$FAILS" = 0 ]
}
