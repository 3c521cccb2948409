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
	side->kind = RECON_KIND_POSTGRES;
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
	    cmocka_unit_test(test_source_postgres_select_only_user),
	    cmocka_unit_test(test_source_postgres_password_never_shown),
	    cmocka_unit_test(test_source_postgres_missing_table_or_column),
	    cmocka_unit_test(test_source_postgres_million_rows_flat_memory),
	    cmocka_unit_test(test_source_postgres_connection_lost_mid_stream),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
