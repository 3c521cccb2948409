/*
 * The database engines the tests run over, and the skip rule.
 *
 * support_db_engines[] has one row per engine: its name (the "kind" of a
 * side or writer), the variables tests/db/servers.sh exports for it, and
 * the SQL that differs between engines. A test file written once runs over
 * the table through support_db_run(): one cmocka group per engine.
 *
 * The skip rule: an engine whose owner DSN variable is unset or empty is
 * skipped (a line on stdout says so). When no engine a binary needs is
 * available, the binary exits 77, which ctest reports as "Skipped"
 * (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt), never "Passed". Under
 * CI=true a missing DSN is a failure: exit 1, with a line naming the
 * variable. Inside a test, support_db_dsn_or_skip() applies the same rule
 * to one variable (cmocka skip(), or a failure under CI=true).
 *
 * struct support_db is a setup connection for a test's own SQL (creating
 * tables, granting, killing sessions), through the engine's client library;
 * an error in it fails the running test.
 */
#ifndef RECON_SUPPORT_DB_H
#define RECON_SUPPORT_DB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "recon_err.h"
#include "recon_job.h"
#include "support_proxy.h"

/* The exit status ctest reads as "Skipped" (SKIP_RETURN_CODE). */
#define SUPPORT_DB_SKIP 77

enum support_db_id {
	SUPPORT_DB_POSTGRES,
	SUPPORT_DB_MYSQL,
};

struct support_db_engine {
	enum support_db_id id;
	const char *name;	    /* "postgres", "mysql": a side's or writer's kind */
	const char *tag;	    /* "pg", "my": short, for table names (t_pg_values) */
	const char *env_prefix;	    /* "RECON_TEST_PG", for a test's own variables */
	const char *dsn_var;	    /* the owner, with a password, over TCP */
	const char *ro_var;	    /* recon_ro: no table rights until a test grants them */
	const char *socket_var;	    /* over the Unix socket (PostgreSQL: the superuser) */
	const char *owner_password; /* the owner's password, which no message may show */
	char quote;		    /* identifier quote: '"' or '`' */
	const char *serial_key;	    /* an auto-numbered primary key column named id */
	const char *table_options;  /* what follows CREATE TABLE t (...): "" or ENGINE=... */
	const char *begin;	    /* the statement opening a transaction */
};

/* Every engine, ending with a row whose name is NULL. */
extern const struct support_db_engine support_db_engines[];

/* The engine named `name` ("postgres", "mysql"), or NULL. */
const struct support_db_engine *support_db_engine(const char *name);

/* The engine whose group support_db_run() is running; NULL outside one. */
const struct support_db_engine *support_db_current(void);

/* The value of `var` when set and not empty, else NULL. */
const char *support_db_env(const char *var);

/*
 * In a test: the value of `var`. Unset or empty: skip() (cmocka leaves the
 * test there), or a failure under CI=true.
 */
const char *support_db_dsn_or_skip(const char *var);

/*
 * The skip rule for a whole binary `prog` needing the variables `vars`
 * (NULL-terminated). Returns 0 when the tests may run: under CI=true all
 * must be set, otherwise one is enough (tests needing a missing one skip
 * through support_db_dsn_or_skip()). Else prints why and returns the exit
 * status for main(): SUPPORT_DB_SKIP when none is set, 1 under CI=true.
 */
int support_db_gate(const char *prog, const char *const vars[]);

/* A case of a suite over the engines: `only` NULL runs it on every engine, else
 * on the engine of that name only. */
struct support_db_case {
	const char *only;
	struct CMUnitTest test;
};

/*
 * Runs the cases as one cmocka group per engine whose dsn_var is set, named
 * "<suite> <engine>"; setup and teardown run per group and read the engine
 * from support_db_current(). Returns main()'s exit status: what
 * support_db_gate() says over the engines' dsn_var when it is not 0, else 1
 * when a group had a failure, else 0.
 */
int support_db_run(const char *suite, const struct support_db_case *cases, size_t ncases,
		   CMFixtureFunction setup, CMFixtureFunction teardown);

/*
 * A job loaded by recon_job_load() from JSON text: zone Asia/Shanghai,
 * currency CNY, a CSV upstream, and a local side of engine e reading table
 * `table` through the variable `dsn_env` (columns: key "k", amount_minor
 * "cents", status "st" with PAID as success, time "at"). `more` is further
 * top-level members ("\"actions\": {...}", no leading comma) or NULL. Tests
 * copy its local side as the template of theirs, so that how a side names
 * its backend stays the loader's business. Caller frees with
 * recon_job_free(); fails the test when the loader refuses the text.
 */
struct recon_job *support_db_job(const struct support_db_engine *e, const char *table,
				 const char *dsn_env, const char *more);

/*
 * Starts proxy p (support_proxy.h) in front of the PostgreSQL server `dsn`
 * names and writes to out a keyword DSN reaching that server through p: the
 * same user, password and database. For the frozen-server tests; the caller
 * stops p with support_proxy_stop().
 */
void support_db_pg_proxy(struct support_proxy *p, const char *dsn, char *out, size_t size);

/* A setup connection; opaque. */
struct support_db;

/*
 * Connects to engine `e` with `dsn` (NULL: the value of e->dsn_var): a
 * PostgreSQL session at client_min_messages = warning, a MySQL one with
 * time_zone '+00:00'. Returns NULL after printing why on failure (usable
 * in group setups); caller frees with support_db_close().
 */
struct support_db *support_db_connect(const struct support_db_engine *e, const char *dsn);

/* Closes db; NULL-safe. */
void support_db_close(struct support_db *db);

/* The engine db is connected to. */
const struct support_db_engine *support_db_engine_of(const struct support_db *db);

/* The client library's handle: PGconn * or MYSQL *; borrowed. */
void *support_db_handle(struct support_db *db);

/* Runs q, one statement or several separated by ';' (results discarded); an
 * error fails the test. */
void support_db_exec(struct support_db *db, const char *q);

/* support_db_exec() of a formatted statement. */
void support_db_execf(struct support_db *db, const char *fmt, ...) RECON_PRINTF(2, 3);

/* Runs q; returns 0, or -1 on an error (not failing the test; for teardowns). */
int support_db_try(struct support_db *db, const char *q);

/*
 * Column `col` (NULL: the first) of q's first row, as a string the caller
 * frees; "(null)" for SQL NULL. No row, no such column or an error fails
 * the test.
 */
char *support_db_value(struct support_db *db, const char *q, const char *col);

/* The first column of q's first row as a number. */
long support_db_long(struct support_db *db, const char *q);

/* s as an SQL string literal, quotes included; caller frees. */
char *support_db_literal(struct support_db *db, const char *s);

/* Grants (revokes) SELECT on `table` to the read-only login of ro_var. */
void support_db_grant_ro(struct support_db *db, const char *table);
void support_db_revoke_ro(struct support_db *db, const char *table);

#endif
