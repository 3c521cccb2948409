/*
 * Tests for the server writers, src/writer_postgres.c and src/writer_mysql.c,
 * one suite over the engines of tests/support_db.h against the servers
 * tests/db/servers.sh starts. An engine without its DSN is skipped; with
 * none the binary exits 77 (ctest: Skipped); under CI=true a missing DSN
 * fails. Statements are written once with ? placeholders and turned into $n
 * for a writer whose dialect says so.
 *
 * Both engines: open/close (the writer DSN variable, the local side's
 * fallback, an unset variable), an idempotent insert run twice (affected 1
 * then 0) and many distinct statements, a NOT NULL violation and an unknown
 * column (RECON_ECONFIG: a table the job cannot fill), an unswallowed
 * unique violation and a data error (RECON_EINPUT), a rolled-back
 * transaction, a transaction poisoned by a failed statement (MySQL keeps
 * the rest of it open: it must not commit), a session killed from another
 * (RECON_ERETRY, then a new connection) in and out of a transaction, a
 * frozen server (RECON_ERETRY after the I/O timeout), and a wrong password
 * or a server that is down (RECON_EUNAVAIL, no password in any message).
 *
 * PostgreSQL: a missing grant (RECON_EPERM), a COMMIT failing on a deferred
 * constraint (rolled back: no transaction is left open), a real 40001
 * serialization failure and 40P01 deadlock (RECON_ERETRY, then the retried
 * transaction commits), time parameters into timestamp, timestamptz, text
 * and date columns (named, DST and fixed-offset zones).
 * MySQL: a parameter count that does not match (RECON_EINTERNAL), a real
 * 1205 lock wait timeout and 1213 deadlock, time parameters per column type
 * (DATETIME(3), TIMESTAMP(3), DATETIME, DATE, VARCHAR), and a replay whose
 * row clashes on another unique index than the business key (a failure
 * naming the index, not "already there").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>
#include <mysql.h>

#include "recon_action.h"
#include "recon_dsn.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_time.h"
#include "recon_writer.h"
#include "support_db.h"
#include "support_jobs.h"
#include "support_proxy.h"

/* What the writer tests say differently per engine. */
struct wengine {
	const char *name;	 /* a support_db engine and a writer backend */
	const char *dual;	 /* what a SELECT without a table needs */
	const char *session_sql; /* one row when the session is as the writer sets it up */
	const char *null_msg;	 /* in a NOT NULL violation's message */
	const char *dup_msg;	 /* in a unique violation's message */
	const char *note;	 /* the note column as the admin session reads it */
	const char *note_want;	 /* ... when it holds 微信支付 */
	const char *self_id;	 /* the session's own id */
	const char *kill[2];	 /* around a session id: ends that session */
	const char *alive;	 /* before a session id: counts the sessions of that id */
	const char *auth_msg;	 /* in a wrong password's message */
	const char *leak[2];	 /* around the owner's password: fails quoting it */
	int leak_rc;
	/* the DSN to reach the server through a proxy on port `port` */
	void (*proxied)(const char *dsn, struct support_proxy *p, struct recon_job *job, char *out,
			size_t size);
};

static void pg_proxied(const char *dsn, struct support_proxy *p, struct recon_job *job, char *out,
		       size_t size);
static void my_proxied(const char *dsn, struct support_proxy *p, struct recon_job *job, char *out,
		       size_t size);

static const struct wengine wengines[] = {
    {
	.name = "postgres",
	.dual = "",
	.session_sql = "SELECT 1 WHERE current_setting('TimeZone') = 'Asia/Shanghai' AND "
		       "current_setting('client_encoding') = 'UTF8'",
	.null_msg = "null value",
	.dup_msg = "duplicate key",
	.note = "note",
	.note_want = "微信支付",
	.self_id = "pg_backend_pid()",
	.kill = {"SELECT pg_terminate_backend(", ")"},
	.alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = ",
	.auth_msg = "password authentication failed",
	.leak = {"SELECT '", "'::int"},
	.leak_rc = RECON_EINPUT,
	.proxied = pg_proxied,
    },
    {
	.name = "mysql",
	.dual = " FROM DUAL",
	.session_sql = "SELECT 1 FROM DUAL WHERE @@session.time_zone = '+00:00' AND "
		       "@@character_set_client = 'utf8mb4' AND @@autocommit = 1",
	.null_msg = "cannot be null",
	.dup_msg = "Duplicate entry",
	/* the admin session may read another charset: the bytes */
	.note = "HEX(note)",
	.note_want = "E5BEAEE4BFA1E694AFE4BB98",
	.self_id = "CONNECTION_ID()",
	.kill = {"KILL ", ""},
	.alive = "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = ",
	.auth_msg = "Access denied",
	.leak = {"SELECT * FROM `", "`"}, /* no such table */
	.leak_rc = RECON_ECONFIG,
	.proxied = my_proxied,
    },
};

struct fx {
	const struct support_db_engine *e;
	const struct wengine *we;
	const struct recon_writer_backend *be;
	struct support_db *db;
	const char *dsn;
	char writer_var[64]; /* the variable the jobs name */
	char local_var[64];
};

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	fx->e = support_db_current();
	for (size_t i = 0; i < sizeof(wengines) / sizeof(wengines[0]); i++)
		if (!strcmp(wengines[i].name, fx->e->name))
			fx->we = &wengines[i];
	fx->be = recon_writer_find(fx->e->name);
	fx->dsn = support_db_env(fx->e->dsn_var);
	fx->db = support_db_connect(fx->e, NULL);
	snprintf(fx->writer_var, sizeof(fx->writer_var), "%s_WRITER_DSN", fx->e->env_prefix);
	snprintf(fx->local_var, sizeof(fx->local_var), "%s_LOCAL_DSN", fx->e->env_prefix);
	*state = fx;
	return fx->we && fx->be && fx->db ? 0 : -1;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;

	support_db_close(fx->db);
	free(fx);
	return 0;
}

static bool is(const struct fx *fx, const char *engine)
{
	return !strcmp(fx->e->name, engine);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* The formatted statement into buf. */
static const char *sqlf(char *buf, size_t size, const char *fmt, ...) RECON_PRINTF(3, 4);
static const char *sqlf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return buf;
}

/* "t_w<tag>_<what>": each engine its own tables. */
static const char *tname(const struct fx *fx, const char *what, char *buf, size_t size)
{
	return sqlf(buf, size, "t_w%s_%s", fx->e->tag, what);
}

/*
 * A job (support_db_job: "support_db", columns k, cents, st, at) whose local
 * side is the engine's table `table` (time column `time_col`, NULL: at) in
 * zone `zone` (NULL: Asia/Shanghai), reading through the engine's local
 * variable and writing through its writer variable.
 */
static struct recon_job *job_new(struct fx *fx, const char *table, const char *time_col,
				 const char *zone)
{
	char more[160];
	struct recon_job *job;
	struct recon_side *lo;
	struct recon_err err;

	snprintf(more, sizeof(more), "\"actions\": {\"enabled\": true, \"writer_dsn_env\": \"%s\"}",
		 fx->writer_var);
	job = support_db_job(fx->e, table, fx->local_var, more);
	lo = &job->local;
	if (time_col)
		support_side_col(lo, RECON_COL_TIME, time_col);
	if (zone) {
		recon_tz_free(lo->tz);
		free(lo->tz_name);
		lo->tz_name = recon_xstrdup(zone);
		recon_err_init(&err);
		if (recon_tz_load(&lo->tz, zone, &err) < 0)
			fail_msg("zone %s: %s", zone, err.msg);
	}
	return job;
}

static int wopen_rc(struct fx *fx, const struct recon_job *job, struct recon_writer **w,
		    struct recon_err *err)
{
	recon_err_init(err);
	*w = NULL;
	return recon_writer_open(w, fx->be, job, err);
}

static struct recon_writer *wopen(struct fx *fx, const struct recon_job *job)
{
	struct recon_writer *w;
	struct recon_err err;

	if (wopen_rc(fx, job, &w, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_non_null(w);
	return w;
}

/* Runs q (? placeholders, made $n for the dialect); *affected and err receive what exec said. */
static int wexec(struct recon_writer *w, const char *q, const char *const *params, int n,
		 int64_t *affected, struct recon_err *err)
{
	char sql[1024], *o = sql;
	int64_t dummy;
	int i = 0;

	for (const char *p = q; *p && o < sql + sizeof(sql) - 8; p++)
		if (*p == '?' && w->backend->placeholder == RECON_WRITER_PH_DOLLAR)
			o += sprintf(o, "$%d", ++i);
		else
			*o++ = *p;
	*o = '\0';
	recon_err_init(err);
	return recon_writer_exec(w, sql, params, n, affected ? affected : &dummy, err);
}

static void wexec_ok(struct recon_writer *w, const char *q, const char *const *params, int n,
		     int64_t *affected)
{
	struct recon_err err;

	if (wexec(w, q, params, n, affected, &err) < 0)
		fail_msg("exec %s: %s: %s", q, err.where, err.msg);
}

static void begin_ok(struct recon_writer *w)
{
	struct recon_err err;

	recon_err_init(&err);
	if (recon_writer_begin(w, &err) < 0)
		fail_msg("begin: %s: %s", err.where, err.msg);
}

static void commit_ok(struct recon_writer *w)
{
	struct recon_err err;

	recon_err_init(&err);
	if (recon_writer_commit(w, &err) < 0)
		fail_msg("commit: %s: %s", err.where, err.msg);
}

static int commit_rc(struct recon_writer *w, struct recon_err *err)
{
	recon_err_init(err);
	return recon_writer_commit(w, err);
}

/* The number the formatted query answers. */
static long count(struct fx *fx, const char *fmt, ...) RECON_PRINTF(2, 3);
static long count(struct fx *fx, const char *fmt, ...)
{
	char q[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	return support_db_long(fx->db, q);
}

static void assert_no_secret(const struct recon_err *err, const char *pw)
{
	if (*pw && (strstr(err->msg, pw) || strstr(err->where, pw)))
		fail_msg("password in the message: %s: %s", err->where, err->msg);
}

/* The DSN with its password replaced by `pw` (URI form: scheme://user:pw@host...). */
static void dsn_with_password(const char *dsn, const char *pw, char *out, size_t size)
{
	const char *s = strstr(dsn, "://"), *colon, *at;

	assert_non_null(s);
	s += 3;
	colon = strchr(s, ':');
	at = strchr(s, '@');
	assert_true(colon && at && colon < at);
	snprintf(out, size, "%.*s%s%s", (int)(colon + 1 - dsn), dsn, pw, at);
}

/* Parses text (in zone tz when it has no suffix) to an instant. */
static int64_t parse_in(const char *s, const struct recon_tz *tz)
{
	struct recon_err err;
	int64_t t = 0;

	recon_err_init(&err);
	if (recon_time_parse(s, strlen(s), tz, &t, &err) < 0)
		fail_msg("parse '%s': %s", s, err.msg);
	return t;
}

/* ---- both engines ---------------------------------------------------------------- */

static void test_writer_db_open_close(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_w_open", NULL, NULL);
	struct recon_writer *w;
	struct recon_err err;
	char q[128];
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	unsetenv(fx->local_var);
	w = wopen(fx, job);
	assert_ptr_equal(w->backend, fx->be);
	assert_string_equal(w->backend->name, fx->e->name);
	assert_true(w->backend->flags & RECON_WRITER_DSN);
	assert_ptr_equal(w->job, job);
	/* a statement with a result reports its row count */
	wexec_ok(w, sqlf(q, sizeof(q), "SELECT 1%s WHERE ? = 'x'", fx->we->dual),
		 (const char *const[]){"x"}, 1, &n);
	assert_int_equal(n, 1);
	/* the session: the writer's zone, character set, autocommit */
	wexec_ok(w, fx->we->session_sql, NULL, 0, &n);
	assert_int_equal(n, 1);
	/* a parameter count that does not match is refused before the client library reads
	 * past the array */
	if (is(fx, "mysql"))
		assert_int_equal(wexec(w, "SELECT ? FROM DUAL", NULL, 0, &n, &err),
				 RECON_EINTERNAL);
	recon_writer_rollback(w); /* no-op outside a transaction */
	recon_writer_close(w);
	fx->be->close(NULL);
	recon_writer_close(NULL);

	/* no writer_dsn_env: the local side's variable */
	free(job->actions.writer_dsn_env);
	job->actions.writer_dsn_env = NULL;
	unsetenv(fx->writer_var);
	setenv(fx->local_var, fx->dsn, 1);
	recon_writer_close(wopen(fx, job));

	/* unset or empty: RECON_ECONFIG naming the variable */
	job->actions.writer_dsn_env = recon_xstrdup(fx->writer_var);
	assert_int_equal(wopen_rc(fx, job, &w, &err), RECON_ECONFIG);
	assert_null(w);
	assert_non_null(strstr(err.msg, fx->writer_var));
	setenv(fx->writer_var, "", 1);
	assert_int_equal(wopen_rc(fx, job, &w, &err), RECON_ECONFIG);
	assert_null(w);
	recon_job_free(job);
}

static void test_writer_db_idempotent_insert(void **state)
{
	struct fx *fx = *state;
	static const char *const cols[] = {"k", "v", "note"};
	char t[64], q[256], ins[256];
	struct recon_job *job = job_new(fx, tname(fx, "idem", t, sizeof(t)), NULL, NULL);
	const char *p[] = {"K1", "100", NULL};
	struct recon_writer *w;
	struct recon_buf b;
	char *v;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_execf(fx->db, "DROP TABLE IF EXISTS %s", t);
	support_db_execf(fx->db,
			 "CREATE TABLE %s (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL, note "
			 "VARCHAR(64))%s",
			 t, fx->e->table_options);
	w = wopen(fx, job);
	/* the dialect's insert-unless-there: ON CONFLICT (k) DO NOTHING, ON DUPLICATE KEY */
	recon_buf_init(&b);
	recon_writer_add_insert(w, &b, t, cols, 3, cols, 1);
	snprintf(ins, sizeof(ins), "%s", b.s);
	recon_buf_release(&b);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 1);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	p[1] = "999"; /* same key, other values: still "already there" */
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 1);
	v = support_db_value(fx->db, sqlf(q, sizeof(q), "SELECT v FROM %s", t), NULL);
	assert_string_equal(v, "100");
	free(v);
	/* a NULL parameter is SQL NULL; UTF-8 text arrives intact */
	v = support_db_value(fx->db, sqlf(q, sizeof(q), "SELECT note FROM %s", t), NULL);
	assert_string_equal(v, "(null)");
	free(v);
	wexec_ok(w, sqlf(q, sizeof(q), "UPDATE %s SET note = ? WHERE k = ?", t),
		 (const char *const[]){"微信支付", "K1"}, 2, &n);
	assert_int_equal(n, 1);
	v = support_db_value(fx->db, sqlf(q, sizeof(q), "SELECT %s FROM %s", fx->we->note, t),
			     NULL);
	assert_string_equal(v, fx->we->note_want);
	free(v);
	/* many distinct statements: a statement cache evicts and stays correct */
	for (int i = 0; i < 80; i++) {
		char k[16];
		recon_buf_init(&b);
		recon_buf_addf(&b, "INSERT INTO %s (k, v) VALUES (?, %d)", t, i % 40);
		recon_writer_add_upsert(w, &b, cols, 1);
		snprintf(k, sizeof(k), "C%d", i % 40);
		wexec_ok(w, b.s, (const char *const[]){k}, 1, &n);
		recon_buf_release(&b);
		assert_int_equal(n, i < 40 ? 1 : 0);
	}
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 41);
	recon_writer_close(w);
	support_db_execf(fx->db, "DROP TABLE %s", t);
	recon_job_free(job);
}

static void test_writer_db_constraint_violations(void **state)
{
	struct fx *fx = *state;
	static const char *const cols[] = {"k", "v", "ref"};
	char t[64], q[256], ins[256], plain[256], where[64];
	struct recon_job *job = job_new(fx, tname(fx, "nn", t, sizeof(t)), NULL, NULL);
	struct recon_writer *w;
	struct recon_err err;
	struct recon_buf b;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_execf(fx->db, "DROP TABLE IF EXISTS %s", t);
	support_db_execf(fx->db,
			 "CREATE TABLE %s (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL, ref "
			 "VARCHAR(64) UNIQUE)%s",
			 t, fx->e->table_options);
	w = wopen(fx, job);
	recon_buf_init(&b);
	recon_writer_add_insert(w, &b, t, cols, 3, cols, 1);
	snprintf(ins, sizeof(ins), "%s", b.s);
	recon_buf_release(&b);
	snprintf(plain, sizeof(plain), "INSERT INTO %s (k, v, ref) VALUES (?, ?, ?)", t);
	/* NOT NULL: a table the job cannot fill (exit 78), not bad input */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K1", NULL, "r1"}, 3, &n, &err),
			 RECON_ECONFIG);
	assert_non_null(strstr(err.where, sqlf(where, sizeof(where), "%s ", fx->e->name)));
	assert_non_null(strstr(err.where, "/recon_test"));
	assert_non_null(strstr(err.msg, fx->we->null_msg));
	assert_null(strchr(err.msg, '\n'));
	/* a unique key other than the conflict target is not swallowed (ON DUPLICATE KEY
	   swallows every unique key: without it) */
	wexec_ok(w, ins, (const char *const[]){"K1", "1", "r1"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(wexec(w, fx->be->upsert == RECON_WRITER_UPSERT_DUPLICATE_KEY ? plain : ins,
			       (const char *const[]){"K2", "2", "r1"}, 3, &n, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, fx->we->dup_msg));
	/* a data error (MySQL: strict mode) */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K3", "12x", "r3"}, 3, &n, &err),
			 RECON_EINPUT);
	/* the connection is fine afterwards */
	wexec_ok(w, ins, (const char *const[]){"K2", "2", "r2"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 2);
	if (is(fx, "postgres")) {
		/* a missing grant: permission denied (exit 77) */
		support_db_exec(fx->db, "DROP ROLE IF EXISTS recon_wpg_nogrant");
		support_db_exec(fx->db, "CREATE ROLE recon_wpg_nogrant");
		wexec_ok(w, "SET ROLE recon_wpg_nogrant", NULL, 0, &n);
		assert_int_equal(wexec(w, ins, (const char *const[]){"K4", "4", "r4"}, 3, &n, &err),
				 RECON_EPERM);
		assert_int_equal(recon_err_exit_code(err.code), 77);
		assert_non_null(strstr(err.msg, "permission denied"));
		wexec_ok(w, "RESET ROLE", NULL, 0, &n);
		support_db_exec(fx->db, "DROP ROLE recon_wpg_nogrant");
	}
	/* an unknown column: the job and the table disagree */
	assert_int_equal(wexec(w, sqlf(q, sizeof(q), "INSERT INTO %s (k, nope) VALUES (?, ?)", t),
			       (const char *const[]){"K5", "5"}, 2, &n, &err),
			 RECON_ECONFIG);
	recon_writer_close(w);
	support_db_execf(fx->db, "DROP TABLE %s", t);
	recon_job_free(job);
}

static void test_writer_db_transactions(void **state)
{
	struct fx *fx = *state;
	char t[64], ins[128];
	struct recon_job *job = job_new(fx, tname(fx, "tx", t, sizeof(t)), NULL, NULL);
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	snprintf(ins, sizeof(ins), "INSERT INTO %s (k, v) VALUES (?, ?)", t);
	support_db_execf(fx->db, "DROP TABLE IF EXISTS %s", t);
	support_db_execf(fx->db, "CREATE TABLE %s (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL)%s",
			 t, fx->e->table_options);
	w = wopen(fx, job);

	/* rollback leaves nothing */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	recon_writer_rollback(w);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 0);

	/* commit keeps both; nothing is visible before */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 0);
	commit_ok(w);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 2);

	/*
	 * A failed statement poisons the transaction: commit reports it and keeps
	 * nothing. MySQL itself would keep the transaction open and commit "C".
	 */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"C", "3"}, 2, &n);
	assert_int_equal(wexec(w, ins, (const char *const[]){"D", NULL}, 2, &n, &err),
			 RECON_ECONFIG);
	assert_int_equal(wexec(w, ins, (const char *const[]){"E", "5"}, 2, &n, &err),
			 RECON_ECONFIG);
	assert_int_equal(commit_rc(w, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, fx->we->null_msg));
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 2);

	/* misuse is reported, not executed */
	assert_int_equal(commit_rc(w, &err), RECON_EINTERNAL);
	begin_ok(w);
	recon_err_init(&err);
	assert_int_equal(recon_writer_begin(w, &err), RECON_EINTERNAL);
	recon_writer_rollback(w);
	recon_writer_rollback(w);

	/* autocommit again outside begin/commit */
	wexec_ok(w, ins, (const char *const[]){"F", "6"}, 2, &n);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s", t), 3);
	recon_writer_close(w);
	support_db_execf(fx->db, "DROP TABLE %s", t);
	recon_job_free(job);
}

/* The writer's session id, recorded through it (autocommit) in table t. */
static long writer_id(struct fx *fx, struct recon_writer *w, const char *t)
{
	char q[160];
	int64_t n;

	wexec_ok(w, sqlf(q, sizeof(q), "INSERT INTO %s (cid) VALUES (%s)", t, fx->we->self_id),
		 NULL, 0, &n);
	return count(fx, "SELECT cid FROM %s ORDER BY id DESC LIMIT 1", t);
}

/* Ends session id from the admin session, then waits until it is gone. */
static void kill_id(struct fx *fx, long id)
{
	char q[160];

	support_db_execf(fx->db, "%s%ld%s", fx->we->kill[0], id, fx->we->kill[1]);
	snprintf(q, sizeof(q), "%s%ld", fx->we->alive, id);
	for (int i = 0; i < 100 && support_db_long(fx->db, q) > 0; i++)
		sleep_ms(50);
}

static void test_writer_db_killed_connection_reconnects(void **state)
{
	struct fx *fx = *state;
	char t[64], ins[160], lost[128], q[160];
	struct recon_job *job = job_new(fx, tname(fx, "kill", t, sizeof(t)), NULL, NULL);
	struct recon_writer *w;
	struct recon_err err;
	long old, now;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	snprintf(ins, sizeof(ins), "INSERT INTO %s (cid) VALUES (%s)", t, fx->we->self_id);
	snprintf(lost, sizeof(lost), "INSERT INTO %s (note) VALUES ('lost')", t);
	support_db_execf(fx->db, "DROP TABLE IF EXISTS %s", t);
	support_db_execf(fx->db, "CREATE TABLE %s (%s, cid BIGINT, note VARCHAR(16))%s", t,
			 fx->e->serial_key, fx->e->table_options);
	w = wopen(fx, job);

	/* outside a transaction: one RECON_ERETRY, then a new session */
	old = writer_id(fx, w, t);
	kill_id(fx, old);
	assert_int_equal(wexec(w, ins, NULL, 0, &n, &err), RECON_ERETRY);
	assert_no_secret(&err, fx->e->owner_password);
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(n, 1);
	now = count(fx, "SELECT cid FROM %s ORDER BY id DESC LIMIT 1", t);
	assert_true(now != old);
	/* the new session has the same settings */
	wexec_ok(w, fx->we->session_sql, NULL, 0, &n);
	assert_int_equal(n, 1);

	/* inside a transaction: it stays failed until rolled back, then begin reconnects */
	old = writer_id(fx, w, t);
	begin_ok(w);
	wexec_ok(w, lost, NULL, 0, &n);
	kill_id(fx, old);
	assert_int_equal(wexec(w, lost, NULL, 0, &n, &err), RECON_ERETRY);
	assert_int_equal(wexec(w, lost, NULL, 0, &n, &err), RECON_ERETRY);
	assert_int_equal(commit_rc(w, &err), RECON_ERETRY);
	recon_writer_rollback(w);
	begin_ok(w);
	wexec_ok(w, sqlf(q, sizeof(q), "INSERT INTO %s (note) VALUES ('kept')", t), NULL, 0, &n);
	commit_ok(w);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s WHERE note = 'lost'", t), 0);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s WHERE note = 'kept'", t), 1);

	/* a commit on a dead connection is RECON_ERETRY too, and leaves no transaction */
	old = writer_id(fx, w, t);
	begin_ok(w);
	wexec_ok(w, sqlf(q, sizeof(q), "INSERT INTO %s (note) VALUES ('lost2')", t), NULL, 0, &n);
	kill_id(fx, old);
	assert_int_equal(commit_rc(w, &err), RECON_ERETRY);
	assert_false(w->in_tx);
	recon_writer_rollback(w);
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(count(fx, "SELECT count(*) FROM %s WHERE note = 'lost2'", t), 0);
	recon_writer_close(w);
	support_db_execf(fx->db, "DROP TABLE %s", t);
	recon_job_free(job);
}

/* PostgreSQL through the proxy: a keyword DSN, and actions.timeout. */
static void pg_proxied(const char *dsn, struct support_proxy *p, struct recon_job *job, char *out,
		       size_t size)
{
	support_db_pg_proxy(p, dsn, out, size);
	job->actions.timeout_ms = 1000;
}

/* MySQL through the proxy: the DSN's read_timeout. */
static void my_proxied(const char *dsn, struct support_proxy *p, struct recon_job *job, char *out,
		       size_t size)
{
	struct recon_dsn_mysql d;
	struct recon_err err;

	(void)job;
	recon_dsn_mysql_init(&d);
	recon_err_init(&err);
	assert_int_equal(recon_dsn_mysql_parse(dsn, "dsn", &d, &err), 0);
	support_proxy_start(p, d.host ? d.host : "127.0.0.1", d.port ? d.port : 3306);
	snprintf(out, size, "mysql://%s:%s@127.0.0.1:%u/%s?read_timeout=1", d.user,
		 d.password ? d.password : "", p->port, d.db);
	recon_dsn_mysql_release(&d);
}

/*
 * Issue 12 #10: a writer whose server freezes (a proxy that stops forwarding,
 * as SIGSTOP would) fails the call after the I/O timeout as a lost connection
 * (RECON_ERETRY: retried, then the circuit breaker), instead of waiting
 * forever with the job's lock held.
 */
static void test_writer_db_frozen_server_times_out(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_w_frozen", NULL, NULL);
	struct support_proxy p;
	struct recon_writer *w;
	struct recon_err err;
	struct timespec t0, t1;
	char wdsn[512], q[64];
	int64_t n = -1;
	double took;

	fx->we->proxied(fx->dsn, &p, job, wdsn, sizeof(wdsn));
	setenv(fx->writer_var, wdsn, 1);
	w = wopen(fx, job);
	wexec_ok(w, sqlf(q, sizeof(q), "SELECT 1%s", fx->we->dual), NULL, 0, &n);
	p.frozen = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(
	    wexec(w, sqlf(q, sizeof(q), "SELECT 2%s", fx->we->dual), NULL, 0, &n, &err),
	    RECON_ERETRY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (took > 8)
		fail_msg("the frozen server held the call for %.1f s", took);
	if (is(fx, "postgres"))
		assert_non_null(strstr(err.msg, "no answer from the server in time"));
	assert_no_secret(&err, fx->e->owner_password);
	recon_writer_close(w);
	support_proxy_stop(&p);
	setenv(fx->writer_var, fx->dsn, 1);
	recon_job_free(job);
}

static void test_writer_db_unavailable_without_password(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_w_pw", NULL, NULL);
	struct recon_writer *w = NULL;
	struct recon_err err;
	char bad[512], q[200];
	const char *p;

	/* a wrong password */
	dsn_with_password(fx->dsn, "wrong-Secret-pw", bad, sizeof(bad));
	setenv(fx->writer_var, bad, 1);
	assert_int_equal(wopen_rc(fx, job, &w, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_null(strstr(err.msg, "://"));
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, fx->we->auth_msg));

	/* a server that is down: port 1 refuses */
	p = strrchr(bad, '@');
	assert_non_null(p);
	snprintf(bad + (p - bad), sizeof(bad) - (size_t)(p - bad), "@127.0.0.1:1/recon_test");
	setenv(fx->writer_var, bad, 1);
	assert_int_equal(wopen_rc(fx, job, &w, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_non_null(strstr(err.msg, "cannot connect"));

	/* a password that shows up in a server message is scrubbed too */
	setenv(fx->writer_var, fx->dsn, 1);
	w = wopen(fx, job);
	if (strstr(fx->dsn, fx->e->owner_password)) {
		snprintf(q, sizeof(q), "%s%s%s", fx->we->leak[0], fx->e->owner_password,
			 fx->we->leak[1]);
		assert_int_equal(wexec(w, q, NULL, 0, NULL, &err), fx->we->leak_rc);
		assert_no_secret(&err, fx->e->owner_password);
		assert_non_null(strstr(err.msg, "***"));
	}
	recon_writer_close(w);
	recon_job_free(job);
}

/* ---- PostgreSQL ------------------------------------------------------------------ */

/*
 * A COMMIT the server refuses (a deferred unique constraint checked at commit
 * time) fails the commit, keeps nothing, and leaves no transaction open: the
 * next begin works, a second commit is misuse.
 */
static void test_writer_db_failed_commit_rolls_back(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wpg_defer", NULL, NULL);
	static const char ins[] = "INSERT INTO t_wpg_defer (k, v) VALUES (?, ?)";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wpg_defer");
	support_db_exec(fx->db, "CREATE TABLE t_wpg_defer (k text PRIMARY KEY, v bigint NOT NULL, "
				"UNIQUE (v) DEFERRABLE INITIALLY DEFERRED)");
	w = wopen(fx, job);
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "1"}, 2, &n); /* checked at COMMIT */
	assert_int_equal(commit_rc(w, &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "duplicate key"));
	assert_false(w->in_tx);
	assert_int_equal(commit_rc(w, &err), RECON_EINTERNAL);
	assert_int_equal(support_db_long(fx->db, "SELECT count(*) FROM t_wpg_defer"), 0);
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"C", "3"}, 2, &n);
	commit_ok(w);
	assert_int_equal(support_db_long(fx->db, "SELECT count(*) FROM t_wpg_defer"), 1);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wpg_defer");
	recon_job_free(job);
}

static void test_writer_db_pg_serialization_failure_retry(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wpg_ser", NULL, NULL);
	static const char upd[] = "UPDATE t_wpg_ser SET v = v + 10 WHERE k = $1";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wpg_ser");
	support_db_exec(fx->db, "CREATE TABLE t_wpg_ser (k text PRIMARY KEY, v bigint NOT NULL)");
	support_db_exec(fx->db, "INSERT INTO t_wpg_ser VALUES ('a', 0)");
	w = wopen(fx, job);

	begin_ok(w);
	wexec_ok(w, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", NULL, 0, &n);
	wexec_ok(w, "SELECT v FROM t_wpg_ser WHERE k = $1", (const char *const[]){"a"}, 1, &n);
	assert_int_equal(n, 1);
	/* a concurrent committed update after the snapshot */
	support_db_exec(fx->db, "UPDATE t_wpg_ser SET v = v + 1 WHERE k = 'a'");
	assert_int_equal(wexec(w, upd, (const char *const[]){"a"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "could not serialize"));
	assert_int_equal(commit_rc(w, &err), RECON_ERETRY);

	/* the retried transaction goes through */
	begin_ok(w);
	wexec_ok(w, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", NULL, 0, &n);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	assert_int_equal(n, 1);
	commit_ok(w);
	assert_int_equal(support_db_long(fx->db, "SELECT v FROM t_wpg_ser"), 11);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wpg_ser");
	recon_job_free(job);
}

static void test_writer_db_pg_deadlock_retry(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wpg_dl", NULL, NULL);
	static const char upd[] = "UPDATE t_wpg_dl SET v = v + 10 WHERE k = $1";
	PGconn *admin = support_db_handle(fx->db);
	struct recon_writer *w;
	struct recon_err err;
	PGresult *r;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wpg_dl");
	support_db_exec(fx->db, "CREATE TABLE t_wpg_dl (k text PRIMARY KEY, v bigint NOT NULL)");
	support_db_exec(fx->db, "INSERT INTO t_wpg_dl VALUES ('a', 0), ('b', 0)");
	w = wopen(fx, job);

	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	/* the admin session holds b, waits for a, and never runs the deadlock check first */
	support_db_exec(fx->db, "SET deadlock_timeout = '20s'");
	support_db_exec(fx->db, "BEGIN");
	support_db_exec(fx->db, "UPDATE t_wpg_dl SET v = v + 1 WHERE k = 'b'");
	assert_true(PQsendQuery(admin, "UPDATE t_wpg_dl SET v = v + 1 WHERE k = 'a'"));
	sleep_ms(200);
	assert_int_equal(wexec(w, upd, (const char *const[]){"b"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "deadlock"));
	recon_writer_rollback(w);
	/* the admin's update went through once the writer's transaction was gone */
	while ((r = PQgetResult(admin)) != NULL) {
		assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
		PQclear(r);
	}
	support_db_exec(fx->db, "COMMIT");
	support_db_exec(fx->db, "RESET deadlock_timeout");

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	commit_ok(w);
	assert_int_equal(support_db_long(fx->db, "SELECT sum(v) FROM t_wpg_dl"), 22);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wpg_dl");
	recon_job_free(job);
}

/* wrap with its "%s" replaced by ph (wrap is not a literal format). */
static void splice(const char *wrap, const char *ph, char *out, size_t size)
{
	const char *at = strstr(wrap, "%s");

	assert_non_null(at);
	snprintf(out, size, "%.*s%s%s", (int)(at - wrap), wrap, ph, at + 2);
}

/* Inserts instant t through time_param into column `col` of t_wpg_time under key k. */
static void pg_insert_time(struct recon_writer *w, const char *col, const char *k, int64_t t)
{
	struct recon_err err;
	const char *wrap = NULL;
	char val[64], ph[32], q[256];
	int64_t n = -1;

	recon_err_init(&err);
	if (recon_writer_time_param(w, t, val, sizeof(val), &wrap, &err) < 0)
		fail_msg("time_param: %s", err.msg);
	assert_non_null(wrap);
	splice(wrap, "$2", ph, sizeof(ph));
	snprintf(q, sizeof(q), "INSERT INTO t_wpg_time (k, %s) VALUES ($1, %s)", col, ph);
	wexec_ok(w, q, (const char *const[]){k, val}, 2, &n);
	assert_int_equal(n, 1);
}

/* The admin's text of q, parsed in zone tz, is instant t. */
static void pg_holds(struct fx *fx, const char *q, const struct recon_tz *tz, int64_t t,
		     const char *what, const char *zone, const char *instant)
{
	char *v = support_db_value(fx->db, q, NULL);

	if (parse_in(v, tz) != t)
		fail_msg("%s: %s holds '%s' for %s", zone, what, v, instant);
	free(v);
}

static void pg_roundtrip_zone(struct fx *fx, const char *zone, const char *instant)
{
	struct recon_job *job = job_new(fx, "t_wpg_time", "ts", zone);
	const struct recon_tz *tz = job->local.tz;
	int64_t t = parse_in(instant, NULL);
	struct recon_writer *w;
	char day[16], *v;

	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wpg_time");
	support_db_exec(fx->db, "CREATE TABLE t_wpg_time (k text PRIMARY KEY, ts timestamp(3), "
				"tstz timestamptz, txt text, d date)");
	w = wopen(fx, job);
	pg_insert_time(w, "ts", "ts", t);
	pg_insert_time(w, "tstz", "tstz", t);
	pg_insert_time(w, "txt", "txt", t);
	pg_insert_time(w, "d", "d", t);
	recon_writer_close(w);

	/* timestamp: the wall clock in the local zone */
	pg_holds(fx,
		 "SELECT to_char(ts, 'YYYY-MM-DD HH24:MI:SS.MS') FROM t_wpg_time WHERE k = 'ts'",
		 tz, t, "timestamp", zone, instant);
	/* timestamptz: the instant itself */
	pg_holds(fx,
		 "SELECT to_char(tstz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') "
		 "FROM t_wpg_time WHERE k = 'tstz'",
		 NULL, t, "timestamptz (UTC)", zone, instant);
	/* text: local wall clock with its offset */
	pg_holds(fx, "SELECT txt FROM t_wpg_time WHERE k = 'txt'", tz, t, "text", zone, instant);
	/* date: the local day */
	v = support_db_value(fx->db, "SELECT d::text FROM t_wpg_time WHERE k = 'd'", NULL);
	recon_date_format(recon_tz_day_of(tz, t), day, sizeof(day));
	assert_string_equal(v, day);
	free(v);
	support_db_exec(fx->db, "DROP TABLE t_wpg_time");
	recon_job_free(job);
}

static void test_writer_db_pg_time_param_roundtrip(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wpg_time", NULL, NULL);
	struct recon_writer *w;
	struct recon_err err;
	const char *wrap = NULL;
	char buf[64];

	setenv(fx->writer_var, fx->dsn, 1);
	w = wopen(fx, job);
	recon_err_init(&err);
	assert_int_equal(recon_writer_time_param(w, parse_in("2024-01-16T01:30:11Z", NULL), buf,
						 sizeof(buf), &wrap, &err),
			 0);
	assert_string_equal(buf, "2024-01-16T01:30:11.000Z");
	assert_string_equal(wrap, "%s::timestamptz");
	recon_writer_close(w);
	recon_job_free(job);

	/* 16 Jan 09:30 in Shanghai, the day before in UTC */
	pg_roundtrip_zone(fx, "Asia/Shanghai", "2024-01-15T17:30:11.123Z");
	pg_roundtrip_zone(fx, "Asia/Shanghai", "2024-01-16T01:30:11.000Z");
	/* summer time */
	pg_roundtrip_zone(fx, "America/New_York", "2024-07-04T03:59:59.999Z");
	/* fixed offsets, which PostgreSQL would read as POSIX (sign inverted) */
	pg_roundtrip_zone(fx, "+08:00", "2024-01-15T17:30:11.123Z");
	pg_roundtrip_zone(fx, "-03:30", "2024-01-16T02:00:00.500Z");
	pg_roundtrip_zone(fx, "UTC", "2024-02-29T23:59:59.001Z");
}

/* ---- MySQL ----------------------------------------------------------------------- */

static void test_writer_db_my_lock_wait_timeout_retry(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wmy_lw", NULL, NULL);
	static const char upd[] = "UPDATE t_wmy_lw SET v = v + 10 WHERE k = ?";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_lw");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_lw (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT "
				"NULL) ENGINE=InnoDB");
	support_db_exec(fx->db, "INSERT INTO t_wmy_lw VALUES ('a', 0), ('b', 0)");
	w = wopen(fx, job);
	wexec_ok(w, "SET SESSION innodb_lock_wait_timeout = 1", NULL, 0, &n);

	/* the admin holds a */
	support_db_exec(fx->db, "START TRANSACTION");
	support_db_exec(fx->db, "UPDATE t_wmy_lw SET v = v + 1 WHERE k = 'a'");
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	assert_int_equal(wexec(w, upd, (const char *const[]){"a"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "Lock wait timeout"));
	/* MySQL left the transaction open with b updated: commit must not keep it */
	assert_int_equal(commit_rc(w, &err), RECON_ERETRY);
	support_db_exec(fx->db, "COMMIT");
	assert_int_equal(support_db_long(fx->db, "SELECT v FROM t_wmy_lw WHERE k = 'b'"), 0);

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	commit_ok(w);
	assert_int_equal(support_db_long(fx->db, "SELECT sum(v) FROM t_wmy_lw"), 21);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wmy_lw");
	recon_job_free(job);
}

static void test_writer_db_my_deadlock_retry(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wmy_dl", NULL, NULL);
	static const char upd[] = "UPDATE t_wmy_dl SET v = v + 10 WHERE k = ?";
	static const char admin_a[] = "UPDATE t_wmy_dl SET v = v + 1 WHERE k = 'a'";
	MYSQL *admin = support_db_handle(fx->db);
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_dl");
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_dl_heavy");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_dl (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT "
				"NULL) ENGINE=InnoDB");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_dl_heavy (id INT PRIMARY KEY) ENGINE=InnoDB");
	support_db_exec(fx->db, "INSERT INTO t_wmy_dl VALUES ('a', 0), ('b', 0)");
	w = wopen(fx, job);

	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	/* the admin transaction is the heavier one: InnoDB picks the writer as the victim */
	support_db_exec(fx->db, "START TRANSACTION");
	support_db_exec(fx->db, "INSERT INTO t_wmy_dl_heavy SELECT seq FROM seq_1_to_500");
	support_db_exec(fx->db, "UPDATE t_wmy_dl SET v = v + 1 WHERE k = 'b'");
	if (mysql_send_query(admin, admin_a, (unsigned long)strlen(admin_a)))
		fail_msg("send: %s", mysql_error(admin));
	sleep_ms(300);
	assert_int_equal(wexec(w, upd, (const char *const[]){"b"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "Deadlock"));
	recon_writer_rollback(w);
	if (mysql_read_query_result(admin))
		fail_msg("admin update: %s", mysql_error(admin));
	support_db_exec(fx->db, "COMMIT");

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	commit_ok(w);
	assert_int_equal(support_db_long(fx->db, "SELECT sum(v) FROM t_wmy_dl"), 22);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wmy_dl");
	support_db_exec(fx->db, "DROP TABLE t_wmy_dl_heavy");
	recon_job_free(job);
}

/*
 * Writes instant t into column col of t_wmy_time through a writer whose local
 * time column is col; returns what the column holds as text (the admin
 * session is UTC); caller frees.
 */
static char *my_write_read(struct fx *fx, const char *col, const char *zone, int64_t t)
{
	struct recon_job *job = job_new(fx, "t_wmy_time", col, zone);
	struct recon_writer *w = wopen(fx, job);
	struct recon_err err;
	const char *wrap = NULL;
	char val[64], q[256];
	int64_t n = -1;

	recon_err_init(&err);
	if (recon_writer_time_param(w, t, val, sizeof(val), &wrap, &err) < 0)
		fail_msg("time_param %s: %s", col, err.msg);
	assert_string_equal(wrap, "%s");
	snprintf(q, sizeof(q), "INSERT INTO t_wmy_time (k, %s) VALUES (?, ?)", col);
	wexec_ok(w, q, (const char *const[]){col, val}, 2, &n);
	assert_int_equal(n, 1);
	recon_writer_close(w);
	recon_job_free(job);
	snprintf(q, sizeof(q), "SELECT %s FROM t_wmy_time WHERE k = '%s'", col, col);
	return support_db_value(fx->db, q, NULL);
}

/* Column col written in zone `zone` holds instant want read in tz. */
static void my_holds(struct fx *fx, const char *col, const char *zone, int64_t t,
		     const struct recon_tz *tz, int64_t want, const char *what, const char *instant)
{
	char *v = my_write_read(fx, col, zone, t);

	if (parse_in(v, tz) != want)
		fail_msg("%s: %s holds '%s' for %s", zone, what, v, instant);
	free(v);
}

static void my_roundtrip_zone(struct fx *fx, const char *zone, const char *instant)
{
	struct recon_tz *tz = NULL;
	struct recon_err err;
	int64_t t = parse_in(instant, NULL);
	char day[16], *v;

	recon_err_init(&err);
	assert_int_equal(recon_tz_load(&tz, zone, &err), 0);
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_time");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_time (k VARCHAR(16) PRIMARY KEY, dt3 "
				"DATETIME(3), ts3 TIMESTAMP(3) NULL, dt0 DATETIME, ts0 TIMESTAMP "
				"NULL, d DATE, txt VARCHAR(40)) ENGINE=InnoDB");
	/* DATETIME: the wall clock in the local zone */
	my_holds(fx, "dt3", zone, t, tz, t, "DATETIME(3)", instant);
	/* TIMESTAMP: the instant (read back in a UTC session) */
	my_holds(fx, "ts3", zone, t, NULL, t, "TIMESTAMP(3) (UTC)", instant);
	/* without fractions: the second, truncated (never rounded up) */
	my_holds(fx, "dt0", zone, t, tz, t - (t % 1000), "DATETIME", instant);
	my_holds(fx, "ts0", zone, t, NULL, t - (t % 1000), "TIMESTAMP (UTC)", instant);
	/* DATE: the local day */
	v = my_write_read(fx, "d", zone, t);
	recon_date_format(recon_tz_day_of(tz, t), day, sizeof(day));
	assert_string_equal(v, day);
	free(v);
	/* text: the local wall clock, as the reader parses it */
	my_holds(fx, "txt", zone, t, tz, t, "VARCHAR", instant);
	support_db_exec(fx->db, "DROP TABLE t_wmy_time");
	recon_tz_free(tz);
}

/* The time parameter for instant t into column col of t_wmy_fmt: rc, and the text in buf. */
static int my_time_text(struct fx *fx, const char *col, int64_t t, char *buf, size_t size,
			struct recon_err *err)
{
	struct recon_job *job = job_new(fx, "t_wmy_fmt", col, NULL);
	struct recon_writer *w = wopen(fx, job);
	const char *wrap = NULL;
	int rc;

	recon_err_init(err);
	rc = recon_writer_time_param(w, t, buf, size, &wrap, err);
	if (rc == 0)
		assert_string_equal(wrap, "%s");
	recon_writer_close(w);
	recon_job_free(job);
	return rc;
}

static void test_writer_db_my_time_param_roundtrip(void **state)
{
	static const struct {
		const char *col, *want;
	} cases[] = {
	    {"ts3", "2024-01-16 01:30:11.123"},
	    {"dt6", "2024-01-16 09:30:11.123"},
	    {"dt0", "2024-01-16 09:30:11"},
	    {"txt", "2024-01-16 09:30:11.123"},
	    {"d", "2024-01-16"},
	};
	struct fx *fx = *state;
	struct recon_err err;
	char buf[64];
	int64_t t = parse_in("2024-01-16T01:30:11.123Z", NULL);

	setenv(fx->writer_var, fx->dsn, 1);
	/* exact texts per column type */
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_fmt");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_fmt (k INT PRIMARY KEY, ts3 TIMESTAMP(3) "
				"NULL, dt6 DATETIME(6), dt0 DATETIME, txt TEXT, d DATE, n INT) "
				"ENGINE=InnoDB");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(my_time_text(fx, cases[i].col, t, buf, sizeof(buf), &err), 0);
		assert_string_equal(buf, cases[i].want);
	}
	/* text without milliseconds reads as recon_time_format_local() writes */
	assert_int_equal(my_time_text(fx, "txt", t - 123, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "2024-01-16 09:30:11");
	/* an integer time column, or none at all: RECON_ECONFIG naming it */
	assert_int_equal(my_time_text(fx, "n", t, buf, sizeof(buf), &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "'n'"));
	assert_int_equal(my_time_text(fx, "no_such_col", t, buf, sizeof(buf), &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "'no_such_col'"));
	support_db_exec(fx->db, "DROP TABLE t_wmy_fmt");

	/* round trips: 16 Jan 09:30 in Shanghai is the day before in UTC */
	my_roundtrip_zone(fx, "Asia/Shanghai", "2024-01-15T17:30:11.123Z");
	my_roundtrip_zone(fx, "Asia/Shanghai", "2024-01-16T01:30:11.000Z");
	my_roundtrip_zone(fx, "America/New_York", "2024-07-04T03:59:59.999Z");
	my_roundtrip_zone(fx, "-03:30", "2024-01-16T02:00:00.500Z");
	my_roundtrip_zone(fx, "UTC", "2024-02-29T23:59:59.001Z");
}

/* A missing order of key `key`: 50.00 CNY paid, upstream success, at 2024-01-16 10:00 UTC. */
static void replay_diff(struct recon_diff *d, const char *key)
{
	memset(d, 0, sizeof(*d));
	d->key = key;
	d->key_len = (uint32_t)strlen(key);
	d->klass = RECON_CLASS_MISSING;
	d->up.present = true;
	d->up.status = RECON_ST_SUCCESS;
	memcpy(d->up.currency, "CNY", 4);
	d->up.amount = 5000;
	d->up.time = 1705399200000;
	d->up.rows = 1;
}

/*
 * Issue 12 #1: ON DUPLICATE KEY UPDATE also gives way to a clash on another
 * unique index (provider_txn's default '' already taken). That is not
 * "already there": the action fails naming the index, nothing is inserted,
 * no idempotency record claims the order exists. A real duplicate of the
 * business key still is "already there" (affected 0).
 */
static void test_writer_db_my_replay_other_unique_index(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = job_new(fx, "t_wmy_replay", NULL, NULL);
	static const char idem_like[] =
	    "DELETE FROM idempotency_record WHERE idem_key LIKE 'recon:support_db:replay:R12-%'";
	struct recon_writer *w;
	struct recon_diff d;
	struct recon_err err;
	int64_t n = -1;

	setenv(fx->writer_var, fx->dsn, 1);
	support_side_col(&job->local, RECON_COL_CURRENCY, "currency");
	assert_string_equal(job->actions.replay_status[RECON_ST_SUCCESS], "PAID");
	support_db_exec(fx->db, "DROP TABLE IF EXISTS t_wmy_replay");
	support_db_exec(fx->db, "CREATE TABLE t_wmy_replay (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
				"k VARCHAR(64) NOT NULL, cents BIGINT NOT NULL, currency CHAR(3) "
				"NOT NULL, st VARCHAR(16) NOT NULL, at DATETIME(3) NOT NULL, "
				"provider_txn VARCHAR(64) NOT NULL DEFAULT '', UNIQUE KEY "
				"uk_replay_key (k), UNIQUE KEY uk_provider_txn (provider_txn)) "
				"ENGINE=InnoDB");
	support_db_exec(fx->db,
			"CREATE TABLE IF NOT EXISTS idempotency_record (id BIGINT NOT NULL "
			"AUTO_INCREMENT PRIMARY KEY, idem_key VARCHAR(128) NOT NULL, biz_type "
			"VARCHAR(32) NOT NULL, status VARCHAR(16) NOT NULL, result TEXT NULL, "
			"UNIQUE KEY uk_idem (idem_key)) ENGINE=InnoDB");
	support_db_exec(fx->db, idem_like);
	w = wopen(fx, job);
	/* the first replay takes provider_txn '' */
	replay_diff(&d, "R12-1");
	recon_err_init(&err);
	if (recon_action_replay(w, job, &d, &n, &err) < 0)
		fail_msg("replay: %s: %s", err.where, err.msg);
	assert_int_equal(n, 1);
	/* the same order again: already there */
	recon_err_init(&err);
	assert_int_equal(recon_action_replay(w, job, &d, &n, &err), 0);
	assert_int_equal(n, 0);
	/* another order clashes on uk_provider_txn: a failure naming the index */
	replay_diff(&d, "R12-2");
	recon_err_init(&err);
	assert_int_equal(recon_action_replay(w, job, &d, &n, &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "unique index 'uk_provider_txn'"));
	assert_non_null(strstr(err.msg, "'R12-2'"));
	assert_no_secret(&err, fx->e->owner_password);
	assert_int_equal(support_db_long(fx->db, "SELECT count(*) FROM t_wmy_replay"), 1);
	assert_int_equal(support_db_long(fx->db, "SELECT count(*) FROM idempotency_record WHERE "
						 "idem_key = 'recon:support_db:replay:R12-2'"),
			 0);
	/* the writer is usable afterwards (the transaction was rolled back) */
	assert_false(w->in_tx);
	wexec_ok(w, "SELECT 1 FROM DUAL", NULL, 0, &n);
	recon_writer_close(w);
	support_db_exec(fx->db, "DROP TABLE t_wmy_replay");
	support_db_exec(fx->db, idem_like);
	recon_job_free(job);
}

#define ALL(f)                                                                                     \
	{                                                                                          \
		NULL, cmocka_unit_test(f)                                                          \
	}
#define ONLY(e, f)                                                                                 \
	{                                                                                          \
		e, cmocka_unit_test(f)                                                             \
	}

int main(void)
{
	static const struct support_db_case cases[] = {
	    ALL(test_writer_db_open_close),
	    ALL(test_writer_db_idempotent_insert),
	    ALL(test_writer_db_constraint_violations),
	    ALL(test_writer_db_transactions),
	    ONLY("postgres", test_writer_db_failed_commit_rolls_back),
	    ONLY("postgres", test_writer_db_pg_serialization_failure_retry),
	    ONLY("postgres", test_writer_db_pg_deadlock_retry),
	    ONLY("mysql", test_writer_db_my_lock_wait_timeout_retry),
	    ONLY("mysql", test_writer_db_my_deadlock_retry),
	    ALL(test_writer_db_killed_connection_reconnects),
	    ONLY("postgres", test_writer_db_pg_time_param_roundtrip),
	    ONLY("mysql", test_writer_db_my_time_param_roundtrip),
	    ONLY("mysql", test_writer_db_my_replay_other_unique_index),
	    ALL(test_writer_db_frozen_server_times_out),
	    ALL(test_writer_db_unavailable_without_password),
	};

	return support_db_run("test_writer_db", cases, sizeof(cases) / sizeof(cases[0]),
			      group_setup, group_teardown);
}
