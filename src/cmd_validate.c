/*
 * recon validate: the preflight an operator runs before enabling a job's
 * timers. One line per check on stdout ("ok", "warn" or "FAIL", what, detail):
 * the job file and its format profiles, every environment variable it names,
 * each source (a CSV folder, a SQLite file, or a database connection: the
 * table readable, and the reader read-only), the writer's grants (INSERT and
 * SELECT on the flow table and the merchant tables, USAGE on their
 * sequences), and that the state store and heartbeat can be written. Exit 0,
 * or the exit code of the first failure. Nothing is recorded: the state store
 * is not opened, no transaction writes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef RECON_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef RECON_HAVE_MYSQL
#include <mysql.h>
#endif

#include "recon_buf.h"
#include "recon_cmd.h"
#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_source.h"

static const char validate_usage[] =
    "usage: recon validate --job FILE [--quiet]\n"
    "\n"
    "Checks a job before it runs: the job file and its format profiles, the\n"
    "environment variables it names, each source (files, connections, the\n"
    "reader's read-only grants), the writer's grants, and that the state store\n"
    "and heartbeat can be written. One line per check; exit 0, or the exit code\n"
    "of the first failure (78 job, 69 connection, 77 grant, 73 path). Records\n"
    "nothing.\n"
    "\n"
    "example: recon validate --job /etc/recon/wechatpay_payments.json\n";

/* The tables a writer touches besides the flow table (sql/<engine>/merchant.sql). */
static const char *const merchant_tables[] = {"idempotency_record", "recon_ticket", "recon_outbox",
					      NULL};

struct report {
	int code; /* the first failure's exit code, 0 so far */
	bool quiet;
};

static void say(struct report *r, int code, const char *what, const char *fmt, ...)
    RECON_PRINTF(4, 5);
static void say(struct report *r, int code, const char *what, const char *fmt, ...)
{
	va_list ap;

	/* code < 0: a warning, not a failure */
	if (code > 0 && !r->code)
		r->code = code;
	if (r->quiet && code == 0)
		return;
	printf("%-4s %-10s ", code > 0 ? "FAIL" : code < 0 ? "warn" : "ok", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The deepest existing folder on the way to path's parent (what mkdir -p starts from). */
static void existing_parent(const char *path, struct recon_buf *dir)
{
	struct stat st;
	char *slash;

	recon_buf_reset(dir);
	recon_buf_adds(dir, path);
	for (;;) {
		slash = strrchr(dir->s, '/');
		if (!slash) {
			recon_buf_reset(dir);
			recon_buf_adds(dir, ".");
			return;
		}
		*slash = '\0';
		dir->len = (size_t)(slash - dir->s);
		if (!dir->len) {
			recon_buf_adds(dir, "/");
			return;
		}
		if (stat(dir->s, &st) == 0)
			return;
	}
}

/* A file recon writes (state store, heartbeat): it, or the folder that will hold it. */
static void check_writable(struct report *r, const char *what, const char *path)
{
	struct recon_buf dir;
	struct stat st;

	recon_buf_init(&dir);
	existing_parent(path, &dir);
	if (stat(dir.s, &st) == 0 && !S_ISDIR(st.st_mode))
		say(r, 73, what, "'%s': '%s' is not a folder", path, dir.s);
	else if (access(dir.s, W_OK | X_OK) != 0)
		say(r, 73, what, "'%s': cannot write in '%s': %s", path, dir.s, strerror(errno));
	else if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
		say(r, 73, what, "'%s' is not writable: %s", path, strerror(errno));
	else
		say(r, 0, what, "'%s' writable", path);
	recon_buf_release(&dir);
}

/* A statement file: its folder (when the folder itself holds no {date}) is readable. */
static void check_folder(struct report *r, const struct recon_side *s)
{
	struct recon_buf dir;
	const char *slash = strrchr(s->path, '/');

	recon_buf_init(&dir);
	if (slash)
		recon_buf_add(&dir, s->path, (size_t)(slash - s->path));
	else
		recon_buf_adds(&dir, ".");
	if (!dir.len)
		recon_buf_adds(&dir, "/");
	if (strchr(dir.s, '{'))
		say(r, -1, s->role, "%s '%s': the folder is named by date, not checked",
		    s->backend->name, s->path);
	else if (access(dir.s, R_OK | X_OK) != 0)
		say(r, 69, s->role, "%s '%s': cannot read folder '%s': %s", s->backend->name,
		    s->path, dir.s, strerror(errno));
	else
		say(r, 0, s->role, "%s '%s' (folder readable)", s->backend->name, s->path);
	recon_buf_release(&dir);
}

/* A database file: readable (it is opened read-only). */
static void check_file(struct report *r, const struct recon_side *s)
{
	if (access(s->path, R_OK) != 0)
		say(r, 69, s->role, "%s '%s': %s", s->backend->name, s->path, strerror(errno));
	else
		say(r, 0, s->role, "%s '%s' readable (opened read-only)", s->backend->name,
		    s->path);
}

#ifdef RECON_HAVE_POSTGRES
/* One row of privileges on `table`: SELECT, INSERT, UPDATE, DELETE, sequences without USAGE. */
static PGresult *pg_privileges(PGconn *c, const char *table)
{
	static const char sql[] =
	    "SELECT has_table_privilege($1::text, 'SELECT'), has_table_privilege($1::text, "
	    "'INSERT'), has_table_privilege($1::text, 'UPDATE'), has_table_privilege($1::text, "
	    "'DELETE'), (SELECT string_agg(s, ', ') FROM (SELECT pg_get_serial_sequence($1::text, "
	    "attname) AS s FROM pg_attribute WHERE attrelid = $1::text::regclass AND attnum > 0 "
	    "AND NOT attisdropped) x WHERE s IS NOT NULL AND NOT has_sequence_privilege(s, "
	    "'USAGE'))";
	const char *params[1] = {table};

	return PQexecParams(c, sql, 1, NULL, params, NULL, NULL, 0);
}

static bool pg_yes(const PGresult *res, int col)
{
	return !strcmp(PQgetvalue(res, 0, col), "t");
}

/* First line of libpq's message, the password (if any) masked. */
static const char *pg_msg(PGconn *c, const char *secret, char *buf, size_t size)
{
	return recon_dsn_first_line(PQerrorMessage(c), secret, buf, size);
}

static void check_pg(struct report *r, const struct recon_job *job, const struct recon_side *s,
		     const char *what, const char *env, bool writer)
{
	static const char *const kw[] = {"connect_timeout", "fallback_application_name", "dbname",
					 NULL};
	const char *vals[4] = {"10", "recon-validate", getenv(env), NULL};
	char msg[256], secret[128] = "";
	PQconninfoOption *opts = PQconninfoParse(vals[2], NULL);
	PGconn *c = NULL;
	PGresult *res = NULL;

	if (!opts) {
		say(r, 78, what, "the connection string in '%s' is not valid for libpq", env);
		return;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val)
			snprintf(secret, sizeof(secret), "%s", o->val);
	PQconninfoFree(opts);
	c = PQconnectdbParams(kw, vals, 1);
	if (!c || PQstatus(c) != CONNECTION_OK) {
		say(r, 69, what, "postgres '%s': cannot connect: %s", env,
		    c ? pg_msg(c, secret, msg, sizeof(msg)) : "out of memory");
		goto out;
	}
	say(r, 0, what, "postgres '%s': connected as '%s' to %s", env, PQuser(c), PQdb(c));
	for (int t = -1; t < 0 || (writer && merchant_tables[t]); t++) {
		const char *table = t < 0 ? s->table : merchant_tables[t];
		PQclear(res);
		res = pg_privileges(c, table);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			say(r, 69, what, "table '%s': %s", table,
			    recon_dsn_first_line(PQresultErrorMessage(res), secret, msg,
						 sizeof(msg)));
			continue;
		}
		if (!pg_yes(res, 0) || (writer && !pg_yes(res, 1)))
			say(r, 77, what, "table '%s': needs %s (GRANT %s ON %s TO %s)", table,
			    writer ? "SELECT and INSERT" : "SELECT",
			    writer ? "SELECT, INSERT" : "SELECT", table, PQuser(c));
		else if (writer && t < 0 && job->actions.transition_to && !pg_yes(res, 2))
			say(r, 77, what, "table '%s': the transition needs UPDATE", table);
		else if (writer && !PQgetisnull(res, 0, 4))
			say(r, 77, what, "table '%s': needs USAGE on sequence %s", table,
			    PQgetvalue(res, 0, 4));
		else if (!writer && (pg_yes(res, 1) || pg_yes(res, 2) || pg_yes(res, 3)))
			say(r, -1, what,
			    "table '%s': the reader may write it (read in READ ONLY transactions; "
			    "a SELECT-only user is safer)",
			    table);
		else
			say(r, 0, what, "table '%s': %s", table,
			    writer ? "SELECT, INSERT and sequences granted" : "SELECT only");
	}
out:
	PQclear(res);
	PQfinish(c);
}
#endif

#ifdef RECON_HAVE_MYSQL
/* The privileges the current user holds on `table` (global, schema, table level), one a row. */
static bool my_has(MYSQL *c, const char *table, const char *priv)
{
	struct recon_buf q;
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	bool yes = false;

	recon_buf_init(&q);
	/* table is a validated identifier and priv a constant: no quoting needed */
	recon_buf_addf(
	    &q,
	    "SELECT count(*) FROM (SELECT privilege_type FROM information_schema.user_privileges "
	    "WHERE grantee = @recon_g UNION ALL SELECT privilege_type FROM "
	    "information_schema.schema_privileges WHERE grantee = @recon_g AND table_schema = "
	    "DATABASE() UNION ALL SELECT privilege_type FROM information_schema.table_privileges "
	    "WHERE grantee = @recon_g AND table_schema = DATABASE() AND table_name = '%s') p "
	    "WHERE privilege_type IN ('%s', 'ALL PRIVILEGES')",
	    table, priv);
	if (!mysql_query(c, q.s) && (res = mysql_store_result(c)) && (row = mysql_fetch_row(res)))
		yes = row[0] && strcmp(row[0], "0");
	mysql_free_result(res);
	recon_buf_release(&q);
	return yes;
}

static void check_my(struct report *r, const struct recon_job *job, const struct recon_side *s,
		     const char *what, const char *env, bool writer)
{
	struct recon_dsn_mysql d;
	struct recon_err err;
	struct recon_buf q;
	char msg[256], buf[512];
	unsigned timeout = 10;
	MYSQL *c = NULL;

	recon_err_init(&err);
	recon_dsn_mysql_init(&d);
	recon_buf_init(&q);
	if (recon_dsn_mysql_parse(getenv(env), env, &d, &err) < 0) {
		say(r, 78, what, "%s", recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	if (d.connect_timeout)
		timeout = d.connect_timeout;
	if (!(c = mysql_init(NULL))) {
		say(r, 69, what, "mysql '%s': out of memory", env);
		goto out;
	}
	mysql_options(c, MYSQL_READ_DEFAULT_GROUP, "client");
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (!mysql_real_connect(c, d.host, d.user, d.password, d.db, d.port, d.socket, 0)) {
		say(r, 69, what, "mysql '%s': cannot connect: %s", env,
		    recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
		goto out;
	}
	say(r, 0, what, "mysql '%s': connected to %s", env, d.db ? d.db : "(no database)");
	if (mysql_query(c, "SET @recon_g = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), "
			   "'''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')")) {
		say(r, 69, what, "mysql '%s': %s", env,
		    recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
		goto out;
	}
	for (int t = -1; t < 0 || (writer && merchant_tables[t]); t++) {
		const char *table = t < 0 ? s->table : merchant_tables[t];
		MYSQL_RES *res;
		recon_buf_reset(&q);
		recon_buf_addf(&q, "SELECT 1 FROM `%s` LIMIT 0", table);
		if (mysql_query(c, q.s)) {
			say(r, mysql_errno(c) == 1142 ? 77 : 69, what, "table '%s': %s", table,
			    recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
			continue;
		}
		res = mysql_store_result(c);
		mysql_free_result(res);
		if (writer && !my_has(c, table, "INSERT"))
			say(r, 77, what,
			    "table '%s': needs INSERT (GRANT SELECT, INSERT ON %s TO ...)", table,
			    table);
		else if (writer && t < 0 && job->actions.transition_to &&
			 !my_has(c, table, "UPDATE"))
			say(r, 77, what, "table '%s': the transition needs UPDATE", table);
		else if (!writer && (my_has(c, table, "INSERT") || my_has(c, table, "UPDATE") ||
				     my_has(c, table, "DELETE")))
			say(r, -1, what,
			    "table '%s': the reader may write it (read in READ ONLY transactions; "
			    "a SELECT-only user is safer)",
			    table);
		else
			say(r, 0, what, "table '%s': %s", table,
			    writer ? "SELECT and INSERT granted" : "SELECT only");
	}
out:
	mysql_close(c);
	recon_dsn_mysql_release(&d);
	recon_buf_release(&q);
}
#endif

/*
 * The connection probes of the backends that take a DSN (RECON_SOURCE_DSN),
 * by backend name: a backend without one is reported as not built in.
 */
typedef void probe_fn(struct report *r, const struct recon_job *job, const struct recon_side *s,
		      const char *what, const char *env, bool writer);
static const struct {
	const char *backend;
	probe_fn *check;
} probes[] = {
#ifdef RECON_HAVE_POSTGRES
    {"postgres", check_pg},
#endif
#ifdef RECON_HAVE_MYSQL
    {"mysql", check_my},
#endif
    {NULL, NULL},
};

/* A database side (reader) or the writer: its variable set, then the connection and grants. */
static void check_db(struct report *r, const struct recon_job *job, const struct recon_side *s,
		     const char *what, const char *env, const char *field, bool writer)
{
	const char *dsn = env ? getenv(env) : NULL;

	if (!dsn || !*dsn) {
		say(r, 78, "env", "'%s' (%s) is not set", env ? env : "", field);
		return;
	}
	say(r, 0, "env", "'%s' (%s) is set", env, field);
	for (size_t i = 0; probes[i].backend; i++) {
		if (!strcmp(probes[i].backend, s->backend->name)) {
			probes[i].check(r, job, s, what, env, writer);
			return;
		}
	}
	say(r, 69, what, "%s: this recon was built without its driver", s->role);
}

static void check_side(struct report *r, const struct recon_job *job, const struct recon_side *s)
{
	char field[32];

	if (s->csv.format)
		say(r, 0, "profile", "%s: '%s'", s->role, s->csv.format);
	if (recon_source_has(s, RECON_SOURCE_FILE)) {
		check_folder(r, s);
	} else if (recon_source_has(s, RECON_SOURCE_PATH)) {
		check_file(r, s);
	} else {
		snprintf(field, sizeof(field), "%s.dsn_env", s->role);
		check_db(r, job, s, s->role, s->dsn_env, field, false);
	}
}

/* The writer of replays, tickets and events: the local database, read-write. */
static void check_writer(struct report *r, const struct recon_job *job)
{
	const struct recon_side *s = &job->local;

	if (!job->actions.enabled) {
		say(r, 0, "writer", "actions are off: no writer");
		return;
	}
	if (recon_source_has(s, RECON_SOURCE_FILE))
		say(r, 0, "writer", "the local side is a CSV file: actions write nothing there");
	else if (recon_source_has(s, RECON_SOURCE_PATH) && access(s->path, W_OK) != 0)
		say(r, 77, "writer", "%s '%s' is not writable: %s", s->backend->name, s->path,
		    strerror(errno));
	else if (recon_source_has(s, RECON_SOURCE_PATH))
		check_writable(r, "writer", s->path);
	else if (job->actions.writer_dsn_env)
		check_db(r, job, s, "writer", job->actions.writer_dsn_env, "actions.writer_dsn_env",
			 true);
	else
		check_db(r, job, s, "writer", s->dsn_env, "local.dsn_env", true);
}

int recon_cmd_validate(int argc, char **argv)
{
	const char *job_path = NULL;
	bool help = false, quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},
	    {"quiet", false, NULL, &quiet},
	    {NULL, false, NULL, NULL},
	};
	struct report r = {0, false};
	struct recon_job *job = NULL;
	struct recon_err err;
	char buf[512];

	recon_err_init(&err);
	if (recon_opt_parse(argc, argv, opts, &help) < 0)
		return 64; /* it said what was wrong, in one line */
	if (!help && !job_path) {
		fputs(validate_usage, stderr);
		return 64;
	}
	if (help) {
		fputs(validate_usage, stdout);
		return 0;
	}
	r.quiet = quiet;
	if (recon_job_load(&job, job_path, &err) < 0) {
		say(&r, recon_err_exit_code(err.code), "job", "%s",
		    recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	say(&r, 0, "job", "'%s' from '%s'", job->name, job_path);
	check_side(&r, job, &job->upstream);
	check_side(&r, job, &job->local);
	check_writer(&r, job);
	check_writable(&r, "state", job->state_path);
	if (job->heartbeat_path)
		check_writable(&r, "heartbeat", job->heartbeat_path);
out:
	recon_job_free(job);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		recon_log(RECON_LOG_ERROR, "cannot write the report: %s", strerror(errno));
		return r.code ? r.code : 1;
	}
	return r.code;
}
