/*
 * PostgreSQL reader (libpq).
 *
 * The DSN comes from the side's environment variable and goes to libpq whole
 * (URI or keyword form; .pgpass, PGSERVICE and PG* variables keep working).
 * The session is pinned to what the reader expects (time zone UTC, ISO dates,
 * UTF-8) and reads inside one `REPEATABLE READ READ ONLY` transaction, so the
 * window scan and the later key lookups see one snapshot and nothing can be
 * written. A user with only SELECT on the table is enough.
 *
 * Streaming: one prepared statement per query, run with PQsendQueryPrepared()
 * in single-row mode, so libpq holds one row at a time whatever the size of
 * the window. (COPY (SELECT ...) TO STDOUT would be cheaper per row, but COPY
 * takes no bound parameters and the window bounds must be bound, not pasted.)
 *
 * The window is pushed down as `WHERE "time" >= $1 AND "time" < $2`; the
 * parameter types PostgreSQL infers from the time column (PQdescribePrepared)
 * say how to write the bounds: UTC instants for timestamptz, wall-clock text
 * in the side's zone for timestamp, date and text (text widened by a day, as
 * in source_sqlite.c). Rows are then filtered exactly on their parsed time by
 * recon_run.c. Values arrive as text: numeric stays exact, timestamptz
 * carries its "+00" suffix, small-integer statuses are their digits; a
 * floating-point amount column makes every row a reject.
 *
 * Errors are RECON_EUNAVAIL with the first line of the server's message, and
 * name host/db at most: the DSN and its password never appear.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "recon_buf.h"
#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_source.h"
#include "recon_time.h"

/* Built-in type OIDs (pg_type.dat; stable across releases). */
#define PG_INT2OID	  21
#define PG_INT4OID	  23
#define PG_INT8OID	  20
#define PG_TEXTOID	  25
#define PG_NAMEOID	  19
#define PG_BPCHAROID	  1042
#define PG_VARCHAROID	  1043
#define PG_DATEOID	  1082
#define PG_TIMESTAMPOID	  1114
#define PG_TIMESTAMPTZOID 1184
#define PG_FLOAT4OID	  700
#define PG_FLOAT8OID	  701
#define PG_MONEYOID	  790

/* How long a read waits for the server's next answer unless the side says (10 minutes). */
#define WAIT_MS ((int64_t)600000)

struct pg_source {
	struct recon_source base;
	PGconn *conn;
	const struct recon_side *side;
	PGresult *res;	 /* the row handed out last; cleared by the next call */
	PGresult *first; /* a lookup's first result */
	bool busy;	 /* a single-row-mode query is in flight: PQgetResult() until NULL */
	bool cursor;	 /* the window scan: a cursor fetched SCAN_BATCH rows at a time */
	bool fetching;	 /* ...the next batch is asked for while this one is read */
	bool scan_end;	 /* ...and the batch in res is its last */
	int ri, nt;	 /* next row of the batch in res, and the batch's size */
	int colidx[RECON_COL__COUNT]; /* result column per role, -1 when unmapped */
	Oid coltype[RECON_COL__COUNT];
	Oid keytype[RECON_KEY_PARTS_MAX];
	char *secret;	 /* the DSN's password, scrubbed from messages; wiped at close */
	int64_t wait_ms; /* how long a result may be waited for (the side's idle_timeout) */
	bool timed_out;	 /* a wait ran out: the connection is given up, nothing is drained */
	char where[160];
	struct recon_buf scratch;
	struct recon_raw_row row;
};

/*
 * The window is scanned through a cursor (DECLARE takes the bound window
 * parameters; COPY cannot), fetched in batches: one result per SCAN_BATCH
 * rows instead of one per row, and memory bounded by a batch.
 */
#define SCAN_BATCH    8192
#define RECON_XSTR(x) #x
#define RECON_STR(x)  RECON_XSTR(x)

static bool is_amount(int c)
{
	return c == RECON_COL_AMOUNT || c == RECON_COL_AMOUNT_MINOR || c == RECON_COL_REFUND_AMOUNT;
}

/* Records RECON_EUNAVAIL: "<what>: <first line of msg>", password scrubbed. */
static int fail(struct pg_source *s, struct recon_err *err, const char *what, const char *msg)
{
	char line[200];

	recon_dsn_first_line(msg && *msg ? msg : "connection lost", s->secret, line, sizeof(line));
	return recon_err_set(err, RECON_EUNAVAIL, s->where, "%s: %s", what, line);
}

static int fail_res(struct pg_source *s, struct recon_err *err, const char *what,
		    const PGresult *res)
{
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (s->timed_out)
		m = "no answer from the server in time (idle_timeout): connection given up";
	if (!m && res)
		m = PQresultErrorMessage(res);
	if (!m || !*m)
		m = PQerrorMessage(s->conn);
	return fail(s, err, what, m);
}

/*
 * PQgetResult() with a bound wait: input is awaited with poll() for at most
 * s->wait_ms, so a frozen server (SIGSTOP, a dead NAT entry) fails the read
 * (exit 69) instead of holding the run, its snapshot and the job's lock
 * forever. NULL at the end of the results, or when the time ran out
 * (s->timed_out; every later call returns NULL at once).
 */
static PGresult *get_result(struct pg_source *s)
{
	struct timespec ts;
	int64_t deadline, now;

	if (s->timed_out)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + s->wait_ms;
	while (PQisBusy(s->conn)) {
		struct pollfd p = {PQsocket(s->conn), POLLIN, 0};
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline) {
			s->timed_out = true;
			return NULL;
		}
		rc = poll(&p, 1, deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now));
		if ((rc < 0 && errno != EINTR) || (rc > 0 && !PQconsumeInput(s->conn)))
			break; /* PQgetResult() reports the broken connection */
	}
	return PQgetResult(s->conn);
}

static void build_select(struct pg_source *s, struct recon_buf *sql)
{
	recon_source_sql_select(s->side, '"', sql, s->colidx);
}

/*
 * What PQexec() would return for the query just sent (sent: the PQsend*()
 * call's answer): the last result, or the first error; each wait bounded by
 * get_result(). NULL when sending failed or the time ran out.
 */
static PGresult *last_result(struct pg_source *s, int sent)
{
	PGresult *last = NULL, *r;

	if (!sent)
		return NULL;
	while ((r = get_result(s)) != NULL) {
		if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
			PQclear(r); /* the first error stands */
			continue;
		}
		PQclear(last);
		last = r;
	}
	if (s->timed_out) {
		PQclear(last);
		return NULL;
	}
	return last;
}

/* Prepares `name`; the statement's description in *desc (caller PQclear()s). */
static int prepare(struct pg_source *s, const char *name, const char *sql, int nparams,
		   PGresult **desc, struct recon_err *err)
{
	char what[128];
	PGresult *res = last_result(s, PQsendPrepare(s->conn, name, sql, nparams, NULL));
	int rc = 0;

	snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = fail_res(s, err, what, res);
		goto out;
	}
	PQclear(res);
	res = last_result(s, PQsendDescribePrepared(s->conn, name));
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = fail_res(s, err, what, res);
		goto out;
	}
	*desc = res;
	res = NULL;
out:
	PQclear(res);
	return rc;
}

/*
 * Widening (ms) of a wall-clock bound at instant t: none in a fixed offset,
 * an hour or two around a DST change (wall clocks repeat or skip there).
 */
static int64_t dst_slack(const struct recon_tz *tz, int64_t t)
{
	return recon_tz_offset(tz, t - RECON_MS_PER_DAY) ==
		       recon_tz_offset(tz, t + RECON_MS_PER_DAY)
		   ? 0
		   : 3 * RECON_MS_PER_HOUR;
}

/* Writes the window bounds for a time column whose parameter type is `type`. */
static int bounds(struct pg_source *s, Oid type, const struct recon_window *win, char *lo, char *hi,
		  size_t size, struct recon_err *err)
{
	const struct recon_tz *tz = s->side->tz;

	switch (type) {
	case PG_TIMESTAMPTZOID:
		recon_time_format_utc(win->read_start, lo, size);
		recon_time_format_utc(win->read_end, hi, size);
		return 0;
	case PG_TIMESTAMPOID:
	case PG_DATEOID:
		recon_time_format_local(tz, win->read_start - dst_slack(tz, win->read_start), lo,
					size);
		recon_time_format_local(tz, win->read_end + dst_slack(tz, win->read_end), hi, size);
		return 0;
	case PG_TEXTOID:
	case PG_VARCHAROID:
	case PG_BPCHAROID:
	case PG_NAMEOID:
		/* a 'T' separator or an offset suffix must not hide a row: widen a day */
		recon_time_format_local(tz, win->read_start - RECON_MS_PER_DAY, lo, size);
		recon_time_format_local(tz, win->read_end + RECON_MS_PER_DAY, hi, size);
		return 0;
	default:
		return recon_err_set(err, RECON_ECONFIG, s->where,
				     "time column '%s' of table '%s' has an unsupported type (oid "
				     "%u): use timestamptz, timestamp, date or text",
				     s->side->cols[RECON_COL_TIME], s->side->table, (unsigned)type);
	}
}

/* Starts a prepared query in single-row mode. */
static int start_query(struct pg_source *s, const char *name, int n, const char *const *vals,
		       struct recon_err *err)
{
	char what[128];

	snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
	if (!PQsendQueryPrepared(s->conn, name, n, vals, NULL, NULL, 0))
		return fail(s, err, what, PQerrorMessage(s->conn));
	s->busy = true;
	if (!PQsetSingleRowMode(s->conn))
		return fail(s, err, what, "cannot switch to single-row mode");
	return 0;
}

/* Reads and discards what is left of the running query. */
static int finish(struct pg_source *s, struct recon_err *err)
{
	PGresult *res;
	int rc = 0;

	while (s->busy && (res = get_result(s)) != NULL) {
		ExecStatusType st = PQresultStatus(res);
		if (!rc && st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK) {
			char what[128];
			snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
			rc = fail_res(s, err, what, res);
		}
		PQclear(res);
	}
	if (!rc && s->busy && s->timed_out) {
		char what[128];
		snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
		rc = fail_res(s, err, what, NULL);
	}
	s->busy = false;
	return rc;
}

static const char fetch_sql[] = "FETCH FORWARD " RECON_STR(SCAN_BATCH) " FROM recon_scan_cur";

/* Closes the window scan's cursor, first taking in a batch asked for (and not needed). */
static void scan_close(struct pg_source *s)
{
	PGresult *r;

	if (s->fetching)
		while ((r = get_result(s)) != NULL)
			PQclear(r);
	s->fetching = false;
	if (s->cursor && !s->timed_out)
		PQclear(last_result(s, PQsendQuery(s->conn, "CLOSE recon_scan_cur")));
	s->cursor = false;
}

/*
 * The next batch of the window scan into s->res. A full batch asks for the
 * next one at once, so the server produces it while this one is read (one
 * round trip at a time would leave each side idle half the time); a short one
 * is the last.
 */
static int fetch_batch(struct pg_source *s, struct recon_err *err)
{
	PGresult *r;

	PQclear(s->res);
	s->res = NULL;
	s->ri = s->nt = 0;
	if (!s->fetching && !PQsendQuery(s->conn, fetch_sql))
		goto fail;
	s->fetching = false;
	s->res = get_result(s);
	while ((r = get_result(s)) != NULL) /* the end of the FETCH's results */
		PQclear(r);
	if (PQresultStatus(s->res) != PGRES_TUPLES_OK)
		goto fail;
	s->nt = PQntuples(s->res);
	s->scan_end = s->nt < SCAN_BATCH;
	if (!s->scan_end) {
		if (!PQsendQuery(s->conn, fetch_sql))
			goto fail;
		s->fetching = true;
	}
	return 0;
fail : {
	char what[128];
	snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
	fail_res(s, err, what, s->res);
	PQclear(s->res);
	s->res = NULL;
	s->nt = 0;
	s->cursor = s->fetching = false; /* the connection or transaction is unusable now */
	return RECON_EUNAVAIL;
}
}

static const struct recon_source_ops pg_ops;

/*
 * Connects with the side's DSN, sets what the value parsing relies on, and
 * starts the one read-only snapshot every statement of the source reads.
 */
static int pg_connect(struct pg_source *s, struct recon_err *err)
{
	static const char *const kw[] = {"connect_timeout", "fallback_application_name", "dbname",
					 NULL};
	const struct recon_side *side = s->side;
	const char *vals[4] = {"10", "recon", NULL, NULL};
	PQconninfoOption *opts = NULL;
	PGresult *res = NULL;
	const char *dsn;
	char *perr = NULL;
	int rc;

	if ((rc = recon_dsn_get(side, &dsn, err)) < 0)
		goto out;
	if (!side->cols[RECON_COL_TIME]) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "%s: a postgres source needs a time "
				   "column",
				   side->role);
		goto out;
	}
	/* libpq's parse errors may quote the string (and so a password): not shown */
	opts = PQconninfoParse(dsn, &perr);
	if (!opts) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "the connection string in '%s' (%s.dsn_env) is not valid for "
				   "libpq",
				   side->dsn_env, side->role);
		goto out;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			s->secret = recon_xstrdup(o->val);

	/* connect_timeout first: a value in the DSN, processed later, overrides it */
	vals[2] = dsn;
	s->conn = PQconnectdbParams(kw, vals, 1);
	if (!s->conn) {
		rc = recon_err_set(err, RECON_EUNAVAIL, s->where, "cannot connect: out of memory");
		goto out;
	}
	snprintf(s->where, sizeof(s->where), "postgres %s/%s",
		 PQhost(s->conn) && *PQhost(s->conn) ? PQhost(s->conn) : "localhost",
		 PQdb(s->conn) ? PQdb(s->conn) : "?");
	if (PQstatus(s->conn) != CONNECTION_OK) {
		rc = fail(s, err, "cannot connect", PQerrorMessage(s->conn));
		goto out;
	}
	if (PQsetClientEncoding(s->conn, "UTF8") != 0) {
		rc = fail(s, err, "cannot set the client encoding", PQerrorMessage(s->conn));
		goto out;
	}
	/* session settings the value parsing relies on, then one read-only snapshot */
	res = last_result(s, PQsendQuery(s->conn, "SET TIME ZONE 'UTC'; SET DateStyle = 'ISO, "
						  "YMD'; BEGIN ISOLATION LEVEL REPEATABLE READ "
						  "READ ONLY"));
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = fail_res(s, err, "cannot start a read-only transaction", res);
out:
	PQclear(res);
	PQconninfoFree(opts);
	PQfreemem(perr);
	return rc;
}

/*
 * Prepares the window's scan: its text into *scan_sql (caller frees), the
 * types of its two bounds into types, the bounds as text into lo and hi.
 */
static int pg_prepare_scan(struct pg_source *s, const struct recon_window *win, char **scan_sql,
			   Oid types[2], char *lo, char *hi, size_t size, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	PGresult *desc = NULL;
	struct recon_buf sql;
	int rc;

	recon_buf_init(&sql);
	build_select(s, &sql);
	if (side->time_format) /* times in their own form (epoch, d/m/Y) do not sort as text:
				  the whole table is read, and filtered once parsed */
		recon_buf_adds(&sql, " WHERE $1::text IS NOT NULL AND $2::text IS NOT NULL");
	else
		recon_buf_addf(&sql, " WHERE \"%s\" >= $1 AND \"%s\" < $2",
			       side->cols[RECON_COL_TIME], side->cols[RECON_COL_TIME]);
	/* this partition's keys only (recon_partition.h) */
	recon_partition_sql(side, RECON_PARTITION_SQL_POSTGRES, &sql);
	if ((rc = prepare(s, "recon_scan", sql.s, 2, &desc, err)) < 0)
		goto out;
	for (int c = 0; c < RECON_COL__COUNT; c++)
		if (s->colidx[c] >= 0)
			s->coltype[c] = PQftype(desc, s->colidx[c]);
	if ((rc = bounds(s, PQparamtype(desc, 0), win, lo, hi, size, err)) < 0)
		goto out;
	types[0] = PQparamtype(desc, 0);
	types[1] = PQparamtype(desc, 1);
	*scan_sql = recon_buf_detach(&sql);
out:
	PQclear(desc);
	recon_buf_release(&sql);
	return rc;
}

/* Lookups by key, without a time bound, in the same snapshot (one key, or many at once). */
static int pg_prepare_lookups(struct pg_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	PGresult *desc = NULL;
	struct recon_buf sql;
	int rc;

	recon_buf_init(&sql);
	build_select(s, &sql);
	for (unsigned i = 0; i < side->nkey; i++) {
		recon_buf_adds(&sql, i ? " AND " : " WHERE ");
		recon_source_sql_key(side, '"', i, &sql);
		recon_buf_addf(&sql, " = $%u", i + 1);
	}
	if ((rc = prepare(s, "recon_lookup", sql.s, (int)side->nkey, &desc, err)) < 0)
		goto out;
	for (unsigned i = 0; i < side->nkey && i < RECON_KEY_PARTS_MAX; i++)
		s->keytype[i] = PQparamtype(desc, (int)i);
	if (side->nkey == 1) {
		/* many keys in one query: the parameter is an array of the key's type */
		PQclear(desc);
		desc = NULL;
		recon_buf_reset(&sql);
		build_select(s, &sql);
		recon_buf_adds(&sql, " WHERE ");
		recon_source_sql_key(side, '"', 0, &sql);
		recon_buf_adds(&sql, " = ANY ($1)");
		rc = prepare(s, "recon_lookup_many", sql.s, 1, &desc, err);
	}
out:
	PQclear(desc);
	recon_buf_release(&sql);
	return rc;
}

/* Opens the scan's cursor over [lo, hi) and fetches its first batch. */
static int pg_declare(struct pg_source *s, const char *scan_sql, const Oid types[2], const char *lo,
		      const char *hi, struct recon_err *err)
{
	const char *bind[2] = {lo, hi};
	PGresult *res;
	struct recon_buf sql;
	int rc = 0;

	recon_buf_init(&sql);
	recon_buf_addf(&sql, "DECLARE recon_scan_cur NO SCROLL CURSOR FOR %s", scan_sql);
	res = last_result(s, PQsendQueryParams(s->conn, sql.s, 2, types, bind, NULL, NULL, 0));
	recon_buf_release(&sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		char what[128];
		snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
		rc = fail_res(s, err, what, res);
	}
	PQclear(res);
	if (rc < 0)
		return rc;
	s->cursor = true;
	/*
	 * Fetch the first batch now: privileges are checked when the statement
	 * runs, not when it is prepared, and a source that cannot be read must
	 * fail at open.
	 */
	return fetch_batch(s, err);
}

static int pg_open(struct recon_source **out, const struct recon_side *side,
		   const struct recon_window *win, struct recon_err *err)
{
	struct pg_source *s = recon_xcalloc(1, sizeof(*s));
	char *scan_sql = NULL, lo[40], hi[40];
	Oid scan_types[2] = {0, 0};
	int rc;

	recon_buf_init(&s->scratch);
	s->base.ops = &pg_ops;
	s->base.name = side->table;
	s->side = side;
	s->wait_ms = side->idle_timeout_ms > 0 ? side->idle_timeout_ms : WAIT_MS;
	snprintf(s->where, sizeof(s->where), "postgres '%s'", side->dsn_env ? side->dsn_env : "");
	if ((rc = pg_connect(s, err)) < 0 ||
	    (rc = pg_prepare_scan(s, win, &scan_sql, scan_types, lo, hi, sizeof(lo), err)) < 0 ||
	    (rc = pg_prepare_lookups(s, err)) < 0 ||
	    (rc = pg_declare(s, scan_sql, scan_types, lo, hi, err)) < 0)
		goto out;
	*out = &s->base;
	s = NULL;
out:
	free(scan_sql);
	if (s)
		pg_ops.close(&s->base);
	return rc;
}

static void fill_row(struct pg_source *s, const PGresult *res, int r);

static int pg_next(struct recon_source *src, const struct recon_raw_row **row,
		   struct recon_err *err)
{
	struct pg_source *s = (struct pg_source *)src;
	PGresult *res;
	char what[128];

	if (s->cursor) {
		if (s->ri >= s->nt && s->scan_end) {
			PQclear(s->res);
			s->res = NULL;
			scan_close(s);
			return RECON_DONE;
		}
		if (s->ri >= s->nt) {
			int rc = fetch_batch(s, err);
			if (rc < 0)
				return rc;
			if (s->ri >= s->nt) /* an empty last batch */
				return pg_next(src, row, err);
		}
		fill_row(s, s->res, s->ri++);
		*row = &s->row;
		return RECON_ROW;
	}
	PQclear(s->res);
	s->res = NULL;
	if (!s->busy)
		return RECON_DONE;
	res = s->first ? s->first : get_result(s);
	s->first = NULL;
	if (!res) {
		s->busy = false;
		if (s->timed_out) {
			snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
			return fail_res(s, err, what, NULL);
		}
		return RECON_DONE;
	}
	switch (PQresultStatus(res)) {
	case PGRES_SINGLE_TUPLE:
		break;
	case PGRES_TUPLES_OK: /* the end of a single-row-mode result */
		PQclear(res);
		return finish(s, err) < 0 ? err->code : RECON_DONE;
	default:
		snprintf(what, sizeof(what), "cannot read table '%s'", s->side->table);
		fail_res(s, err, what, res);
		PQclear(res);
		/* the connection is unusable; close() drops it without draining */
		s->busy = false;
		return RECON_EUNAVAIL;
	}
	s->res = res;
	fill_row(s, res, 0);
	*row = &s->row;
	return RECON_ROW;
}

/* The raw row from row r of res (values borrowed from res). */
static void fill_row(struct pg_source *s, const PGresult *res, int r)
{
	memset(&s->row, 0, sizeof(s->row));
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		int i = s->colidx[c];
		size_t len;
		const char *v;

		if (i < 0 || PQgetisnull(res, r, i))
			continue;
		v = PQgetvalue(res, r, i);
		len = (size_t)PQgetlength(res, r, i);
		if (s->coltype[c] == PG_BPCHAROID) /* char(n) pads with blanks that mean nothing */
			while (len && v[len - 1] == ' ')
				len--;
		if (is_amount(c) &&
		    (s->coltype[c] == PG_FLOAT4OID || s->coltype[c] == PG_FLOAT8OID))
			s->row.reject = "amount stored as a floating-point value (exactness lost)";
		else if (is_amount(c) && s->coltype[c] == PG_MONEYOID)
			s->row.reject = "amount stored as the money type (locale-formatted)";
		s->row.val[c] = v;
		s->row.len[c] = len;
	}
}

/* Ends what the last query left (a scan or a lookup) before a lookup. */
static int lookup_start(struct pg_source *s, struct recon_err *err)
{
	PQclear(s->res);
	s->res = NULL;
	PQclear(s->first);
	s->first = NULL;
	scan_close(s); /* a lookup before the scan ended: the rest is not needed */
	return finish(s, err);
}

/*
 * A key no row can hold yields no rows instead of an error that would abort
 * the transaction: a NUL byte, or for an integer key column a non-number or
 * a number beyond the column's type.
 */
static bool key_fits(Oid t, const char *p, size_t len)
{
	if (memchr(p, '\0', len))
		return false;
	switch (t) {
	case PG_INT2OID:
		return recon_source_int_in(p, len, INT16_MIN, INT16_MAX);
	case PG_INT4OID:
		return recon_source_int_in(p, len, INT32_MIN, INT32_MAX);
	case PG_INT8OID:
		return recon_source_int_in(p, len, INT64_MIN, INT64_MAX);
	default:
		return true;
	}
}

static int pg_lookup(struct recon_source *src, const char *const *parts, const size_t *lens,
		     struct recon_err *err)
{
	struct pg_source *s = (struct pg_source *)src;
	const char *vals[RECON_KEY_PARTS_MAX];
	size_t off[RECON_KEY_PARTS_MAX];
	unsigned n = s->side->nkey;
	int rc;

	if ((rc = lookup_start(s, err)) < 0)
		return rc;
	recon_buf_reset(&s->scratch);
	for (unsigned i = 0; i < n; i++) {
		if (!key_fits(s->keytype[i], parts[i], lens[i]))
			return 0;
		off[i] = s->scratch.len;
		recon_buf_add(&s->scratch, parts[i], lens[i]);
		recon_buf_addc(&s->scratch, '\0');
	}
	for (unsigned i = 0; i < n; i++)
		vals[i] = s->scratch.s + off[i];
	return start_query(s, "recon_lookup", (int)n, vals, err);
}

/* The keys as one array literal: {"k1","k2"}, '"' and '\\' escaped. */
static int pg_lookup_many(struct recon_source *src, size_t n, const char *const *keys,
			  const size_t *lens, struct recon_err *err)
{
	struct pg_source *s = (struct pg_source *)src;
	const char *val;
	size_t used = 0;
	int rc;

	if ((rc = lookup_start(s, err)) < 0)
		return rc;
	recon_buf_reset(&s->scratch);
	recon_buf_addc(&s->scratch, '{');
	for (size_t i = 0; i < n; i++) {
		if (!key_fits(s->keytype[0], keys[i], lens[i]))
			continue;
		if (used++)
			recon_buf_addc(&s->scratch, ',');
		recon_buf_addc(&s->scratch, '"');
		for (size_t j = 0; j < lens[i]; j++) {
			if (keys[i][j] == '"' || keys[i][j] == '\\')
				recon_buf_addc(&s->scratch, '\\');
			recon_buf_addc(&s->scratch, keys[i][j]);
		}
		recon_buf_addc(&s->scratch, '"');
	}
	recon_buf_addc(&s->scratch, '}');
	if (!used)
		return 0; /* nothing any row can hold: next() says done */
	val = s->scratch.s;
	return start_query(s, "recon_lookup_many", 1, &val, err);
}

static void pg_close(struct recon_source *src)
{
	struct pg_source *s = (struct pg_source *)src;

	if (!s)
		return;
	PQclear(s->res);
	PQclear(s->first);
	/* ends the session; the read-only transaction rolls back with it */
	PQfinish(s->conn);
	recon_mem_free_secret(s->secret);
	recon_buf_release(&s->scratch);
	free(s);
}

static const struct recon_source_ops pg_ops = {
    .kind = "postgres",
    .open = pg_open,
    .next = pg_next,
    .lookup = pg_lookup,
    .lookup_many = pg_lookup_many,
    .close = pg_close,
};

/* ---- recon validate: connection and grants ---- */

/* One row of privileges on `table`: SELECT, INSERT, UPDATE, DELETE, sequences without USAGE. */
static PGresult *probe_privileges(PGconn *c, const char *table)
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

static bool probe_yes(const PGresult *res, int col)
{
	return !strcmp(PQgetvalue(res, 0, col), "t");
}

/* First line of libpq's message, the password (if any) masked. */
static const char *probe_msg(PGconn *c, const char *secret, char *buf, size_t size)
{
	return recon_dsn_first_line(PQerrorMessage(c), secret, buf, size);
}

/* The preflight of recon validate (recon_source_backend.probe). */
static void pg_probe(const struct recon_job *job, const struct recon_side *s,
		     const struct recon_probe *p)
{
	const char *env = p->env;
	const bool writer = p->writer;
	static const char *const kw[] = {"connect_timeout", "fallback_application_name", "dbname",
					 NULL};
	const char *vals[4] = {"10", "recon-validate", getenv(env), NULL};
	char msg[256], secret[128] = "";
	PQconninfoOption *opts = PQconninfoParse(vals[2], NULL);
	PGconn *c = NULL;
	PGresult *res = NULL;

	if (!opts) {
		recon_probe_say(p, 78, "the connection string in '%s' is not valid for libpq", env);
		return;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val)
			snprintf(secret, sizeof(secret), "%s", o->val);
	PQconninfoFree(opts);
	c = PQconnectdbParams(kw, vals, 1);
	if (!c || PQstatus(c) != CONNECTION_OK) {
		recon_probe_say(p, 69, "postgres '%s': cannot connect: %s", env,
				c ? probe_msg(c, secret, msg, sizeof(msg)) : "out of memory");
		goto out;
	}
	recon_probe_say(p, 0, "postgres '%s': connected as '%s' to %s", env, PQuser(c), PQdb(c));
	for (int t = -1; t < 0 || (writer && p->tables[t]); t++) {
		const char *table = t < 0 ? s->table : p->tables[t];
		PQclear(res);
		res = probe_privileges(c, table);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			recon_probe_say(p, 69, "table '%s': %s", table,
					recon_dsn_first_line(PQresultErrorMessage(res), secret, msg,
							     sizeof(msg)));
			continue;
		}
		if (!probe_yes(res, 0) || (writer && !probe_yes(res, 1)))
			recon_probe_say(p, 77, "table '%s': needs %s (GRANT %s ON %s TO %s)", table,
					writer ? "SELECT and INSERT" : "SELECT",
					writer ? "SELECT, INSERT" : "SELECT", table, PQuser(c));
		else if (writer && t < 0 && job->actions.transition_to && !probe_yes(res, 2))
			recon_probe_say(p, 77, "table '%s': the transition needs UPDATE", table);
		else if (writer && !PQgetisnull(res, 0, 4))
			recon_probe_say(p, 77, "table '%s': needs USAGE on sequence %s", table,
					PQgetvalue(res, 0, 4));
		else if (!writer && (probe_yes(res, 1) || probe_yes(res, 2) || probe_yes(res, 3)))
			recon_probe_say(
			    p, -1,
			    "table '%s': the reader may write it (read in READ ONLY transactions; "
			    "a SELECT-only user is safer)",
			    table);
		else
			recon_probe_say(p, 0, "table '%s': %s", table,
					writer ? "SELECT, INSERT and sequences granted"
					       : "SELECT only");
	}
out:
	PQclear(res);
	PQfinish(c);
}

const struct recon_source_backend recon_source_postgres = {
    .name = "postgres",
    .caps = RECON_SOURCE_TABLE | RECON_SOURCE_DSN | RECON_SOURCE_TIME_PUSHDOWN |
	    RECON_SOURCE_REREADABLE,
    .ops = &pg_ops,
    .probe = pg_probe,
};
