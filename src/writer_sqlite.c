/*
 * The SQLite writer (recon_writer.h): the local flow's own database file,
 * opened read-write on a connection of its own (the compare reads through a
 * read-only one). Dialect: ? placeholders, "quoted" identifiers, INSERT ...
 * ON CONFLICT (key) DO NOTHING.
 * SQLITE_BUSY and SQLITE_LOCKED are transient (another writer holds the
 * file); a NOT NULL, CHECK or foreign key failure or a missing column is a
 * table the job cannot fill (RECON_ECONFIG), a read-only file a missing
 * permission (RECON_EPERM); other constraint and type errors are the data's
 * fault. None is retried.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_mem.h"
#include "recon_time.h"
#include "recon_writer.h"

struct sqlite_writer {
	struct recon_writer base;
	sqlite3 *db;
	char *path;
};

/* SQLITE_BUSY, SQLITE_LOCKED: another connection holds the file for now. */
static bool sw_transient(long code, const char *state)
{
	long primary = code & 0xff;

	(void)state;
	return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

static int classify(struct sqlite_writer *s, int code, const char *what, struct recon_err *err)
{
	int primary = code & 0xff;
	int rc;

	if (sw_transient(code, NULL))
		rc = RECON_ERETRY;
	else if (code == SQLITE_CONSTRAINT_NOTNULL || code == SQLITE_CONSTRAINT_CHECK ||
		 code == SQLITE_CONSTRAINT_FOREIGNKEY || code == SQLITE_CONSTRAINT_TRIGGER)
		rc = RECON_ECONFIG; /* a column the job gives no value: a table it cannot fill */
	else if (primary == SQLITE_READONLY || primary == SQLITE_AUTH || primary == SQLITE_PERM)
		rc = RECON_EPERM;
	else if (primary == SQLITE_CONSTRAINT || primary == SQLITE_MISMATCH ||
		 primary == SQLITE_TOOBIG || primary == SQLITE_RANGE)
		rc = RECON_EINPUT;
	else if (primary == SQLITE_ERROR)
		rc = RECON_ECONFIG; /* a missing table or column: the job and the schema disagree */
	else
		rc = RECON_EUNAVAIL;
	return recon_err_set(err, rc, s->base.where, "%s: %s", what, sqlite3_errmsg(s->db));
}

static int sw_open(struct recon_writer **out, const struct recon_job *job, struct recon_err *err)
{
	struct sqlite_writer *s = recon_xcalloc(1, sizeof(*s));
	int rc = 0;

	*out = NULL;
	s->base.backend = &recon_writer_sqlite;
	s->base.job = job;
	s->path = recon_xstrdup(job->local.path);
	snprintf(s->base.where, sizeof(s->base.where), "%s", s->path);
	if (strchr(s->path, '{')) {
		rc = recon_err_set(err, RECON_ECONFIG, "local.path",
				   "a local SQLite path with {date} cannot take replays: name one "
				   "database file");
		goto out;
	}
	if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		rc = recon_err_set(err, RECON_EUNAVAIL, s->path,
				   "cannot open the local database for writing: %s",
				   s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(s->db, job->actions.timeout_ms > 0 && job->actions.timeout_ms < INT_MAX
					? (int)job->actions.timeout_ms
					: 5000);
	/* a misspelt column in double quotes is an error, never a string constant */
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DDL, 0, (int *)NULL);
	*out = &s->base;
	s = NULL;
out:
	if (s)
		recon_writer_sqlite.close(&s->base);
	return rc;
}

static int sw_simple(struct sqlite_writer *s, const char *sql, struct recon_err *err)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : classify(s, rc, sql, err);
}

static int sw_begin(struct recon_writer *w, struct recon_err *err)
{
	return sw_simple((struct sqlite_writer *)w, "BEGIN IMMEDIATE", err);
}

static int sw_commit(struct recon_writer *w, struct recon_err *err)
{
	return sw_simple((struct sqlite_writer *)w, "COMMIT", err);
}

static void sw_rollback(struct recon_writer *w)
{
	sqlite3_exec(((struct sqlite_writer *)w)->db, "ROLLBACK", NULL, NULL, NULL);
}

static int sw_exec(struct recon_writer *w, const char *sql, const char *const *params, int n,
		   int64_t *affected, struct recon_err *err)
{
	struct sqlite_writer *s = (struct sqlite_writer *)w;
	sqlite3_stmt *q = NULL;
	int rc = 0, step;

	*affected = 0;
	step = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
	if (step != SQLITE_OK) {
		rc = classify(s, step, "cannot prepare a write", err);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (params[i])
			sqlite3_bind_text(q, i + 1, params[i], -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(q, i + 1);
	}
	step = sqlite3_step(q);
	if (step != SQLITE_DONE && step != SQLITE_ROW) {
		rc = classify(s, sqlite3_extended_errcode(s->db), "write failed", err);
		goto out;
	}
	*affected = sqlite3_changes(s->db);
out:
	sqlite3_finalize(q);
	return rc;
}

static int sw_time_param(struct recon_writer *w, int64_t utc_ms, char *buf, size_t size,
			 const char **wrap, struct recon_err *err)
{
	(void)err;
	/* the flow's timestamps are wall-clock text in the local side's zone */
	recon_time_format_local(w->job->local.tz, utc_ms, buf, size);
	*wrap = "%s";
	return 0;
}

static void sw_close(struct recon_writer *w)
{
	struct sqlite_writer *s = (struct sqlite_writer *)w;

	if (!s)
		return;
	/* an open transaction rolls back with the connection */
	sqlite3_close(s->db);
	free(s->path);
	free(s);
}

const struct recon_writer_backend recon_writer_sqlite = {
    .name = "sqlite",
    .flags = 0,
    .placeholder = RECON_WRITER_PH_QMARK,
    .quote = '"',
    .upsert = RECON_WRITER_UPSERT_CONFLICT,
    .transient = sw_transient,
    .open = sw_open,
    .begin = sw_begin,
    .commit = sw_commit,
    .rollback = sw_rollback,
    .exec = sw_exec,
    .time_param = sw_time_param,
    .close = sw_close,
};
