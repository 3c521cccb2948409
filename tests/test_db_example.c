/*
 * The example job (examples/basic) through every database kind: the same
 * flow loaded into SQLite, PostgreSQL and MariaDB must give the same classes
 * per key (same amounts, statuses and times; only origins differ), with the
 * built recon binary ($RECON_BINARY) run as a user would:
 * `run --job J --date 2024-01-16 --dry-run`, then `diff --job J --format jsonl`.
 *
 * Variants: the local flow in PostgreSQL and in MariaDB (each read by a login
 * with SELECT on payment_flow only), and the provider statement loaded into a
 * table serving as the upstream (PostgreSQL upstream with MariaDB local, and
 * the reverse). Outages: a server that does not answer (with a password in
 * the DSN) and a missing table end with exit 69, a failed run in the state
 * store, no watermark, no heartbeat, and the password in no output.
 *
 * Needs RECON_TEST_PG_DSN, RECON_TEST_PG_RO_DSN, RECON_TEST_MYSQL_DSN,
 * RECON_TEST_MYSQL_RO_DSN (tests/db/servers.sh); a case skips without the
 * ones it needs, the binary without all (exit 77); under CI=true it fails.
 */
#include "support_db.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <mysql.h>
#include <sqlite3.h>

#include "recon_err.h"

#define DATE "2024-01-16"

struct fx {
	char dir[64];
	const char *srcdir;
	const char *binary;
	json_t *baseline; /* the SQLite run's differences, origins removed */
};

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open '%s'", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *src_path(struct fx *fx, const char *rel)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "%s/%s", fx->srcdir, rel);
	return buf;
}

/* Runs a shell command; returns its exit status. */
static int run(const char *fmt, ...) RECON_PRINTF(1, 2);
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	assert_true(st != -1 && WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int group_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	fx->srcdir = getenv("RECON_SOURCE_DIR");
	fx->binary = getenv("RECON_BINARY");
	if (!fx->srcdir || !fx->binary) {
		fprintf(stderr,
			"RECON_SOURCE_DIR and RECON_BINARY must be set (ctest sets them)\n");
		free(fx);
		return -1;
	}
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/recon_dbex_XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fx *fx = *state;
	char cmd[256];

	if (!fx) /* the group setup failed */
		return 0;
	if (!getenv("RECON_KEEP_TMP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", fx->dir);
	}
	json_decref(fx->baseline);
	free(fx);
	mysql_library_end();
	return 0;
}

/* ---- job files ---- */

static json_t *example_job(struct fx *fx)
{
	json_error_t je;
	json_t *job = json_load_file(src_path(fx, "examples/basic/job.json"), 0, &je);

	if (!job)
		fail_msg("examples/basic/job.json:%d: %s", je.line, je.text);
	return job;
}

/* <dir>/<name>/ with statements/ copied in; returns the job path. */
static const char *variant_dir(struct fx *fx, const char *name, char *job_path, size_t size)
{
	char d[256];

	snprintf(d, sizeof(d), "%s/%s", fx->dir, name);
	assert_int_equal(run("mkdir -p '%s/statements' && cp '%s' '%s/statements/'", d,
			     src_path(fx, "examples/basic/statements/" DATE ".csv"), d),
			 0);
	snprintf(job_path, size, "%s/job.json", d);
	return job_path;
}

static void save_job(json_t *job, const char *path)
{
	assert_int_equal(json_dump_file(job, path, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
	json_decref(job);
}

/* A database side with the example's local columns. */
static json_t *db_local(const char *kind, const char *env)
{
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "kind", kind, "dsn_env",
			 env, "table", "payment_flow", "columns", "key", "out_trade_no",
			 "amount_minor", "amount_cents", "currency", "currency", "status", "status",
			 "time", "created_at");
}

/* The statement as a table, same columns and entry types as the CSV upstream. */
static json_t *db_upstream(json_t *job, const char *kind, const char *env)
{
	json_t *up = json_deep_copy(json_object_get(job, "upstream"));

	json_object_del(up, "path");
	json_object_del(up, "delimiter");
	json_object_del(up, "header");
	json_object_set_new(up, "kind", json_string(kind));
	json_object_set_new(up, "dsn_env", json_string(env));
	json_object_set_new(up, "table", json_string("provider_statement"));
	return up;
}

/* ---- running recon ---- */

/* run --dry-run, then diff --format jsonl: the differences with origins removed. */
static json_t *differences(struct fx *fx, const char *job)
{
	char out[600], err[600];
	json_t *arr = json_array();
	char *text, *line, *save = NULL;
	int rc;

	snprintf(out, sizeof(out), "%s.out", job);
	snprintf(err, sizeof(err), "%s.err", job);
	rc = run("'%s' run --job '%s' --date " DATE " --dry-run --quiet >'%s' 2>'%s'", fx->binary,
		 job, out, err);
	if (rc != 0) {
		char *e = read_file(err);
		fail_msg("recon run exited %d: %s", rc, e);
	}
	rc = run("'%s' diff --job '%s' --format jsonl >'%s' 2>'%s'", fx->binary, job, out, err);
	if (rc != 0) {
		char *e = read_file(err);
		fail_msg("recon diff exited %d: %s", rc, e);
	}
	text = read_file(out);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		json_t *d = json_loads(line, 0, &je);
		if (!d)
			fail_msg("bad diff line '%s': %s", line, je.text);
		for (const char *const *side = (const char *const[]){"upstream", "local", NULL};
		     *side; side++)
			if (json_is_object(json_object_get(d, *side)))
				json_object_del(json_object_get(d, *side), "origin");
		json_array_append_new(arr, d);
	}
	free(text);
	return arr;
}

static void assert_same_as_sqlite(struct fx *fx, json_t *got, const char *variant)
{
	if (!json_equal(fx->baseline, got)) {
		char *a = json_dumps(fx->baseline, JSON_INDENT(1) | JSON_SORT_KEYS);
		char *b = json_dumps(got, JSON_INDENT(1) | JSON_SORT_KEYS);
		print_message("sqlite:\n%s\n%s:\n%s\n", a, variant, b);
		free(a);
		free(b);
		fail_msg("%s: the differences are not those of the SQLite flow", variant);
	}
	json_decref(got);
}

/* ---- loading the databases ---- */

static struct support_db *db_open(const char *engine)
{
	struct support_db *db = support_db_connect(support_db_engine(engine), NULL);

	assert_non_null(db);
	return db;
}

/* INSERTs for the statement CSV (no quoting in it; empty cells are NULL). */
static char *statement_inserts(struct fx *fx)
{
	char *csv = read_file(src_path(fx, "examples/basic/statements/" DATE ".csv"));
	size_t cap = strlen(csv) * 2 + 4096, len = 0;
	char *out = malloc(cap), *line, *save = NULL;
	bool header = true;

	assert_non_null(out);
	len += (size_t)snprintf(out + len, cap - len,
				"INSERT INTO provider_statement (trade_time, transaction_id, "
				"out_trade_no, entry_type, amount, refund_id, currency) VALUES ");
	for (line = strtok_r(csv, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		const char *p = line;
		if (header) {
			header = false;
			continue;
		}
		if (out[len - 1] == ')')
			out[len++] = ',';
		out[len++] = '(';
		for (int col = 0; col < 7; col++) {
			size_t n = strcspn(p, ",");
			if (col)
				out[len++] = ',';
			if (n)
				len += (size_t)snprintf(out + len, cap - len, "'%.*s'", (int)n, p);
			else
				len += (size_t)snprintf(out + len, cap - len, "NULL");
			p += n + (p[n] == ',');
		}
		out[len++] = ')';
		out[len] = '\0';
	}
	free(csv);
	return out;
}

/* The example's flow (its SELECT-only login may read it) and the statement as a table. */
static void load_db(struct fx *fx, const char *engine)
{
	static const char *const statement[] = {
	    [SUPPORT_DB_POSTGRES] =
		"CREATE TABLE provider_statement (id bigserial PRIMARY KEY, trade_time "
		"timestamp NOT NULL, transaction_id varchar(32), out_trade_no varchar(64), "
		"entry_type varchar(16) NOT NULL, amount numeric(18,2) NOT NULL, refund_id "
		"varchar(32), currency char(3) NOT NULL); "
		"CREATE INDEX ON provider_statement (trade_time)",
	    [SUPPORT_DB_MYSQL] =
		"CREATE TABLE provider_statement (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
		"trade_time DATETIME NOT NULL, transaction_id VARCHAR(32), out_trade_no "
		"VARCHAR(64), entry_type VARCHAR(16) NOT NULL, amount DECIMAL(18,2) NOT NULL, "
		"refund_id VARCHAR(32), currency CHAR(3) NOT NULL, KEY (trade_time)) "
		"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	};
	struct support_db *db = db_open(engine);
	char rel[64], *text;

	support_db_exec(db, "DROP TABLE IF EXISTS payment_flow, provider_statement");
	snprintf(rel, sizeof(rel), "sql/%s/payment_flow.sql", engine);
	text = read_file(src_path(fx, rel));
	support_db_exec(db, text);
	free(text);
	text = read_file(src_path(fx, "examples/basic/flow.sql"));
	support_db_exec(db, text);
	free(text);
	support_db_grant_ro(db, "payment_flow");
	support_db_exec(db, statement[support_db_engine_of(db)->id]);
	text = statement_inserts(fx);
	support_db_exec(db, text);
	free(text);
	support_db_close(db);
}

/* The SQLite run, computed once: the reference. */
static void baseline(struct fx *fx)
{
	char job[512], db[600], *ddl, *data, *errmsg = NULL;
	sqlite3 *s;
	size_t classes = 0;
	json_t *d;
	size_t i;

	if (fx->baseline)
		return;
	variant_dir(fx, "sqlite", job, sizeof(job));
	snprintf(db, sizeof(db), "%s/sqlite/flow.db", fx->dir);
	assert_int_equal(sqlite3_open(db, &s), SQLITE_OK);
	ddl = read_file(src_path(fx, "sql/sqlite/payment_flow.sql"));
	data = read_file(src_path(fx, "examples/basic/flow.sql"));
	if (sqlite3_exec(s, ddl, NULL, NULL, &errmsg) != SQLITE_OK ||
	    sqlite3_exec(s, data, NULL, NULL, &errmsg) != SQLITE_OK)
		fail_msg("sqlite: %s", errmsg);
	sqlite3_close(s);
	free(ddl);
	free(data);
	save_job(example_job(fx), job);
	fx->baseline = differences(fx, job);
	/* the example shows one key of every class */
	json_array_foreach(fx->baseline, i, d)
	{
		const char *c = json_string_value(json_object_get(d, "class"));
		assert_non_null(c);
		classes |= !strcmp(c, "missing") << 0 | !strcmp(c, "extra") << 1 |
			   !strcmp(c, "stuck") << 2 | !strcmp(c, "amount_mismatch") << 3 |
			   !strcmp(c, "status_mismatch") << 4 | !strcmp(c, "duplicate") << 5;
	}
	assert_int_equal(classes, 0x3f);
}

/* ---- tests ---- */

static void test_db_example_local_postgres(void **state)
{
	struct fx *fx = *state;
	char job[512];
	json_t *j;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	support_db_dsn_or_skip("RECON_TEST_PG_RO_DSN");
	baseline(fx);
	load_db(fx, "postgres");
	variant_dir(fx, "pg_local", job, sizeof(job));
	j = example_job(fx);
	/* the SELECT-only login reads the flow */
	json_object_set_new(j, "local", db_local("postgres", "RECON_TEST_PG_RO_DSN"));
	save_job(j, job);
	assert_same_as_sqlite(fx, differences(fx, job), "postgres local");
}

static void test_db_example_local_mysql(void **state)
{
	struct fx *fx = *state;
	char job[512];
	json_t *j;

	support_db_dsn_or_skip("RECON_TEST_MYSQL_DSN");
	support_db_dsn_or_skip("RECON_TEST_MYSQL_RO_DSN");
	baseline(fx);
	load_db(fx, "mysql");
	variant_dir(fx, "mysql_local", job, sizeof(job));
	j = example_job(fx);
	json_object_set_new(j, "local", db_local("mysql", "RECON_TEST_MYSQL_RO_DSN"));
	save_job(j, job);
	assert_same_as_sqlite(fx, differences(fx, job), "mysql local");
}

/* The statement in a database table, on the upstream side. */
static void test_db_example_upstream_databases(void **state)
{
	struct fx *fx = *state;
	char job[512];
	json_t *j;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	support_db_dsn_or_skip("RECON_TEST_MYSQL_DSN");
	baseline(fx);
	load_db(fx, "postgres");
	load_db(fx, "mysql");

	variant_dir(fx, "pg_up_mysql_local", job, sizeof(job));
	j = example_job(fx);
	json_object_set_new(j, "upstream", db_upstream(j, "postgres", "RECON_TEST_PG_DSN"));
	json_object_set_new(j, "local", db_local("mysql", "RECON_TEST_MYSQL_DSN"));
	save_job(j, job);
	assert_same_as_sqlite(fx, differences(fx, job), "postgres upstream, mysql local");

	variant_dir(fx, "mysql_up_pg_local", job, sizeof(job));
	j = example_job(fx);
	json_object_set_new(j, "upstream", db_upstream(j, "mysql", "RECON_TEST_MYSQL_DSN"));
	json_object_set_new(j, "local", db_local("postgres", "RECON_TEST_PG_DSN"));
	save_job(j, job);
	assert_same_as_sqlite(fx, differences(fx, job), "mysql upstream, postgres local");
}

/* grep -F secret in file: true when found. */
static bool file_has(const char *path, const char *secret)
{
	char *t = read_file(path);
	bool found = strstr(t, secret) != NULL;

	free(t);
	return found;
}

/* A run that cannot read its local database: exit 69, recorded, nothing moved. */
static void outage(struct fx *fx, const char *name, const char *kind, const char *dsn,
		   const char *table, const char *secret, const char *reason)
{
	char job[512], out[600], err[600], path[700];
	json_t *j, *local;
	sqlite3 *s;
	sqlite3_stmt *st;
	int rc;

	variant_dir(fx, name, job, sizeof(job));
	setenv("RECON_DBEX_OUTAGE_DSN", dsn, 1);
	j = example_job(fx);
	local = db_local(kind, "RECON_DBEX_OUTAGE_DSN");
	json_object_set_new(local, "table", json_string(table));
	json_object_set_new(j, "local", local);
	save_job(j, job);
	snprintf(out, sizeof(out), "%s.out", job);
	snprintf(err, sizeof(err), "%s.err", job);
	/* not a dry run: a success would move the watermark and write the heartbeat */
	rc = run("'%s' run --job '%s' --date " DATE " >'%s' 2>'%s'", fx->binary, job, out, err);
	{
		char *e = read_file(err);
		print_message("%s: exit %d: %s", name, rc, e);
		if (reason && !strstr(e, reason))
			fail_msg("stderr lacks '%s'", reason);
		free(e);
	}
	assert_int_equal(rc, 69);
	if (secret) {
		assert_false(file_has(out, secret));
		assert_false(file_has(err, secret));
	}
	rc = run("'%s' status --job '%s' --json >'%s' 2>'%s'", fx->binary, job, out, err);
	if (secret) {
		assert_false(file_has(out, secret));
		assert_false(file_has(err, secret));
	}
	snprintf(path, sizeof(path), "%s/%s/state/recon.prom", fx->dir, name);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%s/state/recon.db", fx->dir, name);
	assert_int_equal(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(s,
			       "SELECT outcome, exit_code, coalesce(error, ''), "
			       "(SELECT count(*) FROM watermarks w WHERE w.reconciled_until_ms > "
			       "runs.window_start_ms) FROM runs",
			       -1, &st, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "failed");
	assert_int_equal(sqlite3_column_int(st, 1), 69);
	if (secret)
		assert_null(strstr((const char *)sqlite3_column_text(st, 2), secret));
	assert_int_equal(sqlite3_column_int(st, 3), 0);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(s);
	unsetenv("RECON_DBEX_OUTAGE_DSN");
}

static void test_db_example_outages(void **state)
{
	struct fx *fx = *state;
	const char *pg = support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	const char *my = support_db_dsn_or_skip("RECON_TEST_MYSQL_DSN");

	load_db(fx, "postgres");
	load_db(fx, "mysql");
	/* nobody listens on port 1 */
	outage(fx, "pg_down", "postgres",
	       "postgresql://recon:Leak3dPgPw@127.0.0.1:1/recon_test?connect_timeout=3",
	       "payment_flow", "Leak3dPgPw", "cannot connect");
	outage(fx, "mysql_down", "mysql", "mysql://recon:Leak3dMyPw@127.0.0.1:1/recon_test",
	       "payment_flow", "Leak3dMyPw", "cannot connect");
	outage(fx, "pg_no_table", "postgres", pg, "no_such_flow", "pg-owner-pw", "no_such_flow");
	outage(fx, "mysql_no_table", "mysql", my, "no_such_flow", "my-owner-pw", "no_such_flow");
}
/*
 * A lookup that finds a row under another key: the statement says "007" and
 * "8", the flow keys orders by a bigint (7 and 8, both in the window).
 * PostgreSQL finds row 7 for "007"; folded in, it would be read twice (a
 * false duplicate of 7). The answer is dropped: "007" is missing, 7 extra.
 */
static void test_db_example_lookup_other_key(void **state)
{
	struct fx *fx = *state;
	struct support_db *db;
	char job[512], path[600];
	json_t *j, *got, *local;
	FILE *f;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	db = db_open("postgres");
	support_db_exec(db, "DROP TABLE IF EXISTS flow_int");
	support_db_exec(db, "CREATE TABLE flow_int (out_trade_no bigint PRIMARY KEY, amount_cents "
			    "bigint, currency char(3), status text, created_at timestamptz)");
	support_db_exec(db, "INSERT INTO flow_int VALUES (7, 1000, 'CNY', 'PAID', '2024-01-16 "
			    "10:00:00+08'), (8, 2000, 'CNY', 'PAID', '2024-01-16 11:00:00+08')");
	support_db_close(db);
	variant_dir(fx, "pg_int_key", job, sizeof(job));
	snprintf(path, sizeof(path), "%s/pg_int_key/statements/" DATE ".csv", fx->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency\n"
	      "2024-01-16 10:00:05,4200000001202401160091,007,PAYMENT,10.00,,CNY\n"
	      "2024-01-16 11:00:05,4200000001202401160092,8,PAYMENT,20.00,,CNY\n",
	      f);
	assert_int_equal(fclose(f), 0);
	j = example_job(fx);
	local = db_local("postgres", "RECON_TEST_PG_DSN");
	json_object_set_new(local, "table", json_string("flow_int"));
	json_object_set_new(j, "local", local);
	save_job(j, job);
	got = differences(fx, job);
	{
		char *text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
		assert_int_equal(json_array_size(got), 2);
		/* key order: "007" then "7" */
		if (strcmp(json_string_value(json_object_get(json_array_get(got, 0), "key")),
			   "007") ||
		    strcmp(json_string_value(json_object_get(json_array_get(got, 0), "class")),
			   "missing") ||
		    strcmp(json_string_value(json_object_get(json_array_get(got, 1), "key")),
			   "7") ||
		    strcmp(json_string_value(json_object_get(json_array_get(got, 1), "class")),
			   "extra"))
			fail_msg("want 007 missing and 7 extra, got %s", text);
		free(text);
	}
	json_decref(got);
}

/*
 * A {"first_of": [...]} key and a "%s" time_format on a database flow, in
 * PostgreSQL and MariaDB: the select and the lookup by key read the same
 * first non-empty column (F-3, days older than the window, is found by the
 * lookup through that expression), epoch seconds are instants.
 */
static void first_of_variant(struct fx *fx, const char *kind, const char *env, const char *name)
{
	char job[512], path[600];
	json_t *j, *got, *local;
	FILE *f;
	char *text;

	variant_dir(fx, name, job, sizeof(job));
	snprintf(path, sizeof(path), "%s/%s/statements/" DATE ".csv", fx->dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("trade_time,transaction_id,out_trade_no,entry_type,amount,refund_id,currency\n"
	      "2024-01-16 10:00:05,4200000001202401160091,F-1,PAYMENT,10.00,,CNY\n"
	      "2024-01-16 11:00:05,4200000001202401160092,F-2,PAYMENT,20.00,,CNY\n"
	      "2024-01-16 12:00:05,4200000001202401160093,F-3,PAYMENT,30.00,,CNY\n"
	      "2024-01-16 13:00:05,4200000001202401160094,F-4,PAYMENT,40.00,,CNY\n",
	      f);
	assert_int_equal(fclose(f), 0);
	j = example_job(fx);
	local = json_pack("{s:s, s:s, s:s, s:s, s:{s:{s:[s,s]}, s:s, s:s, s:s, s:s}}", "kind", kind,
			  "dsn_env", env, "table", "flow_fo", "time_format", "%s", "columns", "key",
			  "first_of", "order_ref", "legacy_ref", "amount_minor", "amount_cents",
			  "currency", "currency", "status", "status", "time", "created_at");
	json_object_set_new(j, "local", local);
	save_job(j, job);
	got = differences(fx, job);
	text = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	if (json_array_size(got) != 1 ||
	    strcmp(json_string_value(json_object_get(json_array_get(got, 0), "key")), "F-4") ||
	    strcmp(json_string_value(json_object_get(json_array_get(got, 0), "class")),
		   "amount_mismatch"))
		fail_msg("%s: want only F-4 amount_mismatch, got %s", name, text);
	free(text);
	json_decref(got);
}

/* 2024-01-16 10:00:06 +08:00 = 1705370406; F-3 on 2024-01-06 */
#define FLOW_FO_ROWS                                                                               \
	"INSERT INTO flow_fo VALUES ('F-1', NULL, 1000, 'CNY', 'PAID', 1705370406), "              \
	"('', 'F-2', 2000, 'CNY', 'PAID', 1705374006), "                                           \
	"(NULL, 'F-3', 3000, 'CNY', 'PAID', 1704506406), "                                         \
	"('F-4', 'X-4', 4100, 'CNY', 'PAID', 1705381206)"

static void test_db_example_first_of_epoch(void **state)
{
	struct fx *fx = *state;
	struct support_db *db;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	support_db_dsn_or_skip("RECON_TEST_MYSQL_DSN");
	for (const char *const *e = (const char *const[]){"postgres", "mysql", NULL}; *e; e++) {
		char name[32];

		db = db_open(*e);
		support_db_exec(db, "DROP TABLE IF EXISTS flow_fo");
		support_db_exec(db, "CREATE TABLE flow_fo (order_ref varchar(64), legacy_ref "
				    "varchar(64), amount_cents bigint, currency char(3), status "
				    "varchar(16), created_at bigint)");
		support_db_exec(db, FLOW_FO_ROWS);
		snprintf(name, sizeof(name), "%s_first_of", support_db_engine_of(db)->tag);
		first_of_variant(fx, *e, support_db_engine_of(db)->dsn_var, name);
		support_db_close(db);
	}
}

/*
 * A replay the writer has no grant for: the SELECT-only login as the writer,
 * allowed to write recon's own tables but not the flow. The run exits 77
 * naming the grant once; the tickets and re-pushes are written.
 */
static void test_db_example_replay_without_grant(void **state)
{
	struct fx *fx = *state;
	char job[512], out[600], err[600];
	struct support_db *db;
	json_t *j;
	char *text, *merchant;
	int rc;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	support_db_dsn_or_skip("RECON_TEST_PG_RO_DSN");
	load_db(fx, "postgres");
	db = db_open("postgres");
	support_db_exec(db, "DROP TABLE IF EXISTS idempotency_record, recon_ticket, recon_outbox");
	merchant = read_file(src_path(fx, "sql/postgres/merchant.sql"));
	support_db_exec(db, merchant);
	free(merchant);
	support_db_exec(db, "GRANT SELECT, INSERT, UPDATE ON idempotency_record, recon_ticket, "
			    "recon_outbox TO recon_ro");
	support_db_exec(db, "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO recon_ro");
	support_db_close(db);
	variant_dir(fx, "pg_no_grant", job, sizeof(job));
	j = example_job(fx);
	json_object_set_new(j, "local", db_local("postgres", "RECON_TEST_PG_RO_DSN"));
	json_object_set_new(j, "actions",
			    json_pack("{s:s}", "writer_dsn_env", "RECON_TEST_PG_RO_DSN"));
	save_job(j, job);
	snprintf(out, sizeof(out), "%s.out", job);
	snprintf(err, sizeof(err), "%s.err", job);
	rc = run("'%s' run --job '%s' --date " DATE " >'%s' 2>'%s'", fx->binary, job, out, err);
	text = read_file(err);
	/* one line names the grant; the run's other writes are skipped, not failed per key */
	if (rc != 77 || !strstr(text, "permission denied for table payment_flow") ||
	    !strstr(text, "grant") || strstr(text, "replay of '") ||
	    strstr(strstr(text, "permission denied") + 1, "permission denied"))
		fail_msg("want exit 77 naming the grant once, got %d: %s", rc, text);
	free(text);
	text = read_file(out);
	if (!strstr(text, "replay 1 failed"))
		fail_msg("want the replay failed, got: %s", text);
	free(text);
}

/*
 * A merchant's own PostgreSQL table with NOT NULL columns recon does not
 * know, filled by actions.replay_values: every missing order is inserted,
 * {now} into a timestamptz, an integer into a bigint, a literal into text.
 */
static void test_db_example_replay_values(void **state)
{
	struct fx *fx = *state;
	char job[512], out[600], err[600];
	struct support_db *db;
	json_t *j, *local;
	char *merchant, *text, *rows, *filled;
	int rc;

	support_db_dsn_or_skip("RECON_TEST_PG_DSN");
	db = db_open("postgres");
	support_db_exec(
	    db, "DROP TABLE IF EXISTS flow_rv, idempotency_record, recon_ticket, recon_outbox");
	merchant = read_file(src_path(fx, "sql/postgres/merchant.sql"));
	support_db_exec(db, merchant);
	free(merchant);
	support_db_exec(
	    db, "CREATE TABLE flow_rv (id bigserial PRIMARY KEY, out_trade_no text NOT NULL "
		"UNIQUE, amount_cents bigint NOT NULL, currency char(3) NOT NULL, status text "
		"NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, "
		"channel text NOT NULL, customer_id bigint NOT NULL)");
	variant_dir(fx, "pg_replay_values", job, sizeof(job));
	j = example_job(fx);
	local = db_local("postgres", "RECON_TEST_PG_DSN");
	json_object_set_new(local, "table", json_string("flow_rv"));
	json_object_set_new(j, "local", local);
	json_object_set_new(j, "actions",
			    json_pack("{s:{s:s, s:s, s:i}}", "replay_values", "updated_at", "{now}",
				      "channel", "recon_{job}", "customer_id", 0));
	save_job(j, job);
	snprintf(out, sizeof(out), "%s.out", job);
	snprintf(err, sizeof(err), "%s.err", job);
	rc = run("'%s' run --job '%s' --date " DATE " >'%s' 2>'%s'", fx->binary, job, out, err);
	text = read_file(err);
	if (rc != 0)
		fail_msg("recon run exited %d: %s", rc, text);
	free(text);
	rows = support_db_value(db, "SELECT count(*) FROM flow_rv", NULL);
	filled = support_db_value(db,
				  "SELECT count(*) FROM flow_rv WHERE channel = "
				  "'recon_example_payments' AND customer_id = 0 AND updated_at > "
				  "created_at",
				  NULL);
	if (atoi(rows) < 1 || strcmp(rows, filled) != 0)
		fail_msg("want every replayed row filled, got %s rows, %s filled", rows, filled);
	free(rows);
	free(filled);
	support_db_exec(db, "DROP TABLE flow_rv");
	support_db_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_db_example_local_postgres),
	    cmocka_unit_test(test_db_example_local_mysql),
	    cmocka_unit_test(test_db_example_upstream_databases),
	    cmocka_unit_test(test_db_example_outages),
	    cmocka_unit_test(test_db_example_lookup_other_key),
	    cmocka_unit_test(test_db_example_first_of_epoch),
	    cmocka_unit_test(test_db_example_replay_without_grant),
	    cmocka_unit_test(test_db_example_replay_values),
	};

	static const char *const vars[] = {"RECON_TEST_PG_DSN", "RECON_TEST_PG_RO_DSN",
					   "RECON_TEST_MYSQL_DSN", "RECON_TEST_MYSQL_RO_DSN", NULL};
	int rc = support_db_gate("test_db_example", vars);

	if (rc || (rc = cmocka_run_group_tests(tests, group_setup, group_teardown)))
		return rc;
	/* a half-run suite is not a pass: the cases of a missing server were skipped */
	for (size_t i = 0; vars[i]; i++)
		if (!support_db_env(vars[i]))
			return SUPPORT_DB_SKIP;
	return 0;
}
