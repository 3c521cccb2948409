/*
 * Tests for src/action_postgres.c, the PostgreSQL writer, against the server
 * tests/db/servers.sh starts (RECON_TEST_PG_DSN: a superuser owner). Without
 * the variable the tests are skipped, and fail under CI=true.
 *
 * Covered: open/close (the writer DSN variable, the local side's fallback, an
 * unset variable), an idempotent insert run twice (affected 1 then 0), a
 * NOT NULL violation, an unknown column (RECON_ECONFIG: a table the job
 * cannot fill), a missing grant (RECON_EPERM), an unswallowed unique
 * violation (RECON_EINPUT), a
 * rolled-back transaction, a transaction poisoned by a failed statement, a
 * real 40001 serialization failure and a real 40P01 deadlock (RECON_ERETRY,
 * then the retried transaction commits), a backend killed with
 * pg_terminate_backend (RECON_ERETRY, then a new connection) in and out of a
 * transaction, time parameters into timestamp, timestamptz and text columns
 * (named, DST and fixed-offset zones) read back as the same instant, and a
 * wrong password or a server that is down (RECON_EUNAVAIL, no password in
 * any message).
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
#include <time.h>

#ifdef RECON_HAVE_POSTGRES
#include <libpq-fe.h>

#include "recon_action.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_time.h"
#include "support_jobs.h"
#include "support_proxy.h"

#define DSN_VAR	   "RECON_TEST_PG_DSN"
#define WRITER_VAR "RECON_TEST_PG_WRITER_DSN" /* the variable the jobs name */
#define LOCAL_VAR  "RECON_TEST_PG_LOCAL_DSN"

struct fx {
	PGconn *admin;
};

static const char *dsn_or_skip(void)
{
	const char *v = getenv(DSN_VAR);
	const char *ci = getenv("CI");

	if (v && *v)
		return v;
	if (ci && !strcmp(ci, "true"))
		fail_msg("%s is not set under CI=true: start tests/db/servers.sh", DSN_VAR);
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

/* The query's single value into buf ("(null)" for NULL). */
static char *sql_value(struct fx *fx, const char *q, char *buf, size_t size)
{
	PGresult *r = PQexec(fx->admin, q);

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	snprintf(buf, size, "%s", PQgetisnull(r, 0, 0) ? "(null)" : PQgetvalue(r, 0, 0));
	PQclear(r);
	return buf;
}

static long sql_long(struct fx *fx, const char *q)
{
	char buf[64];

	return strtol(sql_value(fx, q, buf, sizeof(buf)), NULL, 10);
}

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	const char *dsn = getenv(DSN_VAR);

	if (!fx)
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

	PQfinish(fx->admin);
	free(fx);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* A job whose local side is the postgres table `table` in zone `zone`, writing through WRITER_VAR.
 */
static struct recon_job *job_new(const char *table, const char *zone)
{
	struct recon_job *job = support_job_new();
	struct recon_side *lo = &job->local;
	struct recon_err err;

	lo->backend = &recon_source_postgres;
	free(lo->path);
	lo->path = NULL;
	free(lo->table);
	lo->table = recon_xstrdup(table);
	lo->dsn_env = recon_xstrdup(LOCAL_VAR);
	if (zone) {
		recon_tz_free(lo->tz);
		free(lo->tz_name);
		lo->tz_name = recon_xstrdup(zone);
		recon_err_init(&err);
		if (recon_tz_load(&lo->tz, zone, &err) < 0)
			fail_msg("zone %s: %s", zone, err.msg);
	}
	job->actions.enabled = true;
	job->actions.writer_dsn_env = recon_xstrdup(WRITER_VAR);
	return job;
}

static struct recon_writer *wopen(const struct recon_job *job)
{
	struct recon_writer *w = NULL;
	struct recon_err err;

	recon_err_init(&err);
	if (recon_writer_postgres.open(&w, job, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_non_null(w);
	return w;
}

/* Runs sql on w; *affected (when not NULL) and err receive what exec() said. */
static int wexec(struct recon_writer *w, const char *q, const char *const *params, int n,
		 int64_t *affected, struct recon_err *err)
{
	int64_t dummy;

	recon_err_init(err);
	return w->ops->exec(w, q, params, n, affected ? affected : &dummy, err);
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
	if (w->ops->begin(w, &err) < 0)
		fail_msg("begin: %s: %s", err.where, err.msg);
}

static void commit_ok(struct recon_writer *w)
{
	struct recon_err err;

	recon_err_init(&err);
	if (w->ops->commit(w, &err) < 0)
		fail_msg("commit: %s: %s", err.where, err.msg);
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

static void test_writer_postgres_open_close(void **state)
{
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_open", NULL);
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	(void)state;
	setenv(WRITER_VAR, dsn, 1);
	unsetenv(LOCAL_VAR);
	w = wopen(job);
	assert_ptr_equal(w->ops, &recon_writer_postgres);
	assert_string_equal(w->ops->kind, "postgres");
	assert_ptr_equal(w->job, job);
	wexec_ok(w, "SELECT 1 WHERE $1 = 'x'", (const char *const[]){"x"}, 1, &n);
	assert_int_equal(n, 1);
	/* the session runs in the local side's zone */
	wexec_ok(w, "SELECT 1 WHERE current_setting('TimeZone') = $1",
		 (const char *const[]){"Asia/Shanghai"}, 1, &n);
	assert_int_equal(n, 1);
	wexec_ok(w, "SELECT 1 WHERE current_setting('client_encoding') = 'UTF8'", NULL, 0, &n);
	assert_int_equal(n, 1);
	w->ops->rollback(w); /* no-op outside a transaction */
	w->ops->close(w);
	recon_writer_postgres.close(NULL);

	/* no writer_dsn_env: the local side's variable */
	free(job->actions.writer_dsn_env);
	job->actions.writer_dsn_env = NULL;
	unsetenv(WRITER_VAR);
	setenv(LOCAL_VAR, dsn, 1);
	w = wopen(job);
	w->ops->close(w);

	/* unset or empty: RECON_ECONFIG naming the variable */
	job->actions.writer_dsn_env = recon_xstrdup(WRITER_VAR);
	w = NULL;
	recon_err_init(&err);
	assert_int_equal(recon_writer_postgres.open(&w, job, &err), RECON_ECONFIG);
	assert_null(w);
	assert_non_null(strstr(err.msg, WRITER_VAR));
	setenv(WRITER_VAR, "", 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_postgres.open(&w, job, &err), RECON_ECONFIG);
	assert_null(w);
	recon_job_free(job);
}

static void test_writer_postgres_idempotent_insert(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_idem", NULL);
	static const char ins[] = "INSERT INTO t_wpg_idem (k, v, note) VALUES ($1, $2, $3) "
				  "ON CONFLICT (k) DO NOTHING";
	const char *p[] = {"K1", "100", NULL};
	struct recon_writer *w;
	char buf[64];
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_idem");
	sql(fx, "CREATE TABLE t_wpg_idem (k text PRIMARY KEY, v bigint NOT NULL, note text)");
	w = wopen(job);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 1);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	p[1] = "999"; /* same key, other values: still "already there" */
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_idem"), 1);
	assert_string_equal(sql_value(fx, "SELECT v FROM t_wpg_idem", buf, sizeof(buf)), "100");
	/* a NULL parameter is SQL NULL; UTF-8 text arrives intact */
	assert_string_equal(sql_value(fx, "SELECT note FROM t_wpg_idem", buf, sizeof(buf)),
			    "(null)");
	wexec_ok(w, "UPDATE t_wpg_idem SET note = $1 WHERE k = $2",
		 (const char *const[]){"微信支付", "K1"}, 2, &n);
	assert_int_equal(n, 1);
	assert_string_equal(sql_value(fx, "SELECT note FROM t_wpg_idem", buf, sizeof(buf)),
			    "微信支付");
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_idem");
	recon_job_free(job);
}

static void test_writer_postgres_constraint_violations(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_nn", NULL);
	static const char ins[] = "INSERT INTO t_wpg_nn (k, v, ref) VALUES ($1, $2, $3) "
				  "ON CONFLICT (k) DO NOTHING";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_nn");
	sql(fx, "CREATE TABLE t_wpg_nn (k text PRIMARY KEY, v bigint NOT NULL, ref text UNIQUE)");
	w = wopen(job);
	/* NOT NULL: a table the job cannot fill (exit 78), not bad input */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K1", NULL, "r1"}, 3, &n, &err),
			 RECON_ECONFIG);
	assert_non_null(strstr(err.where, "postgres "));
	assert_non_null(strstr(err.where, "/recon_test"));
	assert_non_null(strstr(err.msg, "null value"));
	assert_null(strchr(err.msg, '\n'));
	/* a unique key other than the conflict target is not swallowed */
	wexec_ok(w, ins, (const char *const[]){"K1", "1", "r1"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(wexec(w, ins, (const char *const[]){"K2", "2", "r1"}, 3, &n, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, "duplicate key"));
	/* a data error */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K3", "12x", "r3"}, 3, &n, &err),
			 RECON_EINPUT);
	/* the connection is fine afterwards */
	wexec_ok(w, ins, (const char *const[]){"K2", "2", "r2"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_nn"), 2);
	/* a missing grant: permission denied (exit 77) */
	sql(fx, "DROP ROLE IF EXISTS recon_wpg_nogrant");
	sql(fx, "CREATE ROLE recon_wpg_nogrant");
	wexec_ok(w, "SET ROLE recon_wpg_nogrant", NULL, 0, &n);
	recon_err_init(&err);
	assert_int_equal(wexec(w, ins, (const char *const[]){"K4", "4", "r4"}, 3, &n, &err),
			 RECON_EPERM);
	assert_int_equal(recon_err_exit_code(err.code), 77);
	assert_non_null(strstr(err.msg, "permission denied"));
	wexec_ok(w, "RESET ROLE", NULL, 0, &n);
	/* an unknown column: the job and the table disagree */
	recon_err_init(&err);
	assert_int_equal(wexec(w, "INSERT INTO t_wpg_nn (k, nope) VALUES ($1, $2)",
			       (const char *const[]){"K5", "5"}, 2, &n, &err),
			 RECON_ECONFIG);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_nn");
	sql(fx, "DROP ROLE recon_wpg_nogrant");
	recon_job_free(job);
}

static void test_writer_postgres_transactions(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_tx", NULL);
	static const char ins[] = "INSERT INTO t_wpg_tx (k, v) VALUES ($1, $2)";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_tx");
	sql(fx, "CREATE TABLE t_wpg_tx (k text PRIMARY KEY, v bigint NOT NULL)");
	w = wopen(job);

	/* rollback leaves nothing */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	w->ops->rollback(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_tx"), 0);

	/* commit keeps both; nothing is visible before */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_tx"), 0);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_tx"), 2);

	/* a failed statement poisons the transaction: commit reports it and keeps nothing */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"C", "3"}, 2, &n);
	assert_int_equal(wexec(w, ins, (const char *const[]){"D", NULL}, 2, &n, &err),
			 RECON_ECONFIG);
	assert_int_equal(wexec(w, ins, (const char *const[]){"E", "5"}, 2, &n, &err),
			 RECON_ECONFIG);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "null value"));
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_tx"), 2);

	/* misuse is reported, not executed */
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_EINTERNAL);
	begin_ok(w);
	recon_err_init(&err);
	assert_int_equal(w->ops->begin(w, &err), RECON_EINTERNAL);
	w->ops->rollback(w);
	w->ops->rollback(w);

	/* autocommit again outside begin/commit */
	wexec_ok(w, ins, (const char *const[]){"F", "6"}, 2, &n);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_tx"), 3);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_tx");
	recon_job_free(job);
}

static void test_writer_postgres_serialization_failure_retry(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_ser", NULL);
	static const char upd[] = "UPDATE t_wpg_ser SET v = v + 10 WHERE k = $1";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_ser");
	sql(fx, "CREATE TABLE t_wpg_ser (k text PRIMARY KEY, v bigint NOT NULL)");
	sql(fx, "INSERT INTO t_wpg_ser VALUES ('a', 0)");
	w = wopen(job);

	begin_ok(w);
	wexec_ok(w, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", NULL, 0, &n);
	wexec_ok(w, "SELECT v FROM t_wpg_ser WHERE k = $1", (const char *const[]){"a"}, 1, &n);
	assert_int_equal(n, 1);
	/* a concurrent committed update after the snapshot */
	sql(fx, "UPDATE t_wpg_ser SET v = v + 1 WHERE k = 'a'");
	assert_int_equal(wexec(w, upd, (const char *const[]){"a"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "could not serialize"));
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);

	/* the retried transaction goes through */
	begin_ok(w);
	wexec_ok(w, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", NULL, 0, &n);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	assert_int_equal(n, 1);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT v FROM t_wpg_ser"), 11);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_ser");
	recon_job_free(job);
}

static void test_writer_postgres_deadlock_retry(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_dl", NULL);
	static const char upd[] = "UPDATE t_wpg_dl SET v = v + 10 WHERE k = $1";
	struct recon_writer *w;
	struct recon_err err;
	PGresult *r;
	int64_t n = -1;
	int rc;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_dl");
	sql(fx, "CREATE TABLE t_wpg_dl (k text PRIMARY KEY, v bigint NOT NULL)");
	sql(fx, "INSERT INTO t_wpg_dl VALUES ('a', 0), ('b', 0)");
	w = wopen(job);

	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	/* the admin session holds b, waits for a, and never runs the deadlock check first */
	sql(fx, "SET deadlock_timeout = '20s'");
	sql(fx, "BEGIN");
	sql(fx, "UPDATE t_wpg_dl SET v = v + 1 WHERE k = 'b'");
	assert_true(PQsendQuery(fx->admin, "UPDATE t_wpg_dl SET v = v + 1 WHERE k = 'a'"));
	sleep_ms(200);
	rc = wexec(w, upd, (const char *const[]){"b"}, 1, &n, &err);
	assert_int_equal(rc, RECON_ERETRY);
	assert_non_null(strstr(err.msg, "deadlock"));
	w->ops->rollback(w);
	/* the admin's update went through once the writer's transaction was gone */
	while ((r = PQgetResult(fx->admin)) != NULL) {
		assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
		PQclear(r);
	}
	sql(fx, "COMMIT");
	sql(fx, "RESET deadlock_timeout");

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT sum(v) FROM t_wpg_dl"), 22);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_dl");
	recon_job_free(job);
}

/* The writer's backend pid, recorded through it (autocommit) in t_wpg_kill. */
static long writer_pid(struct fx *fx, struct recon_writer *w)
{
	int64_t n;

	wexec_ok(w, "INSERT INTO t_wpg_kill (pid) VALUES (pg_backend_pid())", NULL, 0, &n);
	return sql_long(fx, "SELECT pid FROM t_wpg_kill ORDER BY id DESC LIMIT 1");
}

/* pg_terminate_backend(pid), then waits until the backend is gone. */
static void kill_pid(struct fx *fx, long pid)
{
	char q[160];

	snprintf(q, sizeof(q), "SELECT pg_terminate_backend(%ld)", pid);
	sql(fx, q);
	snprintf(q, sizeof(q), "SELECT count(*) FROM pg_stat_activity WHERE pid = %ld", pid);
	for (int i = 0; i < 100 && sql_long(fx, q) > 0; i++)
		sleep_ms(50);
}

static void test_writer_postgres_killed_connection_reconnects(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_kill", NULL);
	static const char ins[] = "INSERT INTO t_wpg_kill (pid) VALUES (pg_backend_pid())";
	struct recon_writer *w;
	struct recon_err err;
	long old, now;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wpg_kill");
	sql(fx, "CREATE TABLE t_wpg_kill (id serial PRIMARY KEY, pid int, note text)");
	w = wopen(job);

	/* outside a transaction: one RECON_ERETRY, then a new session */
	old = writer_pid(fx, w);
	kill_pid(fx, old);
	assert_int_equal(wexec(w, ins, NULL, 0, &n, &err), RECON_ERETRY);
	assert_null(strstr(err.msg, "pg-owner-pw"));
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(n, 1);
	now = sql_long(fx, "SELECT pid FROM t_wpg_kill ORDER BY id DESC LIMIT 1");
	assert_true(now != old);
	/* the new session has the same settings */
	wexec_ok(w, "SELECT 1 WHERE current_setting('TimeZone') = 'Asia/Shanghai'", NULL, 0, &n);
	assert_int_equal(n, 1);

	/* inside a transaction: it stays failed until rolled back, then begin reconnects */
	old = writer_pid(fx, w);
	begin_ok(w);
	kill_pid(fx, old);
	assert_int_equal(
	    wexec(w, "INSERT INTO t_wpg_kill (note) VALUES ('lost')", NULL, 0, &n, &err),
	    RECON_ERETRY);
	assert_int_equal(
	    wexec(w, "INSERT INTO t_wpg_kill (note) VALUES ('lost')", NULL, 0, &n, &err),
	    RECON_ERETRY);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);
	w->ops->rollback(w);
	begin_ok(w);
	wexec_ok(w, "INSERT INTO t_wpg_kill (note) VALUES ('kept')", NULL, 0, &n);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_kill WHERE note = 'lost'"), 0);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_kill WHERE note = 'kept'"), 1);

	/* a commit on a dead connection is RECON_ERETRY too */
	old = writer_pid(fx, w);
	begin_ok(w);
	wexec_ok(w, "INSERT INTO t_wpg_kill (note) VALUES ('lost2')", NULL, 0, &n);
	kill_pid(fx, old);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);
	w->ops->rollback(w);
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wpg_kill WHERE note = 'lost2'"), 0);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wpg_kill");
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
static void insert_time(struct recon_writer *w, const char *col, const char *k, int64_t t)
{
	struct recon_err err;
	const char *wrap = NULL;
	char val[64], ph[32], q[256];
	int64_t n = -1;

	recon_err_init(&err);
	if (w->ops->time_param(w, t, val, sizeof(val), &wrap, &err) < 0)
		fail_msg("time_param: %s", err.msg);
	assert_non_null(wrap);
	splice(wrap, "$2", ph, sizeof(ph));
	snprintf(q, sizeof(q), "INSERT INTO t_wpg_time (k, %s) VALUES ($1, %s)", col, ph);
	wexec_ok(w, q, (const char *const[]){k, val}, 2, &n);
	assert_int_equal(n, 1);
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

static void roundtrip_zone(struct fx *fx, const char *zone, const char *instant)
{
	struct recon_job *job = job_new("t_wpg_time", zone);
	int64_t t = parse_in(instant, NULL), back;
	struct recon_writer *w;
	char buf[64], q[200];

	sql(fx, "DROP TABLE IF EXISTS t_wpg_time");
	sql(fx, "CREATE TABLE t_wpg_time (k text PRIMARY KEY, ts timestamp(3), tstz timestamptz, "
		"txt text, d date)");
	support_side_col(&job->local, RECON_COL_TIME, "ts");
	w = wopen(job);
	insert_time(w, "ts", "ts", t);
	insert_time(w, "tstz", "tstz", t);
	insert_time(w, "txt", "txt", t);
	insert_time(w, "d", "d", t);
	w->ops->close(w);

	/* timestamp: the wall clock in the local zone */
	sql_value(fx,
		  "SELECT to_char(ts, 'YYYY-MM-DD HH24:MI:SS.MS') FROM t_wpg_time WHERE k = 'ts'",
		  buf, sizeof(buf));
	back = parse_in(buf, job->local.tz);
	if (back != t)
		fail_msg("%s: timestamp holds '%s' for %s", zone, buf, instant);
	/* timestamptz: the instant itself */
	sql_value(fx,
		  "SELECT to_char(tstz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') "
		  "FROM t_wpg_time WHERE k = 'tstz'",
		  buf, sizeof(buf));
	back = parse_in(buf, NULL);
	if (back != t)
		fail_msg("%s: timestamptz holds '%s' UTC for %s", zone, buf, instant);
	/* text: local wall clock with its offset */
	sql_value(fx, "SELECT txt FROM t_wpg_time WHERE k = 'txt'", buf, sizeof(buf));
	back = parse_in(buf, job->local.tz);
	if (back != t)
		fail_msg("%s: text holds '%s' for %s", zone, buf, instant);
	/* date: the local day */
	sql_value(fx, "SELECT d::text FROM t_wpg_time WHERE k = 'd'", buf, sizeof(buf));
	recon_date_format(recon_tz_day_of(job->local.tz, t), q, sizeof(q));
	assert_string_equal(buf, q);
	sql(fx, "DROP TABLE t_wpg_time");
	recon_job_free(job);
}

static void test_writer_postgres_time_param_roundtrip(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_time", NULL);
	struct recon_writer *w;
	struct recon_err err;
	const char *wrap = NULL;
	char buf[64];

	setenv(WRITER_VAR, dsn, 1);
	w = wopen(job);
	recon_err_init(&err);
	assert_int_equal(w->ops->time_param(w, parse_in("2024-01-16T01:30:11Z", NULL), buf,
					    sizeof(buf), &wrap, &err),
			 0);
	assert_string_equal(buf, "2024-01-16T01:30:11.000Z");
	assert_string_equal(wrap, "%s::timestamptz");
	w->ops->close(w);
	recon_job_free(job);

	/* 16 Jan 09:30 in Shanghai, the day before in UTC */
	roundtrip_zone(fx, "Asia/Shanghai", "2024-01-15T17:30:11.123Z");
	roundtrip_zone(fx, "Asia/Shanghai", "2024-01-16T01:30:11.000Z");
	/* summer time */
	roundtrip_zone(fx, "America/New_York", "2024-07-04T03:59:59.999Z");
	/* fixed offsets, which PostgreSQL would read as POSIX (sign inverted) */
	roundtrip_zone(fx, "+08:00", "2024-01-15T17:30:11.123Z");
	roundtrip_zone(fx, "-03:30", "2024-01-16T02:00:00.500Z");
	roundtrip_zone(fx, "UTC", "2024-02-29T23:59:59.001Z");
}

static void assert_no_secret(const struct recon_err *err, const char *pw)
{
	if (strstr(err->msg, pw) || strstr(err->where, pw))
		fail_msg("password in the message: %s: %s", err->where, err->msg);
}

/*
 * Issue 12 #10: a writer whose server freezes (a proxy that stops forwarding,
 * as SIGSTOP would) fails the call after actions.timeout as a lost connection
 * (RECON_ERETRY: retried, then the circuit breaker), instead of waiting
 * forever with the job's lock held.
 */
static void test_writer_postgres_frozen_server_times_out(void **state)
{
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_frozen", NULL);
	PQconninfoOption *opts;
	struct support_proxy p;
	struct recon_writer *w;
	struct recon_err err;
	struct timespec t0, t1;
	const char *host = "127.0.0.1", *user = "", *pw = "", *db = "";
	unsigned port = 5432;
	char wdsn[512];
	int64_t n = -1;
	double took;

	(void)state;
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
	snprintf(wdsn, sizeof(wdsn),
		 "host=127.0.0.1 port=%u user=%s password=%s dbname=%s sslmode=disable", p.port,
		 user, pw, db);
	setenv(WRITER_VAR, wdsn, 1);
	job->actions.timeout_ms = 1000;
	w = wopen(job);
	wexec_ok(w, "SELECT 1", NULL, 0, &n);
	p.frozen = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wexec(w, "SELECT 2", NULL, 0, &n, &err), RECON_ERETRY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (took > 8)
		fail_msg("the frozen server held the call for %.1f s", took);
	assert_non_null(strstr(err.msg, "no answer from the server in time"));
	assert_no_secret(&err, pw);
	w->ops->close(w);
	support_proxy_stop(&p);
	PQconninfoFree(opts);
	setenv(WRITER_VAR, dsn, 1);
	recon_job_free(job);
}

static void test_writer_postgres_unavailable_without_password(void **state)
{
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wpg_pw", NULL);
	struct recon_writer *w = NULL;
	struct recon_err err;
	char bad[512];
	const char *p;

	(void)state;
	/* a wrong password */
	dsn_with_password(dsn, "wrong-Secret-pw", bad, sizeof(bad));
	setenv(WRITER_VAR, bad, 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_postgres.open(&w, job, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_null(strstr(err.msg, "postgresql://"));
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, "password authentication failed"));

	/* a server that is down: port 1 refuses */
	p = strrchr(bad, '@');
	assert_non_null(p);
	snprintf(bad + (p - bad), sizeof(bad) - (size_t)(p - bad), "@127.0.0.1:1/recon_test");
	setenv(WRITER_VAR, bad, 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_postgres.open(&w, job, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_non_null(strstr(err.msg, "cannot connect"));

	/* a password that shows up in a server message is scrubbed too */
	setenv(WRITER_VAR, dsn, 1);
	w = wopen(job);
	if (strstr(dsn, ":pg-owner-pw@")) {
		assert_int_equal(wexec(w, "SELECT 'pg-owner-pw'::int", NULL, 0, NULL, &err),
				 RECON_EINPUT);
		assert_no_secret(&err, "pg-owner-pw");
		assert_non_null(strstr(err.msg, "***"));
	}
	w->ops->close(w);
	recon_job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_postgres_open_close),
	    cmocka_unit_test(test_writer_postgres_idempotent_insert),
	    cmocka_unit_test(test_writer_postgres_constraint_violations),
	    cmocka_unit_test(test_writer_postgres_transactions),
	    cmocka_unit_test(test_writer_postgres_serialization_failure_retry),
	    cmocka_unit_test(test_writer_postgres_deadlock_retry),
	    cmocka_unit_test(test_writer_postgres_killed_connection_reconnects),
	    cmocka_unit_test(test_writer_postgres_time_param_roundtrip),
	    cmocka_unit_test(test_writer_postgres_frozen_server_times_out),
	    cmocka_unit_test(test_writer_postgres_unavailable_without_password),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

#else /* built without PostgreSQL: nothing to test */
int main(void)
{
	return 0;
}
#endif
