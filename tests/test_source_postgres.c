/*
 * Tests for src/source_postgres.c against a real PostgreSQL server: the one
 * tests/db/servers.sh starts (RECON_TEST_PG_DSN: owner; RECON_TEST_PG_RO_DSN:
 * a login with no table rights, granted SELECT per table here). Without the
 * variables the tests are skipped, and fail under CI=true.
 *
 * Covered: every value type the reader maps (numeric, integer cents, small-
 * integer and text statuses, char(n), timestamptz, timestamp, text times,
 * NULL, a float amount as a reject), the window pushed down (and EXPLAIN
 * showing the time index), key lookups, a SELECT-only user, passwords kept
 * out of every message, missing table and column, a connection killed mid-
 * stream, and 1,000,000 rows read with flat memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <libpq-fe.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_source.h"
#include "recon_time.h"
#include "support_proxy.h"

#if defined(__SANITIZE_ADDRESS__)
/* a small quarantine, so that peak RSS reflects what the reader keeps */
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=4";
}
#endif

#define DSN_VAR	  "RECON_TEST_PG_DSN"
#define RO_VAR	  "RECON_TEST_PG_RO_DSN"
#define TEST_VAR  "RECON_TEST_PG_DSN_UNDER_TEST" /* the variable a side names */
#define BIG_ROWS  1000000
#define BIG_TABLE "t_pg_big"

struct fx {
	PGconn *admin;
	struct recon_tz *sh;  /* Asia/Shanghai */
	struct recon_tz *utc; /* UTC */
	bool big_loaded;
	struct recon_source *many; /* the lookup_many tests' source, closed by many_teardown() */
};

static const char *dsn_or_skip(const char *var)
{
	const char *v = getenv(var);
	const char *ci = getenv("CI");

	if (v && *v)
		return v;
	if (ci && !strcmp(ci, "true"))
		fail_msg("%s is not set under CI=true: start tests/db/servers.sh", var);
	skip();
	return NULL;
}

static void sql(struct fx *fx, const char *q)
{
	PGresult *r = PQexec(fx->admin, q);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	PQclear(r);
}

/* The query's single value as a malloc'd string. */
static char *sql_value(struct fx *fx, const char *q)
{
	PGresult *r = PQexec(fx->admin, q);
	char *v;

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct recon_err err;
	const char *dsn = getenv(DSN_VAR);

	recon_err_init(&err);
	if (!fx || recon_tz_load(&fx->sh, "Asia/Shanghai", &err) < 0 ||
	    recon_tz_load(&fx->utc, "UTC", &err) < 0)
		return -1;
	if (dsn && *dsn) {
		fx->admin = PQconnectdb(dsn);
		if (PQstatus(fx->admin) != CONNECTION_OK) {
			fprintf(stderr, "cannot connect with %s: %s", DSN_VAR,
				PQerrorMessage(fx->admin));
			return -1;
		}
		PQclear(PQexec(fx->admin, "SET client_min_messages = warning"));
	}
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;

	if (fx->admin) {
		PQclear(PQexec(fx->admin, "DROP TABLE IF EXISTS " BIG_TABLE));
		PQfinish(fx->admin);
	}
	recon_tz_free(fx->sh);
	recon_tz_free(fx->utc);
	free(fx);
	return 0;
}

/* A local side reading `table` through TEST_VAR; roles mapped by the caller. */
static void side_init(struct recon_side *side, const char *table, struct recon_tz *tz)
{
	memset(side, 0, sizeof(*side));
	side->role = "local";
	side->backend = &recon_source_postgres;
	side->table = (char *)table;
	side->dsn_env = (char *)TEST_VAR;
	side->nkey = 1;
	side->tz = tz;
	side->currency = (char *)"CNY";
}

/* The t1 window of `date` in tz, read with a 10-minute margin. */
static struct recon_window day_window(const struct recon_tz *tz, const char *date)
{
	struct recon_window w;
	struct recon_err err;

	recon_err_init(&err);
	assert_int_equal(recon_date_parse(date, &w.day, &err), 0);
	recon_tz_day_bounds(tz, w.day, &w.start, &w.end);
	w.read_start = w.start - 10 * RECON_MS_PER_MIN;
	w.read_end = w.end + 10 * RECON_MS_PER_MIN;
	return w;
}

static int64_t instant(const char *s)
{
	struct recon_err err;
	int64_t t;

	recon_err_init(&err);
	assert_int_equal(recon_time_parse(s, strlen(s), NULL, &t, &err), 0);
	return t;
}

static bool val_is(const struct recon_raw_row *r, enum recon_col c, const char *want)
{
	if (!want)
		return r->val[c] == NULL;
	return r->val[c] && r->len[c] == strlen(want) && !memcmp(r->val[c], want, r->len[c]);
}

#define assert_val(r, c, want)                                                                     \
	do {                                                                                       \
		if (!val_is(r, c, want))                                                           \
			fail_msg("role %s: got '%.*s', want '%s'", recon_col_name(c),              \
				 (r)->val[c] ? (int)(r)->len[c] : 6,                               \
				 (r)->val[c] ? (r)->val[c] : "(null)",                             \
				 (want) ? (want) : "(null)");                                      \
	} while (0)

/* Reads every row, copying the key of each into keys (when not NULL). */
static long drain(struct recon_source *src, char keys[][32], long max)
{
	const struct recon_raw_row *row;
	struct recon_err err;
	long n = 0;
	int rc;

	recon_err_init(&err);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW) {
		if (keys && n < max)
			snprintf(keys[n], 32, "%.*s", (int)row->len[RECON_COL_KEY0],
				 row->val[RECON_COL_KEY0]);
		n++;
	}
	if (rc < 0)
		fail_msg("next: %s: %s", err.where, err.msg);
	return n;
}

static void load_values(struct fx *fx)
{
	sql(fx, "DROP TABLE IF EXISTS t_pg_values");
	sql(fx, "CREATE TABLE t_pg_values (id serial PRIMARY KEY, k varchar(64), k_text text, "
		"amt numeric(18,2), cents bigint, st smallint, st_text text, cur char(3), "
		"at_tz timestamptz, at_local timestamp(3), at_text text, fl double precision)");
	sql(fx, "INSERT INTO t_pg_values (k, k_text, amt, cents, st, st_text, cur, at_tz, "
		"at_local, at_text, fl) VALUES "
		"('A1', 'text-1', 12.34, 1234, 1, 'PAID', 'CNY', '2024-01-16 02:00:00+00', "
		" '2024-01-16 10:00:00', '2024-01-16T10:00:00', 12.34),"
		"('A2', 'text-2', -0.50, -50, 3, 'PENDING', 'USD', '2024-01-16 15:59:59.123+00', "
		" '2024-01-16 23:59:59.123', '2024-01-16 23:59:59', 0.1),"
		"('A3', NULL, NULL, NULL, NULL, NULL, NULL, '2024-01-15 15:50:00+00', "
		" '2024-01-15 23:50:00', '2024-01-15 23:50:00', NULL),"
		/* outside the window (and its margins) by hours */
		"('B1', 'text-b1', 1.00, 100, 1, 'PAID', 'CNY', '2024-01-17 03:00:00+00', "
		" '2024-01-17 11:00:00', '2024-01-18 11:00:00', 1),"
		"('B2', 'text-b2', 2.00, 200, 1, 'PAID', 'CNY', '2024-01-10 03:00:00+00', "
		" '2024-01-10 11:00:00', '2024-01-10 11:00:00', 2)");
}

static struct recon_source *open_ok(const struct recon_side *side, const struct recon_window *w)
{
	struct recon_source *src = NULL;
	struct recon_err err;

	recon_err_init(&err);
	if (recon_source_open(&src, side, w, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_string_equal(src->ops->kind, "postgres");
	assert_string_equal(src->name, side->table);
	return src;
}

static void test_source_postgres_value_types(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	int64_t t;

	load_values(fx);
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_CURRENCY] = (char *)"cur";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	recon_err_init(&err);

	/* timestamp without time zone: wall clock in the side's zone */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A1");
	assert_val(row, RECON_COL_AMOUNT, "12.34");
	assert_val(row, RECON_COL_AMOUNT_MINOR, "1234");
	assert_val(row, RECON_COL_STATUS, "1");
	assert_val(row, RECON_COL_CURRENCY, "CNY");
	assert_val(row, RECON_COL_TIME, "2024-01-16 10:00:00");
	assert_null(row->reject);
	assert_int_equal(row->line, 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A2");
	assert_val(row, RECON_COL_AMOUNT, "-0.50");
	assert_val(row, RECON_COL_AMOUNT_MINOR, "-50");
	assert_val(row, RECON_COL_STATUS, "3");
	assert_val(row, RECON_COL_CURRENCY, "USD");
	assert_val(row, RECON_COL_TIME, "2024-01-16 23:59:59.123");
	/* SQL NULL is a NULL value; 23:50 the day before is inside the margin */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A3");
	assert_val(row, RECON_COL_AMOUNT, NULL);
	assert_val(row, RECON_COL_AMOUNT_MINOR, NULL);
	assert_val(row, RECON_COL_STATUS, NULL);
	assert_val(row, RECON_COL_CURRENCY, NULL);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);

	/* timestamptz: a UTC instant with its offset; text key; text status */
	side.cols[RECON_COL_KEY0] = (char *)"k_text";
	side.cols[RECON_COL_STATUS] = (char *)"st_text";
	side.cols[RECON_COL_TIME] = (char *)"at_tz";
	side.cols[RECON_COL_AMOUNT] = NULL;
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "text-1");
	assert_val(row, RECON_COL_STATUS, "PAID");
	assert_val(row, RECON_COL_TIME, "2024-01-16 02:00:00+00");
	assert_int_equal(
	    recon_time_parse(row->val[RECON_COL_TIME], row->len[RECON_COL_TIME], fx->sh, &t, &err),
	    0);
	assert_true(t == instant("2024-01-16T02:00:00Z"));
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_TIME, "2024-01-16 15:59:59.123+00");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, NULL);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);

	/* text times: the bound is widened a day, rows are filtered later */
	side.cols[RECON_COL_TIME] = (char *)"at_text";
	src = open_ok(&side, &w);
	{
		char keys[8][32];
		long n = drain(src, keys, 8);
		assert_int_equal(n, 3); /* A1 ('T' separator), A2, A3; not B1 (two days on) */
		assert_string_equal(keys[0], "text-1");
	}
	recon_source_close(src);

	/* a floating-point amount makes the row a reject, never a rounded amount */
	side.cols[RECON_COL_AMOUNT_MINOR] = NULL;
	side.cols[RECON_COL_AMOUNT] = (char *)"fl";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_non_null(row->reject);
	assert_non_null(strstr(row->reject, "floating-point"));
	recon_source_close(src);
	assert_int_equal(err.code, 0);
}

/* Small-integer statuses map through the status map like words do. */
static void test_source_postgres_status_map(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_map_entry map[] = {{(char *)"1", 1, RECON_ST_SUCCESS},
					{(char *)"3", 1, RECON_ST_PENDING}};
	const struct recon_raw_row *raw;
	struct recon_source *src;
	struct recon_side side;
	struct recon_arena arena;
	struct recon_row row;
	struct recon_err err;

	load_values(fx);
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	side.status_map.v = map;
	side.status_map.n = 2;
	recon_arena_init(&arena);
	recon_err_init(&err);
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &raw, &err), RECON_ROW);
	assert_int_equal(recon_normalize_row(&side, raw, &arena, &row, &err), RECON_NORM_ROW);
	assert_int_equal(row.amount, 1234);
	assert_int_equal(row.status, RECON_ST_SUCCESS);
	assert_true(row.time == instant("2024-01-16T02:00:00Z"));
	assert_int_equal(recon_source_next(src, &raw, &err), RECON_ROW);
	assert_int_equal(recon_normalize_row(&side, raw, &arena, &row, &err), RECON_NORM_ROW);
	assert_int_equal(row.amount, -50);
	assert_int_equal(row.status, RECON_ST_PENDING);
	recon_source_close(src);
	recon_arena_release(&arena);
}

/* 200 days of 1,000 rows: a one-day window reads one day, through the index. */
static void test_source_postgres_window_pushdown(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-03-01");
	struct recon_source *src;
	struct recon_side side;
	char *plan;
	long n;

	sql(fx, "DROP TABLE IF EXISTS t_pg_window");
	sql(fx, "CREATE TABLE t_pg_window (id bigserial PRIMARY KEY, k text NOT NULL UNIQUE, "
		"cents bigint NOT NULL, at timestamp NOT NULL, at_tz timestamptz NOT NULL)");
	/* one row every 86.4 s from 2024-01-01 00:00 local: 1,000 a day */
	sql(fx, "INSERT INTO t_pg_window (k, cents, at, at_tz) SELECT 'W' || g, g, "
		"timestamp '2024-01-01 00:00:00' + g * interval '86.4 seconds', "
		"timestamptz '2024-01-01 00:00:00+08' + g * interval '86.4 seconds' "
		"FROM generate_series(0, 199999) g");
	sql(fx, "CREATE INDEX idx_t_pg_window_at ON t_pg_window (at)");
	sql(fx, "CREATE INDEX idx_t_pg_window_at_tz ON t_pg_window (at_tz)");
	sql(fx, "ANALYZE t_pg_window");
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_pg_window", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at";
	src = open_ok(&side, &w);
	n = drain(src, NULL, 0);
	recon_source_close(src);
	/* the day plus 10 minutes each side, at one row per 86.4 s */
	assert_true(n >= 1000 + 2 * 6 && n <= 1000 + 2 * 7 + 1);

	side.cols[RECON_COL_TIME] = (char *)"at_tz";
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), n);
	recon_source_close(src);

	/* the reader's statement, planned generically (bound values unknown) */
	sql(fx, "DEALLOCATE ALL");
	sql(fx, "SET plan_cache_mode = force_generic_plan");
	sql(fx, "PREPARE p(timestamp, timestamp) AS SELECT \"k\", \"cents\", \"at\" "
		"FROM \"t_pg_window\" WHERE \"at\" >= $1 AND \"at\" < $2");
	plan = sql_value(fx, "EXPLAIN EXECUTE p('2024-02-29 23:50:00', '2024-03-02 00:10:00')");
	print_message("plan: %s\n", plan);
	assert_non_null(strstr(plan, "idx_t_pg_window_at"));
	free(plan);
	sql(fx, "DEALLOCATE p");
	sql(fx, "PREPARE p(timestamptz, timestamptz) AS SELECT \"k\", \"cents\", \"at_tz\" "
		"FROM \"t_pg_window\" WHERE \"at_tz\" >= $1 AND \"at_tz\" < $2");
	plan = sql_value(fx, "EXPLAIN EXECUTE p('2024-02-29T15:50:00Z', '2024-03-01T16:10:00Z')");
	print_message("plan: %s\n", plan);
	assert_non_null(strstr(plan, "idx_t_pg_window_at_tz"));
	free(plan);
	sql(fx, "DEALLOCATE p");
	sql(fx, "RESET plan_cache_mode");
	sql(fx, "DROP TABLE t_pg_window");
}

static void test_source_postgres_lookup(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	const char *parts[2];
	size_t lens[2];

	load_values(fx);
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	recon_err_init(&err);
	/* before the scan is drained: the rest of it is dropped */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	parts[0] = "B2xyz"; /* not NUL-terminated at the key's end */
	lens[0] = 2;
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "B2");
	assert_val(row, RECON_COL_AMOUNT_MINOR, "200");
	assert_val(row, RECON_COL_TIME, "2024-01-10 11:00:00");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	parts[0] = "nope";
	lens[0] = 4;
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	/* quotes and backslashes are data, not SQL */
	parts[0] = "x' OR '1'='1";
	lens[0] = strlen(parts[0]);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);

	/* composite key, with an integer part */
	side.nkey = 2;
	side.cols[RECON_COL_KEY1] = (char *)"cents";
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	parts[0] = "B1";
	lens[0] = 2;
	parts[1] = "100";
	lens[1] = 3;
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY1, "100");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	/* a non-number for the integer part finds nothing (and breaks nothing) */
	parts[1] = "abc";
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	parts[1] = "100";
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);
	assert_int_equal(err.code, 0);
}

/*
 * Issue 12 #10: a reader whose server freezes (a proxy that stops forwarding,
 * as SIGSTOP would) fails the read after the side's idle_timeout (exit 69),
 * instead of holding the run, its snapshot and the job's lock forever.
 */
static void test_source_postgres_frozen_server_times_out(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	const char *host = "127.0.0.1", *user = "", *pw = "", *db = "", *parts[1] = {"B2"};
	size_t lens[1] = {2};
	PQconninfoOption *opts;
	struct support_proxy p;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	struct timespec t0, t1;
	unsigned port = 5432;
	char pdsn[512];
	double took;
	int rc;

	load_values(fx);
	opts = PQconninfoParse(dsn, NULL);
	assert_non_null(opts);
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "host"))
			host = o->val;
		else if (!strcmp(o->keyword, "port"))
			port = (unsigned)atoi(o->val);
		else if (!strcmp(o->keyword, "user"))
			user = o->val;
		else if (!strcmp(o->keyword, "password"))
			pw = o->val;
		else if (!strcmp(o->keyword, "dbname"))
			db = o->val;
	}
	support_proxy_start(&p, host, port);
	snprintf(pdsn, sizeof(pdsn),
		 "host=127.0.0.1 port=%u user=%s password=%s dbname=%s sslmode=disable", p.port,
		 user, pw, db);
	setenv(TEST_VAR, pdsn, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	side.idle_timeout_ms = 1000;
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	p.frozen = 1;
	recon_err_init(&err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = recon_source_lookup(src, parts, lens, &err);
	if (rc == 0)
		rc = recon_source_next(src, &row, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(rc, RECON_EUNAVAIL);
	if (took > 8)
		fail_msg("the frozen server held the read for %.1f s", took);
	assert_non_null(strstr(err.msg, "no answer from the server in time"));
	if (*pw && strstr(err.msg, pw))
		fail_msg("password in the message: %s", err.msg);
	recon_source_close(src);
	support_proxy_stop(&p);
	PQconninfoFree(opts);
	setenv(TEST_VAR, dsn, 1);
}

/* ---- lookup_many ---- */

#define MANY_TABLE    "t_pg_many"
#define MANY_ROWS_MAX 1024

/*
 * Keys that matter to the array literal {"k1","k2"} or to SQL; one row
 * each in MANY_TABLE, stored through a bound parameter.
 */
static const char *const special_keys[] = {
    "q\"uote",
    "\"",
    "back\\slash",
    "\\",
    "\\\"",
    "a,b",
    "{x",
    "y}",
    "{}",
    "a b",
    " lead",
    "trail ",
    " ",
    "NULL",
    "",
    "订单",
    "订单-2024\\\"{,}",
};
#define NSPECIAL (sizeof(special_keys) / sizeof(special_keys[0]))

/*
 * MANY_TABLE: 600 keys K0000..K0599, 'a', 'b', 'dup' twice, a NULL key,
 * the special keys, and integer keys in n (bigint) and n4 (integer). Every
 * row is inside the 2024-01-16 window (Asia/Shanghai).
 */
static void load_many(struct fx *fx)
{
	sql(fx, "DROP TABLE IF EXISTS " MANY_TABLE);
	sql(fx, "CREATE TABLE " MANY_TABLE " (id serial PRIMARY KEY, k text, n bigint, "
		"n4 integer, at timestamp NOT NULL DEFAULT '2024-01-16 10:00:00')");
	sql(fx, "INSERT INTO " MANY_TABLE " (k) SELECT 'K' || lpad(g::text, 4, '0') "
		"FROM generate_series(0, 599) g");
	sql(fx, "INSERT INTO " MANY_TABLE " (k, n, n4) VALUES ('a', NULL, NULL), "
		"('b', NULL, NULL), ('dup', NULL, NULL), ('dup', NULL, NULL), (NULL, NULL, NULL), "
		"('int-42', 42, 42), ('int-m7', -7, -7), ('int-0', 0, 0), "
		"('int-1000', 1000, 1000), ('int-max', 9223372036854775807, 2147483647)");
	for (size_t i = 0; i < NSPECIAL; i++) {
		const char *v[1] = {special_keys[i]};
		PGresult *r = PQexecParams(fx->admin, "INSERT INTO " MANY_TABLE " (k) VALUES ($1)",
					   1, NULL, v, NULL, NULL, 0);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			fail_msg("insert '%s': %s", special_keys[i], PQresultErrorMessage(r));
		PQclear(r);
	}
}

/* A side reading MANY_TABLE by the one-column key `key`. */
static void many_side(struct recon_side *side, struct fx *fx, const char *key)
{
	side_init(side, MANY_TABLE, fx->sh);
	side->cols[RECON_COL_KEY0] = (char *)key;
	side->cols[RECON_COL_TIME] = (char *)"at";
}

/*
 * Opens side into fx->many, which many_teardown() closes even when the test
 * failed half-way: a source left open keeps its snapshot and its lock on
 * MANY_TABLE, and the next test's DROP TABLE would wait for it.
 */
static struct recon_source *many_open(struct fx *fx, const struct recon_side *side,
				      const struct recon_window *w)
{
	recon_source_close(fx->many);
	fx->many = NULL;
	fx->many = open_ok(side, w);
	return fx->many;
}

static void many_close(struct fx *fx)
{
	recon_source_close(fx->many);
	fx->many = NULL;
}

static int many_teardown(void **state)
{
	many_close(*state);
	return 0;
}

/* recon_source_lookup_many() on NUL-terminated keys; must succeed. */
static void lookup_many_ok(struct recon_source *src, const struct recon_side *side, size_t n,
			   const char *const *keys)
{
	size_t lens[RECON_LOOKUP_BATCH];
	struct recon_err err;
	int rc;

	assert_true(n <= RECON_LOOKUP_BATCH);
	for (size_t i = 0; i < n; i++)
		lens[i] = strlen(keys[i]);
	recon_err_init(&err);
	rc = recon_source_lookup_many(src, side, n, keys, lens, &err);
	if (rc != 0)
		fail_msg("lookup_many: rc %d: %s: %s", rc, err.where, err.msg);
	assert_int_equal(err.code, 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Reads every row left and compares their keys, as a sorted multiset, with
 * want[0..nwant): each wanted row once, no other. A NULL key reads "(null)".
 */
static void expect_keys(struct recon_source *src, const char *const *want, size_t nwant)
{
	const struct recon_raw_row *row;
	struct recon_err err;
	char **got = calloc(MANY_ROWS_MAX, sizeof(*got));
	const char **exp = calloc(nwant ? nwant : 1, sizeof(*exp));
	char msg[512] = "";
	size_t n = 0;
	int rc;

	assert_non_null(got);
	assert_non_null(exp);
	recon_err_init(&err);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW && n < MANY_ROWS_MAX) {
		got[n++] = row->val[RECON_COL_KEY0]
			       ? strndup(row->val[RECON_COL_KEY0], row->len[RECON_COL_KEY0])
			       : strdup("(null)");
		assert_non_null(got[n - 1]);
	}
	if (rc < 0)
		snprintf(msg, sizeof(msg), "next: %s: %s", err.where, err.msg);
	else if (rc == RECON_ROW)
		snprintf(msg, sizeof(msg), "more than %d rows", MANY_ROWS_MAX);
	else if (recon_source_next(src, &row, &err) != RECON_DONE)
		snprintf(msg, sizeof(msg), "next() after RECON_DONE did not say done again");
	if (nwant)
		memcpy(exp, want, nwant * sizeof(*exp));
	qsort(got, n, sizeof(*got), cmp_str);
	qsort(exp, nwant, sizeof(*exp), cmp_str);
	for (size_t i = 0; !*msg && i < (n > nwant ? n : nwant); i++)
		if (i >= n || i >= nwant || strcmp(got[i], exp[i]))
			snprintf(msg, sizeof(msg),
				 "lookup_many: %zu rows, want %zu (or other keys)", n, nwant);
	if (*msg) {
		for (size_t i = 0; i < n; i++)
			print_message("got  [%zu] '%s'\n", i, got[i]);
		for (size_t i = 0; i < nwant; i++)
			print_message("want [%zu] '%s'\n", i, exp[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(got[i]);
	free(got);
	free(exp);
	if (*msg)
		fail_msg("%s", msg);
}

/* A one-key lookup of `key` finds exactly the rows want[0..nwant). */
static void lookup_one(struct recon_source *src, const char *key, const char *const *want,
		       size_t nwant)
{
	const char *parts[1] = {key};
	size_t lens[1] = {strlen(key)};
	struct recon_err err;
	int rc;

	recon_err_init(&err);
	rc = recon_source_lookup(src, parts, lens, &err);
	if (rc != 0)
		fail_msg("lookup '%s': rc %d: %s: %s", key, rc, err.where, err.msg);
	expect_keys(src, want, nwant);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Found and missing keys in one batch: exactly the found ones' rows, each once. */
static void test_source_postgres_lookup_many_found_and_missing(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	static const char *const keys[] = {"K0001",  "nope-1", "K0003", "dup",
					   "nope-2", "a",      "K9999", "K0599"};
	static const char *const want[] = {"K0001", "K0003", "dup", "dup", "a", "K0599"};
	static const char *const none[] = {"nope-1", "nope-2"};
	static const char *const k5[] = {"K0005"};
	struct recon_source *src;
	struct recon_side side;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "k");
	src = many_open(fx, &side, &w);
	assert_int_equal(drain(src, NULL, 0), 600 + 4 + 1 + 5 + NSPECIAL);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
	/* the connection is reusable: a one-key lookup, then another batch */
	lookup_one(src, "K0005", k5, 1);
	lookup_many_ok(src, &side, N(none), none);
	expect_keys(src, NULL, 0);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
	many_close(fx);
}

/* Keys with characters that matter to the array literal are data. */
static void test_source_postgres_lookup_many_special_keys(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	/* none stored: each would find 'a' and 'b' if pasted into the literal unescaped */
	static const char *const inject[] = {"{a,b}",  "a\",\"b", "\"a\",\"b\"", "a\\\",\"b",
					     "NULL,a", "a}",	  "{a}"};
	static const char *const ab[] = {"a,b"};
	static const char *const only_a[] = {"a"};
	static const char *const null_key[] = {"NULL"};
	static const char *const empty_key[] = {""};
	struct recon_source *src;
	struct recon_side side;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "k");
	src = many_open(fx, &side, &w);
	/* all of them at once: each row once, not 'a', 'b' nor the NULL key */
	lookup_many_ok(src, &side, NSPECIAL, special_keys);
	expect_keys(src, special_keys, NSPECIAL);
	/* one at a time, as the only key of a batch */
	for (size_t i = 0; i < NSPECIAL; i++) {
		print_message("key '%s'\n", special_keys[i]);
		lookup_many_ok(src, &side, 1, &special_keys[i]);
		expect_keys(src, &special_keys[i], 1);
	}
	lookup_many_ok(src, &side, 1, ab);
	expect_keys(src, ab, 1);
	lookup_many_ok(src, &side, N(inject), inject);
	expect_keys(src, NULL, 0);
	{
		const char *mixed[] = {"a", "{a,b}", "a\",\"b"};
		lookup_many_ok(src, &side, N(mixed), mixed);
		expect_keys(src, only_a, 1);
	}
	/* 'NULL' the text is not SQL NULL; "" is not NULL either */
	lookup_many_ok(src, &side, 1, null_key);
	expect_keys(src, null_key, 1);
	lookup_many_ok(src, &side, 1, empty_key);
	expect_keys(src, empty_key, 1);
	many_close(fx);
}

/* RECON_LOOKUP_BATCH keys in one batch, one key, and one key too many. */
static void test_source_postgres_lookup_many_batch_sizes(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	static char names[RECON_LOOKUP_BATCH + 1][8];
	const char *keys[RECON_LOOKUP_BATCH + 1];
	size_t lens[RECON_LOOKUP_BATCH + 1];
	static const char *const one[] = {"K0599"};
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "k");
	for (int i = 0; i <= RECON_LOOKUP_BATCH; i++) {
		snprintf(names[i], sizeof(names[i]), "K%04d", i);
		keys[i] = names[i];
		lens[i] = strlen(names[i]);
	}
	src = many_open(fx, &side, &w);
	lookup_many_ok(src, &side, RECON_LOOKUP_BATCH, keys);
	expect_keys(src, keys, RECON_LOOKUP_BATCH);
	lookup_many_ok(src, &side, 1, one);
	expect_keys(src, one, 1);
	/* one too many: not this call's job (the caller falls back), no error */
	recon_err_init(&err);
	assert_int_equal(
	    recon_source_lookup_many(src, &side, RECON_LOOKUP_BATCH + 1, keys, lens, &err),
	    RECON_ENOTFOUND);
	assert_int_equal(err.code, 0);
	/* the last full batch, shifted by one: still all found */
	lookup_many_ok(src, &side, RECON_LOOKUP_BATCH, keys + 1);
	expect_keys(src, keys + 1, RECON_LOOKUP_BATCH);
	many_close(fx);
}

/* An integer key column: only integer text matches; the rest breaks nothing. */
static void test_source_postgres_lookup_many_integer_key(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	/* "42\0" (3 bytes): a NUL byte no row can hold, not "42" */
	const char *keys[] = {"42", "abc", "-7", "1e3", "", "42\0", " 0", "0x10"};
	size_t lens[] = {2, 3, 2, 3, 0, 3, 2, 4};
	static const char *const want[] = {"42", "-7"};
	static const char *const k1000[] = {"1000"};
	static const char *const k0[] = {"0"};
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "n");
	src = many_open(fx, &side, &w);
	recon_err_init(&err);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_lookup_many(src, &side, N(keys), keys, lens, &err), 0);
	assert_int_equal(err.code, 0);
	expect_keys(src, want, N(want));
	/* the transaction is still usable */
	lookup_one(src, "1000", k1000, 1);
	lookup_many_ok(src, &side, 1, k0);
	expect_keys(src, k0, 1);
	/* a NUL byte in a text key: skipped too, the others found */
	{
		const char *tk[] = {"K0001", "K0002\0x", "K0003"};
		size_t tl[] = {5, 7, 5};
		static const char *const tw[] = {"K0001", "K0003"};
		side.cols[RECON_COL_KEY0] = (char *)"k";
		many_close(fx);
		src = many_open(fx, &side, &w);
		recon_err_init(&err);
		assert_int_equal(recon_source_lookup_many(src, &side, N(tk), tk, tl, &err), 0);
		expect_keys(src, tw, N(tw));
	}
	many_close(fx);
	assert_int_equal(err.code, 0);
}

/* No key any row can hold: 0, no query, and next() says done. */
static void test_source_postgres_lookup_many_all_unfit(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const char *keys[] = {"abc", "1e3", "", "4\0002"};
	size_t lens[] = {3, 3, 0, 3};
	static const char *const k42[] = {"42"};
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "n");
	src = many_open(fx, &side, &w);
	recon_err_init(&err);
	/* a pending scan, then a pending lookup: neither may leak into the empty batch */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_lookup_many(src, &side, N(keys), keys, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	lookup_many_ok(src, &side, 1, k42);
	assert_int_equal(recon_source_lookup_many(src, &side, N(keys), keys, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	/* n = 0 is the same */
	assert_int_equal(recon_source_lookup_many(src, &side, 0, keys, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	lookup_many_ok(src, &side, 1, k42);
	expect_keys(src, k42, 1);
	many_close(fx);
	assert_int_equal(err.code, 0);
}

/* A composite key: not this call's job, no error; the one-key lookup still works. */
static void test_source_postgres_lookup_many_composite_key(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	static const char *const keys[] = {"int-42", "int-m7"};
	const size_t lens[] = {6, 6};
	const char *parts[2] = {"int-42", "42"};
	const size_t plens[2] = {6, 2};
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "k");
	side.nkey = 2;
	side.cols[RECON_COL_KEY1] = (char *)"n";
	src = many_open(fx, &side, &w);
	recon_err_init(&err);
	assert_int_equal(recon_source_lookup_many(src, &side, N(keys), keys, lens, &err),
			 RECON_ENOTFOUND);
	assert_int_equal(err.code, 0);
	assert_int_equal(recon_source_lookup(src, parts, plens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "int-42");
	assert_val(row, RECON_COL_KEY1, "42");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	many_close(fx);
	assert_int_equal(err.code, 0);
}

/* Before the scan (or a lookup) is drained: the rest of it is dropped. */
static void test_source_postgres_lookup_many_after_partial_scan(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	static const char *const keys[] = {"K0100", "nope", "K0200", "dup"};
	static const char *const want[] = {"K0100", "K0200", "dup", "dup"};
	static const char *const k7[] = {"K0007"};
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, "k");
	src = many_open(fx, &side, &w);
	recon_err_init(&err);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
	/* a batch read in part, then a one-key lookup, then a batch again */
	lookup_many_ok(src, &side, N(keys), keys);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	lookup_one(src, "K0007", k7, 1);
	lookup_many_ok(src, &side, N(keys), keys);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
	many_close(fx);
	assert_int_equal(err.code, 0);
}

/*
 * Integer text out of the key column's range is a key no row can hold either:
 * a batch with it finds the others' rows, a batch of only such keys finds
 * nothing, with no error (one such key must not abort the snapshot), and a
 * later lookup still works.
 */
static void out_of_range(struct fx *fx, const char *col, const char *const *in, size_t nin,
			 const char *const *out, size_t nout)
{
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const char *keys[8];
	static const char *const k42[] = {"42"};
	struct recon_source *src;
	struct recon_side side;

	assert_true(nin + nout <= 8);
	memcpy(keys, in, nin * sizeof(*keys));
	memcpy(keys + nin, out, nout * sizeof(*keys));
	load_many(fx);
	setenv(TEST_VAR, dsn, 1);
	many_side(&side, fx, col);
	src = many_open(fx, &side, &w);
	lookup_many_ok(src, &side, nin + nout, keys);
	expect_keys(src, in, nin);
	lookup_many_ok(src, &side, nout, out);
	expect_keys(src, NULL, 0);
	lookup_one(src, "42", k42, 1);
	many_close(fx);
}

static void test_source_postgres_lookup_many_bigint_out_of_range(void **state)
{
	static const char *const in[] = {"42", "9223372036854775807"};
	static const char *const out[] = {"9223372036854775808", "-9223372036854775809",
					  "9999999999999999999"};

	out_of_range(*state, "n", in, N(in), out, N(out));
}

static void test_source_postgres_lookup_many_int4_out_of_range(void **state)
{
	static const char *const in[] = {"42", "2147483647"};
	static const char *const out[] = {"3000000000", "-2147483649"};

	out_of_range(*state, "n4", in, N(in), out, N(out));
}

/* A login with SELECT on the one table and nothing else runs scan and lookups. */
static void test_source_postgres_select_only_user(void **state)
{
	struct fx *fx = *state;
	const char *ro;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;
	const char *parts[1] = {"B1"};
	size_t lens[1] = {2};

	dsn_or_skip(DSN_VAR);
	ro = dsn_or_skip(RO_VAR);
	load_values(fx);
	setenv(TEST_VAR, ro, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	/* no grant yet: unavailable, with the server's reason */
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	assert_null(src);
	assert_non_null(strstr(err.msg, "permission denied"));
	sql(fx, "GRANT SELECT ON t_pg_values TO recon_ro");
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	recon_err_init(&err);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "B1");
	recon_source_close(src);
}

/* Opens with DSN `dsn`; expects `code`; the message must not contain `secret`. */
static void open_fails(struct fx *fx, const char *dsn, int code, const char *secret,
		       const char *needle)
{
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;
	char text[512];

	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_pg_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), code);
	assert_null(src);
	recon_err_str(&err, text, sizeof(text));
	print_message("error: %s\n", text);
	assert_null(strchr(text, '\n'));
	if (secret)
		assert_null(strstr(text, secret));
	if (needle)
		assert_non_null(strstr(text, needle));
}

static void test_source_postgres_password_never_shown(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	char bad[512];
	const char *at, *port;

	/* nobody listens on port 1 */
	open_fails(fx, "postgresql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test", RECON_EUNAVAIL,
		   "Sup3rSecretPw", "cannot connect");
	open_fails(fx, "host=127.0.0.1 port=1 user=recon password=KwSecret42 dbname=x",
		   RECON_EUNAVAIL, "KwSecret42", "127.0.0.1");
	open_fails(fx, "postgresql://recon@127.0.0.1:1/recon_test?password=QuerySecret7",
		   RECON_EUNAVAIL, "QuerySecret7", NULL);
	/* a string libpq cannot parse is not echoed */
	open_fails(fx, "host=127.0.0.1 password='Unterminated9", RECON_ECONFIG, "Unterminated9",
		   TEST_VAR);
	open_fails(fx, "postgresql://u:PctSecret%zz@127.0.0.1/db?bogus=1", RECON_ECONFIG,
		   "PctSecret", NULL);
	/* the real server, a wrong password */
	at = strrchr(dsn, '@');
	port = at ? strchr(at, ':') : NULL;
	assert_non_null(port);
	snprintf(bad, sizeof(bad), "postgresql://recon_ro:WrongPassw0rd%s", at);
	open_fails(fx, bad, RECON_EUNAVAIL, "WrongPassw0rd", "password authentication failed");
	/* unset or empty: a configuration error naming the variable */
	setenv(TEST_VAR, "", 1);
	open_fails(fx, "", RECON_ECONFIG, NULL,
		   "environment variable '" TEST_VAR "' (local.dsn_env) is not set");
	unsetenv(TEST_VAR);
	{
		struct recon_window w = day_window(fx->sh, "2024-01-16");
		struct recon_source *src = NULL;
		struct recon_side side;
		struct recon_err err;
		side_init(&side, "t_pg_values", fx->sh);
		side.cols[RECON_COL_TIME] = (char *)"at_local";
		recon_err_init(&err);
		assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_ECONFIG);
		assert_non_null(strstr(err.msg, "is not set"));
	}
}

static void test_source_postgres_missing_table_or_column(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;

	load_values(fx);
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "no_such_table", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	print_message("error: %s: %s\n", err.where, err.msg);
	assert_non_null(strstr(err.msg, "no_such_table"));
	assert_non_null(strstr(err.msg, "does not exist"));
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.where, "pg-owner-pw"));

	side.table = (char *)"t_pg_values";
	side.cols[RECON_COL_AMOUNT] = (char *)"no_such_column";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	print_message("error: %s: %s\n", err.where, err.msg);
	assert_non_null(strstr(err.msg, "no_such_column"));

	/* a time column of a type the reader cannot bound is a configuration error */
	side.cols[RECON_COL_AMOUNT] = NULL;
	side.cols[RECON_COL_TIME] = (char *)"cents";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_ECONFIG);
	assert_null(src);
}

/* 1,000,000 rows, once for the big tests; in one day (Asia/Shanghai). */
static void load_big(struct fx *fx)
{
	if (fx->big_loaded)
		return;
	sql(fx, "DROP TABLE IF EXISTS " BIG_TABLE);
	sql(fx, "CREATE UNLOGGED TABLE " BIG_TABLE " (id bigint PRIMARY KEY, out_trade_no text "
		"NOT NULL, amount numeric(18,2) NOT NULL, status text NOT NULL, created_at "
		"timestamp NOT NULL)");
	sql(fx, "INSERT INTO " BIG_TABLE " SELECT g, 'ORD-' || lpad(g::text, 9, '0'), "
		"(g % 100000) / 100.0, 'PAID', timestamp '2024-01-16 00:00:00' + "
		"(g * interval '86 milliseconds') FROM generate_series(1, 1000000) g");
	sql(fx, "CREATE INDEX ON " BIG_TABLE " (created_at)");
	sql(fx, "ANALYZE " BIG_TABLE);
	fx->big_loaded = true;
}

static void big_side(struct recon_side *side, struct fx *fx)
{
	side_init(side, BIG_TABLE, fx->sh);
	side->cols[RECON_COL_KEY0] = (char *)"out_trade_no";
	side->cols[RECON_COL_AMOUNT] = (char *)"amount";
	side->cols[RECON_COL_STATUS] = (char *)"status";
	side->cols[RECON_COL_TIME] = (char *)"created_at";
}

static long max_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_source_postgres_million_rows_flat_memory(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	long before, after, n = 0, bytes = 0;
	double t0, dt;
	int rc;

	load_big(fx);
	setenv(TEST_VAR, dsn, 1);
	big_side(&side, fx);
	/* warm up: one open/close, so one-time allocations are not counted */
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	recon_source_close(src);
	before = max_rss_kb();
	t0 = now_s();
	src = open_ok(&side, &w);
	recon_err_init(&err);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW) {
		n++;
		bytes += (long)row->len[RECON_COL_KEY0];
	}
	dt = now_s() - t0;
	recon_source_close(src);
	after = max_rss_kb();
	assert_int_equal(rc, RECON_DONE);
	assert_int_equal(n, BIG_ROWS);
	assert_int_equal(bytes, 13L * BIG_ROWS);
	print_message("postgres: %ld rows in %.2f s (%.0f rows/s); peak RSS %ld KiB before, "
		      "%ld KiB after (+%ld KiB)\n",
		      n, dt, (double)n / dt, before, after, after - before);
	/* flat: the whole result would be ~60 MB in libpq alone */
	assert_true(after - before < 16 * 1024);
}

/* The server ends the session mid-stream: the read fails cleanly. */
static void test_source_postgres_connection_lost_mid_stream(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	char *killed;
	long n = 0;
	int rc;

	load_big(fx);
	setenv(TEST_VAR, dsn, 1);
	big_side(&side, fx);
	src = open_ok(&side, &w);
	recon_err_init(&err);
	while (n < 1000 && (rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	killed =
	    sql_value(fx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
			  "WHERE application_name = 'recon' AND pid <> pg_backend_pid() "
			  "AND (query LIKE '%" BIG_TABLE "%' OR query LIKE '%recon_scan_cur%')");
	assert_string_equal(killed, "1");
	free(killed);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	print_message("read %ld rows, then: %s: %s\n", n, err.where, err.msg);
	assert_int_equal(rc, RECON_EUNAVAIL);
	assert_int_equal(err.code, RECON_EUNAVAIL);
	assert_true(n < BIG_ROWS);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.msg, "pg-owner-pw"));
	/* further calls stay quiet; close frees everything */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_postgres_value_types),
	    cmocka_unit_test(test_source_postgres_status_map),
	    cmocka_unit_test(test_source_postgres_window_pushdown),
	    cmocka_unit_test(test_source_postgres_lookup),
	    cmocka_unit_test(test_source_postgres_frozen_server_times_out),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_found_and_missing,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_special_keys, many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_batch_sizes, many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_integer_key, many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_all_unfit, many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_composite_key,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_after_partial_scan,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_bigint_out_of_range,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_postgres_lookup_many_int4_out_of_range,
				      many_teardown),
	    cmocka_unit_test(test_source_postgres_select_only_user),
	    cmocka_unit_test(test_source_postgres_password_never_shown),
	    cmocka_unit_test(test_source_postgres_missing_table_or_column),
	    cmocka_unit_test(test_source_postgres_million_rows_flat_memory),
	    cmocka_unit_test(test_source_postgres_connection_lost_mid_stream),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
