/*
 * Tests for src/source_mysql.c (and the mysql:// parsing in src/recon_dsn.c)
 * against a real MariaDB/MySQL server: the one tests/db/servers.sh starts
 * (RECON_TEST_MYSQL_DSN: owner; RECON_TEST_MYSQL_RO_DSN: a login with no
 * table rights, granted SELECT per table here; RECON_TEST_MYSQL_SOCKET_DSN:
 * the owner over the Unix socket). Without the variables the server tests
 * are skipped, and fail under CI=true.
 *
 * Covered: every value type the reader maps (DECIMAL, integer cents, TINYINT
 * and text statuses, CHAR, TIMESTAMP, DATETIME, text times, NULL, long values
 * beyond the first buffer, a DOUBLE amount as a reject), the window pushed
 * down (and EXPLAIN showing the time index), key lookups, a SELECT-only
 * user, passwords kept out of every message, missing table and column, a
 * connection killed mid-stream, and 1,000,000 rows read with flat memory.
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

#include <mysql.h>

#include "recon_dsn.h"
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

#define DSN_VAR	  "RECON_TEST_MYSQL_DSN"
#define RO_VAR	  "RECON_TEST_MYSQL_RO_DSN"
#define SOCK_VAR  "RECON_TEST_MYSQL_SOCKET_DSN"
#define TEST_VAR  "RECON_TEST_MYSQL_DSN_UNDER_TEST" /* the variable a side names */
#define BIG_ROWS  1000000
#define BIG_TABLE "t_my_big"

struct fx {
	MYSQL *admin;
	struct recon_tz *sh; /* Asia/Shanghai */
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
	MYSQL_RES *r;

	if (mysql_query(fx->admin, q))
		fail_msg("%s: %s", q, mysql_error(fx->admin));
	r = mysql_store_result(fx->admin);
	if (r)
		mysql_free_result(r);
}

/* Column `col` of the first row of q, as a malloc'd string ("" for NULL). */
static char *sql_value(struct fx *fx, const char *q, const char *col)
{
	MYSQL_RES *r;
	MYSQL_ROW row;
	MYSQL_FIELD *f;
	char *v = NULL;

	if (mysql_query(fx->admin, q) || !(r = mysql_store_result(fx->admin)))
		fail_msg("%s: %s", q, mysql_error(fx->admin));
	row = mysql_fetch_row(r);
	assert_non_null(row);
	f = mysql_fetch_fields(r);
	for (unsigned i = 0; i < mysql_num_fields(r); i++)
		if (!col || !strcmp(f[i].name, col)) {
			v = strdup(row[i] ? row[i] : "");
			break;
		}
	mysql_free_result(r);
	assert_non_null(v);
	return v;
}

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct recon_err err;
	const char *dsn = getenv(DSN_VAR);

	recon_err_init(&err);
	if (!fx || recon_tz_load(&fx->sh, "Asia/Shanghai", &err) < 0)
		return -1;
	if (dsn && *dsn) {
		struct recon_dsn_mysql d;
		recon_dsn_mysql_init(&d);
		if (recon_dsn_mysql_parse(dsn, DSN_VAR, &d, &err) < 0)
			return -1;
		fx->admin = mysql_init(NULL);
		if (!mysql_real_connect(fx->admin, d.host, d.user, d.password, d.db, d.port,
					d.socket, 0)) {
			fprintf(stderr, "cannot connect with %s: %s\n", DSN_VAR,
				mysql_error(fx->admin));
			recon_dsn_mysql_release(&d);
			return -1;
		}
		recon_dsn_mysql_release(&d);
		if (mysql_query(fx->admin, "SET time_zone = '+00:00'"))
			return -1;
	}
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;

	if (fx->admin) {
		mysql_query(fx->admin, "DROP TABLE IF EXISTS " BIG_TABLE);
		mysql_close(fx->admin);
	}
	recon_tz_free(fx->sh);
	free(fx);
	mysql_library_end();
	return 0;
}

static void side_init(struct recon_side *side, const char *table, struct recon_tz *tz)
{
	memset(side, 0, sizeof(*side));
	side->role = "local";
	side->backend = &recon_source_mysql;
	side->table = (char *)table;
	side->dsn_env = (char *)TEST_VAR;
	side->nkey = 1;
	side->tz = tz;
	side->currency = (char *)"CNY";
}

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
	sql(fx, "DROP TABLE IF EXISTS t_my_values");
	sql(fx, "CREATE TABLE t_my_values (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64), "
		"k_text TEXT, amt DECIMAL(18,2), cents BIGINT, st TINYINT, st_text VARCHAR(16), "
		"cur CHAR(3), at_ts TIMESTAMP(3) NULL, at_local DATETIME, at_text VARCHAR(32), "
		"fl DOUBLE) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
	/* the admin session is in UTC: TIMESTAMP literals are UTC */
	sql(fx, "INSERT INTO t_my_values (k, k_text, amt, cents, st, st_text, cur, at_ts, "
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
		" '2024-01-10 11:00:00', '2024-01-10 11:00:00', 2)");
}

static struct recon_source *open_ok(const struct recon_side *side, const struct recon_window *w)
{
	struct recon_source *src = NULL;
	struct recon_err err;

	recon_err_init(&err);
	if (recon_source_open(&src, side, w, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_string_equal(src->ops->kind, "mysql");
	assert_string_equal(src->name, side->table);
	return src;
}

static void test_source_mysql_dsn_parse(void **state)
{
	struct recon_dsn_mysql d;
	struct recon_err err;
	char line[64];

	(void)state;
	recon_dsn_mysql_init(&d);
	recon_err_init(&err);
	assert_int_equal(recon_dsn_mysql_parse("mysql://us%40r:p%3Aw%2F@db.example:3307/shop?"
					       "socket=%2Frun%2Fm.sock&connect_timeout=5",
					       "X", &d, &err),
			 0);
	assert_string_equal(d.user, "us@r");
	assert_string_equal(d.password, "p:w/");
	assert_string_equal(d.host, "db.example");
	assert_int_equal(d.port, 3307);
	assert_string_equal(d.db, "shop");
	assert_string_equal(d.socket, "/run/m.sock");
	assert_int_equal(d.connect_timeout, 5);
	recon_dsn_mysql_release(&d);
	/* '@' inside the password: userinfo ends at the last '@' */
	assert_int_equal(recon_dsn_mysql_parse("mariadb://u:a@b@[::1]:3306/db", "X", &d, &err), 0);
	assert_string_equal(d.password, "a@b");
	assert_string_equal(d.host, "::1");
	assert_int_equal(d.port, 3306);
	recon_dsn_mysql_release(&d);
	/* everything optional: option files fill in */
	assert_int_equal(recon_dsn_mysql_parse("mysql://", "X", &d, &err), 0);
	assert_null(d.user);
	assert_null(d.password);
	assert_null(d.host);
	assert_null(d.db);
	recon_dsn_mysql_release(&d);
	assert_int_equal(recon_dsn_mysql_parse("mysql://u@/db?socket=/s.sock", "X", &d, &err), 0);
	assert_string_equal(d.user, "u");
	assert_null(d.password);
	assert_null(d.host);
	recon_dsn_mysql_release(&d);
	assert_int_equal(err.code, 0);

	/* errors never quote the string */
	{
		static const char *const bad[] = {
		    "postgresql://u:SecretA1@h/db",  "mysql://u:Secret%zzB2@h/db",
		    "mysql://u:SecretC3@h:99999/db", "mysql://u:SecretD4@h/db?password=SecretD4",
		    "mysql://u:SecretE5@h/a/b",	     "mysql://u:SecretF6@[::1/db",
		    "mysql://u:SecretG7@h/db#frag",  "mysql://u:SecretH8@h:x/db",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char text[512];
			recon_err_init(&err);
			assert_int_equal(recon_dsn_mysql_parse(bad[i], "ENV_X", &d, &err),
					 RECON_ECONFIG);
			recon_dsn_mysql_release(&d);
			recon_err_str(&err, text, sizeof(text));
			print_message("error: %s\n", text);
			assert_null(strstr(text, "Secret"));
			assert_non_null(strstr(text, "ENV_X"));
		}
	}

	/* the first line of a message, password scrubbed */
	recon_dsn_first_line("FATAL:  no pw42 here\n\tmore", "pw42", line, sizeof(line));
	assert_string_equal(line, "no *** here");
	recon_dsn_first_line("short", NULL, line, 4);
	assert_string_equal(line, "sho");
}

static void test_source_mysql_value_types(void **state)
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
	side_init(&side, "t_my_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_CURRENCY] = (char *)"cur";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	recon_err_init(&err);

	/* DATETIME: wall clock in the side's zone */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A1");
	assert_val(row, RECON_COL_AMOUNT, "12.34");
	assert_val(row, RECON_COL_AMOUNT_MINOR, "1234");
	assert_val(row, RECON_COL_STATUS, "1");
	assert_val(row, RECON_COL_CURRENCY, "CNY");
	assert_val(row, RECON_COL_TIME, "2024-01-16 10:00:00");
	assert_null(row->reject);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A2");
	assert_val(row, RECON_COL_AMOUNT, "-0.50");
	assert_val(row, RECON_COL_AMOUNT_MINOR, "-50");
	assert_val(row, RECON_COL_STATUS, "3");
	assert_val(row, RECON_COL_CURRENCY, "USD");
	assert_val(row, RECON_COL_TIME, "2024-01-16 23:59:59");
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "A3");
	assert_val(row, RECON_COL_AMOUNT, NULL);
	assert_val(row, RECON_COL_AMOUNT_MINOR, NULL);
	assert_val(row, RECON_COL_STATUS, NULL);
	assert_val(row, RECON_COL_CURRENCY, NULL);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);

	/* TIMESTAMP: UTC, with a 'Z'; a TEXT key longer than the first buffer */
	side.cols[RECON_COL_KEY0] = (char *)"k_text";
	side.cols[RECON_COL_STATUS] = (char *)"st_text";
	side.cols[RECON_COL_TIME] = (char *)"at_ts";
	side.cols[RECON_COL_AMOUNT] = NULL;
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "text-1");
	assert_val(row, RECON_COL_STATUS, "PAID");
	assert_val(row, RECON_COL_TIME, "2024-01-16 02:00:00.000Z");
	assert_int_equal(
	    recon_time_parse(row->val[RECON_COL_TIME], row->len[RECON_COL_TIME], fx->sh, &t, &err),
	    0);
	assert_true(t == instant("2024-01-16T02:00:00Z"));
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_int_equal(row->len[RECON_COL_KEY0], 360);
	assert_int_equal(memcmp(row->val[RECON_COL_KEY0], "long-key-long-key-", 18), 0);
	assert_val(row, RECON_COL_TIME, "2024-01-16 15:59:59.123Z");
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
		assert_int_equal(n, 3);
		assert_string_equal(keys[0], "text-1");
	}
	recon_source_close(src);

	/* a DOUBLE amount makes the row a reject */
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

static void test_source_mysql_status_map(void **state)
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
	side_init(&side, "t_my_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_STATUS] = (char *)"st";
	side.cols[RECON_COL_TIME] = (char *)"at_ts";
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
	assert_true(row.time == instant("2024-01-16T15:59:59.123Z"));
	recon_source_close(src);
	recon_arena_release(&arena);
}

/* Digits 0-9, for generating rows without the Sequence engine (MySQL has none). */
static void make_digits(struct fx *fx)
{
	sql(fx, "CREATE TABLE IF NOT EXISTS t_my_digits (d INT PRIMARY KEY)");
	sql(fx, "INSERT IGNORE INTO t_my_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)");
}

static void test_source_mysql_window_pushdown(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-03-01");
	struct recon_source *src;
	struct recon_side side;
	char *key;
	long n;

	make_digits(fx);
	sql(fx, "DROP TABLE IF EXISTS t_my_window");
	sql(fx, "CREATE TABLE t_my_window (id BIGINT PRIMARY KEY, k VARCHAR(32) NOT NULL UNIQUE, "
		"cents BIGINT NOT NULL, at DATETIME(3) NOT NULL, at_ts TIMESTAMP(3) NOT NULL, "
		"KEY idx_t_my_window_at (at), KEY idx_t_my_window_at_ts (at_ts)) ENGINE=InnoDB");
	/* one row every 86.4 s from 2024-01-01 00:00 local (16:00 UTC the day before) */
	sql(fx, "INSERT INTO t_my_window SELECT g, CONCAT('W', g), g, "
		"TIMESTAMPADD(MICROSECOND, g * 86400000, '2024-01-01 00:00:00'), "
		"TIMESTAMPADD(MICROSECOND, g * 86400000, '2023-12-31 16:00:00') FROM (SELECT "
		"a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * h.d AS g "
		"FROM t_my_digits a, t_my_digits b, t_my_digits c, t_my_digits e, t_my_digits f, "
		"t_my_digits h) s WHERE g < 200000");
	sql(fx, "ANALYZE TABLE t_my_window");
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_my_window", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at";
	src = open_ok(&side, &w);
	n = drain(src, NULL, 0);
	recon_source_close(src);
	assert_true(n >= 1000 + 2 * 6 && n <= 1000 + 2 * 7 + 1);
	side.cols[RECON_COL_TIME] = (char *)"at_ts";
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), n);
	recon_source_close(src);

	/* the reader's predicate: a range on the time index */
	key = sql_value(fx,
			"EXPLAIN SELECT `k`, `cents`, `at` FROM `t_my_window` WHERE `at` >= "
			"'2024-02-29 23:50:00' AND `at` < '2024-03-02 00:10:00'",
			"key");
	print_message("key: %s\n", key);
	assert_string_equal(key, "idx_t_my_window_at");
	free(key);
	key = sql_value(fx,
			"EXPLAIN SELECT `k`, `cents`, `at_ts` FROM `t_my_window` WHERE "
			"`at_ts` >= '2024-02-29 15:50:00' AND `at_ts` < '2024-03-01 16:10:00'",
			"key");
	print_message("key: %s\n", key);
	assert_string_equal(key, "idx_t_my_window_at_ts");
	free(key);
	sql(fx, "DROP TABLE t_my_window");
}

static void test_source_mysql_lookup(void **state)
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
	side_init(&side, "t_my_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT_MINOR] = (char *)"cents";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	recon_err_init(&err);
	/* before the scan is drained: the rest of it is dropped */
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	parts[0] = "B2xyz";
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
	parts[0] = "x' OR '1'='1";
	lens[0] = strlen(parts[0]);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);

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
	/* a non-number for the integer part finds nothing (not the rows holding 0) */
	sql(fx, "INSERT INTO t_my_values (k, cents, at_local) VALUES ('B1', 0, '2024-01-01')");
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
	recon_source_close(src);
	assert_int_equal(err.code, 0);
}

/* ---- lookup_many ---- */

#define MANY_TABLE    "t_my_many"
#define MANY_ROWS_MAX 1024

/*
 * Keys that matter to SQL (or would to a PostgreSQL array literal); one row
 * each in MANY_TABLE, stored escaped. No lone " ": the default utf8mb4
 * collations pad with spaces, so " " = "" there (for the one-key lookup too).
 */
static const char *const special_keys[] = {
    "q\"uote",	    "\"",  "back\\slash", "\\",	    "\\\"", "a,b", "{x",   "y}",
    "{}",	    "a b", " lead",	  "trail ", "NULL", "",	   "订单", "订单-2024\\\"{,}",
    "x' OR '1'='1",
};
#define NSPECIAL (sizeof(special_keys) / sizeof(special_keys[0]))

/*
 * MANY_TABLE: 600 keys K0000..K0599, 'a', 'b', 'dup' twice, a NULL key,
 * the special keys, and integer keys in n (BIGINT) and n4 (INT). Every row
 * is inside the 2024-01-16 window (Asia/Shanghai).
 */
static void load_many(struct fx *fx)
{
	char q[256], esc[128];

	make_digits(fx);
	sql(fx, "DROP TABLE IF EXISTS " MANY_TABLE);
	sql(fx, "CREATE TABLE " MANY_TABLE " (id INT AUTO_INCREMENT PRIMARY KEY, k VARCHAR(64), "
		"n BIGINT, n4 INT, at DATETIME NOT NULL DEFAULT '2024-01-16 10:00:00') "
		"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4");
	sql(fx, "INSERT INTO " MANY_TABLE " (k) SELECT CONCAT('K', LPAD(g, 4, '0')) FROM "
		"(SELECT a.d + 10 * b.d + 100 * c.d AS g FROM t_my_digits a, t_my_digits b, "
		"t_my_digits c) s WHERE g < 600 ORDER BY g");
	sql(fx, "INSERT INTO " MANY_TABLE " (k, n, n4) VALUES ('a', NULL, NULL), "
		"('b', NULL, NULL), ('dup', NULL, NULL), ('dup', NULL, NULL), (NULL, NULL, NULL), "
		"('int-42', 42, 42), ('int-m7', -7, -7), ('int-0', 0, 0), "
		"('int-1000', 1000, 1000), ('int-max', 9223372036854775807, 2147483647)");
	for (size_t i = 0; i < NSPECIAL; i++) {
		assert_true(2 * strlen(special_keys[i]) < sizeof(esc));
		mysql_real_escape_string(fx->admin, esc, special_keys[i],
					 (unsigned long)strlen(special_keys[i]));
		snprintf(q, sizeof(q), "INSERT INTO " MANY_TABLE " (k) VALUES ('%s')", esc);
		sql(fx, q);
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
static void test_source_mysql_lookup_many_found_and_missing(void **state)
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
static void test_source_mysql_lookup_many_special_keys(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	/* none stored: each would find 'a' and 'b' if pasted into SQL or a literal */
	static const char *const inject[] = {"{a,b}",	  "a\",\"b",	"\"a\",\"b\"",
					     "a\\\",\"b", "NULL,a",	"a}",
					     "{a}",	  "a' OR k='b", "a', 'b"};
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
static void test_source_mysql_lookup_many_batch_sizes(void **state)
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
static void test_source_mysql_lookup_many_integer_key(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	/* MySQL compares strings with numbers as numbers: "abc" and "" would find 0, "1e3" 1000 */
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
	many_close(fx);
	assert_int_equal(err.code, 0);
}

/* No key any row can hold: 0, no query, and next() says done. */
static void test_source_mysql_lookup_many_all_unfit(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const char *keys[] = {"abc", "1e3", "", "4\0002", "0x10"};
	size_t lens[] = {3, 3, 0, 3, 4};
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
static void test_source_mysql_lookup_many_composite_key(void **state)
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
static void test_source_mysql_lookup_many_after_partial_scan(void **state)
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

static void test_source_mysql_lookup_many_bigint_out_of_range(void **state)
{
	static const char *const in[] = {"42", "9223372036854775807"};
	static const char *const out[] = {"9223372036854775808", "-9223372036854775809",
					  "9999999999999999999"};

	out_of_range(*state, "n", in, N(in), out, N(out));
}

static void test_source_mysql_lookup_many_int4_out_of_range(void **state)
{
	static const char *const in[] = {"42", "2147483647"};
	static const char *const out[] = {"3000000000", "-2147483649"};

	out_of_range(*state, "n4", in, N(in), out, N(out));
}

static void test_source_mysql_select_only_user(void **state)
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
	side_init(&side, "t_my_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_AMOUNT] = (char *)"amt";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	assert_null(src);
	print_message("error: %s: %s\n", err.where, err.msg);
	sql(fx, "GRANT SELECT ON t_my_values TO 'recon_ro'@'%'");
	sql(fx, "GRANT SELECT ON t_my_values TO 'recon_ro'@'localhost'");
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	recon_err_init(&err);
	assert_int_equal(recon_source_lookup(src, parts, lens, &err), 0);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	assert_val(row, RECON_COL_KEY0, "B1");
	recon_source_close(src);
	sql(fx, "REVOKE SELECT ON t_my_values FROM 'recon_ro'@'%'");
	sql(fx, "REVOKE SELECT ON t_my_values FROM 'recon_ro'@'localhost'");
}

/* The owner over the Unix socket (?socket= in the URI). */
static void test_source_mysql_socket(void **state)
{
	struct fx *fx = *state;
	const char *dsn;
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src;
	struct recon_side side;

	dsn_or_skip(DSN_VAR);
	dsn = dsn_or_skip(SOCK_VAR);
	load_values(fx);
	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_my_values", fx->sh);
	side.cols[RECON_COL_KEY0] = (char *)"k";
	side.cols[RECON_COL_TIME] = (char *)"at_local";
	src = open_ok(&side, &w);
	assert_int_equal(drain(src, NULL, 0), 3);
	recon_source_close(src);
}

static void open_fails(struct fx *fx, const char *dsn, int code, const char *secret,
		       const char *needle)
{
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	struct recon_source *src = NULL;
	struct recon_side side;
	struct recon_err err;
	char text[512];

	setenv(TEST_VAR, dsn, 1);
	side_init(&side, "t_my_values", fx->sh);
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

static void test_source_mysql_password_never_shown(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	char bad[512];
	const char *at;

	open_fails(fx, "mysql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test", RECON_EUNAVAIL,
		   "Sup3rSecretPw", "cannot connect");
	open_fails(fx, "mysql://recon:Sup3rSecretPw@127.0.0.1:1/recon_test?connect_timeout=2",
		   RECON_EUNAVAIL, "Sup3rSecretPw", "127.0.0.1");
	open_fails(fx, "mysql://recon:PctSecret%zz@127.0.0.1/db", RECON_ECONFIG, "PctSecret",
		   TEST_VAR);
	open_fails(fx, "mysql://recon@127.0.0.1:1/db?password=QuerySecret7", RECON_ECONFIG,
		   "QuerySecret7", "unknown parameter 'password'");
	at = strrchr(dsn, '@');
	assert_non_null(at);
	snprintf(bad, sizeof(bad), "mysql://recon_ro:WrongPassw0rd%s", at);
	open_fails(fx, bad, RECON_EUNAVAIL, "WrongPassw0rd", "Access denied");
	setenv(TEST_VAR, "", 1);
	open_fails(fx, "", RECON_ECONFIG, NULL,
		   "environment variable '" TEST_VAR "' (local.dsn_env) is not set");
	unsetenv(TEST_VAR);
}

static void test_source_mysql_missing_table_or_column(void **state)
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
	assert_null(strchr(err.msg, '\n'));

	side.table = (char *)"t_my_values";
	side.cols[RECON_COL_AMOUNT] = (char *)"no_such_column";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_EUNAVAIL);
	print_message("error: %s: %s\n", err.where, err.msg);
	assert_non_null(strstr(err.msg, "no_such_column"));

	side.cols[RECON_COL_AMOUNT] = NULL;
	side.cols[RECON_COL_TIME] = (char *)"cents";
	recon_err_init(&err);
	assert_int_equal(recon_source_open(&src, &side, &w, &err), RECON_ECONFIG);
	assert_null(src);
}

static void load_big(struct fx *fx)
{
	if (fx->big_loaded)
		return;
	make_digits(fx);
	sql(fx, "DROP TABLE IF EXISTS " BIG_TABLE);
	sql(fx, "CREATE TABLE " BIG_TABLE " (id BIGINT PRIMARY KEY, out_trade_no VARCHAR(32) "
		"NOT NULL, amount DECIMAL(18,2) NOT NULL, status VARCHAR(16) NOT NULL, "
		"created_at DATETIME(3) NOT NULL, KEY (created_at)) ENGINE=InnoDB");
	sql(fx, "INSERT INTO " BIG_TABLE " SELECT g, CONCAT('ORD-', LPAD(g, 9, '0')), "
		"(g % 100000) / 100, 'PAID', TIMESTAMPADD(MICROSECOND, g * 86000, "
		"'2024-01-16 00:00:00') FROM (SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d "
		"+ 10000 * f.d + 100000 * h.d AS g FROM t_my_digits a, t_my_digits b, "
		"t_my_digits c, t_my_digits e, t_my_digits f, t_my_digits h) s");
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

static void test_source_mysql_million_rows_flat_memory(void **state)
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
	recon_err_init(&err);
	src = open_ok(&side, &w);
	assert_int_equal(recon_source_next(src, &row, &err), RECON_ROW);
	recon_source_close(src);
	before = max_rss_kb();
	t0 = now_s();
	src = open_ok(&side, &w);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW) {
		n++;
		bytes += (long)row->len[RECON_COL_KEY0];
	}
	dt = now_s() - t0;
	recon_source_close(src);
	after = max_rss_kb();
	if (rc < 0)
		fail_msg("%s: %s", err.where, err.msg);
	assert_int_equal(n, BIG_ROWS);
	assert_int_equal(bytes, 13L * BIG_ROWS);
	print_message("mysql: %ld rows in %.2f s (%.0f rows/s); peak RSS %ld KiB before, "
		      "%ld KiB after (+%ld KiB)\n",
		      n, dt, (double)n / dt, before, after, after - before);
	assert_true(after - before < 16 * 1024);
}

static void test_source_mysql_connection_lost_mid_stream(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip(DSN_VAR);
	struct recon_window w = day_window(fx->sh, "2024-01-16");
	const struct recon_raw_row *row;
	struct recon_source *src;
	struct recon_side side;
	struct recon_err err;
	char *id, q[64];
	long n = 0;
	int rc;

	load_big(fx);
	setenv(TEST_VAR, dsn, 1);
	big_side(&side, fx);
	src = open_ok(&side, &w);
	recon_err_init(&err);
	while (n < 1000 && (rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	id = sql_value(fx,
		       "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> "
		       "CONNECTION_ID() AND INFO LIKE '%FROM `" BIG_TABLE "`%'",
		       NULL);
	snprintf(q, sizeof(q), "KILL %s", id);
	free(id);
	sql(fx, q);
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW)
		n++;
	print_message("read %ld rows, then: %s: %s\n", n, err.where, err.msg);
	assert_int_equal(rc, RECON_EUNAVAIL);
	assert_true(n < BIG_ROWS);
	assert_null(strchr(err.msg, '\n'));
	assert_null(strstr(err.msg, "my-owner-pw"));
	assert_int_equal(recon_source_next(src, &row, &err), RECON_DONE);
	recon_source_close(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_mysql_dsn_parse),
	    cmocka_unit_test(test_source_mysql_value_types),
	    cmocka_unit_test(test_source_mysql_status_map),
	    cmocka_unit_test(test_source_mysql_window_pushdown),
	    cmocka_unit_test(test_source_mysql_lookup),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_found_and_missing,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_special_keys, many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_batch_sizes, many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_integer_key, many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_all_unfit, many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_composite_key, many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_after_partial_scan,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_bigint_out_of_range,
				      many_teardown),
	    cmocka_unit_test_teardown(test_source_mysql_lookup_many_int4_out_of_range,
				      many_teardown),
	    cmocka_unit_test(test_source_mysql_select_only_user),
	    cmocka_unit_test(test_source_mysql_socket),
	    cmocka_unit_test(test_source_mysql_password_never_shown),
	    cmocka_unit_test(test_source_mysql_missing_table_or_column),
	    cmocka_unit_test(test_source_mysql_million_rows_flat_memory),
	    cmocka_unit_test(test_source_mysql_connection_lost_mid_stream),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
