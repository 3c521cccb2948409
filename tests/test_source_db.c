/*
 * Tests for the database readers, src/source_postgres.c and src/source_mysql.c,
 * against real servers: the ones tests/db/servers.sh starts. Every case runs
 * once per engine of tests/support_db.h whose DSN is set (owner: *_DSN; *_RO_DSN
 * a login with no table rights, granted SELECT per table here; *_SOCKET_DSN
 * over the Unix socket); without any the binary is skipped (exit 77), under
 * CI=true a missing one fails. What differs between the engines (types, how a
 * value reads, how rows are generated, how a plan is shown) is in engines[].
 *
 * Covered: every value type the readers map (numeric/DECIMAL, integer cents,
 * small-integer and text statuses, char(n), instants with a zone, wall-clock
 * timestamps, text times, NULL, long values beyond the first buffer, a float
 * amount as a reject), the window pushed down (and EXPLAIN showing the time
 * index), key lookups one key and a batch at a time, a SELECT-only user, the
 * socket, passwords kept out of every message, missing table and column, a
 * connection killed mid-stream, and 1,000,000 rows read with flat memory.
 * PostgreSQL alone: a frozen server fails the read after idle_timeout.
 *
 * Sides start as a copy of the local side of a job the loader read
 * (support_db_job), then name their own table and columns. The source under
 * test lives in fx->src, which every case's teardown closes: a source left
 * open by a failed case keeps its snapshot and locks, and the next DROP TABLE
 * would wait for it.
 */
#include "support_db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

#define BIG_ROWS      1000000
#define MANY_ROWS_MAX 1024
#define N(a)	      (sizeof(a) / sizeof((a)[0]))

struct fx;

/* A DSN open must refuse: the code, a secret no message shows, a text it shows. */
struct open_case {
	const char *dsn;
	int code;
	const char *secret;
	const char *needle; /* NULL: none; "$VAR": the variable the side names */
};

/* What differs per engine. Statement lists end with NULL; tables are t_<tag>_*. */
struct engine {
	const char *values[4]; /* t_*_values: A1..A3 in the 2024-01-16 window, B1, B2 not */
	const char *ts_col;    /* the column holding instants (with a zone, or UTC) */
	const char *a1_ts;     /* A1's and A2's instants as read */
	const char *a2_ts;
	const char *a2_local;	 /* A2's wall-clock time as read */
	const char *status_time; /* the time column of the status map case */
	const char *window[8];	 /* t_*_window: 200 days of 1,000 rows */
	void (*window_plans)(struct fx *fx);
	const char *many[6]; /* t_*_many, but for the special keys */
	const char *big[7];  /* t_*_big: BIG_ROWS rows */
	void (*kill_reader)(struct fx *fx);
	const char *denied;	 /* the server's reason for a login without SELECT */
	const char *no_table;	 /* ... for a missing table */
	const char *wrong_pw[2]; /* scheme of a DSN with a wrong password, what the server says */
	struct open_case bad[6];
};

/* Below, after the functions its rows name. */
static const struct engine engines[2];

struct fx {
	const struct support_db_engine *e;
	const struct engine *q;
	struct support_db *db;
	struct recon_job *job; /* its local side is the template of every side */
	struct recon_tz *sh;   /* Asia/Shanghai */
	const char *dsn;       /* the owner's DSN */
	char test_var[64];     /* the variable the sides name: <prefix>_DSN_UNDER_TEST */
	char values[32], window[32], many[32], big[32];
	const char *special[32]; /* the special keys this engine stores */
	size_t nspecial;
	bool big_loaded;
	struct recon_source *src; /* the source under test, closed by teardown() */
};

static void exec_all(struct fx *fx, const char *const *list)
{
	for (; *list; list++)
		support_db_exec(fx->db, *list);
}

/*
 * Keys that matter to SQL or to a PostgreSQL array literal {"k1","k2"}; one
 * row each in t_*_many. No lone " " on MySQL: the default utf8mb4 collations
 * pad with spaces, so " " = "" there (for the one-key lookup too).
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
    "x' OR '1'='1",
};

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct recon_err err;

	recon_err_init(&err);
	if (!fx || recon_tz_load(&fx->sh, "Asia/Shanghai", &err) < 0)
		return -1;
	*state = fx;
	fx->e = support_db_current();
	fx->q = &engines[fx->e->id];
	fx->dsn = support_db_env(fx->e->dsn_var);
	fx->db = support_db_connect(fx->e, NULL);
	if (!fx->db)
		return -1;
	snprintf(fx->test_var, sizeof(fx->test_var), "%s_DSN_UNDER_TEST", fx->e->env_prefix);
	snprintf(fx->values, sizeof(fx->values), "t_%s_values", fx->e->tag);
	snprintf(fx->window, sizeof(fx->window), "t_%s_window", fx->e->tag);
	snprintf(fx->many, sizeof(fx->many), "t_%s_many", fx->e->tag);
	snprintf(fx->big, sizeof(fx->big), "t_%s_big", fx->e->tag);
	for (size_t i = 0; i < N(special_keys); i++)
		if (fx->e->id != SUPPORT_DB_MYSQL || strcmp(special_keys[i], " "))
			fx->special[fx->nspecial++] = special_keys[i];
	fx->job = support_db_job(fx->e, fx->values, fx->test_var, NULL);
	setenv(fx->test_var, fx->dsn, 1);
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;
	char q[64];

	if (fx->db) {
		snprintf(q, sizeof(q), "DROP TABLE IF EXISTS %s", fx->big);
		support_db_try(fx->db, q);
	}
	support_db_close(fx->db);
	recon_job_free(fx->job);
	recon_tz_free(fx->sh);
	free(fx);
	return 0;
}

/* After every case, failed or not: the source closed, the sides' variable the owner's DSN. */
static int teardown(void **state)
{
	struct fx *fx = *state;

	recon_source_close(fx->src);
	fx->src = NULL;
	setenv(fx->test_var, fx->dsn, 1);
	return 0;
}

/* A local side reading `table` through fx->test_var; roles mapped by the caller. */
static void side_init(struct fx *fx, struct recon_side *side, const char *table)
{
	*side = fx->job->local; /* role, backend and dsn_env as the loader set them */
	memset(side->cols, 0, sizeof(side->cols));
	memset(&side->status_map, 0, sizeof(side->status_map));
	side->table = (char *)table;
	side->nkey = 1;
	side->tz = fx->sh;
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

/* Opens side into fx->src (closing the one before); must succeed. */
static struct recon_source *open_ok(struct fx *fx, const struct recon_side *side,
				    const struct recon_window *w)
{
	struct recon_err err;

	recon_source_close(fx->src);
	fx->src = NULL;
	recon_err_init(&err);
	if (recon_source_open(&fx->src, side, w, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_string_equal(fx->src->ops->kind, fx->e->name);
	assert_string_equal(fx->src->name, side->table);
	return fx->src;
}

static void src_close(struct fx *fx)
{
	recon_source_close(fx->src);
	fx->src = NULL;
}

/* ---- value types, status map, window ---- */

static void test_source_db_value_types(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	int64_t t;

	exec_all(fx, fx->q->values);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_CURRENCY] = (char *)"cur";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(fx, &side, &w);
	recon_err_init(&err);

	/* timestamp without time zone (DATETIME): wall clock in the side's zone */
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
	assert_val(row, RECON_COL_TIME, fx->q->a2_local);
	/* SQL NULL is a NULL value; 23:50 the day before is inside the margin */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A3");
	assert_val(row, RECON_COL_AMOUNT, NULL);
	assert_val(row, RECON_COL_AMOUNT_MINOR, NULL);
	assert_val(row, RECON_COL_STATUS, NULL);
	assert_val(row, RECON_COL_CURRENCY, NULL);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);

	/* an instant (timestamptz, TIMESTAMP); a text key longer than the first buffer */
	side.cols[RECON_COL_KEY0] = (char *)"k_text";
	side.cols[RECON_COL_STATUS] = (char *)"st_text";
	side.cols[RECON_COL_TIME] = (char *)fx->q->ts_col;
	side.cols[RECON_COL_AMOUNT] = NULL;
	src = open_ok(fx, &side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "text-1");
	assert_val(row, RECON_COL_STATUS, "PAID");
	assert_val(row, RECON_COL_TIME, fx->q->a1_ts);
	assert_int_equal(
	    recon_time_parse(row->val[RECON_COL_TIME], row->len[RECON_COL_TIME], fx->sh, &t, &err),
	    0);
	assert_true(t == instant("2024-01-16T02:00:00Z"));
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(row->len[RECON_COL_KEY0], 360);
	assert_int_equal(memcmp(row->val[RECON_COL_KEY0], "long-key-long-key-", 18), 0);
	assert_val(row, RECON_COL_TIME, fx->q->a2_ts);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, NULL);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);

	/* text times: the bound is widened a day, rows are filtered later */
	side.cols[RECON_COL_TIME] = (char *)"at_text";
	src = open_ok(fx, &side, &w);
	{
		char keys[8][32];
		long n = drain(src, keys, 8);
		assert_int_equal(n, 3); /* A1 ('T' separator), A2, A3; not B1 (two days on) */
		assert_string_equal(keys[0], "text-1");
	}

	/* a floating-point amount makes the row a reject, never a rounded amount */
	side.cols[RECON_COL_AMOUNT_MINOR] = NULL;
	side.cols[RECON_COL_AMOUNT] = (char *)"fl";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(fx, &side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_non_null(row->reject);
	assert_non_null(strstr(row->reject, "floating-point"));
	src_close(fx);
	assert_int_equal(err.code, 0);
}

/* Small-integer statuses map through the status map like words do. */
static void test_source_db_status_map(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_map_entry map[] = {{(char *)"1", 1, RECON_ST_SUCCESS},
					{(char *)"3", 1, RECON_ST_PENDING}};
	const struct recon_raw_row *raw;
	struct recon_source *src;
	struct recon_side side;
	struct recon_arena arena;
	struct recon_row row;
	struct recon_err err;

	exec_all(fx, fx->q->values);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_TIME] = (char *)fx->q->status_time;
	side.status_map.v = map;
	side.status_map.n = 2;
	recon_arena_init(&arena);
	recon_err_init(&err);
	src = open_ok(fx, &side, &w);
	assert_int_equal(recon_source_next(src, &raw, &err), RECON_ROW);
	assert_int_equal(recon_normalize_row(&side, raw, &arena, &row, &err), RECON_NORM_ROW);
	assert_int_equal(row.amount, 1234);
	assert_int_equal(row.status, RECON_ST_SUCCESS);
	assert_true(row.time == instant("2024-01-16T02:00:00Z"));
	assert_int_equal(recon_source_next(src, &raw, &err), RECON_ROW);
	assert_int_equal(recon_normalize_row(&side, raw, &arena, &row, &err), RECON_NORM_ROW);
	assert_int_equal(row.amount, -50);
	assert_int_equal(row.status, RECON_ST_PENDING);
	assert_true(row.time == instant("2024-01-16T15:59:59.123Z"));
	src_close(fx);
	recon_arena_release(&arena);
}

/* PostgreSQL: the reader's statements, planned generically (bound values unknown). */
static void pg_window_plans(struct fx *fx)
{
	char *plan;

	support_db_exec(fx->db, "DEALLOCATE ALL");
	support_db_exec(fx->db, "SET plan_cache_mode = force_generic_plan");
	support_db_exec(fx->db, "PREPARE p(timestamp, timestamp) AS SELECT \"k\", \"cents\", "
				"\"at\" FROM \"t_pg_window\" WHERE \"at\" >= $1 AND \"at\" < $2");
	plan = support_db_value(
	    fx->db, "EXPLAIN EXECUTE p('2024-02-29 23:50:00', '2024-03-02 00:10:00')", NULL);
	print_message("plan: %s\n", plan);
	assert_non_null(strstr(plan, "idx_t_pg_window_at"));
	free(plan);
	support_db_exec(fx->db, "DEALLOCATE p");
	support_db_exec(fx->db, "PREPARE p(timestamptz, timestamptz) AS SELECT \"k\", \"cents\", "
				"\"at_tz\" FROM \"t_pg_window\" WHERE \"at_tz\" >= $1 AND "
				"\"at_tz\" < $2");
	plan = support_db_value(
	    fx->db, "EXPLAIN EXECUTE p('2024-02-29T15:50:00Z', '2024-03-01T16:10:00Z')", NULL);
	print_message("plan: %s\n", plan);
	assert_non_null(strstr(plan, "idx_t_pg_window_at_tz"));
	free(plan);
	support_db_exec(fx->db, "DEALLOCATE p");
	support_db_exec(fx->db, "RESET plan_cache_mode");
}

/* MySQL: the reader's predicate, a range on the time index. */
static void my_window_plans(struct fx *fx)
{
	char *key;

	key = support_db_value(fx->db,
			       "EXPLAIN SELECT `k`, `cents`, `at` FROM `t_my_window` WHERE `at` >= "
			       "'2024-02-29 23:50:00' AND `at` < '2024-03-02 00:10:00'",
			       "key");
	print_message("key: %s\n", key);
	assert_string_equal(key, "idx_t_my_window_at");
	free(key);
	key =
	    support_db_value(fx->db,
			     "EXPLAIN SELECT `k`, `cents`, `at_ts` FROM `t_my_window` WHERE "
			     "`at_ts` >= '2024-02-29 15:50:00' AND `at_ts` < '2024-03-01 16:10:00'",
			     "key");
	print_message("key: %s\n", key);
	assert_string_equal(key, "idx_t_my_window_at_ts");
	free(key);
}

/* 200 days of 1,000 rows: a one-day window reads one day, through the index. */
static void test_source_db_window_pushdown(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-03-01");
	struct recon_side side;
	long n;

	exec_all(fx, fx->q->window);
	side_init(fx, &side, fx->window);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at";
	n = drain(open_ok(fx, &side, &w), NULL, 0);
	/* the day plus 10 minutes each side, at one row per 86.4 s */
	assert_true(n >= 1000 + 2 * 6 && n <= 1000 + 2 * 7 + 1);
	side.cols[RECON_COL_TIME] = (char *)fx->q->ts_col;
	assert_int_equal(drain(open_ok(fx, &side, &w), NULL, 0), n);
	src_close(fx);
	fx->q->window_plans(fx);
	support_db_execf(fx->db, "DROP TABLE %s", fx->window);
}

/* ---- lookup ---- */

static void test_source_db_lookup(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	const char *parts[2];
	size_t lens[2];

	exec_all(fx, fx->q->values);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(fx, &side, &w);
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

	/* composite key, with an integer part */
	side.nkey = 2;
	side.cols[RECON_COL_KEY1] = (char *)"cents";
	src = open_ok(fx, &side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	parts[0] = "B1";
	lens[0] = 2;
	parts[1] = "100";
	lens[1] = 3;
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY1, "100");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	/* a non-number for the integer part finds nothing (not the rows holding 0) */
	support_db_execf(fx->db,
			 "INSERT INTO %s (k, cents, at_local) VALUES ('B1', 0, '2024-01-01')",
			 fx->values);
	parts[1] = "abc";
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	parts[1] = "100";
	/* the same lookup twice in a row */
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	src_close(fx);
	assert_int_equal(err.code, 0);
}

/*
 * PostgreSQL, issue 12 #10: a reader whose server freezes (a proxy that stops
 * forwarding, as SIGSTOP would) fails the read after the side's idle_timeout
 * (exit 69), instead of holding the run, its snapshot and the job's lock forever.
 */
static void test_source_db_frozen_server_times_out(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	const char *parts[1] = {"B2"};
	size_t lens[1] = {2};
	struct support_proxy p;
	struct recon_side side;
	struct recon_err err;
	struct timespec t0, t1;
	char pdsn[512];
	double took;
	int rc;

	exec_all(fx, fx->q->values);
	support_db_pg_proxy(&p, fx->dsn, pdsn, sizeof(pdsn));
	setenv(fx->test_var, pdsn, 1);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	side.idle_timeout_ms = 1000;
	assert_int_equal(drain(open_ok(fx, &side, &w), NULL, 0), 3);
	p.frozen = 1;
	recon_err_init(&err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = recon_source_lookup(fx->src, parts, lens, &err);
	if (rc == 0)
		rc = recon_source_next(fx->src, &row, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	src_close(fx);
	support_proxy_stop(&p);
	assert_int_equal(rc, RECON_EUNAVAIL);
	if (took > 8)
		fail_msg("the frozen server held the read for %.1f s", took);
	assert_non_null(strstr(err.msg, "no answer from the server in time"));
	if (strstr(err.msg, fx->e->owner_password))
		fail_msg("password in the message: %s", err.msg);
}

/* ---- lookup_many ---- */

/*
 * t_*_many: 600 keys K0000..K0599, 'a', 'b', 'dup' twice, a NULL key, the
 * special keys, and integer keys in n (bigint) and n4 (integer). Every row is
 * inside the 2024-01-16 window (Asia/Shanghai).
 */
static void load_many(struct fx *fx)
{
	exec_all(fx, fx->q->many);
	support_db_execf(fx->db,
			 "INSERT INTO %s (k, n, n4) VALUES ('a', NULL, NULL), "
			 "('b', NULL, NULL), ('dup', NULL, NULL), ('dup', NULL, NULL), "
			 "(NULL, NULL, NULL), ('int-42', 42, 42), ('int-m7', -7, -7), "
			 "('int-0', 0, 0), ('int-1000', 1000, 1000), "
			 "('int-max', 9223372036854775807, 2147483647)",
			 fx->many);
	for (size_t i = 0; i < fx->nspecial; i++) {
		char *lit = support_db_literal(fx->db, fx->special[i]);
		support_db_execf(fx->db, "INSERT INTO %s (k) VALUES (%s)", fx->many, lit);
		free(lit);
	}
}

/* Loads t_*_many and opens it keyed by the one column `key`, into fx->src. */
static struct recon_source *many_open(struct fx *fx, struct recon_side *side, const char *key)
{
	struct recon_window w = day_window(fx->sh, "2024-01-16");

	load_many(fx);
	side_init(fx, side, fx->many);
	side->cols[RECON_COL_KEY0] = (char *)key;
	side->cols[RECON_COL_TIME] = (char *)"at";
	return open_ok(fx, side, &w);
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

/* Found and missing keys in one batch: exactly the found ones' rows, each once. */
static void test_source_db_lookup_many_found_and_missing(void **state)
{
	struct fx *fx = *state;
	static const char *const keys[] = {"K0001",  "nope-1", "K0003", "dup",
					   "nope-2", "a",      "K9999", "K0599"};
	static const char *const want[] = {"K0001", "K0003", "dup", "dup", "a", "K0599"};
	static const char *const none[] = {"nope-1", "nope-2"};
	static const char *const k5[] = {"K0005"};
	struct recon_side side;
	struct recon_source *src = many_open(fx, &side, "k");

	assert_int_equal(drain(src, NULL, 0), 600 + 4 + 1 + 5 + (long)fx->nspecial);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
	/* the connection is reusable: a one-key lookup, then another batch */
	lookup_one(src, "K0005", k5, 1);
	lookup_many_ok(src, &side, N(none), none);
	expect_keys(src, NULL, 0);
	lookup_many_ok(src, &side, N(keys), keys);
	expect_keys(src, want, N(want));
}

/* Keys with characters that matter to SQL or to an array literal are data. */
static void test_source_db_lookup_many_special_keys(void **state)
{
	struct fx *fx = *state;
	/* none stored: each would find 'a' and 'b' if pasted into SQL or a literal */
	static const char *const inject[] = {"{a,b}",	  "a\",\"b",	"\"a\",\"b\"",
					     "a\\\",\"b", "NULL,a",	"a}",
					     "{a}",	  "a' OR k='b", "a', 'b"};
	static const char *const ab[] = {"a,b"};
	static const char *const only_a[] = {"a"};
	static const char *const null_key[] = {"NULL"};
	static const char *const empty_key[] = {""};
	const char *mixed[] = {"a", "{a,b}", "a\",\"b"};
	struct recon_side side;
	struct recon_source *src = many_open(fx, &side, "k");

	/* all of them at once: each row once, not 'a', 'b' nor the NULL key */
	lookup_many_ok(src, &side, fx->nspecial, fx->special);
	expect_keys(src, fx->special, fx->nspecial);
	/* one at a time, as the only key of a batch */
	for (size_t i = 0; i < fx->nspecial; i++) {
		print_message("key '%s'\n", fx->special[i]);
		lookup_many_ok(src, &side, 1, &fx->special[i]);
		expect_keys(src, &fx->special[i], 1);
	}
	lookup_many_ok(src, &side, 1, ab);
	expect_keys(src, ab, 1);
	lookup_many_ok(src, &side, N(inject), inject);
	expect_keys(src, NULL, 0);
	lookup_many_ok(src, &side, N(mixed), mixed);
	expect_keys(src, only_a, 1);
	/* 'NULL' the text is not SQL NULL; "" is not NULL either */
	lookup_many_ok(src, &side, 1, null_key);
	expect_keys(src, null_key, 1);
	lookup_many_ok(src, &side, 1, empty_key);
	expect_keys(src, empty_key, 1);
}

/* RECON_LOOKUP_BATCH keys in one batch, one key, and one key too many. */
static void test_source_db_lookup_many_batch_sizes(void **state)
{
	struct fx *fx = *state;
	static char names[RECON_LOOKUP_BATCH + 1][8];
	const char *keys[RECON_LOOKUP_BATCH + 1];
	size_t lens[RECON_LOOKUP_BATCH + 1];
	static const char *const one[] = {"K0599"};
	struct recon_side side;
	struct recon_err err;
	struct recon_source *src = many_open(fx, &side, "k");

	for (int i = 0; i <= RECON_LOOKUP_BATCH; i++) {
		snprintf(names[i], sizeof(names[i]), "K%04d", i);
		keys[i] = names[i];
		lens[i] = strlen(names[i]);
	}
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
}

/* An integer key column: only integer text matches; the rest breaks nothing. */
static void test_source_db_lookup_many_integer_key(void **state)
{
	struct fx *fx = *state;
	/*
	 * "42\0" (3 bytes): a NUL byte no row can hold, not "42". MySQL compares
	 * strings with numbers as numbers: "abc" and "" would find 0, "1e3" 1000.
	 */
	const char *keys[] = {"42", "abc", "-7", "1e3", "", "42\0", " 0", "0x10"};
	size_t lens[] = {2, 3, 2, 3, 0, 3, 2, 4};
	static const char *const want[] = {"42", "-7"};
	static const char *const k1000[] = {"1000"};
	static const char *const k0[] = {"0"};
	const char *tk[] = {"K0001", "K0002\0x", "K0003"};
	size_t tl[] = {5, 7, 5};
	static const char *const tw[] = {"K0001", "K0003"};
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_side side;
	struct recon_err err;
	struct recon_source *src = many_open(fx, &side, "n");

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
	side.cols[RECON_COL_KEY0] = (char *)"k";
	src = open_ok(fx, &side, &w);
	assert_int_equal(recon_source_lookup_many(src, &side, N(tk), tk, tl, &err), 0);
	expect_keys(src, tw, N(tw));
	assert_int_equal(err.code, 0);
}

/* No key any row can hold: 0, no query, and next() says done. */
static void test_source_db_lookup_many_all_unfit(void **state)
{
	struct fx *fx = *state;
	const char *keys[] = {"abc", "1e3", "", "4\0002", "0x10"};
	size_t lens[] = {3, 3, 0, 3, 4};
	static const char *const k42[] = {"42"};
	const struct recon_raw_row *row;
	struct recon_side side;
	struct recon_err err;
	struct recon_source *src = many_open(fx, &side, "n");

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
	assert_int_equal(err.code, 0);
}

/* A composite key: not this call's job, no error; the one-key lookup still works. */
static void test_source_db_lookup_many_composite_key(void **state)
{
	struct fx *fx = *state;
	static const char *const keys[] = {"int-42", "int-m7"};
	const size_t lens[] = {6, 6};
	const char *parts[2] = {"int-42", "42"};
	const size_t plens[2] = {6, 2};
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;

	many_open(fx, &side, "k");
	side.nkey = 2;
	side.cols[RECON_COL_KEY1] = (char *)"n";
	src = open_ok(fx, &side, &w);
	recon_err_init(&err);
	assert_int_equal(recon_source_lookup_many(src, &side, N(keys), keys, lens, &err),
			 RECON_ENOTFOUND);
	assert_int_equal(err.code, 0);
	assert_int_equal(recon_source_lookup(src, parts, plens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "int-42");
	assert_val(row, RECON_COL_KEY1, "42");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	assert_int_equal(err.code, 0);
}

/* Before the scan (or a lookup) is drained: the rest of it is dropped. */
static void test_source_db_lookup_many_after_partial_scan(void **state)
{
	struct fx *fx = *state;
	static const char *const keys[] = {"K0100", "nope", "K0200", "dup"};
	static const char *const want[] = {"K0100", "K0200", "dup", "dup"};
	static const char *const k7[] = {"K0007"};
	const struct recon_raw_row *row;
	struct recon_side side;
	struct recon_err err;
	struct recon_source *src = many_open(fx, &side, "k");

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
	const char *keys[8];
	static const char *const k42[] = {"42"};
	struct recon_side side;
	struct recon_source *src = many_open(fx, &side, col);

	assert_true(nin + nout <= 8);
	memcpy(keys, in, nin * sizeof(*keys));
	memcpy(keys + nin, out, nout * sizeof(*keys));
	lookup_many_ok(src, &side, nin + nout, keys);
	expect_keys(src, in, nin);
	lookup_many_ok(src, &side, nout, out);
	expect_keys(src, NULL, 0);
	lookup_one(src, "42", k42, 1);
}

static void test_source_db_lookup_many_bigint_out_of_range(void **state)
{
	static const char *const in[] = {"42", "9223372036854775807"};
	static const char *const out[] = {"9223372036854775808", "-9223372036854775809",
					  "9999999999999999999"};

	out_of_range(*state, "n", in, N(in), out, N(out));
}

static void test_source_db_lookup_many_int4_out_of_range(void **state)
{
	static const char *const in[] = {"42", "2147483647"};
	static const char *const out[] = {"3000000000", "-2147483649"};

	out_of_range(*state, "n4", in, N(in), out, N(out));
}

/* ---- logins, DSNs, errors ---- */

/* A login with SELECT on the one table and nothing else runs scan and lookups. */
static void test_source_db_select_only_user(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;
	const char *parts[1] = {"B1"};
	size_t lens[1] = {2};

	setenv(fx->test_var, support_db_dsn_or_skip(fx->e->ro_var), 1);
	exec_all(fx, fx->q->values);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	/* no grant yet: unavailable, with the server's reason */
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	assert_null(src);
	print_message("error: %s: %s\n", err.where, err.msg);
	assert_non_null(strstr(err.msg, fx->q->denied));
	support_db_grant_ro(fx->db, fx->values);
	src = open_ok(fx, &side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	recon_err_init(&err);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "B1");
	src_close(fx);
	support_db_revoke_ro(fx->db, fx->values);
}

/* The owner over the Unix socket. */
static void test_source_db_socket(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_side side;

	setenv(fx->test_var, support_db_dsn_or_skip(fx->e->socket_var), 1);
	exec_all(fx, fx->q->values);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	assert_int_equal(drain(open_ok(fx, &side, &w), NULL, 0), 3);
	src_close(fx);
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

	setenv(fx->test_var, dsn, 1);
	side_init(fx, &side, fx->values);
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
		assert_non_null(strstr(text, strcmp(needle, "$VAR") ? needle : fx->test_var));
}

static void test_source_db_password_never_shown(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;
	const char *at = strrchr(fx->dsn, '@');
	char bad[512], needle[128];

	for (const struct open_case *c = fx->q->bad; c->dsn; c++)
		open_fails(fx, c->dsn, c->code, c->secret, c->needle);
	/* the real server, a wrong password */
	assert_non_null(at);
	assert_non_null(strchr(at, ':'));
	snprintf(bad, sizeof(bad), "%srecon_ro:WrongPassw0rd%s", fx->q->wrong_pw[0], at);
	open_fails(fx, bad, RECON_EUNAVAIL, "WrongPassw0rd", fx->q->wrong_pw[1]);
	/* unset or empty: a configuration error naming the variable */
	snprintf(needle, sizeof(needle), "environment variable '%s' (local.dsn_env) is not set",
		 fx->test_var);
	open_fails(fx, "", RECON_ECONFIG, NULL, needle);
	unsetenv(fx->test_var);
	side_init(fx, &side, fx->values);
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "is not set"));
}

static void test_source_db_missing_table_or_column(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;

	exec_all(fx, fx->q->values);
	side_init(fx, &side, "no_such_table");
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	print_message("error: %s: %s\n", err.where, err.msg);
	assert_non_null(strstr(err.msg, "no_such_table"));
	assert_non_null(strstr(err.msg, fx->q->no_table));
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.where, fx->e->owner_password));

	side.table = fx->values;
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

/* ---- a million rows ---- */

/* BIG_ROWS rows, once for the big tests, read by a side in one day (Asia/Shanghai). */
static void big_side(struct fx *fx, struct recon_side *side)
{
	if (!fx->big_loaded)
		exec_all(fx, fx->q->big);
	fx->big_loaded = true;
	side_init(fx, side, fx->big);
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

static void test_source_db_million_rows_flat_memory(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	long before, after, n = 0, bytes = 0;
	double t0, dt;
	int rc;

	big_side(fx, &side);
	recon_err_init(&err);
	/* warm up: one open/close, so one-time allocations are not counted */
	src = open_ok(fx, &side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	src_close(fx);
	before = max_rss_kb();
	t0 = now_s();
	src = open_ok(fx, &side, &w);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW) {
		n++;
		bytes += (long)row->len[RECON_COL_KEY0];
	}
	dt = now_s() - t0;
	src_close(fx);
	after = max_rss_kb();
	if (rc < 0)
		fail_msg("%s: %s", err.where, err.msg);
	assert_int_equal(rc, RECON_DONE);
	assert_int_equal(n, BIG_ROWS);
	assert_int_equal(bytes, 13L * BIG_ROWS);
	print_message("%s: %ld rows in %.2f s (%.0f rows/s); peak RSS %ld KiB before, "
		      "%ld KiB after (+%ld KiB)\n",
		      fx->e->name, n, dt, (double)n / dt, before, after, after - before);
	/* flat: the whole result would be ~60 MB in libpq alone */
	assert_true(after - before < 16 * 1024);
}

static void pg_kill_reader(struct fx *fx)
{
	char *killed =
	    support_db_value(fx->db,
			     "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
			     "WHERE application_name = 'recon' AND pid <> pg_backend_pid() "
			     "AND (query LIKE '%t_pg_big%' OR query LIKE '%recon_scan_cur%')",
			     NULL);

	assert_string_equal(killed, "1");
	free(killed);
}

static void my_kill_reader(struct fx *fx)
{
	char *id = support_db_value(fx->db,
				    "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> "
				    "CONNECTION_ID() AND INFO LIKE '%FROM `t_my_big`%'",
				    NULL);

	support_db_execf(fx->db, "KILL %s", id);
	free(id);
}

/* The server ends the session mid-stream: the read fails cleanly. */
static void test_source_db_connection_lost_mid_stream(void **state)
{
	struct fx *fx = *state;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	long n = 0;
	int rc;

	big_side(fx, &side);
	src = open_ok(fx, &side, &w);
	recon_err_init(&err);
	while (n < 1000 && (rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	fx->q->kill_reader(fx);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	print_message("read %ld rows, then: %s: %s\n", n, err.where, err.msg);
	assert_int_equal(rc, RECON_EUNAVAIL);
	assert_int_equal(err.code, RECON_EUNAVAIL);
	assert_true(n < BIG_ROWS);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.msg, fx->e->owner_password));
	/* further calls stay quiet; close frees everything */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	src_close(fx);
}

/* ---- the engines ---- */

/* MySQL has no generate_series: rows come from a cross join of digits. */
#define MY_DIGITS                                                                                  \
	"CREATE TABLE IF NOT EXISTS t_my_digits (d INT PRIMARY KEY)",                              \
	    "INSERT IGNORE INTO t_my_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)"
#define MY_SIX_DIGITS                                                                              \
	"a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * h.d AS g FROM "          \
	"t_my_digits a, t_my_digits b, t_my_digits c, t_my_digits e, t_my_digits f, t_my_digits h"

static const struct engine engines[2] = {
    [SUPPORT_DB_POSTGRES] =
	{
	    .values =
		{"DROP TABLE IF EXISTS t_pg_values",
		 "CREATE TABLE t_pg_values (id serial PRIMARY KEY, k varchar(64), k_text text, "
		 "amt numeric(18,2), cents bigint, st smallint, st_text text, cur char(3), "
		 "at_tz timestamptz, at_local timestamp(3), at_text text, fl double precision)",
		 "INSERT INTO t_pg_values (k, k_text, amt, cents, st, st_text, cur, at_tz, "
		 "at_local, at_text, fl) VALUES "
		 "('A1', 'text-1', 12.34, 1234, 1, 'PAID', 'CNY', '2024-01-16 02:00:00+00', "
		 " '2024-01-16 10:00:00', '2024-01-16T10:00:00', 12.34),"
		 "('A2', repeat('long-key-', 40), -0.50, -50, 3, 'PENDING', 'USD', "
		 " '2024-01-16 15:59:59.123+00', '2024-01-16 23:59:59.123', '2024-01-16 23:59:59', "
		 " 0.1),"
		 "('A3', NULL, NULL, NULL, NULL, NULL, NULL, '2024-01-15 15:50:00+00', "
		 " '2024-01-15 23:50:00', '2024-01-15 23:50:00', NULL),"
		 /* outside the window (and its margins) by hours */
		 "('B1', 'text-b1', 1.00, 100, 1, 'PAID', 'CNY', '2024-01-17 03:00:00+00', "
		 " '2024-01-17 11:00:00', '2024-01-18 11:00:00', 1),"
		 "('B2', 'text-b2', 2.00, 200, 1, 'PAID', 'CNY', '2024-01-10 03:00:00+00', "
		 " '2024-01-10 11:00:00', '2024-01-10 11:00:00', 2)",
		 NULL},
	    .ts_col = "at_tz",
	    .a1_ts = "2024-01-16 02:00:00+00",
	    .a2_ts = "2024-01-16 15:59:59.123+00",
	    .a2_local = "2024-01-16 23:59:59.123",
	    .status_time = "at_local",
	    .window =
		{"DROP TABLE IF EXISTS t_pg_window",
		 "CREATE TABLE t_pg_window (id bigserial PRIMARY KEY, k text NOT NULL UNIQUE, "
		 "cents bigint NOT NULL, at timestamp NOT NULL, at_tz timestamptz NOT NULL)",
		 /* one row every 86.4 s from 2024-01-01 00:00 local: 1,000 a day */
		 "INSERT INTO t_pg_window (k, cents, at, at_tz) SELECT 'W' || g, g, "
		 "timestamp '2024-01-01 00:00:00' + g * interval '86.4 seconds', "
		 "timestamptz '2024-01-01 00:00:00+08' + g * interval '86.4 seconds' "
		 "FROM generate_series(0, 199999) g",
		 "CREATE INDEX idx_t_pg_window_at ON t_pg_window (at)",
		 "CREATE INDEX idx_t_pg_window_at_tz ON t_pg_window (at_tz)", "ANALYZE t_pg_window",
		 NULL},
	    .window_plans = pg_window_plans,
	    .many = {"DROP TABLE IF EXISTS t_pg_many",
		     "CREATE TABLE t_pg_many (id serial PRIMARY KEY, k text, n bigint, "
		     "n4 integer, at timestamp NOT NULL DEFAULT '2024-01-16 10:00:00')",
		     "INSERT INTO t_pg_many (k) SELECT 'K' || lpad(g::text, 4, '0') "
		     "FROM generate_series(0, 599) g",
		     NULL},
	    .big = {"DROP TABLE IF EXISTS t_pg_big",
		    "CREATE UNLOGGED TABLE t_pg_big (id bigint PRIMARY KEY, out_trade_no text "
		    "NOT NULL, amount numeric(18,2) NOT NULL, status text NOT NULL, created_at "
		    "timestamp NOT NULL)",
		    "INSERT INTO t_pg_big SELECT g, 'ORD-' || lpad(g::text, 9, '0'), "
		    "(g % 100000) / 100.0, 'PAID', timestamp '2024-01-16 00:00:00' + "
		    "(g * interval '86 milliseconds') FROM generate_series(1, 1000000) g",
		    "CREATE INDEX ON t_pg_big (created_at)", "ANALYZE t_pg_big", NULL},
	    .kill_reader = pg_kill_reader,
	    .denied = "permission denied",
	    .no_table = "does not exist",
	    .wrong_pw = {"postgresql://", "password authentication failed"},
	    .bad =
		{
		    /* nobody listens on port 1 */
		    {"postgresql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test", RECON_EUNAVAIL,
		     "Sup3rSecretPw", "cannot connect"},
		    {"host=127.0.0.1 port=1 user=recon password=KwSecret42 dbname=x",
		     RECON_EUNAVAIL, "KwSecret42", "127.0.0.1"},
		    {"postgresql://recon@127.0.0.1:1/recon_test?password=QuerySecret7",
		     RECON_EUNAVAIL, "QuerySecret7", NULL},
		    /* a string libpq cannot parse is not echoed */
		    {"host=127.0.0.1 password='Unterminated9", RECON_ECONFIG, "Unterminated9",
		     "$VAR"},
		    {"postgresql://u:PctSecret%zz@127.0.0.1/db?bogus=1", RECON_ECONFIG, "PctSecret",
		     NULL},
		},
	},
    [SUPPORT_DB_MYSQL] =
	{
	    .values =
		{"DROP TABLE IF EXISTS t_my_values",
		 "CREATE TABLE t_my_values (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64), "
		 "k_text TEXT, amt DECIMAL(18,2), cents BIGINT, st TINYINT, st_text VARCHAR(16), "
		 "cur CHAR(3), at_ts TIMESTAMP(3) NULL, at_local DATETIME, at_text VARCHAR(32), "
		 "fl DOUBLE) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		 /* the setup session is in UTC: TIMESTAMP literals are UTC */
		 "INSERT INTO t_my_values (k, k_text, amt, cents, st, st_text, cur, at_ts, "
		 "at_local, at_text, fl) VALUES "
		 "('A1', 'text-1', 12.34, 1234, 1, 'PAID', 'CNY', '2024-01-16 02:00:00', "
		 " '2024-01-16 10:00:00', '2024-01-16T10:00:00', 12.34),"
		 "('A2', REPEAT('long-key-', 40), -0.50, -50, 3, 'PENDING', 'USD', "
		 " '2024-01-16 15:59:59.123', '2024-01-16 23:59:59', '2024-01-16 23:59:59', 0.1),"
		 "('A3', NULL, NULL, NULL, NULL, NULL, NULL, '2024-01-15 15:50:00', "
		 " '2024-01-15 23:50:00', '2024-01-15 23:50:00', NULL),"
		 "('B1', 'text-b1', 1.00, 100, 1, 'PAID', 'CNY', '2024-01-17 03:00:00', "
		 " '2024-01-17 11:00:00', '2024-01-18 11:00:00', 1),"
		 "('B2', 'text-b2', 2.00, 200, 1, 'PAID', 'CNY', '2024-01-10 03:00:00', "
		 " '2024-01-10 11:00:00', '2024-01-10 11:00:00', 2)",
		 NULL},
	    .ts_col = "at_ts",
	    .a1_ts = "2024-01-16 02:00:00.000Z",
	    .a2_ts = "2024-01-16 15:59:59.123Z",
	    .a2_local = "2024-01-16 23:59:59",
	    .status_time = "at_ts",
	    .window =
		{MY_DIGITS, "DROP TABLE IF EXISTS t_my_window",
		 "CREATE TABLE t_my_window (id BIGINT PRIMARY KEY, k VARCHAR(32) NOT NULL UNIQUE, "
		 "cents BIGINT NOT NULL, at DATETIME(3) NOT NULL, at_ts TIMESTAMP(3) NOT NULL, "
		 "KEY idx_t_my_window_at (at), KEY idx_t_my_window_at_ts (at_ts)) ENGINE=InnoDB",
		 /* one row every 86.4 s from 2024-01-01 00:00 local (16:00 UTC the day before) */
		 "INSERT INTO t_my_window SELECT g, CONCAT('W', g), g, "
		 "TIMESTAMPADD(MICROSECOND, g * 86400000, '2024-01-01 00:00:00'), "
		 "TIMESTAMPADD(MICROSECOND, g * 86400000, '2023-12-31 16:00:00') "
		 "FROM (SELECT " MY_SIX_DIGITS ") s WHERE g < 200000",
		 "ANALYZE TABLE t_my_window", NULL},
	    .window_plans = my_window_plans,
	    .many = {MY_DIGITS, "DROP TABLE IF EXISTS t_my_many",
		     "CREATE TABLE t_my_many (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64), "
		     "n BIGINT, n4 INT, at DATETIME NOT NULL DEFAULT '2024-01-16 10:00:00') "
		     "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		     "INSERT INTO t_my_many (k) SELECT CONCAT('K', LPAD(g, 4, '0')) FROM "
		     "(SELECT a.d + 10 * b.d + 100 * c.d AS g FROM t_my_digits a, t_my_digits b, "
		     "t_my_digits c) s WHERE g < 600 ORDER BY g",
		     NULL},
	    .big = {MY_DIGITS, "DROP TABLE IF EXISTS t_my_big",
		    "CREATE TABLE t_my_big (id BIGINT PRIMARY KEY, out_trade_no VARCHAR(32) "
		    "NOT NULL, amount DECIMAL(18,2) NOT NULL, status VARCHAR(16) NOT NULL, "
		    "created_at DATETIME(3) NOT NULL, KEY (created_at)) ENGINE=InnoDB",
		    "INSERT INTO t_my_big SELECT g + 1, CONCAT('ORD-', LPAD(g + 1, 9, '0')), "
		    "((g + 1) % 100000) / 100, 'PAID', TIMESTAMPADD(MICROSECOND, (g + 1) * 86000, "
		    "'2024-01-16 00:00:00') FROM (SELECT " MY_SIX_DIGITS ") s",
		    NULL},
	    .kill_reader = my_kill_reader,
	    .denied = "denied",
	    .no_table = "doesn't exist",
	    .wrong_pw = {"mysql://", "Access denied"},
	    .bad =
		{
		    {"mysql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test", RECON_EUNAVAIL,
		     "Sup3rSecretPw", "cannot connect"},
		    {"mysql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test?connect_timeout=2",
		     RECON_EUNAVAIL, "Sup3rSecretPw", "127.0.0.1"},
		    {"mysql://recon:PctSecret%zz@127.0.0.1/db", RECON_ECONFIG, "PctSecret", "$VAR"},
		    {"mysql://recon@127.0.0.1:1/db?password=QuerySecret7", RECON_ECONFIG,
		     "QuerySecret7", "unknown parameter 'password'"},
		},
	},
};

#define CASE(f)                                                                                    \
	{                                                                                          \
		NULL, cmocka_unit_test_teardown(f, teardown)                                       \
	}
#define ONLY(name, f)                                                                              \
	{                                                                                          \
		name, cmocka_unit_test_teardown(f, teardown)                                       \
	}

int main(void)
{
	static const struct support_db_case cases[] = {
	    CASE(test_source_db_value_types),
	    CASE(test_source_db_status_map),
	    CASE(test_source_db_window_pushdown),
	    CASE(test_source_db_lookup),
	    ONLY("postgres", test_source_db_frozen_server_times_out),
	    CASE(test_source_db_lookup_many_found_and_missing),
	    CASE(test_source_db_lookup_many_special_keys),
	    CASE(test_source_db_lookup_many_batch_sizes),
	    CASE(test_source_db_lookup_many_integer_key),
	    CASE(test_source_db_lookup_many_all_unfit),
	    CASE(test_source_db_lookup_many_composite_key),
	    CASE(test_source_db_lookup_many_after_partial_scan),
	    CASE(test_source_db_lookup_many_bigint_out_of_range),
	    CASE(test_source_db_lookup_many_int4_out_of_range),
	    CASE(test_source_db_select_only_user),
	    CASE(test_source_db_socket),
	    CASE(test_source_db_password_never_shown),
	    CASE(test_source_db_missing_table_or_column),
	    CASE(test_source_db_million_rows_flat_memory),
	    CASE(test_source_db_connection_lost_mid_stream),
	};

	return support_db_run("test_source_db", cases, N(cases), group_setup, group_teardown);
}
