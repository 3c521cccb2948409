/*
 * Tests for src/action_mysql.c, the MySQL/MariaDB writer, against the server
 * tests/db/servers.sh starts (RECON_TEST_MYSQL_DSN: the owner of recon_test).
 * Without the variable the tests are skipped, and fail under CI=true.
 *
 * Covered: open/close (the writer DSN variable, the local side's fallback, an
 * unset variable), an idempotent INSERT ... ON DUPLICATE KEY UPDATE k = k run
 * twice (affected 1 then 0), a NOT NULL violation (RECON_ECONFIG: a table the
 * job cannot fill), an unswallowed unique violation and a data error
 * (RECON_EINPUT), a rolled-back transaction, a
 * transaction poisoned by a failed statement (MySQL keeps the rest of it
 * open: it must not commit), a real 1205 lock wait timeout and a real 1213
 * deadlock (RECON_ERETRY, then the retried transaction commits), a
 * connection KILLed from another session (RECON_ERETRY, then a new
 * connection) in and out of a transaction, time parameters into DATETIME(3),
 * TIMESTAMP(3), DATETIME, DATE and VARCHAR columns read back as the same
 * instant, a replay whose row clashes on another unique index than the
 * business key (a failure naming the index, not "already there"), and a wrong
 * password or a server that is down (RECON_EUNAVAIL, no password in any
 * message).
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

#ifdef RECON_HAVE_MYSQL
#include <mysql.h>

#include "recon_action.h"
#include "recon_dsn.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_time.h"
#include "support_jobs.h"
#include "support_proxy.h"

#define DSN_VAR	   "RECON_TEST_MYSQL_DSN"
#define WRITER_VAR "RECON_TEST_MYSQL_WRITER_DSN" /* the variable the jobs name */
#define LOCAL_VAR  "RECON_TEST_MYSQL_LOCAL_DSN"

struct fx {
	MYSQL *admin;
	char password[128]; /* the owner's password, looked for in messages */
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
	MYSQL_RES *r;

	if (mysql_query(fx->admin, q))
		fail_msg("%s: %s", q, mysql_error(fx->admin));
	r = mysql_store_result(fx->admin);
	if (r)
		mysql_free_result(r);
}

/* The query's single value into buf ("(null)" for NULL). */
static char *sql_value(struct fx *fx, const char *q, char *buf, size_t size)
{
	MYSQL_RES *r;
	MYSQL_ROW row;

	if (mysql_query(fx->admin, q) || !(r = mysql_store_result(fx->admin)))
		fail_msg("%s: %s", q, mysql_error(fx->admin));
	row = mysql_fetch_row(r);
	if (!row)
		fail_msg("%s: no row", q);
	snprintf(buf, size, "%s", row[0] ? row[0] : "(null)");
	mysql_free_result(r);
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
	struct recon_dsn_mysql d;
	struct recon_err err;

	if (!fx)
		return -1;
	if (dsn && *dsn) {
		recon_dsn_mysql_init(&d);
		recon_err_init(&err);
		if (recon_dsn_mysql_parse(dsn, DSN_VAR, &d, &err) < 0) {
			fprintf(stderr, "%s: %s\n", DSN_VAR, err.msg);
			return -1;
		}
		snprintf(fx->password, sizeof(fx->password), "%s", d.password ? d.password : "");
		fx->admin = mysql_init(NULL);
		if (!fx->admin || !mysql_real_connect(fx->admin, d.host, d.user, d.password, d.db,
						      d.port, d.socket, 0)) {
			fprintf(stderr, "cannot connect with %s: %s\n", DSN_VAR,
				fx->admin ? mysql_error(fx->admin) : "out of memory");
			recon_dsn_mysql_release(&d);
			return -1;
		}
		recon_dsn_mysql_release(&d);
		if (mysql_query(fx->admin, "SET SESSION time_zone = '+00:00'"))
			return -1;
	}
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;

	if (fx->admin)
		mysql_close(fx->admin);
	free(fx);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * A job whose local side is the mysql table `table` (time column `time_col`)
 * in zone `zone` (NULL: Asia/Shanghai), writing through WRITER_VAR.
 */
static struct recon_job *job_new(const char *table, const char *time_col, const char *zone)
{
	struct recon_job *job = support_job_new();
	struct recon_side *lo = &job->local;
	struct recon_err err;

	lo->backend = &recon_source_mysql;
	free(lo->path);
	lo->path = NULL;
	free(lo->table);
	lo->table = recon_xstrdup(table);
	lo->dsn_env = recon_xstrdup(LOCAL_VAR);
	support_side_col(lo, RECON_COL_TIME, time_col);
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
	if (recon_writer_mysql.open(&w, job, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	assert_non_null(w);
	return w;
}

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

static void assert_no_secret(const struct recon_err *err, const char *pw)
{
	if (*pw && (strstr(err->msg, pw) || strstr(err->where, pw)))
		fail_msg("password in the message: %s: %s", err->where, err->msg);
}

static void test_writer_mysql_open_close(void **state)
{
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_open", "created_at", NULL);
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	(void)state;
	setenv(WRITER_VAR, dsn, 1);
	unsetenv(LOCAL_VAR);
	w = wopen(job);
	assert_ptr_equal(w->ops, &recon_writer_mysql);
	assert_string_equal(w->ops->kind, "mysql");
	assert_ptr_equal(w->job, job);
	/* a statement with a result reports its row count */
	wexec_ok(w, "SELECT 1 FROM DUAL WHERE ? = 'x'", (const char *const[]){"x"}, 1, &n);
	assert_int_equal(n, 1);
	/* the session: UTC, utf8mb4, autocommit */
	wexec_ok(w,
		 "SELECT 1 FROM DUAL WHERE @@session.time_zone = '+00:00' AND "
		 "@@character_set_client = 'utf8mb4' AND @@autocommit = 1",
		 NULL, 0, &n);
	assert_int_equal(n, 1);
	/* a parameter count that does not match is refused before the client library reads
	 * past the array */
	assert_int_equal(wexec(w, "SELECT ? FROM DUAL", NULL, 0, &n, &err), RECON_EINTERNAL);
	w->ops->rollback(w); /* no-op outside a transaction */
	w->ops->close(w);
	recon_writer_mysql.close(NULL);

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
	assert_int_equal(recon_writer_mysql.open(&w, job, &err), RECON_ECONFIG);
	assert_null(w);
	assert_non_null(strstr(err.msg, WRITER_VAR));
	setenv(WRITER_VAR, "", 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_mysql.open(&w, job, &err), RECON_ECONFIG);
	assert_null(w);
	recon_job_free(job);
}

static void test_writer_mysql_idempotent_insert(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_idem", "created_at", NULL);
	static const char ins[] = "INSERT INTO t_wmy_idem (k, v, note) VALUES (?, ?, ?) "
				  "ON DUPLICATE KEY UPDATE k = k";
	const char *p[] = {"K1", "100", NULL};
	struct recon_writer *w;
	char buf[64];
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_idem");
	sql(fx, "CREATE TABLE t_wmy_idem (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL, note "
		"VARCHAR(64)) ENGINE=InnoDB");
	w = wopen(job);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 1);
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	p[1] = "999"; /* same key, other values: still "already there" */
	wexec_ok(w, ins, p, 3, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_idem"), 1);
	assert_string_equal(sql_value(fx, "SELECT v FROM t_wmy_idem", buf, sizeof(buf)), "100");
	assert_string_equal(sql_value(fx, "SELECT note FROM t_wmy_idem", buf, sizeof(buf)),
			    "(null)");
	/* UTF-8 text arrives intact (the admin session reads utf8mb4 too) */
	wexec_ok(w, "UPDATE t_wmy_idem SET note = ? WHERE k = ?",
		 (const char *const[]){"微信支付", "K1"}, 2, &n);
	assert_int_equal(n, 1);
	assert_string_equal(sql_value(fx, "SELECT HEX(note) FROM t_wmy_idem", buf, sizeof(buf)),
			    "E5BEAEE4BFA1E694AFE4BB98");
	/* many distinct statements: the statement cache evicts and stays correct */
	for (int i = 0; i < 80; i++) {
		char q[200], k[16];
		snprintf(q, sizeof(q),
			 "INSERT INTO t_wmy_idem (k, v) VALUES (?, %d) ON DUPLICATE KEY UPDATE "
			 "k = k",
			 i % 40);
		snprintf(k, sizeof(k), "C%d", i % 40);
		wexec_ok(w, q, (const char *const[]){k}, 1, &n);
		assert_int_equal(n, i < 40 ? 1 : 0);
	}
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_idem"), 41);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_idem");
	recon_job_free(job);
}

static void test_writer_mysql_constraint_violation_is_einput(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_nn", "created_at", NULL);
	static const char ins[] = "INSERT INTO t_wmy_nn (k, v, ref) VALUES (?, ?, ?) "
				  "ON DUPLICATE KEY UPDATE k = k";
	static const char plain[] = "INSERT INTO t_wmy_nn (k, v, ref) VALUES (?, ?, ?)";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_nn");
	sql(fx, "CREATE TABLE t_wmy_nn (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL, "
		"ref VARCHAR(64) UNIQUE) ENGINE=InnoDB");
	w = wopen(job);
	/* NOT NULL: a table the job cannot fill (exit 78), not bad input */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K1", NULL, "r1"}, 3, &n, &err),
			 RECON_ECONFIG);
	assert_non_null(strstr(err.where, "mysql "));
	assert_non_null(strstr(err.where, "/recon_test"));
	assert_non_null(strstr(err.msg, "cannot be null"));
	/* a duplicate without ON DUPLICATE KEY is refused */
	wexec_ok(w, ins, (const char *const[]){"K1", "1", "r1"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(wexec(w, plain, (const char *const[]){"K2", "2", "r1"}, 3, &n, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, "Duplicate entry"));
	/* a data error (strict mode) */
	assert_int_equal(wexec(w, ins, (const char *const[]){"K3", "12x", "r3"}, 3, &n, &err),
			 RECON_EINPUT);
	/* the connection is fine afterwards */
	wexec_ok(w, ins, (const char *const[]){"K2", "2", "r2"}, 3, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_nn"), 2);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_nn");
	recon_job_free(job);
}

static void test_writer_mysql_transactions(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_tx", "created_at", NULL);
	static const char ins[] = "INSERT INTO t_wmy_tx (k, v) VALUES (?, ?)";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_tx");
	sql(fx, "CREATE TABLE t_wmy_tx (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL) "
		"ENGINE=InnoDB");
	w = wopen(job);

	/* rollback leaves nothing */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	w->ops->rollback(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_tx"), 0);

	/* commit keeps both; nothing is visible before */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"A", "1"}, 2, &n);
	wexec_ok(w, ins, (const char *const[]){"B", "2"}, 2, &n);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_tx"), 0);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_tx"), 2);

	/*
	 * A failed statement poisons the transaction. MySQL itself would keep
	 * the transaction open and commit "C": the writer refuses.
	 */
	begin_ok(w);
	wexec_ok(w, ins, (const char *const[]){"C", "3"}, 2, &n);
	assert_int_equal(wexec(w, ins, (const char *const[]){"D", NULL}, 2, &n, &err),
			 RECON_ECONFIG);
	assert_int_equal(wexec(w, ins, (const char *const[]){"E", "5"}, 2, &n, &err),
			 RECON_ECONFIG);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "cannot be null"));
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_tx"), 2);

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
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_tx"), 3);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_tx");
	recon_job_free(job);
}

static void test_writer_mysql_lock_wait_timeout_retry(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_lw", "created_at", NULL);
	static const char upd[] = "UPDATE t_wmy_lw SET v = v + 10 WHERE k = ?";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_lw");
	sql(fx, "CREATE TABLE t_wmy_lw (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL) "
		"ENGINE=InnoDB");
	sql(fx, "INSERT INTO t_wmy_lw VALUES ('a', 0), ('b', 0)");
	w = wopen(job);
	wexec_ok(w, "SET SESSION innodb_lock_wait_timeout = 1", NULL, 0, &n);

	/* the admin holds a */
	sql(fx, "START TRANSACTION");
	sql(fx, "UPDATE t_wmy_lw SET v = v + 1 WHERE k = 'a'");
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	assert_int_equal(wexec(w, upd, (const char *const[]){"a"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "Lock wait timeout"));
	/* MySQL left the transaction open with b updated: commit must not keep it */
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);
	sql(fx, "COMMIT");
	assert_int_equal(sql_long(fx, "SELECT v FROM t_wmy_lw WHERE k = 'b'"), 0);

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT sum(v) FROM t_wmy_lw"), 21);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_lw");
	recon_job_free(job);
}

static void test_writer_mysql_deadlock_retry(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_dl", "created_at", NULL);
	static const char upd[] = "UPDATE t_wmy_dl SET v = v + 10 WHERE k = ?";
	static const char admin_a[] = "UPDATE t_wmy_dl SET v = v + 1 WHERE k = 'a'";
	struct recon_writer *w;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_dl");
	sql(fx, "DROP TABLE IF EXISTS t_wmy_dl_heavy");
	sql(fx, "CREATE TABLE t_wmy_dl (k VARCHAR(64) PRIMARY KEY, v BIGINT NOT NULL) "
		"ENGINE=InnoDB");
	sql(fx, "CREATE TABLE t_wmy_dl_heavy (id INT PRIMARY KEY) ENGINE=InnoDB");
	sql(fx, "INSERT INTO t_wmy_dl VALUES ('a', 0), ('b', 0)");
	w = wopen(job);

	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	/* the admin transaction is the heavier one: InnoDB picks the writer as the victim */
	sql(fx, "START TRANSACTION");
	sql(fx, "INSERT INTO t_wmy_dl_heavy SELECT seq FROM seq_1_to_500");
	sql(fx, "UPDATE t_wmy_dl SET v = v + 1 WHERE k = 'b'");
	if (mysql_send_query(fx->admin, admin_a, (unsigned long)strlen(admin_a)))
		fail_msg("send: %s", mysql_error(fx->admin));
	sleep_ms(300);
	assert_int_equal(wexec(w, upd, (const char *const[]){"b"}, 1, &n, &err), RECON_ERETRY);
	assert_non_null(strstr(err.msg, "Deadlock"));
	w->ops->rollback(w);
	if (mysql_read_query_result(fx->admin))
		fail_msg("admin update: %s", mysql_error(fx->admin));
	sql(fx, "COMMIT");

	/* the retry succeeds */
	begin_ok(w);
	wexec_ok(w, upd, (const char *const[]){"a"}, 1, &n);
	wexec_ok(w, upd, (const char *const[]){"b"}, 1, &n);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT sum(v) FROM t_wmy_dl"), 22);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_dl");
	sql(fx, "DROP TABLE t_wmy_dl_heavy");
	recon_job_free(job);
}

/* The writer's connection id, recorded through it (autocommit) in t_wmy_kill. */
static long writer_id(struct fx *fx, struct recon_writer *w)
{
	int64_t n;

	wexec_ok(w, "INSERT INTO t_wmy_kill (cid) VALUES (CONNECTION_ID())", NULL, 0, &n);
	return sql_long(fx, "SELECT cid FROM t_wmy_kill ORDER BY id DESC LIMIT 1");
}

/* KILL id, then waits until the connection is gone. */
static void kill_id(struct fx *fx, long id)
{
	char q[160];

	snprintf(q, sizeof(q), "KILL %ld", id);
	sql(fx, q);
	snprintf(q, sizeof(q), "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = %ld",
		 id);
	for (int i = 0; i < 100 && sql_long(fx, q) > 0; i++)
		sleep_ms(50);
}

static void test_writer_mysql_killed_connection_reconnects(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_kill", "created_at", NULL);
	static const char ins[] = "INSERT INTO t_wmy_kill (cid) VALUES (CONNECTION_ID())";
	struct recon_writer *w;
	struct recon_err err;
	long old, now;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_kill");
	sql(fx, "CREATE TABLE t_wmy_kill (id INT AUTO_INCREMENT PRIMARY KEY, cid BIGINT, "
		"note VARCHAR(16)) ENGINE=InnoDB");
	w = wopen(job);

	/* outside a transaction: one RECON_ERETRY, then a new session */
	old = writer_id(fx, w);
	kill_id(fx, old);
	assert_int_equal(wexec(w, ins, NULL, 0, &n, &err), RECON_ERETRY);
	assert_no_secret(&err, fx->password);
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(n, 1);
	now = sql_long(fx, "SELECT cid FROM t_wmy_kill ORDER BY id DESC LIMIT 1");
	assert_true(now != old);
	/* the new session has the same settings */
	wexec_ok(w, "SELECT 1 FROM DUAL WHERE @@session.time_zone = '+00:00'", NULL, 0, &n);
	assert_int_equal(n, 1);

	/* inside a transaction: it stays failed until rolled back, then begin reconnects */
	old = writer_id(fx, w);
	begin_ok(w);
	wexec_ok(w, "INSERT INTO t_wmy_kill (note) VALUES ('lost')", NULL, 0, &n);
	kill_id(fx, old);
	assert_int_equal(
	    wexec(w, "INSERT INTO t_wmy_kill (note) VALUES ('lost')", NULL, 0, &n, &err),
	    RECON_ERETRY);
	assert_int_equal(
	    wexec(w, "INSERT INTO t_wmy_kill (note) VALUES ('lost')", NULL, 0, &n, &err),
	    RECON_ERETRY);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);
	w->ops->rollback(w);
	begin_ok(w);
	wexec_ok(w, "INSERT INTO t_wmy_kill (note) VALUES ('kept')", NULL, 0, &n);
	commit_ok(w);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_kill WHERE note = 'lost'"), 0);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_kill WHERE note = 'kept'"), 1);

	/* a commit on a dead connection is RECON_ERETRY too */
	old = writer_id(fx, w);
	begin_ok(w);
	wexec_ok(w, "INSERT INTO t_wmy_kill (note) VALUES ('lost2')", NULL, 0, &n);
	kill_id(fx, old);
	recon_err_init(&err);
	assert_int_equal(w->ops->commit(w, &err), RECON_ERETRY);
	w->ops->rollback(w);
	wexec_ok(w, ins, NULL, 0, &n);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_kill WHERE note = 'lost2'"), 0);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_kill");
	recon_job_free(job);
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

/*
 * Writes instant `instant` into column col of t_wmy_time through a writer
 * whose local time column is col, and returns what the column holds as text
 * (the admin session is UTC).
 */
static void write_read(struct fx *fx, const char *col, const char *zone, int64_t t, char *out,
		       size_t size)
{
	struct recon_job *job = job_new("t_wmy_time", col, zone);
	struct recon_writer *w = wopen(job);
	struct recon_err err;
	const char *wrap = NULL;
	char val[64], q[256];
	int64_t n = -1;

	recon_err_init(&err);
	if (w->ops->time_param(w, t, val, sizeof(val), &wrap, &err) < 0)
		fail_msg("time_param %s: %s", col, err.msg);
	assert_string_equal(wrap, "%s");
	snprintf(q, sizeof(q), "INSERT INTO t_wmy_time (k, %s) VALUES (?, ?)", col);
	wexec_ok(w, q, (const char *const[]){col, val}, 2, &n);
	assert_int_equal(n, 1);
	w->ops->close(w);
	recon_job_free(job);
	snprintf(q, sizeof(q), "SELECT %s FROM t_wmy_time WHERE k = '%s'", col, col);
	sql_value(fx, q, out, size);
}

static void roundtrip_zone(struct fx *fx, const char *zone, const char *instant)
{
	struct recon_tz *tz = NULL;
	struct recon_err err;
	int64_t t = parse_in(instant, NULL), back;
	char buf[64], day[16];

	recon_err_init(&err);
	assert_int_equal(recon_tz_load(&tz, zone, &err), 0);
	sql(fx, "DROP TABLE IF EXISTS t_wmy_time");
	sql(fx, "CREATE TABLE t_wmy_time (k VARCHAR(16) PRIMARY KEY, dt3 DATETIME(3), "
		"ts3 TIMESTAMP(3) NULL, dt0 DATETIME, ts0 TIMESTAMP NULL, d DATE, "
		"txt VARCHAR(40)) ENGINE=InnoDB");

	/* DATETIME: the wall clock in the local zone */
	write_read(fx, "dt3", zone, t, buf, sizeof(buf));
	if ((back = parse_in(buf, tz)) != t)
		fail_msg("%s: DATETIME(3) holds '%s' for %s", zone, buf, instant);
	/* TIMESTAMP: the instant (read back in a UTC session) */
	write_read(fx, "ts3", zone, t, buf, sizeof(buf));
	if ((back = parse_in(buf, NULL)) != t)
		fail_msg("%s: TIMESTAMP(3) holds '%s' UTC for %s", zone, buf, instant);
	/* without fractions: the second, truncated (never rounded up) */
	write_read(fx, "dt0", zone, t, buf, sizeof(buf));
	if ((back = parse_in(buf, tz)) != t - (t % 1000))
		fail_msg("%s: DATETIME holds '%s' for %s", zone, buf, instant);
	write_read(fx, "ts0", zone, t, buf, sizeof(buf));
	if ((back = parse_in(buf, NULL)) != t - (t % 1000))
		fail_msg("%s: TIMESTAMP holds '%s' UTC for %s", zone, buf, instant);
	/* DATE: the local day */
	write_read(fx, "d", zone, t, buf, sizeof(buf));
	recon_date_format(recon_tz_day_of(tz, t), day, sizeof(day));
	assert_string_equal(buf, day);
	/* text: the local wall clock, as the reader parses it */
	write_read(fx, "txt", zone, t, buf, sizeof(buf));
	if ((back = parse_in(buf, tz)) != t)
		fail_msg("%s: VARCHAR holds '%s' for %s", zone, buf, instant);
	sql(fx, "DROP TABLE t_wmy_time");
	recon_tz_free(tz);
}

static void test_writer_mysql_time_param_roundtrip(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job;
	struct recon_writer *w;
	struct recon_err err;
	const char *wrap = NULL;
	char buf[64];
	int64_t t = parse_in("2024-01-16T01:30:11.123Z", NULL);

	setenv(WRITER_VAR, dsn, 1);
	/* exact texts per column type */
	sql(fx, "DROP TABLE IF EXISTS t_wmy_fmt");
	sql(fx, "CREATE TABLE t_wmy_fmt (k INT PRIMARY KEY, ts3 TIMESTAMP(3) NULL, dt6 "
		"DATETIME(6), dt0 DATETIME, txt TEXT, d DATE, n INT) ENGINE=InnoDB");
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
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			job = job_new("t_wmy_fmt", cases[i].col, NULL);
			w = wopen(job);
			recon_err_init(&err);
			assert_int_equal(w->ops->time_param(w, t, buf, sizeof(buf), &wrap, &err),
					 0);
			assert_string_equal(buf, cases[i].want);
			assert_string_equal(wrap, "%s");
			w->ops->close(w);
			recon_job_free(job);
		}
	}
	/* text without milliseconds reads as recon_time_format_local() writes */
	job = job_new("t_wmy_fmt", "txt", NULL);
	w = wopen(job);
	recon_err_init(&err);
	assert_int_equal(w->ops->time_param(w, t - 123, buf, sizeof(buf), &wrap, &err), 0);
	assert_string_equal(buf, "2024-01-16 09:30:11");
	w->ops->close(w);
	recon_job_free(job);
	/* an integer time column, or none at all: RECON_ECONFIG naming it */
	job = job_new("t_wmy_fmt", "n", NULL);
	w = wopen(job);
	recon_err_init(&err);
	assert_int_equal(w->ops->time_param(w, t, buf, sizeof(buf), &wrap, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "'n'"));
	w->ops->close(w);
	recon_job_free(job);
	job = job_new("t_wmy_fmt", "no_such_col", NULL);
	w = wopen(job);
	recon_err_init(&err);
	assert_int_equal(w->ops->time_param(w, t, buf, sizeof(buf), &wrap, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "'no_such_col'"));
	w->ops->close(w);
	recon_job_free(job);
	sql(fx, "DROP TABLE t_wmy_fmt");

	/* round trips: 16 Jan 09:30 in Shanghai is the day before in UTC */
	roundtrip_zone(fx, "Asia/Shanghai", "2024-01-15T17:30:11.123Z");
	roundtrip_zone(fx, "Asia/Shanghai", "2024-01-16T01:30:11.000Z");
	roundtrip_zone(fx, "America/New_York", "2024-07-04T03:59:59.999Z");
	roundtrip_zone(fx, "-03:30", "2024-01-16T02:00:00.500Z");
	roundtrip_zone(fx, "UTC", "2024-02-29T23:59:59.001Z");
}

/* The DSN with its password replaced by `pw` (mysql://user:pw@host...). */
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
static void test_writer_mysql_replay_other_unique_index(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_replay", "created_at", NULL);
	struct recon_writer *w;
	struct recon_diff d;
	struct recon_err err;
	int64_t n = -1;

	setenv(WRITER_VAR, dsn, 1);
	job->actions.replay_status[RECON_ST_SUCCESS] = recon_xstrdup("PAID");
	sql(fx, "DROP TABLE IF EXISTS t_wmy_replay");
	sql(fx, "CREATE TABLE t_wmy_replay (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
		"out_trade_no VARCHAR(64) NOT NULL, amount_cents BIGINT NOT NULL, "
		"currency CHAR(3) NOT NULL, status VARCHAR(16) NOT NULL, created_at DATETIME(3) "
		"NOT NULL, provider_txn VARCHAR(64) NOT NULL DEFAULT '', "
		"UNIQUE KEY uk_replay_key (out_trade_no), UNIQUE KEY uk_provider_txn "
		"(provider_txn)) ENGINE=InnoDB");
	sql(fx, "CREATE TABLE IF NOT EXISTS idempotency_record (id BIGINT NOT NULL "
		"AUTO_INCREMENT PRIMARY KEY, idem_key VARCHAR(128) NOT NULL, biz_type VARCHAR(32) "
		"NOT NULL, status VARCHAR(16) NOT NULL, result TEXT NULL, UNIQUE KEY "
		"uk_idem (idem_key)) ENGINE=InnoDB");
	sql(fx, "DELETE FROM idempotency_record WHERE idem_key LIKE 'recon:test_job:replay:R12-%'");
	w = wopen(job);
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
	assert_no_secret(&err, fx->password);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM t_wmy_replay"), 1);
	assert_int_equal(sql_long(fx, "SELECT count(*) FROM idempotency_record WHERE idem_key = "
				      "'recon:test_job:replay:R12-2'"),
			 0);
	/* the writer is usable afterwards (the transaction was rolled back) */
	wexec_ok(w, "SELECT 1 FROM DUAL", NULL, 0, &n);
	w->ops->close(w);
	sql(fx, "DROP TABLE t_wmy_replay");
	sql(fx, "DELETE FROM idempotency_record WHERE idem_key LIKE 'recon:test_job:replay:R12-%'");
	recon_job_free(job);
}

/*
 * Issue 12 #10: a writer whose server freezes (here a proxy that stops
 * forwarding, as SIGSTOP would) fails the call after the I/O timeout as a lost
 * connection (retried, then the circuit breaker), instead of waiting forever
 * with the job's lock held.
 */
static void test_writer_mysql_frozen_server_times_out(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_frozen", "created_at", NULL);
	struct recon_dsn_mysql d;
	struct recon_writer *w;
	struct recon_err err;
	struct support_proxy p;
	struct timespec t0, t1;
	char wdsn[512];
	int64_t n = -1;
	double took;

	recon_dsn_mysql_init(&d);
	recon_err_init(&err);
	assert_int_equal(recon_dsn_mysql_parse(dsn, DSN_VAR, &d, &err), 0);
	support_proxy_start(&p, d.host ? d.host : "127.0.0.1", d.port ? d.port : 3306);
	snprintf(wdsn, sizeof(wdsn), "mysql://%s:%s@127.0.0.1:%u/%s?read_timeout=1", d.user,
		 d.password ? d.password : "", p.port, d.db);
	recon_dsn_mysql_release(&d);
	setenv(WRITER_VAR, wdsn, 1);
	w = wopen(job);
	wexec_ok(w, "SELECT 1 FROM DUAL", NULL, 0, &n);
	p.frozen = 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(wexec(w, "SELECT 2 FROM DUAL", NULL, 0, &n, &err), RECON_ERETRY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (took > 8)
		fail_msg("the frozen server held the call for %.1f s", took);
	assert_no_secret(&err, fx->password);
	w->ops->close(w);
	support_proxy_stop(&p);
	setenv(WRITER_VAR, dsn, 1);
	recon_job_free(job);
}

static void test_writer_mysql_unavailable_without_password(void **state)
{
	struct fx *fx = *state;
	const char *dsn = dsn_or_skip();
	struct recon_job *job = job_new("t_wmy_pw", "created_at", NULL);
	struct recon_writer *w = NULL;
	struct recon_err err;
	char bad[512];
	const char *p;

	/* a wrong password */
	dsn_with_password(dsn, "wrong-Secret-pw", bad, sizeof(bad));
	setenv(WRITER_VAR, bad, 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_mysql.open(&w, job, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_null(strstr(err.msg, "mysql://"));
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, "Access denied"));

	/* a server that is down: port 1 refuses */
	p = strrchr(bad, '@');
	assert_non_null(p);
	snprintf(bad + (p - bad), sizeof(bad) - (size_t)(p - bad), "@127.0.0.1:1/recon_test");
	setenv(WRITER_VAR, bad, 1);
	recon_err_init(&err);
	assert_int_equal(recon_writer_mysql.open(&w, job, &err), RECON_EUNAVAIL);
	assert_null(w);
	assert_no_secret(&err, "wrong-Secret-pw");
	assert_non_null(strstr(err.msg, "cannot connect"));

	/* a password that shows up in a server message is scrubbed too */
	setenv(WRITER_VAR, dsn, 1);
	w = wopen(job);
	if (*fx->password) {
		char q[200];
		snprintf(q, sizeof(q), "SELECT * FROM `%s`", fx->password);
		assert_int_equal(wexec(w, q, NULL, 0, NULL, &err),
				 RECON_ECONFIG); /* no such table */
		assert_no_secret(&err, fx->password);
		assert_non_null(strstr(err.msg, "***"));
	}
	w->ops->close(w);
	recon_job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_mysql_open_close),
	    cmocka_unit_test(test_writer_mysql_idempotent_insert),
	    cmocka_unit_test(test_writer_mysql_constraint_violation_is_einput),
	    cmocka_unit_test(test_writer_mysql_transactions),
	    cmocka_unit_test(test_writer_mysql_lock_wait_timeout_retry),
	    cmocka_unit_test(test_writer_mysql_deadlock_retry),
	    cmocka_unit_test(test_writer_mysql_killed_connection_reconnects),
	    cmocka_unit_test(test_writer_mysql_time_param_roundtrip),
	    cmocka_unit_test(test_writer_mysql_replay_other_unique_index),
	    cmocka_unit_test(test_writer_mysql_frozen_server_times_out),
	    cmocka_unit_test(test_writer_mysql_unavailable_without_password),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

#else /* built without MySQL: nothing to test */
int main(void)
{
	return 0;
}
#endif
