/*
 * PostgreSQL writer (libpq): the read-write connection compensations go
 * through (recon_writer.h). Dialect: $1 placeholders, "quoted" identifiers,
 * INSERT ... ON CONFLICT (key) DO NOTHING.
 *
 * The DSN comes from the variable actions.writer_dsn_env names (the local
 * side's dsn_env when the job names none) and goes to libpq whole, as in
 * source_postgres.c. The session is autocommit outside begin()/commit(),
 * speaks UTF-8 (client_encoding is a connection option, so PQreset() keeps
 * it) and runs in the local side's time zone, set through
 * set_config('TimeZone', $1, false) with the name bound, never pasted. Time
 * parameters are then UTC instants cast with ::timestamptz, which the session
 * zone turns into the right wall clock for timestamp, date and text columns.
 *
 * exec() is PQexecParams() (sent, then awaited at most actions.timeout: a
 * frozen server is a lost connection) with text parameters (one round trip, nothing
 * cached). Failures are classified:
 *   RECON_ERETRY  40001 serialization_failure, 40P01 deadlock_detected,
 *                 55P03 lock_not_available, and a lost connection (the
 *                 connection is bad after the call, SQLSTATE class 08 but
 *                 08P01, 57P01-57P03 shutdowns): the next begin() or exec()
 *                 outside a transaction re-establishes it with PQreset();
 *   RECON_EPERM   42501 insufficient_privilege (a grant is missing);
 *   RECON_ECONFIG 23502 not null, 23514 check, 23503 foreign key, 42703 and
 *                 42P01 undefined column or table: a table the job cannot fill;
 *   RECON_EINPUT  anything else (constraint violations the SQL's own
 *                 ON CONFLICT does not swallow, data errors), with the first
 *                 line of the server's message.
 * A failure inside a transaction poisons it (recon_writer.c): a partial
 * transaction never commits; the caller rolls back and retries it whole.
 *
 * Messages name "postgres host/db" at most: the DSN and its password never
 * appear (recon_dsn_first_line() scrubs the password out of server text).
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

#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_time.h"
#include "recon_writer.h"

#define CONNECT_TIMEOUT "10"
#define IO_TIMEOUT_MS	((int64_t)60000) /* actions.timeout overrides it */

struct pg_writer {
	struct recon_writer base;
	PGconn *conn;
	char *secret;	/* the DSN's password, scrubbed from messages; wiped at close */
	char zone[64];	/* the session TimeZone value */
	bool lost;	/* the connection dropped: re-established by the next call */
	int64_t io_ms;	/* how long a call may wait for the server (actions.timeout, 60 s) */
	bool timed_out; /* the last call got no answer in time: the connection is dropped */
};

/* Server notices ("there is no transaction in progress") go to the debug log, not stderr. */
static void notice(void *arg, const char *msg)
{
	struct pg_writer *w = arg;
	char line[200];

	recon_dsn_first_line(msg, w->secret, line, sizeof(line));
	recon_log(RECON_LOG_DEBUG, "%s: %s", w->base.where, line);
}

/* Records code with "<what>: <first line of msg>" (or the line alone), password scrubbed. */
static int fail(struct pg_writer *w, struct recon_err *err, int code, const char *what,
		const char *msg)
{
	char line[200];

	recon_dsn_first_line(msg && *msg ? msg : "connection lost", w->secret, line, sizeof(line));
	if (what)
		return recon_err_set(err, code, w->base.where, "%s: %s", what, line);
	return recon_err_set(err, code, w->base.where, "%s", line);
}

/* The server's primary message for res, else libpq's. */
static const char *res_msg(struct pg_writer *w, const PGresult *res)
{
	if (w->timed_out)
		return "no answer from the server in time (actions.timeout): connection dropped";
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if ((!m || !*m) && res)
		m = PQresultErrorMessage(res);
	if (!m || !*m)
		m = PQerrorMessage(w->conn);
	return m;
}

/* SQLSTATE of a failure that ends the session: class 08 but 08P01, 57P01-57P03 shutdowns. */
static bool lost_state(const char *state)
{
	if (!state)
		return false;
	/* 08P01 protocol_violation also reports a bad parameter count: the session is fine */
	if (!strncmp(state, "08", 2) && strcmp(state, "08P01") != 0)
		return true;
	return !strcmp(state, "57P01") || !strcmp(state, "57P02") || !strcmp(state, "57P03");
}

/* 40001 serialization_failure, 40P01 deadlock, 55P03 lock_not_available, a lost session. */
static bool pg_transient(long code, const char *state)
{
	(void)code;
	return lost_state(state) || (state && (!strcmp(state, "40001") || !strcmp(state, "40P01") ||
					       !strcmp(state, "55P03")));
}

/* True when a failed call left the connection unusable. */
static bool conn_lost(struct pg_writer *w, const char *state)
{
	return w->timed_out || PQstatus(w->conn) == CONNECTION_BAD || lost_state(state);
}

/*
 * Classifies a failed result (res may be NULL) and records the error:
 * RECON_ERETRY for transient failures (marking a lost connection), else
 * RECON_EINPUT.
 */
static int fail_res(struct pg_writer *w, struct recon_err *err, const char *what,
		    const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	int code = RECON_EINPUT;

	if (conn_lost(w, state)) {
		w->lost = true;
		code = RECON_ERETRY;
	} else if (pg_transient(0, state)) {
		code = RECON_ERETRY;
	} else if (state && !strcmp(state, "42501")) {
		code = RECON_EPERM; /* insufficient_privilege: a grant is missing */
	} else if (state &&
		   (!strcmp(state, "23502") || !strcmp(state, "23514") || !strcmp(state, "23503") ||
		    !strcmp(state, "42703") || !strcmp(state, "42P01"))) {
		/* not null, check, foreign key, undefined column or table: the job cannot fill it
		 */
		code = RECON_ECONFIG;
	}
	return fail(w, err, code, what, res_msg(w, res));
}

/*
 * The TimeZone value for zone `tz`. PostgreSQL reads "+08:00" as a POSIX
 * offset (west positive, so UTC-8): fixed offsets are spelled "<+0800>-08:00".
 */
static void zone_value(const struct recon_tz *tz, char *out, size_t size)
{
	const char *name = tz ? recon_tz_name(tz) : "UTC";
	int32_t off;
	int h, m;

	if (name[0] != '+' && name[0] != '-' && strcmp(name, "Z") != 0) {
		snprintf(out, size, "%s", name);
		return;
	}
	off = recon_tz_offset(tz, 0);
	if (off == 0) {
		snprintf(out, size, "UTC");
		return;
	}
	h = (off < 0 ? -off : off) / 3600;
	m = (off < 0 ? -off : off) / 60 % 60;
	snprintf(out, size, "<%c%02d%02d>%c%02d:%02d", off < 0 ? '-' : '+', h, m,
		 off < 0 ? '+' : '-', h, m);
}

/*
 * PQexecParams() with a bound wait: the query is sent and its results are
 * awaited with poll() for at most w->io_ms, so a frozen server (SIGSTOP, a
 * dead NAT entry) fails the call as a lost connection (retried, then the
 * action phase's circuit breaker) instead of holding the run and the job's
 * lock forever. Returns the last result (caller clears), or NULL when sending
 * failed or the time ran out (w->timed_out; the connection is then marked
 * lost and re-established by the next call).
 */
static PGresult *call(struct pg_writer *w, const char *sql, int n, const char *const *params)
{
	PGresult *last = NULL, *r;
	int64_t deadline, now;
	struct timespec ts;

	w->timed_out = false;
	if (!PQsendQueryParams(w->conn, sql, n, NULL, params, NULL, NULL, 0))
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + w->io_ms;
	for (;;) {
		int f = PQflush(w->conn);
		struct pollfd p = {PQsocket(w->conn), POLLIN | (f > 0 ? POLLOUT : 0), 0};
		int rc;

		if (f < 0)
			break;
		if (!f && !PQisBusy(w->conn)) {
			r = PQgetResult(w->conn);
			if (!r)
				return last;
			PQclear(last);
			last = r;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline) {
			w->timed_out = true;
			w->lost = true;
			break;
		}
		rc = poll(&p, 1, deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now));
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !PQconsumeInput(w->conn))
			break;
	}
	PQclear(last);
	return NULL;
}

/* Session settings, after every (re)connection. */
static int session_setup(struct pg_writer *w, int fail_code, struct recon_err *err)
{
	const char *vals[1] = {w->zone};
	PGresult *res = call(w, "SELECT set_config('TimeZone', $1, false)", 1, vals);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		char what[128];

		snprintf(what, sizeof(what), "cannot set the session time zone '%s'", w->zone);
		/* 22023 invalid_parameter_value: the server does not know the zone */
		rc = fail(w, err, state && !strcmp(state, "22023") ? RECON_ECONFIG : fail_code,
			  what, res_msg(w, res));
		if (PQstatus(w->conn) == CONNECTION_BAD)
			w->lost = true;
	}
	PQclear(res);
	return rc;
}

/* Re-establishes a lost connection; RECON_ERETRY while the server is away. */
static int ensure_conn(struct pg_writer *w, struct recon_err *err)
{
	if (!w->lost)
		return 0;
	if (w->base.in_tx)
		return fail(w, err, RECON_ERETRY, NULL,
			    "the connection was lost inside a transaction: roll back and retry");
	PQreset(w->conn);
	if (PQstatus(w->conn) != CONNECTION_OK)
		return fail(w, err, RECON_ERETRY, "cannot reconnect", PQerrorMessage(w->conn));
	w->lost = false;
	if (session_setup(w, RECON_ERETRY, err) < 0)
		return err->code;
	recon_log(RECON_LOG_INFO, "%s: writer connection re-established", w->base.where);
	return 0;
}

static void pg_close(struct recon_writer *base)
{
	struct pg_writer *w = (struct pg_writer *)base;

	if (!w)
		return;
	/* ends the session; an open transaction rolls back with it */
	PQfinish(w->conn);
	recon_mem_free_secret(w->secret);
	free(w);
}

static int pg_open(struct recon_writer **out, const struct recon_job *job, struct recon_err *err)
{
	/* client_encoding after dbname: the DSN cannot change it, PQreset() keeps it */
	static const char *const kw[] = {"connect_timeout", "fallback_application_name", "dbname",
					 "client_encoding", NULL};
	struct pg_writer *w = recon_xcalloc(1, sizeof(*w));
	const char *vals[5] = {CONNECT_TIMEOUT, "recon-writer", NULL, "UTF8", NULL};
	const char *var = job->actions.writer_dsn_env, *field = "actions.writer_dsn_env", *dsn;
	PQconninfoOption *opts = NULL;
	char *perr = NULL;
	int rc = 0;

	w->base.backend = &recon_writer_postgres;
	w->base.job = job;
	w->io_ms = job->actions.timeout_ms > 0 ? job->actions.timeout_ms : IO_TIMEOUT_MS;
	if (!var) {
		var = job->local.dsn_env;
		field = "local.dsn_env";
	}
	snprintf(w->base.where, sizeof(w->base.where), "postgres '%s'", var ? var : "");
	zone_value(job->local.tz, w->zone, sizeof(w->zone));
	dsn = var ? getenv(var) : NULL;
	if (!dsn || !*dsn) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "environment variable '%s' (%s) is not set", var ? var : "",
				   field);
		goto out;
	}
	/* libpq's parse errors may quote the string (and so a password): not shown */
	opts = PQconninfoParse(dsn, &perr);
	if (!opts) {
		rc = recon_err_set(err, RECON_ECONFIG, NULL,
				   "the connection string in '%s' (%s) is not valid for libpq", var,
				   field);
		goto out;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			w->secret = recon_xstrdup(o->val);

	vals[2] = dsn;
	w->conn = PQconnectdbParams(kw, vals, 1);
	if (!w->conn) {
		rc = recon_err_set(err, RECON_EUNAVAIL, w->base.where,
				   "cannot connect: out of memory");
		goto out;
	}
	snprintf(w->base.where, sizeof(w->base.where), "postgres %s/%s",
		 PQhost(w->conn) && *PQhost(w->conn) ? PQhost(w->conn) : "localhost",
		 PQdb(w->conn) ? PQdb(w->conn) : "?");
	PQsetNoticeProcessor(w->conn, notice, w);
	if (PQstatus(w->conn) != CONNECTION_OK) {
		rc = fail(w, err, RECON_EUNAVAIL, "cannot connect", PQerrorMessage(w->conn));
		goto out;
	}
	if ((rc = session_setup(w, RECON_EUNAVAIL, err)) < 0)
		goto out;
	*out = &w->base;
	w = NULL;
out:
	PQconninfoFree(opts);
	PQfreemem(perr);
	pg_close(w ? &w->base : NULL);
	return rc;
}

/* Runs a parameterless transaction-control statement; the result in *res (caller clears). */
static int simple(struct pg_writer *w, const char *sql, PGresult **res, struct recon_err *err)
{
	char what[64];

	*res = call(w, sql, 0, NULL);
	if (PQresultStatus(*res) == PGRES_COMMAND_OK)
		return 0;
	snprintf(what, sizeof(what), "%s failed", sql);
	return fail_res(w, err, what, *res);
}

static int pg_begin(struct recon_writer *base, struct recon_err *err)
{
	struct pg_writer *w = (struct pg_writer *)base;
	PGresult *res = NULL;
	int rc;

	if ((rc = ensure_conn(w, err)) < 0)
		return rc;
	rc = simple(w, "BEGIN", &res, err);
	PQclear(res);
	return rc;
}

static void pg_rollback(struct recon_writer *base)
{
	struct pg_writer *w = (struct pg_writer *)base;
	PGresult *res;

	if (w->lost) /* the transaction went with the connection */
		return;
	/* after a failed COMMIT the server has ended it: a notice, nothing else */
	res = call(w, "ROLLBACK", 0, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK &&
	    (w->timed_out || PQstatus(w->conn) == CONNECTION_BAD))
		w->lost = true;
	PQclear(res);
}

static int pg_commit(struct recon_writer *base, struct recon_err *err)
{
	struct pg_writer *w = (struct pg_writer *)base;
	PGresult *res = NULL;
	int rc;

	rc = simple(w, "COMMIT", &res, err);
	/* COMMIT of a transaction the server already aborted answers ROLLBACK */
	if (rc == 0 && strcmp(PQcmdStatus(res), "COMMIT") != 0)
		rc = recon_err_set(err, RECON_ERETRY, w->base.where,
				   "the server rolled the transaction back");
	PQclear(res);
	return rc;
}

static int pg_exec(struct recon_writer *base, const char *sql, const char *const *params, int n,
		   int64_t *affected, struct recon_err *err)
{
	struct pg_writer *w = (struct pg_writer *)base;
	PGresult *res = NULL;
	ExecStatusType st;
	const char *tuples;
	int rc = 0;

	*affected = 0;
	if ((rc = ensure_conn(w, err)) < 0)
		return rc;
	res = call(w, sql, n, params);
	st = PQresultStatus(res);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		rc = fail_res(w, err, NULL, res);
		goto out;
	}
	tuples = PQcmdTuples(res);
	*affected = *tuples ? strtoll(tuples, NULL, 10) : 0;
out:
	PQclear(res);
	return rc;
}

static int pg_time_param(struct recon_writer *base, int64_t utc_ms, char *buf, size_t size,
			 const char **wrap, struct recon_err *err)
{
	struct pg_writer *w = (struct pg_writer *)base;

	if (size < 25)
		return recon_err_set(err, RECON_EINTERNAL, w->base.where, "time buffer too small");
	/* the session TimeZone turns the instant into the column's wall clock */
	recon_time_format_utc(utc_ms, buf, size);
	*wrap = "%s::timestamptz";
	return 0;
}

const struct recon_writer_backend recon_writer_postgres = {
    .name = "postgres",
    .flags = RECON_WRITER_DSN,
    .placeholder = RECON_WRITER_PH_DOLLAR,
    .quote = '"',
    .upsert = RECON_WRITER_UPSERT_CONFLICT,
    .transient = pg_transient,
    .open = pg_open,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .exec = pg_exec,
    .time_param = pg_time_param,
    .close = pg_close,
};
