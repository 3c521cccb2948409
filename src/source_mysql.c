/*
 * MySQL / MariaDB reader (MariaDB Connector/C, libmariadb).
 *
 * The DSN is a mysql:// (or mariadb://) URI from the side's environment
 * variable, parsed by recon_dsn; option files still apply (group [client]),
 * so a DSN without a password can take it from ~/.my.cnf. The session is
 * pinned to UTC and utf8mb4 and reads inside one
 * `START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY` at REPEATABLE READ:
 * the window scan and the later key lookups see one snapshot and nothing can
 * be written. A user with only SELECT on the table is enough.
 *
 * Streaming: mysql_use_result() streams but takes no bound parameters, and
 * the window bounds must be bound, not pasted into the SQL. So the scan is a
 * prepared statement executed without a cursor and without
 * mysql_stmt_store_result(): every mysql_stmt_fetch() then reads the next row
 * off the socket into fixed per-column buffers (unbuffered, flat memory).
 *
 * The window is pushed down as `WHERE `time` >= ? AND `time` < ?`. The time
 * column's type, from the statement's result metadata, says how to bind the
 * bounds: TIMESTAMP as UTC (the session zone is +00:00; its values get a 'Z'
 * appended so they parse as UTC), DATETIME and DATE as wall clock in the
 * side's zone, text as wall-clock text widened by a day (as in
 * source_sqlite.c). recon_run.c filters rows exactly on their parsed time.
 * Every value is fetched as text: DECIMAL exact, integers as digits (small-
 * integer statuses go through the status map); a FLOAT/DOUBLE amount column
 * makes every row a reject.
 *
 * Errors are RECON_EUNAVAIL with the first line of the client or server
 * message, and name host/db at most: the DSN and its password never appear.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "recon_buf.h"
#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_source.h"
#include "recon_time.h"

/* MySQL 8's client library dropped my_bool for bool; Connector/C keeps it */
#if !defined(MARIADB_PACKAGE_VERSION) && defined(LIBMYSQL_VERSION_ID) &&                           \
    LIBMYSQL_VERSION_ID >= 80000
typedef bool my_bool;
#endif

#define CONNECT_TIMEOUT_S 10
/* I/O: the first row of a big sorted read may take minutes; a write is one packet */
#define READ_TIMEOUT_S	600
#define WRITE_TIMEOUT_S 60
#define COL_BUF_INITIAL 64

struct my_col {
	char *buf;
	unsigned long cap; /* bytes in buf; the bind offers cap - 2 (room for 'Z' and NUL) */
	unsigned long len;
	my_bool is_null;
	my_bool error;
	enum enum_field_types type;
};

struct mysql_source {
	struct recon_source base;
	MYSQL *conn;
	MYSQL_STMT *scan;
	MYSQL_STMT *lookup;
	MYSQL_STMT *lookup_many; /* key IN (? x RECON_LOOKUP_BATCH), one-column keys */
	MYSQL_BIND *many;	 /* its parameters */
	unsigned long *many_len;
	MYSQL_STMT *cur; /* the statement next() fetches from, NULL when done */
	const struct recon_side *side;
	int colidx[RECON_COL__COUNT]; /* result column per role, -1 when unmapped */
	unsigned ncols;
	struct my_col cols[RECON_COL__COUNT];
	MYSQL_BIND res[RECON_COL__COUNT];
	bool time_utc; /* the time column is a TIMESTAMP: values are UTC */
	MYSQL_TIME lo_t, hi_t;
	char lo_s[40], hi_s[40];
	unsigned long lo_len, hi_len;
	char *secret; /* the DSN's password, scrubbed from messages; wiped at close */
	char where[160];
	struct recon_raw_row row;
};

static bool is_amount(int c)
{
	return c == RECON_COL_AMOUNT || c == RECON_COL_AMOUNT_MINOR || c == RECON_COL_REFUND_AMOUNT;
}

static int fail_msg(struct mysql_source *s, struct recon_err *err, const char *what,
		    const char *msg)
{
	char line[200];

	recon_dsn_first_line(msg && *msg ? msg : "connection lost", s->secret, line, sizeof(line));
	return recon_err_set(err, RECON_EUNAVAIL, s->where, "%s: %s", what, line);
}

static int fail_stmt(struct mysql_source *s, struct recon_err *err, MYSQL_STMT *st)
{
	char what[128];

	const char *m = mysql_stmt_error(st);

	snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
	if (!m || !*m)
		m = mysql_error(s->conn);
	return fail_msg(s, err, what, m);
}

static void build_select(struct mysql_source *s, struct recon_buf *sql)
{
	s->ncols = recon_source_sql_select(s->side, '`', sql, s->colidx);
}

static void to_mysql_time(int64_t wall_ms, MYSQL_TIME *t)
{
	int64_t days = wall_ms / RECON_MS_PER_DAY, ms = wall_ms % RECON_MS_PER_DAY;
	int y;
	unsigned m, d;

	if (ms < 0) {
		ms += RECON_MS_PER_DAY;
		days--;
	}
	recon_civil_from_days(days, &y, &m, &d);
	memset(t, 0, sizeof(*t));
	t->year = (unsigned)y;
	t->month = m;
	t->day = d;
	t->hour = (unsigned)(ms / RECON_MS_PER_HOUR);
	t->minute = (unsigned)(ms / RECON_MS_PER_MIN % 60);
	t->second = (unsigned)(ms / RECON_MS_PER_SEC % 60);
	t->second_part = (unsigned long)(ms % 1000) * 1000;
	t->time_type = MYSQL_TIMESTAMP_DATETIME;
}

/* Wall clocks repeat or skip around a DST change: widen there (see source_postgres.c). */
static int64_t dst_slack(const struct recon_tz *tz, int64_t t)
{
	return recon_tz_offset(tz, t - RECON_MS_PER_DAY) ==
		       recon_tz_offset(tz, t + RECON_MS_PER_DAY)
		   ? 0
		   : 3 * RECON_MS_PER_HOUR;
}

/* Fills params[0..2) with the window bounds for the time column's type. */
static int bounds(struct mysql_source *s, enum enum_field_types type,
		  const struct recon_window *win, MYSQL_BIND *params, struct recon_err *err)
{
	const struct recon_tz *tz = s->side->tz;

	memset(params, 0, 2 * sizeof(*params));
	switch (type) {
	case MYSQL_TYPE_TIMESTAMP:
		s->time_utc = true;
		to_mysql_time(win->read_start, &s->lo_t);
		to_mysql_time(win->read_end, &s->hi_t);
		break;
	case MYSQL_TYPE_DATETIME:
	case MYSQL_TYPE_DATE:
	case MYSQL_TYPE_NEWDATE:
		to_mysql_time(
		    recon_tz_to_local(tz, win->read_start - dst_slack(tz, win->read_start)),
		    &s->lo_t);
		to_mysql_time(recon_tz_to_local(tz, win->read_end + dst_slack(tz, win->read_end)),
			      &s->hi_t);
		break;
	case MYSQL_TYPE_VARCHAR:
	case MYSQL_TYPE_VAR_STRING:
	case MYSQL_TYPE_STRING:
	case MYSQL_TYPE_BLOB:
	case MYSQL_TYPE_TINY_BLOB:
	case MYSQL_TYPE_MEDIUM_BLOB:
	case MYSQL_TYPE_LONG_BLOB:
		/* a 'T' separator or an offset suffix must not hide a row: widen a day */
		recon_time_format_local(tz, win->read_start - RECON_MS_PER_DAY, s->lo_s,
					sizeof(s->lo_s));
		recon_time_format_local(tz, win->read_end + RECON_MS_PER_DAY, s->hi_s,
					sizeof(s->hi_s));
		s->lo_len = (unsigned long)strlen(s->lo_s);
		s->hi_len = (unsigned long)strlen(s->hi_s);
		params[0].buffer_type = params[1].buffer_type = MYSQL_TYPE_STRING;
		params[0].buffer = s->lo_s;
		params[0].buffer_length = s->lo_len;
		params[0].length = &s->lo_len;
		params[1].buffer = s->hi_s;
		params[1].buffer_length = s->hi_len;
		params[1].length = &s->hi_len;
		return 0;
	default:
		return recon_err_set(err, RECON_ECONFIG, s->where,
				     "time column '%s' of table '%s' has an unsupported type (%d): "
				     "use TIMESTAMP, DATETIME, DATE or text",
				     s->side->cols[RECON_COL_TIME], s->side->table, (int)type);
	}
	params[0].buffer_type = params[1].buffer_type = MYSQL_TYPE_DATETIME;
	params[0].buffer = &s->lo_t;
	params[0].buffer_length = sizeof(s->lo_t);
	params[1].buffer = &s->hi_t;
	params[1].buffer_length = sizeof(s->hi_t);
	return 0;
}

/* Points the result binds at the column buffers and binds them to both statements. */
static int bind_results(struct mysql_source *s, struct recon_err *err)
{
	for (unsigned i = 0; i < s->ncols; i++) {
		struct my_col *c = &s->cols[i];
		memset(&s->res[i], 0, sizeof(s->res[i]));
		s->res[i].buffer_type = MYSQL_TYPE_STRING;
		s->res[i].buffer = c->buf;
		s->res[i].buffer_length = c->cap - 2;
		s->res[i].length = &c->len;
		s->res[i].is_null = &c->is_null;
		s->res[i].error = &c->error;
	}
	if (s->scan && mysql_stmt_bind_result(s->scan, s->res))
		return fail_stmt(s, err, s->scan);
	if (s->lookup && mysql_stmt_bind_result(s->lookup, s->res))
		return fail_stmt(s, err, s->lookup);
	if (s->lookup_many && mysql_stmt_bind_result(s->lookup_many, s->res))
		return fail_stmt(s, err, s->lookup_many);
	return 0;
}

static int prepare(struct mysql_source *s, MYSQL_STMT **out, const char *sql, struct recon_err *err)
{
	MYSQL_STMT *st = mysql_stmt_init(s->conn);

	if (!st)
		return fail_msg(s, err, "cannot prepare a statement", mysql_error(s->conn));
	*out = st;
	if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)))
		return fail_stmt(s, err, st);
	if (mysql_stmt_field_count(st) != s->ncols)
		return recon_err_set(err, RECON_EINTERNAL, s->where, "unexpected column count");
	return 0;
}

static const struct recon_source_ops my_ops;

/*
 * Connects with the side's DSN (timeouts from it, or the side's idle_timeout),
 * in utf8mb4 and UTC, and starts the one read-only snapshot every statement
 * of the source reads.
 */
static int my_connect(struct mysql_source *s, struct recon_err *err)
{
	static const char *const setup[] = {
	    "SET SESSION time_zone = '+00:00'",
	    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
	    "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
	};
	const struct recon_side *side = s->side;
	struct recon_dsn_mysql d;
	unsigned timeout = CONNECT_TIMEOUT_S, no_infile = 0, rd_timeout = READ_TIMEOUT_S,
		 wr_timeout = WRITE_TIMEOUT_S;
	const char *dsn;
	int rc = 0;

	recon_dsn_mysql_init(&d);
	if ((rc = recon_dsn_get(side, &dsn, err)) < 0 ||
	    (rc = recon_dsn_mysql_parse(dsn, side->dsn_env, &d, err)) < 0)
		goto out;
	if (!side->cols[RECON_COL_TIME]) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "%s: a mysql source needs a time column", side->role);
		goto out;
	}
	if (d.password && *d.password)
		s->secret = recon_xstrdup(d.password);
	if (d.connect_timeout)
		timeout = d.connect_timeout;
	if (side->idle_timeout_ms > 0) /* the side's idle_timeout, as for every source */
		rd_timeout = side->idle_timeout_ms >= (int64_t)86400 * 1000
				 ? 86400
				 : (unsigned)((side->idle_timeout_ms + 999) / 1000);
	if (d.read_timeout)
		rd_timeout = d.read_timeout;
	if (d.write_timeout)
		wr_timeout = d.write_timeout;
	snprintf(s->where, sizeof(s->where), "mysql %s/%s",
		 d.host ? d.host : (d.socket ? d.socket : "localhost"), d.db ? d.db : "?");

	if (!(s->conn = mysql_init(NULL))) {
		rc = recon_err_set(err, RECON_EUNAVAIL, s->where, "cannot connect: out of memory");
		goto out;
	}
	/* option files ([client]) still apply for what the DSN leaves out */
	mysql_options(s->conn, MYSQL_READ_DEFAULT_GROUP, "client");
	mysql_options(s->conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	/* a frozen server ends the run (exit 69) instead of holding it and the lock forever */
	mysql_options(s->conn, MYSQL_OPT_READ_TIMEOUT, &rd_timeout);
	mysql_options(s->conn, MYSQL_OPT_WRITE_TIMEOUT, &wr_timeout);
	mysql_options(s->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(s->conn, MYSQL_OPT_LOCAL_INFILE, &no_infile);
	mysql_options4(s->conn, MYSQL_OPT_CONNECT_ATTR_ADD, "program_name", "recon");
	if (!mysql_real_connect(s->conn, d.host, d.user, d.password, d.db, d.port, d.socket, 0)) {
		rc = fail_msg(s, err, "cannot connect", mysql_error(s->conn));
		goto out;
	}
	/* an option file may name another charset: the reader needs utf8mb4 */
	if (mysql_set_character_set(s->conn, "utf8mb4")) {
		rc = fail_msg(s, err, "cannot set the character set", mysql_error(s->conn));
		goto out;
	}
	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
		if (mysql_query(s->conn, setup[i])) {
			rc = fail_msg(s, err, "cannot start a read-only transaction",
				      mysql_error(s->conn));
			goto out;
		}
out:
	recon_dsn_mysql_release(&d);
	return rc;
}

/* Prepares the window's scan, its result buffers, and its two bounds into params. */
static int my_prepare_scan(struct mysql_source *s, const struct recon_window *win,
			   MYSQL_BIND params[2], struct recon_err *err)
{
	const struct recon_side *side = s->side;
	MYSQL_RES *meta = NULL;
	MYSQL_FIELD *fields;
	struct recon_buf sql;
	int rc;

	recon_buf_init(&sql);
	build_select(s, &sql);
	if (side->time_format) /* times in their own form (epoch, d/m/Y) do not sort as text:
				  the whole table is read, and filtered once parsed */
		recon_buf_adds(&sql, " WHERE ? IS NOT NULL AND ? IS NOT NULL");
	else
		recon_buf_addf(&sql, " WHERE `%s` >= ? AND `%s` < ?", side->cols[RECON_COL_TIME],
			       side->cols[RECON_COL_TIME]);
	/* this partition's keys only (recon_partition.h) */
	recon_partition_sql(side, RECON_PARTITION_SQL_MYSQL, &sql);
	if ((rc = prepare(s, &s->scan, sql.s, err)) < 0)
		goto out;
	if (!(meta = mysql_stmt_result_metadata(s->scan))) {
		rc = fail_stmt(s, err, s->scan);
		goto out;
	}
	fields = mysql_fetch_fields(meta);
	for (unsigned i = 0; i < s->ncols; i++) {
		s->cols[i].cap = COL_BUF_INITIAL;
		s->cols[i].buf = recon_xmalloc(COL_BUF_INITIAL);
		s->cols[i].type = fields[i].type;
	}
	rc = bounds(s,
		    side->time_format ? MYSQL_TYPE_STRING : s->cols[s->colidx[RECON_COL_TIME]].type,
		    win, params, err);
out:
	if (meta)
		mysql_free_result(meta);
	recon_buf_release(&sql);
	return rc;
}

/* Lookups by key, without a time bound, in the same snapshot (one key, or a batch at once). */
static int my_prepare_lookups(struct mysql_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	struct recon_buf sql;
	int rc;

	recon_buf_init(&sql);
	build_select(s, &sql);
	for (unsigned i = 0; i < side->nkey; i++) {
		recon_buf_adds(&sql, i ? " AND " : " WHERE ");
		recon_source_sql_key(side, '`', i, &sql);
		recon_buf_adds(&sql, " = ?");
	}
	if ((rc = prepare(s, &s->lookup, sql.s, err)) < 0 || side->nkey != 1)
		goto out;
	/* many keys in one query; a short batch repeats its last key */
	recon_buf_reset(&sql);
	build_select(s, &sql);
	recon_buf_adds(&sql, " WHERE ");
	recon_source_sql_key(side, '`', 0, &sql);
	recon_buf_adds(&sql, " IN (");
	for (unsigned i = 0; i < RECON_LOOKUP_BATCH; i++)
		recon_buf_adds(&sql, i ? ", ?" : "?");
	recon_buf_addc(&sql, ')');
	if ((rc = prepare(s, &s->lookup_many, sql.s, err)) < 0)
		goto out;
	s->many = recon_xcalloc(RECON_LOOKUP_BATCH, sizeof(*s->many));
	s->many_len = recon_xcalloc(RECON_LOOKUP_BATCH, sizeof(*s->many_len));
out:
	recon_buf_release(&sql);
	return rc;
}

static int my_open(struct recon_source **out, const struct recon_side *side,
		   const struct recon_window *win, struct recon_err *err)
{
	struct mysql_source *s = recon_xcalloc(1, sizeof(*s));
	MYSQL_BIND params[2];
	int rc;

	s->base.ops = &my_ops;
	s->base.name = side->table;
	s->side = side;
	snprintf(s->where, sizeof(s->where), "mysql '%s'", side->dsn_env ? side->dsn_env : "");
	if ((rc = my_connect(s, err)) < 0 || (rc = my_prepare_scan(s, win, params, err)) < 0 ||
	    (rc = my_prepare_lookups(s, err)) < 0 || (rc = bind_results(s, err)) < 0)
		goto out;
	if (mysql_stmt_bind_param(s->scan, params) || mysql_stmt_execute(s->scan)) {
		rc = fail_stmt(s, err, s->scan);
		goto out;
	}
	s->cur = s->scan;
	*out = &s->base;
	s = NULL;
out:
	if (s)
		my_ops.close(&s->base);
	return rc;
}

/* Refetches the columns that did not fit, into grown buffers. */
static int refetch_truncated(struct mysql_source *s, struct recon_err *err)
{
	for (unsigned i = 0; i < s->ncols; i++) {
		struct my_col *c = &s->cols[i];
		if (c->is_null || c->len <= c->cap - 2)
			continue;
		c->cap = (unsigned long)recon_st_add(c->len, 2);
		free(c->buf);
		c->buf = recon_xmalloc(c->cap);
		memset(&s->res[i], 0, sizeof(s->res[i]));
		s->res[i].buffer_type = MYSQL_TYPE_STRING;
		s->res[i].buffer = c->buf;
		s->res[i].buffer_length = c->cap - 2;
		s->res[i].length = &c->len;
		s->res[i].is_null = &c->is_null;
		s->res[i].error = &c->error;
		if (mysql_stmt_fetch_column(s->cur, &s->res[i], i, 0))
			return fail_stmt(s, err, s->cur);
	}
	/* later rows land in the grown buffers */
	return bind_results(s, err);
}

static int my_next(struct recon_source *src, const struct recon_raw_row **row,
		   struct recon_err *err)
{
	struct mysql_source *s = (struct mysql_source *)src;
	int rc;

	if (!s->cur)
		return RECON_DONE;
	rc = mysql_stmt_fetch(s->cur);
	if (rc == MYSQL_NO_DATA) {
		s->cur = NULL;
		return RECON_DONE;
	}
	if (rc == MYSQL_DATA_TRUNCATED) {
		if ((rc = refetch_truncated(s, err)) < 0) {
			s->cur = NULL;
			return rc;
		}
	} else if (rc != 0) {
		rc = fail_stmt(s, err, s->cur);
		s->cur = NULL;
		return rc;
	}
	memset(&s->row, 0, sizeof(s->row));
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		int i = s->colidx[c];
		struct my_col *col;

		if (i < 0 || s->cols[i].is_null)
			continue;
		col = &s->cols[i];
		if (c == RECON_COL_TIME && s->time_utc && col->len) {
			/* TIMESTAMP values are printed in the session zone, UTC */
			col->buf[col->len] = 'Z';
			col->buf[col->len + 1] = '\0';
			s->row.len[c] = col->len + 1;
		} else {
			s->row.len[c] = col->len;
		}
		if (is_amount(c) &&
		    (col->type == MYSQL_TYPE_FLOAT || col->type == MYSQL_TYPE_DOUBLE))
			s->row.reject = "amount stored as a floating-point value (exactness lost)";
		s->row.val[c] = col->buf;
	}
	*row = &s->row;
	return RECON_ROW;
}

static bool is_integer_type(enum enum_field_types t)
{
	return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_INT24 ||
	       t == MYSQL_TYPE_LONG || t == MYSQL_TYPE_LONGLONG;
}

/* One result at a time per connection: drops what is left of the last one. */
static int lookup_start(struct mysql_source *s, struct recon_err *err)
{
	if (s->cur && mysql_stmt_free_result(s->cur)) {
		int rc = fail_stmt(s, err, s->cur);
		s->cur = NULL;
		return rc;
	}
	s->cur = NULL;
	return 0;
}

/*
 * MySQL compares an integer column with a non-number as 0 = 0: such a key
 * matches no row here instead of the wrong ones.
 */
static bool key_fits(const struct mysql_source *s, unsigned part, const char *p, size_t len)
{
	return !is_integer_type(s->cols[s->colidx[RECON_COL_KEY0 + part]].type) ||
	       recon_source_int_text(p, len);
}

static int my_lookup(struct recon_source *src, const char *const *parts, const size_t *lens,
		     struct recon_err *err)
{
	struct mysql_source *s = (struct mysql_source *)src;
	MYSQL_BIND params[RECON_KEY_PARTS_MAX];
	unsigned long plen[RECON_KEY_PARTS_MAX];
	unsigned n = s->side->nkey;

	int rc;

	if ((rc = lookup_start(s, err)) < 0)
		return rc;
	memset(params, 0, sizeof(params));
	for (unsigned i = 0; i < n; i++) {
		/*
		 * MySQL compares an integer column with a non-number as 0 = 0:
		 * such a key matches no row here instead of the wrong ones.
		 */
		if (!key_fits(s, i, parts[i], lens[i]))
			return 0;
		plen[i] = (unsigned long)lens[i];
		params[i].buffer_type = MYSQL_TYPE_STRING;
		params[i].buffer = (void *)(uintptr_t)parts[i]; /* only read */
		params[i].buffer_length = plen[i];
		params[i].length = &plen[i];
	}
	if (mysql_stmt_bind_param(s->lookup, params) || mysql_stmt_execute(s->lookup))
		return fail_stmt(s, err, s->lookup);
	s->cur = s->lookup;
	return 0;
}

static int my_lookup_many(struct recon_source *src, size_t n, const char *const *keys,
			  const size_t *lens, struct recon_err *err)
{
	struct mysql_source *s = (struct mysql_source *)src;
	size_t used = 0;
	int rc;

	if ((rc = lookup_start(s, err)) < 0)
		return rc;
	memset(s->many, 0, RECON_LOOKUP_BATCH * sizeof(*s->many));
	for (size_t i = 0; i < n; i++) {
		MYSQL_BIND *b = &s->many[used];
		if (!key_fits(s, 0, keys[i], lens[i]))
			continue;
		s->many_len[used] = (unsigned long)lens[i];
		b->buffer_type = MYSQL_TYPE_STRING;
		b->buffer = (void *)(uintptr_t)keys[i]; /* only read */
		b->buffer_length = s->many_len[used];
		b->length = &s->many_len[used];
		used++;
	}
	if (!used)
		return 0; /* nothing any row can hold: next() says done */
	for (size_t i = used; i < RECON_LOOKUP_BATCH; i++)
		s->many[i] = s->many[used - 1]; /* key IN (..., k, k): the same rows */
	if (mysql_stmt_bind_param(s->lookup_many, s->many) || mysql_stmt_execute(s->lookup_many))
		return fail_stmt(s, err, s->lookup_many);
	s->cur = s->lookup_many;
	return 0;
}

static void my_close(struct recon_source *src)
{
	struct mysql_source *s = (struct mysql_source *)src;

	if (!s)
		return;
	/*
	 * The connection goes first: mysql_close() detaches the statements, so
	 * closing them does not read the rest of an unfinished result off the
	 * socket (an aborted read of millions of rows ends at once).
	 */
	if (s->conn)
		mysql_close(s->conn);
	if (s->scan)
		mysql_stmt_close(s->scan);
	if (s->lookup)
		mysql_stmt_close(s->lookup);
	if (s->lookup_many)
		mysql_stmt_close(s->lookup_many);
	free(s->many);
	free(s->many_len);
	for (unsigned i = 0; i < RECON_COL__COUNT; i++)
		free(s->cols[i].buf);
	recon_mem_free_secret(s->secret);
	free(s);
}

static const struct recon_source_ops my_ops = {
    .kind = "mysql",
    .open = my_open,
    .next = my_next,
    .lookup = my_lookup,
    .lookup_many = my_lookup_many,
    .close = my_close,
};

/* ---- recon validate: connection and grants ---- */

/* The privileges the current user holds on `table` (global, schema, table level), one a row. */
static bool probe_has(MYSQL *c, const char *table, const char *priv)
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

/* The preflight of recon validate (recon_source_backend.probe). */
static void my_probe(const struct recon_job *job, const struct recon_side *s,
		     const struct recon_probe *p)
{
	const char *env = p->env;
	const bool writer = p->writer;
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
		recon_probe_say(p, 78, "%s", recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	if (d.connect_timeout)
		timeout = d.connect_timeout;
	if (!(c = mysql_init(NULL))) {
		recon_probe_say(p, 69, "mysql '%s': out of memory", env);
		goto out;
	}
	mysql_options(c, MYSQL_READ_DEFAULT_GROUP, "client");
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (!mysql_real_connect(c, d.host, d.user, d.password, d.db, d.port, d.socket, 0)) {
		recon_probe_say(p, 69, "mysql '%s': cannot connect: %s", env,
				recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
		goto out;
	}
	recon_probe_say(p, 0, "mysql '%s': connected to %s", env, d.db ? d.db : "(no database)");
	if (mysql_query(c, "SET @recon_g = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), "
			   "'''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')")) {
		recon_probe_say(p, 69, "mysql '%s': %s", env,
				recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
		goto out;
	}
	for (int t = -1; t < 0 || (writer && p->tables[t]); t++) {
		const char *table = t < 0 ? s->table : p->tables[t];
		MYSQL_RES *res;
		recon_buf_reset(&q);
		recon_buf_addf(&q, "SELECT 1 FROM `%s` LIMIT 0", table);
		if (mysql_query(c, q.s)) {
			recon_probe_say(
			    p, mysql_errno(c) == 1142 ? 77 : 69, "table '%s': %s", table,
			    recon_dsn_first_line(mysql_error(c), d.password, msg, sizeof(msg)));
			continue;
		}
		res = mysql_store_result(c);
		mysql_free_result(res);
		if (writer && !probe_has(c, table, "INSERT"))
			recon_probe_say(
			    p, 77, "table '%s': needs INSERT (GRANT SELECT, INSERT ON %s TO ...)",
			    table, table);
		else if (writer && t < 0 && job->actions.transition_to &&
			 !probe_has(c, table, "UPDATE"))
			recon_probe_say(p, 77, "table '%s': the transition needs UPDATE", table);
		else if (!writer &&
			 (probe_has(c, table, "INSERT") || probe_has(c, table, "UPDATE") ||
			  probe_has(c, table, "DELETE")))
			recon_probe_say(
			    p, -1,
			    "table '%s': the reader may write it (read in READ ONLY transactions; "
			    "a SELECT-only user is safer)",
			    table);
		else
			recon_probe_say(p, 0, "table '%s': %s", table,
					writer ? "SELECT and INSERT granted" : "SELECT only");
	}
out:
	mysql_close(c);
	recon_dsn_mysql_release(&d);
	recon_buf_release(&q);
}

const struct recon_source_backend recon_source_mysql = {
    .name = "mysql",
    .caps = RECON_SOURCE_TABLE | RECON_SOURCE_DSN | RECON_SOURCE_TIME_PUSHDOWN |
	    RECON_SOURCE_REREADABLE,
    .ops = &my_ops,
    .probe = my_probe,
};
