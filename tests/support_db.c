/* The engine table and the skip rule of the database tests (support_db.h). */
#include "support_db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <mysql.h>

#include "recon_dsn.h"

const struct support_db_engine support_db_engines[] = {
    {
	.id = SUPPORT_DB_POSTGRES,
	.name = "postgres",
	.tag = "pg",
	.env_prefix = "RECON_TEST_PG",
	.dsn_var = "RECON_TEST_PG_DSN",
	.ro_var = "RECON_TEST_PG_RO_DSN",
	.socket_var = "RECON_TEST_PG_SOCKET_DSN",
	.owner_password = "pg-owner-pw",
	.quote = '"',
	.serial_key = "id serial PRIMARY KEY",
	.table_options = "",
	.begin = "BEGIN",
    },
    {
	.id = SUPPORT_DB_MYSQL,
	.name = "mysql",
	.tag = "my",
	.env_prefix = "RECON_TEST_MYSQL",
	.dsn_var = "RECON_TEST_MYSQL_DSN",
	.ro_var = "RECON_TEST_MYSQL_RO_DSN",
	.socket_var = "RECON_TEST_MYSQL_SOCKET_DSN",
	.owner_password = "my-owner-pw",
	.quote = '`',
	.serial_key = "id INT AUTO_INCREMENT PRIMARY KEY",
	.table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	.begin = "START TRANSACTION",
    },
    {.name = NULL},
};

/* Set by support_db_run() around each group: tests are one process, one group at a time. */
static const struct support_db_engine *current;

struct support_db {
	const struct support_db_engine *e;
	PGconn *pg;
	MYSQL *my;
};

const struct support_db_engine *support_db_engine(const char *name)
{
	for (const struct support_db_engine *e = support_db_engines; e->name; e++)
		if (!strcmp(e->name, name))
			return e;
	return NULL;
}

const struct support_db_engine *support_db_current(void)
{
	return current;
}

const char *support_db_env(const char *var)
{
	const char *v = getenv(var);

	return v && *v ? v : NULL;
}

static bool under_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

const char *support_db_dsn_or_skip(const char *var)
{
	const char *v = support_db_env(var);

	if (v)
		return v;
	if (under_ci())
		fail_msg("%s is not set under CI=true: start tests/db/servers.sh", var);
	skip();
	return NULL;
}

int support_db_gate(const char *prog, const char *const vars[])
{
	int set = 0, unset = 0;

	for (size_t i = 0; vars[i]; i++) {
		if (support_db_env(vars[i])) {
			set++;
			continue;
		}
		unset++;
		if (under_ci())
			printf(
			    "%s: FAILED: %s is not set under CI=true: start tests/db/servers.sh\n",
			    prog, vars[i]);
		else
			printf("%s: %s is not set: its tests are skipped\n", prog, vars[i]);
	}
	if (unset && under_ci())
		return 1;
	if (!set) {
		printf("%s: SKIPPED: no database server (eval \"$(tests/db/servers.sh start)\")\n",
		       prog);
		return SUPPORT_DB_SKIP;
	}
	return 0;
}

int support_db_run(const char *suite, const struct support_db_case *cases, size_t ncases,
		   CMFixtureFunction setup, CMFixtureFunction teardown)
{
	const char *vars[sizeof(support_db_engines) / sizeof(support_db_engines[0])];
	struct CMUnitTest *tests = calloc(ncases ? ncases : 1, sizeof(*tests));
	size_t nvars = 0;
	int failed = 0, rc;

	if (!tests)
		return 1;
	for (const struct support_db_engine *e = support_db_engines; e->name; e++)
		vars[nvars++] = e->dsn_var;
	vars[nvars] = NULL;
	rc = support_db_gate(suite, vars);
	for (const struct support_db_engine *e = support_db_engines; !rc && e->name; e++) {
		char name[128];
		size_t n = 0;

		if (!support_db_env(e->dsn_var))
			continue;
		for (size_t i = 0; i < ncases; i++)
			if (!cases[i].only || !strcmp(cases[i].only, e->name))
				tests[n++] = cases[i].test;
		snprintf(name, sizeof(name), "%s %s", suite, e->name);
		printf("[==========] %s\n", name);
		fflush(stdout);
		current = e;
		if (_cmocka_run_group_tests(name, tests, n, setup, teardown))
			failed = 1;
		current = NULL;
	}
	free(tests);
	mysql_library_end();
	if (rc || failed)
		return rc ? rc : failed;
	/* a half-run suite is not a pass: an engine it did not reach may be broken */
	for (const struct support_db_engine *e = support_db_engines; e->name; e++)
		if (!support_db_env(e->dsn_var)) {
			printf("%s: SKIPPED: not run on %s (%s is not set)\n", suite, e->name,
			       e->dsn_var);
			return SUPPORT_DB_SKIP;
		}
	return 0;
}

struct support_db *support_db_connect(const struct support_db_engine *e, const char *dsn)
{
	struct support_db *db = calloc(1, sizeof(*db));
	struct recon_dsn_mysql d;
	struct recon_err err;

	if (!dsn)
		dsn = support_db_env(e->dsn_var);
	if (!db || !dsn) {
		fprintf(stderr, "%s is not set\n", e->dsn_var);
		free(db);
		return NULL;
	}
	db->e = e;
	if (e->id == SUPPORT_DB_POSTGRES) {
		db->pg = PQconnectdb(dsn);
		if (PQstatus(db->pg) != CONNECTION_OK) {
			fprintf(stderr, "cannot connect with %s: %s", e->dsn_var,
				PQerrorMessage(db->pg));
			goto fail;
		}
		PQclear(PQexec(db->pg, "SET client_min_messages = warning"));
		return db;
	}
	recon_dsn_mysql_init(&d);
	recon_err_init(&err);
	if (recon_dsn_mysql_parse(dsn, e->dsn_var, &d, &err) < 0) {
		fprintf(stderr, "%s: %s\n", e->dsn_var, err.msg);
		goto fail;
	}
	db->my = mysql_init(NULL);
	if (!db->my ||
	    !mysql_real_connect(db->my, d.host, d.user, d.password, d.db, d.port, d.socket,
				CLIENT_MULTI_STATEMENTS) ||
	    mysql_query(db->my, "SET time_zone = '+00:00'")) {
		fprintf(stderr, "cannot connect with %s: %s\n", e->dsn_var,
			db->my ? mysql_error(db->my) : "out of memory");
		recon_dsn_mysql_release(&d);
		goto fail;
	}
	recon_dsn_mysql_release(&d);
	return db;
fail:
	support_db_close(db);
	return NULL;
}

void support_db_close(struct support_db *db)
{
	if (!db)
		return;
	PQfinish(db->pg);
	if (db->my)
		mysql_close(db->my);
	free(db);
}

const struct support_db_engine *support_db_engine_of(const struct support_db *db)
{
	return db->e;
}

void *support_db_handle(struct support_db *db)
{
	return db->pg ? (void *)db->pg : (void *)db->my;
}

struct recon_job *support_db_job(const struct support_db_engine *e, const char *table,
				 const char *dsn_env, const char *more)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256], path[300];
	struct recon_job *job = NULL;
	struct recon_err err;
	FILE *f;
	int rc;

	snprintf(dir, sizeof(dir), "%s/recon-support-db.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/job.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(
	    f,
	    "{\"job\": \"support_db\", \"timezone\": \"Asia/Shanghai\", \"currency\": \"CNY\",\n"
	    " \"upstream\": {\"kind\": \"csv\", \"path\": \"statements/{date}.csv\",\n"
	    "  \"delimiter\": \",\", \"header\": true,\n"
	    "  \"columns\": {\"key\": \"k\", \"amount\": \"amount\", \"status\": \"status\",\n"
	    "   \"time\": \"time\"}},\n"
	    " \"local\": {\"kind\": \"%s\", \"table\": \"%s\", \"dsn_env\": \"%s\",\n"
	    "  \"columns\": {\"key\": \"k\", \"amount_minor\": \"cents\", \"status\": \"st\",\n"
	    "   \"time\": \"at\"}},\n"
	    " \"status_map\": {\"upstream\": {\"SUCCESS\": \"success\"},\n"
	    "  \"local\": {\"PAID\": \"success\"}},\n"
	    " \"state\": \"state/recon.db\"%s%s}\n",
	    e->name, table, dsn_env, more ? ",\n " : "", more ? more : "");
	assert_int_equal(fclose(f), 0);
	recon_err_init(&err);
	rc = recon_job_load(&job, path, &err);
	unlink(path);
	rmdir(dir);
	if (rc < 0)
		fail_msg("support_db_job: %s: %s", err.where, err.msg);
	return job;
}

void support_db_pg_proxy(struct support_proxy *p, const char *dsn, char *out, size_t size)
{
	const char *host = "127.0.0.1", *user = "", *pw = "", *db = "";
	PQconninfoOption *opts = PQconninfoParse(dsn, NULL);
	unsigned port = 5432;

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
	support_proxy_start(p, host, port);
	snprintf(out, size, "host=127.0.0.1 port=%u user=%s password=%s dbname=%s sslmode=disable",
		 p->port, user, pw, db);
	PQconninfoFree(opts);
}

/* Runs q; on an error, copies the server's message into msg and returns -1. */
static int run(struct support_db *db, const char *q, char *msg, size_t size)
{
	int st;

	if (db->pg) {
		PGresult *r = PQexec(db->pg, q);
		ExecStatusType st = PQresultStatus(r);
		int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;

		if (rc < 0)
			snprintf(msg, size, "%s", PQresultErrorMessage(r));
		PQclear(r);
		return rc;
	}
	if (mysql_query(db->my, q))
		goto fail;
	do { /* every result of a multi-statement text */
		mysql_free_result(mysql_store_result(db->my));
		st = mysql_next_result(db->my);
		if (st > 0)
			goto fail;
	} while (st == 0);
	return 0;
fail:
	snprintf(msg, size, "%s", mysql_error(db->my));
	return -1;
}

void support_db_exec(struct support_db *db, const char *q)
{
	char msg[512];

	if (run(db, q, msg, sizeof(msg)) < 0)
		fail_msg("%s: %s", q, msg);
}

void support_db_execf(struct support_db *db, const char *fmt, ...)
{
	char q[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(q))
		fail_msg("statement too long: %.60s...", q);
	support_db_exec(db, q);
}

int support_db_try(struct support_db *db, const char *q)
{
	char msg[512];

	return run(db, q, msg, sizeof(msg));
}

static char *dup_or_null(const char *v)
{
	char *s = strdup(v ? v : "(null)");

	assert_non_null(s);
	return s;
}

char *support_db_value(struct support_db *db, const char *q, const char *col)
{
	char *v = NULL;

	if (db->pg) {
		PGresult *r = PQexec(db->pg, q);
		int c = col ? PQfnumber(r, col) : 0;
		char msg[512];

		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && c >= 0)
			v = dup_or_null(PQgetisnull(r, 0, c) ? NULL : PQgetvalue(r, 0, c));
		else
			snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(r));
		PQclear(r);
		if (!v)
			fail_msg("%s: %s", q, *msg ? msg : "no row, or no such column");
	} else {
		MYSQL_RES *r;
		MYSQL_ROW row;
		MYSQL_FIELD *f;

		if (mysql_query(db->my, q) || !(r = mysql_store_result(db->my)))
			fail_msg("%s: %s", q, mysql_error(db->my));
		row = mysql_fetch_row(r);
		f = mysql_fetch_fields(r);
		for (unsigned i = 0; row && !v && i < mysql_num_fields(r); i++)
			if (!col || !strcmp(f[i].name, col))
				v = dup_or_null(row[i]);
		mysql_free_result(r);
		if (!v)
			fail_msg("%s: no row, or no column '%s'", q, col ? col : "(first)");
	}
	return v;
}

long support_db_long(struct support_db *db, const char *q)
{
	char *v = support_db_value(db, q, NULL);
	long n = strtol(v, NULL, 10);

	free(v);
	return n;
}

char *support_db_literal(struct support_db *db, const char *s)
{
	size_t len = strlen(s);
	char *out;

	if (db->pg) {
		char *lit = PQescapeLiteral(db->pg, s, len);

		if (!lit)
			fail_msg("cannot quote '%s': %s", s, PQerrorMessage(db->pg));
		out = strdup(lit);
		PQfreemem(lit);
	} else {
		out = malloc(2 * len + 3);
		if (out) {
			unsigned long n = mysql_real_escape_string(db->my, out + 1, s, len);
			out[0] = '\'';
			out[n + 1] = '\'';
			out[n + 2] = '\0';
		}
	}
	assert_non_null(out);
	return out;
}

/* The read-only login's names: MySQL has one account per host pattern. */
static const char *const ro_users[][3] = {
    [SUPPORT_DB_POSTGRES] = {"recon_ro", NULL},
    [SUPPORT_DB_MYSQL] = {"'recon_ro'@'%'", "'recon_ro'@'localhost'", NULL},
};

void support_db_grant_ro(struct support_db *db, const char *table)
{
	for (const char *const *u = ro_users[db->e->id]; *u; u++)
		support_db_execf(db, "GRANT SELECT ON %s TO %s", table, *u);
}

void support_db_revoke_ro(struct support_db *db, const char *table)
{
	for (const char *const *u = ro_users[db->e->id]; *u; u++)
		support_db_execf(db, "REVOKE SELECT ON %s FROM %s", table, *u);
}
