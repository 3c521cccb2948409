/*
 * MySQL / MariaDB writer (MariaDB Connector/C): the read-write connection
 * compensations go through (recon_writer.h). Dialect: ? placeholders,
 * `quoted` identifiers, INSERT ... ON DUPLICATE KEY UPDATE k = k.
 *
 * The DSN is a mysql:// (or mariadb://) URI from the variable
 * actions.writer_dsn_env names (the local side's dsn_env when the job names
 * none), parsed by recon_dsn as in source_mysql.c; option files still apply
 * (group [client]). The session is autocommit outside begin()/commit(),
 * utf8mb4, and pinned to time_zone '+00:00'. At open the local time column's
 * DATA_TYPE and DATETIME_PRECISION are read from information_schema.COLUMNS,
 * and time_param() writes for it: TIMESTAMP as UTC wall clock (the session
 * zone), DATETIME and text as wall clock in the local side's zone, DATE as
 * the local date. Fractions are cut to the column's precision (MySQL would
 * round them, MariaDB truncate: this way both store the same second).
 *
 * exec() runs a prepared statement with MYSQL_TYPE_STRING parameters (NULL
 * as is_null); statements are cached per SQL text (STMT_CACHE, least
 * recently used evicted), since the action SQL is a handful of fixed texts.
 * Failures are classified:
 *   RECON_ERETRY  1205 lock wait timeout, 1213 deadlock, 1615 statement needs
 *                 re-preparing, and a lost connection (2006, 2013, 2055,
 *                 1927 connection killed, 1053 shutdown, 4031 idle
 *                 disconnect): the next begin() or exec() outside a
 *                 transaction reconnects from scratch (never the client
 *                 library's silent auto-reconnect, which would drop the
 *                 session settings and a transaction unnoticed);
 *   RECON_EPERM   1044, 1142, 1143, 1227 access denied: a grant is missing;
 *   RECON_ECONFIG 1048 null, 1054 unknown column, 1146 no table, 1364 no
 *                 default, 1452 foreign key, 3819/4025 check: a table the job
 *                 cannot fill;
 *   RECON_EINPUT  anything else (constraint violations ON DUPLICATE KEY does
 *                 not swallow, data errors), with the first line of the
 *                 server's message.
 * A failure inside a transaction poisons it (recon_writer.c). This matters
 * on MySQL, where a failed statement (or a 1205 lock wait timeout) rolls back
 * only itself and leaves the transaction open: a partial transaction never
 * commits.
 *
 * Messages name "mysql host/db" at most: the DSN and its password never
 * appear (recon_dsn_first_line() scrubs the password out of server text).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_time.h"
#include "recon_writer.h"

/* MySQL 8's client library dropped my_bool for bool; Connector/C keeps it */
#if !defined(MARIADB_PACKAGE_VERSION) && defined(LIBMYSQL_VERSION_ID) &&                           \
    LIBMYSQL_VERSION_ID >= 80000
typedef bool my_bool;
#endif

#define CONNECT_TIMEOUT_S 10
#define IO_TIMEOUT_S	  60 /* actions.timeout or the DSN's read_timeout override it */
#define STMT_CACHE	  32

/* Server and client error numbers (mysqld_error.h, errmsg.h). */
#define ER_DBACCESS_DENIED_ERROR	1044
#define ER_SERVER_SHUTDOWN		1053
#define ER_TABLEACCESS_DENIED_ERROR	1142
#define ER_COLUMNACCESS_DENIED_ERROR	1143
#define ER_SPECIFIC_ACCESS_DENIED_ERROR 1227
#define ER_LOCK_WAIT_TIMEOUT		1205
#define ER_LOCK_DEADLOCK		1213
#define ER_NEED_REPREPARE		1615
#define ER_CONNECTION_KILLED		1927 /* MariaDB */
#define ER_CLIENT_INTERACTION_TIMEOUT	4031 /* MySQL 8 */
#define CR_SERVER_GONE_ERROR		2006
#define CR_SERVER_LOST			2013
#define CR_SERVER_LOST_EXTENDED		2055

enum time_kind {
	TK_MISSING = 0, /* the column was not found: time_param() fails */
	TK_UNSUPPORTED,
	TK_UTC,	 /* TIMESTAMP */
	TK_WALL, /* DATETIME */
	TK_DATE, /* DATE */
	TK_TEXT, /* CHAR, VARCHAR, TEXT */
};

struct my_stmt {
	char *sql;
	MYSQL_STMT *st;
	uint64_t used; /* tick of the last use, for eviction */
};

struct my_writer {
	struct recon_writer base;
	MYSQL *conn;
	struct recon_dsn_mysql dsn; /* kept for reconnecting; the password wiped at close */
	unsigned timeout;
	unsigned io_timeout; /* seconds a read or write may wait for the server */
	enum time_kind tk;
	char time_type[32]; /* the column's DATA_TYPE, for messages */
	int precision;	    /* fraction digits kept (0-3) */
	bool lost;	    /* the connection dropped: re-established by the next call */
	struct my_stmt cache[STMT_CACHE];
	size_t ncache;
	uint64_t tick;
	/* parameter binds, grown as needed */
	MYSQL_BIND *binds;
	unsigned long *lens;
	my_bool *nulls;
	size_t nbinds;
};

/* Records code with "<what>: <first line of msg>" (or the line alone), password scrubbed. */
static int fail(struct my_writer *w, struct recon_err *err, int code, const char *what,
		const char *msg)
{
	char line[200];

	recon_dsn_first_line(msg && *msg ? msg : "connection lost", w->dsn.password, line,
			     sizeof(line));
	if (what)
		return recon_err_set(err, code, w->base.where, "%s: %s", what, line);
	return recon_err_set(err, code, w->base.where, "%s", line);
}

static bool lost_errno(unsigned e)
{
	return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_SERVER_LOST_EXTENDED ||
	       e == ER_CONNECTION_KILLED || e == ER_SERVER_SHUTDOWN ||
	       e == ER_CLIENT_INTERACTION_TIMEOUT;
}

/* 1205 lock wait timeout, 1213 deadlock, 1615 re-prepare, a lost connection. */
static bool my_transient(long code, const char *state)
{
	(void)state;
	return (code > 0 && lost_errno((unsigned)code)) || code == ER_LOCK_WAIT_TIMEOUT ||
	       code == ER_LOCK_DEADLOCK || code == ER_NEED_REPREPARE;
}

/* Classifies error number e (message msg), records it and returns its code. */
static int fail_errno(struct my_writer *w, struct recon_err *err, const char *what, unsigned e,
		      const char *msg)
{
	int code = RECON_EINPUT;

	if (lost_errno(e)) {
		w->lost = true;
		code = RECON_ERETRY;
	} else if (my_transient(e, NULL)) {
		code = RECON_ERETRY;
	} else if (e == 1044 || e == 1142 || e == 1143 || e == 1227) {
		/* ER_DBACCESS_DENIED, ER_TABLEACCESS_DENIED, ER_COLUMNACCESS_DENIED,
		   ER_SPECIFIC_ACCESS_DENIED: a grant is missing */
		code = RECON_EPERM;
	} else if (e == 1048 || e == 1054 || e == 1146 || e == 1364 || e == 1452 || e == 3819 ||
		   e == 4025) {
		/* ER_BAD_NULL, ER_BAD_FIELD, ER_NO_SUCH_TABLE, ER_NO_DEFAULT_FOR_FIELD,
		   ER_NO_REFERENCED_ROW_2, CHECK (MySQL 3819, MariaDB 4025): a table the
		   job cannot fill */
		code = RECON_ECONFIG;
	}
	return fail(w, err, code, what, msg);
}

static int fail_conn(struct my_writer *w, struct recon_err *err, const char *what)
{
	return fail_errno(w, err, what, mysql_errno(w->conn), mysql_error(w->conn));
}

static int fail_stmt(struct my_writer *w, struct recon_err *err, MYSQL_STMT *st)
{
	unsigned e = mysql_stmt_errno(st);

	if (!e)
		return fail_conn(w, err, NULL);
	return fail_errno(w, err, NULL, e, mysql_stmt_error(st));
}

static void cache_clear(struct my_writer *w)
{
	for (size_t i = 0; i < w->ncache; i++) {
		mysql_stmt_close(w->cache[i].st);
		free(w->cache[i].sql);
	}
	w->ncache = 0;
}

static void cache_drop(struct my_writer *w, size_t i)
{
	mysql_stmt_close(w->cache[i].st);
	free(w->cache[i].sql);
	w->cache[i] = w->cache[--w->ncache];
}

/* Closes the connection first (detaching the statements), then the statements. */
static void disconnect(struct my_writer *w)
{
	if (w->conn)
		mysql_close(w->conn);
	w->conn = NULL;
	cache_clear(w);
}

/* Connects with w->dsn and pins the session; `code` on failure (EUNAVAIL or ERETRY). */
static int connect_server(struct my_writer *w, int code, struct recon_err *err)
{
	static const char *const setup[] = {
	    "SET SESSION time_zone = '+00:00'",
	};
	const struct recon_dsn_mysql *d = &w->dsn;
	unsigned no_infile = 0;

	if (!(w->conn = mysql_init(NULL)))
		return recon_err_set(err, code, w->base.where, "cannot connect: out of memory");
	/* option files ([client]) still apply for what the DSN leaves out */
	mysql_options(w->conn, MYSQL_READ_DEFAULT_GROUP, "client");
	mysql_options(w->conn, MYSQL_OPT_CONNECT_TIMEOUT, &w->timeout);
	/* a frozen server: the call fails as a lost connection (retried, then the breaker) */
	mysql_options(w->conn, MYSQL_OPT_READ_TIMEOUT, &w->io_timeout);
	mysql_options(w->conn, MYSQL_OPT_WRITE_TIMEOUT, &w->io_timeout);
	mysql_options(w->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(w->conn, MYSQL_OPT_LOCAL_INFILE, &no_infile);
	mysql_options4(w->conn, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", "recon-writer");
	/* no CLIENT_FOUND_ROWS: affected rows 0 must mean "already there" */
	if (!mysql_real_connect(w->conn, d->host, d->user, d->password, d->db, d->port, d->socket,
				0))
		return fail(w, err, code, "cannot connect", mysql_error(w->conn));
	/* an option file may name another charset */
	if (mysql_set_character_set(w->conn, "utf8mb4"))
		return fail(w, err, code, "cannot set the character set", mysql_error(w->conn));
	if (mysql_autocommit(w->conn, 1))
		return fail(w, err, code, "cannot switch autocommit on", mysql_error(w->conn));
	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
		if (mysql_query(w->conn, setup[i]))
			return fail(w, err, code, "cannot set up the session",
				    mysql_error(w->conn));
	return 0;
}

/* Re-establishes a lost connection; RECON_ERETRY while the server is away. */
static int ensure_conn(struct my_writer *w, struct recon_err *err)
{
	if (!w->lost)
		return 0;
	if (w->base.in_tx)
		return fail(w, err, RECON_ERETRY, NULL,
			    "the connection was lost inside a transaction: roll back and retry");
	disconnect(w);
	if (connect_server(w, RECON_ERETRY, err) < 0) {
		disconnect(w);
		return err->code;
	}
	w->lost = false;
	recon_log(RECON_LOG_INFO, "%s: writer connection re-established", w->base.where);
	return 0;
}

/* Reads the local time column's type (information_schema, bound parameters). */
static int read_time_type(struct my_writer *w, struct recon_err *err)
{
	static const char q[] = "SELECT DATA_TYPE, COALESCE(DATETIME_PRECISION, 0) "
				"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
				"AND TABLE_NAME = ? AND COLUMN_NAME = ?";
	const struct recon_side *lo = &w->base.job->local;
	const char *table = lo->table, *col = lo->cols[RECON_COL_TIME];
	MYSQL_STMT *st = NULL;
	MYSQL_BIND in[2], outb[2];
	unsigned long inlen[2], tlen = 0;
	long long prec = 0;
	char type[32] = "";
	my_bool tnull = 0, terr = 0;
	int rc = 0, f;

	w->tk = TK_MISSING;
	if (!table || !col)
		return 0;
	if (!(st = mysql_stmt_init(w->conn)))
		return fail(w, err, RECON_EUNAVAIL, "cannot prepare a statement",
			    mysql_error(w->conn));
	memset(in, 0, sizeof(in));
	memset(outb, 0, sizeof(outb));
	inlen[0] = (unsigned long)strlen(table);
	inlen[1] = (unsigned long)strlen(col);
	in[0].buffer_type = in[1].buffer_type = MYSQL_TYPE_STRING;
	in[0].buffer = (void *)(uintptr_t)table; /* only read */
	in[0].buffer_length = inlen[0];
	in[0].length = &inlen[0];
	in[1].buffer = (void *)(uintptr_t)col;
	in[1].buffer_length = inlen[1];
	in[1].length = &inlen[1];
	outb[0].buffer_type = MYSQL_TYPE_STRING;
	outb[0].buffer = type;
	outb[0].buffer_length = sizeof(type) - 1;
	outb[0].length = &tlen;
	outb[0].is_null = &tnull;
	outb[0].error = &terr;
	outb[1].buffer_type = MYSQL_TYPE_LONGLONG;
	outb[1].buffer = &prec;
	if (mysql_stmt_prepare(st, q, (unsigned long)strlen(q)) || mysql_stmt_bind_param(st, in) ||
	    mysql_stmt_execute(st) || mysql_stmt_bind_result(st, outb)) {
		rc = fail(w, err, RECON_EUNAVAIL, "cannot read the time column's type",
			  mysql_stmt_error(st));
		goto out;
	}
	f = mysql_stmt_fetch(st);
	if (f == 1) {
		rc = fail(w, err, RECON_EUNAVAIL, "cannot read the time column's type",
			  mysql_stmt_error(st));
		goto out;
	}
	if (f == MYSQL_NO_DATA || tnull)
		goto out;
	type[tlen < sizeof(type) ? tlen : sizeof(type) - 1] = '\0';
	snprintf(w->time_type, sizeof(w->time_type), "%s", type);
	w->precision = prec < 0 ? 0 : prec > 3 ? 3 : (int)prec;
	if (!strcmp(type, "timestamp"))
		w->tk = TK_UTC;
	else if (!strcmp(type, "datetime"))
		w->tk = TK_WALL;
	else if (!strcmp(type, "date"))
		w->tk = TK_DATE;
	else if (!strcmp(type, "char") || !strcmp(type, "varchar") || !strcmp(type, "text") ||
		 !strcmp(type, "tinytext") || !strcmp(type, "mediumtext") ||
		 !strcmp(type, "longtext"))
		w->tk = TK_TEXT;
	else
		w->tk = TK_UNSUPPORTED;
out:
	mysql_stmt_close(st);
	return rc;
}

static void my_close(struct recon_writer *base)
{
	struct my_writer *w = (struct my_writer *)base;

	if (!w)
		return;
	/* an open transaction rolls back with the session */
	disconnect(w);
	recon_dsn_mysql_release(&w->dsn);
	free(w->binds);
	free(w->lens);
	free(w->nulls);
	free(w);
}

static int my_open(struct recon_writer **out, const struct recon_job *job, struct recon_err *err)
{
	struct my_writer *w = recon_xcalloc(1, sizeof(*w));
	const char *var = job->actions.writer_dsn_env, *field = "actions.writer_dsn_env", *dsn;
	const struct recon_dsn_mysql *d = &w->dsn;
	int rc = 0;

	w->base.backend = &recon_writer_mysql;
	w->base.job = job;
	w->timeout = CONNECT_TIMEOUT_S;
	recon_dsn_mysql_init(&w->dsn);
	if (!var) {
		var = job->local.dsn_env;
		field = "local.dsn_env";
	}
	snprintf(w->base.where, sizeof(w->base.where), "mysql '%s'", var ? var : "");
	dsn = var ? getenv(var) : NULL;
	if (!dsn || !*dsn) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "environment variable '%s' (%s) is not set", var ? var : "",
				   field);
		goto out;
	}
	if ((rc = recon_dsn_mysql_parse(dsn, var, &w->dsn, err)) < 0)
		goto out;
	if (d->connect_timeout)
		w->timeout = d->connect_timeout;
	w->io_timeout = IO_TIMEOUT_S;
	if (job->actions.timeout_ms > 0)
		w->io_timeout = job->actions.timeout_ms >= (int64_t)86400 * 1000
				    ? 86400
				    : (unsigned)((job->actions.timeout_ms + 999) / 1000);
	if (d->read_timeout)
		w->io_timeout = d->read_timeout;
	snprintf(w->base.where, sizeof(w->base.where), "mysql %s/%s",
		 d->host ? d->host : (d->socket ? d->socket : "localhost"), d->db ? d->db : "?");
	if ((rc = connect_server(w, RECON_EUNAVAIL, err)) < 0 || (rc = read_time_type(w, err)) < 0)
		goto out;
	*out = &w->base;
	w = NULL;
out:
	my_close(w ? &w->base : NULL);
	return rc;
}

/* The cached statement for sql, prepared on first use. */
static int get_stmt(struct my_writer *w, const char *sql, MYSQL_STMT **out, struct recon_err *err)
{
	struct my_stmt *c;
	MYSQL_STMT *st;
	size_t oldest = 0;

	for (size_t i = 0; i < w->ncache; i++) {
		if (!strcmp(w->cache[i].sql, sql)) {
			w->cache[i].used = ++w->tick;
			*out = w->cache[i].st;
			return 0;
		}
		if (w->cache[i].used < w->cache[oldest].used)
			oldest = i;
	}
	if (!(st = mysql_stmt_init(w->conn)))
		return fail_conn(w, err, "cannot prepare a statement");
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql))) {
		int rc = fail_stmt(w, err, st);
		mysql_stmt_close(st);
		return rc;
	}
	if (w->ncache == STMT_CACHE)
		cache_drop(w, oldest);
	c = &w->cache[w->ncache++];
	c->sql = recon_xstrdup(sql);
	c->st = st;
	c->used = ++w->tick;
	*out = st;
	return 0;
}

static void uncache(struct my_writer *w, MYSQL_STMT *st)
{
	for (size_t i = 0; i < w->ncache; i++)
		if (w->cache[i].st == st) {
			cache_drop(w, i);
			return;
		}
}

static int run_stmt(struct my_writer *w, const char *sql, const char *const *params, int n,
		    int64_t *affected, struct recon_err *err)
{
	MYSQL_STMT *st = NULL;
	int rc;

	if ((rc = get_stmt(w, sql, &st, err)) < 0)
		return rc;
	if (n < 0 || mysql_stmt_param_count(st) != (unsigned long)n)
		return recon_err_set(err, RECON_EINTERNAL, w->base.where,
				     "statement takes %lu parameters, %d given",
				     (unsigned long)mysql_stmt_param_count(st), n);
	if ((size_t)n > w->nbinds) {
		w->binds = recon_xrealloc(w->binds, recon_st_mult((size_t)n, sizeof(*w->binds)));
		w->lens = recon_xrealloc(w->lens, recon_st_mult((size_t)n, sizeof(*w->lens)));
		w->nulls = recon_xrealloc(w->nulls, recon_st_mult((size_t)n, sizeof(*w->nulls)));
		w->nbinds = (size_t)n;
	}
	if (n > 0) {
		memset(w->binds, 0, recon_st_mult((size_t)n, sizeof(*w->binds)));
		for (int i = 0; i < n; i++) {
			MYSQL_BIND *b = &w->binds[i];
			b->buffer_type = MYSQL_TYPE_STRING;
			w->nulls[i] = params[i] == NULL;
			w->lens[i] = params[i] ? (unsigned long)strlen(params[i]) : 0;
			b->buffer = (void *)(uintptr_t)(params[i] ? params[i] : ""); /* only read */
			b->buffer_length = w->lens[i];
			b->length = &w->lens[i];
			b->is_null = &w->nulls[i];
		}
		if (mysql_stmt_bind_param(st, w->binds))
			return fail_stmt(w, err, st);
	}
	if (mysql_stmt_execute(st)) {
		rc = fail_stmt(w, err, st);
		if (mysql_stmt_errno(st) == ER_NEED_REPREPARE)
			uncache(w, st);
		return rc;
	}
	if (mysql_stmt_field_count(st) > 0) {
		/* a statement with a result: read it off the wire, report its row count */
		if (mysql_stmt_store_result(st))
			return fail_stmt(w, err, st);
		*affected = (int64_t)mysql_stmt_num_rows(st);
		mysql_stmt_free_result(st);
	} else {
		*affected = (int64_t)mysql_stmt_affected_rows(st);
	}
	return 0;
}

static int my_exec(struct recon_writer *base, const char *sql, const char *const *params, int n,
		   int64_t *affected, struct recon_err *err)
{
	struct my_writer *w = (struct my_writer *)base;
	int rc;

	*affected = 0;
	if ((rc = ensure_conn(w, err)) < 0 || (rc = run_stmt(w, sql, params, n, affected, err)) < 0)
		return rc;
	return 0;
}

static int simple(struct my_writer *w, const char *sql, struct recon_err *err)
{
	char what[64];

	if (!mysql_real_query(w->conn, sql, (unsigned long)strlen(sql)))
		return 0;
	snprintf(what, sizeof(what), "%s failed", sql);
	return fail_conn(w, err, what);
}

static int my_begin(struct recon_writer *base, struct recon_err *err)
{
	struct my_writer *w = (struct my_writer *)base;
	int rc;

	if ((rc = ensure_conn(w, err)) < 0)
		return rc;
	return simple(w, "START TRANSACTION", err);
}

static void my_rollback(struct recon_writer *base)
{
	struct my_writer *w = (struct my_writer *)base;

	if (w->lost) /* the transaction went with the connection */
		return;
	if (mysql_real_query(w->conn, "ROLLBACK", 8) && lost_errno(mysql_errno(w->conn)))
		w->lost = true;
}

static int my_commit(struct recon_writer *base, struct recon_err *err)
{
	return simple((struct my_writer *)base, "COMMIT", err);
}

/* Wall clock wall_ms as "YYYY-MM-DD HH:MM:SS[.f{digits}]" (fraction truncated). */
static void format_wall(int64_t wall_ms, int digits, bool date_only, char *buf, size_t size)
{
	int64_t day = wall_ms / RECON_MS_PER_DAY, ms = wall_ms % RECON_MS_PER_DAY;
	int y, n;
	unsigned m, d;

	if (ms < 0) {
		ms += RECON_MS_PER_DAY;
		day--;
	}
	recon_civil_from_days(day, &y, &m, &d);
	if (date_only) {
		snprintf(buf, size, "%04d-%02u-%02u", y, m, d);
		return;
	}
	n = snprintf(buf, size, "%04d-%02u-%02u %02d:%02d:%02d", y, m, d,
		     (int)(ms / RECON_MS_PER_HOUR), (int)(ms / RECON_MS_PER_MIN % 60),
		     (int)(ms / RECON_MS_PER_SEC % 60));
	if (digits > 0 && n > 0 && (size_t)n < size) {
		char frac[8];
		snprintf(frac, sizeof(frac), "%03d", (int)(ms % RECON_MS_PER_SEC));
		snprintf(buf + n, size - (size_t)n, ".%.*s", digits, frac);
	}
}

static int my_time_param(struct recon_writer *base, int64_t utc_ms, char *buf, size_t size,
			 const char **wrap, struct recon_err *err)
{
	struct my_writer *w = (struct my_writer *)base;
	const struct recon_side *lo = &w->base.job->local;

	if (size < 24)
		return recon_err_set(err, RECON_EINTERNAL, w->base.where, "time buffer too small");
	*wrap = "%s";
	/* a table created after open: look again */
	if (w->tk == TK_MISSING && !w->lost && read_time_type(w, err) < 0)
		return err->code;
	switch (w->tk) {
	case TK_UTC: /* the session zone is +00:00 */
		format_wall(utc_ms, w->precision, false, buf, size);
		return 0;
	case TK_WALL:
		format_wall(recon_tz_to_local(lo->tz, utc_ms), w->precision, false, buf, size);
		return 0;
	case TK_DATE:
		format_wall(recon_tz_to_local(lo->tz, utc_ms), 0, true, buf, size);
		return 0;
	case TK_TEXT:
		/* as recon_time_format_local() writes it; milliseconds only when there are some */
		format_wall(recon_tz_to_local(lo->tz, utc_ms), utc_ms % 1000 ? 3 : 0, false, buf,
			    size);
		return 0;
	case TK_UNSUPPORTED:
		return recon_err_set(err, RECON_ECONFIG, w->base.where,
				     "time column '%s' of table '%s' has an unsupported type "
				     "(%s): use TIMESTAMP, DATETIME, DATE or text",
				     lo->cols[RECON_COL_TIME], lo->table, w->time_type);
	case TK_MISSING:
		break;
	}
	return recon_err_set(err, RECON_ECONFIG, w->base.where,
			     "time column '%s' of table '%s' not found in the writer's database",
			     lo->cols[RECON_COL_TIME] ? lo->cols[RECON_COL_TIME] : "",
			     lo->table ? lo->table : "");
}

const struct recon_writer_backend recon_writer_mysql = {
    .name = "mysql",
    .flags = RECON_WRITER_DSN,
    .placeholder = RECON_WRITER_PH_QMARK,
    .quote = '`',
    .upsert = RECON_WRITER_UPSERT_DUPLICATE_KEY,
    .transient = my_transient,
    .open = my_open,
    .begin = my_begin,
    .commit = my_commit,
    .rollback = my_rollback,
    .exec = my_exec,
    .time_param = my_time_param,
    .close = my_close,
};
