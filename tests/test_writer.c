/*
 * Tests for src/recon_writer.c: the registry (a writer found by its backend
 * name, none for csv), the dialect each descriptor carries (placeholders,
 * quoting, the upsert form, the transient-error test), and the transaction
 * bookkeeping every writer shares, through the SQLite writer (no server):
 * a poisoned transaction never commits, a COMMIT that fails (a deferred
 * foreign key) rolls back and leaves no transaction open, misuse is
 * RECON_EINTERNAL, and closing rolls an open transaction back. The server
 * writers' own behaviour is tests/test_writer_db.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_writer.h"
#include "support_jobs.h"

static void test_writer_registry(void **state)
{
	(void)state;
	assert_ptr_equal(recon_writer_find("sqlite"), &recon_writer_sqlite);
#ifdef RECON_HAVE_POSTGRES
	assert_ptr_equal(recon_writer_find("postgres"), &recon_writer_postgres);
#endif
#ifdef RECON_HAVE_MYSQL
	assert_ptr_equal(recon_writer_find("mysql"), &recon_writer_mysql);
#endif
	/* a csv local side has nothing to write to */
	assert_null(recon_writer_find("csv"));
	assert_null(recon_writer_find("nope"));
	assert_null(recon_writer_find(NULL));
	assert_int_equal(recon_writer_sqlite.flags & RECON_WRITER_DSN, 0);
}

/* The INSERT the writer's dialect writes for table t (a, b), unique on a. */
static void assert_insert(const struct recon_writer_backend *be, const char *want)
{
	static const char *const cols[] = {"a", "b"};
	struct recon_writer w = {.backend = be};
	struct recon_buf b;
	char ph[16];

	recon_buf_init(&b);
	recon_writer_add_insert(&w, &b, "t", cols, 2, cols, 1);
	assert_string_equal(b.s, want);
	recon_buf_release(&b);
	assert_int_equal(recon_writer_quote(&w), want[12]);
	assert_string_equal(recon_writer_ph(&w, 3, ph, sizeof(ph)),
			    be->placeholder == RECON_WRITER_PH_DOLLAR ? "$3" : "?");
}

static void test_writer_dialect(void **state)
{
	(void)state;
	assert_insert(
	    &recon_writer_sqlite,
	    "INSERT INTO \"t\" (\"a\", \"b\") VALUES (?, ?) ON CONFLICT (\"a\") DO NOTHING");
	/* a transient failure: another connection holds the file (extended codes too) */
	assert_true(recon_writer_sqlite.transient(SQLITE_BUSY, NULL));
	assert_true(recon_writer_sqlite.transient(SQLITE_LOCKED, NULL));
	assert_true(recon_writer_sqlite.transient(SQLITE_BUSY_SNAPSHOT, NULL));
	assert_false(recon_writer_sqlite.transient(SQLITE_CONSTRAINT_NOTNULL, NULL));
	assert_false(recon_writer_sqlite.transient(SQLITE_READONLY, NULL));
#ifdef RECON_HAVE_POSTGRES
	assert_insert(&recon_writer_postgres, "INSERT INTO \"t\" (\"a\", \"b\") VALUES ($1, $2) ON "
					      "CONFLICT (\"a\") DO NOTHING");
	/* serialization, deadlock, lock not available, connection lost, shutdown */
	static const char *const pg_yes[] = {"40001", "40P01", "55P03", "08006", "57P01"};
	for (size_t i = 0; i < sizeof(pg_yes) / sizeof(pg_yes[0]); i++)
		assert_true(recon_writer_postgres.transient(0, pg_yes[i]));
	/* 08P01 is also a bad parameter count; unique and not null violations are not */
	assert_false(recon_writer_postgres.transient(0, "08P01"));
	assert_false(recon_writer_postgres.transient(0, "23505"));
	assert_false(recon_writer_postgres.transient(0, "23502"));
	assert_false(recon_writer_postgres.transient(0, NULL));
#endif
#ifdef RECON_HAVE_MYSQL
	assert_insert(&recon_writer_mysql,
		      "INSERT INTO `t` (`a`, `b`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `a` = `a`");
	/* lock wait timeout, deadlock, re-prepare, server gone, lost, killed */
	static const long my_yes[] = {1205, 1213, 1615, 2006, 2013, 1927};
	for (size_t i = 0; i < sizeof(my_yes) / sizeof(my_yes[0]); i++)
		assert_true(recon_writer_mysql.transient(my_yes[i], NULL));
	assert_false(recon_writer_mysql.transient(1062, NULL)); /* duplicate entry */
	assert_false(recon_writer_mysql.transient(1048, NULL)); /* cannot be null */
#endif
}

struct fx {
	char dir[64], path[96];
	sqlite3 *db; /* another connection, to look */
	struct recon_job *job;
	struct recon_writer *w;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct recon_err err;

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_writer.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/flow.db", fx->dir);
	assert_int_equal(sqlite3_open(fx->path, &fx->db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(fx->db,
				      "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"
				      "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
				      "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER "
				      "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	fx->job = support_job_new();
	free(fx->job->local.path);
	fx->job->local.path = recon_xstrdup(fx->path);
	recon_err_init(&err);
	if (recon_writer_open(&fx->w, recon_writer_find("sqlite"), fx->job, &err) < 0)
		fail_msg("open: %s: %s", err.where, err.msg);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	recon_writer_close(fx->w);
	recon_job_free(fx->job);
	sqlite3_close(fx->db);
	unlink(fx->path);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static long count(struct fx *fx, const char *table)
{
	char q[64];
	sqlite3_stmt *st;
	long n;

	snprintf(q, sizeof(q), "SELECT count(*) FROM %s", table);
	assert_int_equal(sqlite3_prepare_v2(fx->db, q, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* Runs sql through the writer with up to two parameters (one per '?'). */
static int x(struct fx *fx, const char *sql, const char *p1, const char *p2, struct recon_err *err)
{
	const char *p[2] = {p1, p2};
	int64_t n;
	int np = 0;

	for (const char *c = sql; *c; c++)
		np += *c == '?';
	recon_err_init(err);
	return recon_writer_exec(fx->w, sql, p, np, &n, err);
}

static void ok(int rc, const struct recon_err *err)
{
	if (rc < 0)
		fail_msg("%s: %s", err->where, err->msg);
}

static const char ins[] = "INSERT INTO t (k, v) VALUES (?, ?)";

static void test_writer_transactions(void **state)
{
	struct fx *fx = *state;
	struct recon_err err;

	assert_ptr_equal(fx->w->backend, &recon_writer_sqlite);
	assert_string_equal(fx->w->where, fx->path);
	/* rollback leaves nothing, commit keeps both */
	recon_err_init(&err);
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, ins, "A", "1", &err), &err);
	recon_writer_rollback(fx->w);
	assert_false(fx->w->in_tx);
	assert_int_equal(count(fx, "t"), 0);
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, ins, "A", "1", &err), &err);
	ok(x(fx, ins, "B", "2", &err), &err);
	ok(recon_writer_commit(fx->w, &err), &err);
	assert_int_equal(count(fx, "t"), 2);

	/* a failed statement poisons the transaction: SQLite alone would commit "C" */
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, ins, "C", "3", &err), &err);
	assert_int_equal(x(fx, ins, "D", NULL, &err), RECON_ECONFIG);
	assert_int_equal(x(fx, ins, "E", "5", &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "a statement earlier in the transaction failed"));
	recon_err_init(&err);
	assert_int_equal(recon_writer_commit(fx->w, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "transaction rolled back"));
	assert_non_null(strstr(err.msg, "NOT NULL"));
	assert_false(fx->w->in_tx);
	assert_int_equal(count(fx, "t"), 2);

	/* misuse is reported, not executed */
	recon_err_init(&err);
	assert_int_equal(recon_writer_commit(fx->w, &err), RECON_EINTERNAL);
	ok(recon_writer_begin(fx->w, &err), &err);
	assert_int_equal(recon_writer_begin(fx->w, &err), RECON_EINTERNAL);
	recon_writer_rollback(fx->w);
	recon_writer_rollback(fx->w);

	/* autocommit again outside begin/commit */
	ok(x(fx, ins, "F", "6", &err), &err);
	assert_int_equal(count(fx, "t"), 3);
}

/*
 * A COMMIT the engine refuses (a deferred foreign key, checked at COMMIT):
 * SQLite keeps the transaction open after it; the writer rolls it back, so
 * nothing of it stays and the next begin works.
 */
static void test_writer_failed_commit_rolls_back(void **state)
{
	struct fx *fx = *state;
	struct recon_err err;

	ok(x(fx, "PRAGMA foreign_keys = ON", NULL, NULL, &err), &err);
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, "INSERT INTO child (id, parent) VALUES (?, ?)", "1", "42", &err), &err);
	recon_err_init(&err);
	/* COMMIT's result code is the primary one: a constraint, the data's fault */
	assert_int_equal(recon_writer_commit(fx->w, &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "FOREIGN KEY"));
	assert_false(fx->w->in_tx);
	assert_int_equal(count(fx, "child"), 0);
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, "INSERT INTO parent (id) VALUES (?)", "42", NULL, &err), &err);
	ok(x(fx, "INSERT INTO child (id, parent) VALUES (?, ?)", "1", "42", &err), &err);
	ok(recon_writer_commit(fx->w, &err), &err);
	assert_int_equal(count(fx, "child"), 1);

	/* and closing the writer rolls an open transaction back */
	ok(recon_writer_begin(fx->w, &err), &err);
	ok(x(fx, ins, "G", "7", &err), &err);
	recon_writer_close(fx->w);
	fx->w = NULL;
	assert_int_equal(count(fx, "t"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_registry),
	    cmocka_unit_test(test_writer_dialect),
	    cmocka_unit_test_setup_teardown(test_writer_transactions, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_writer_failed_commit_rolls_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
