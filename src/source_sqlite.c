/*
 * SQLite reader: the database opened read-only, one prepared statement with
 * the window pushed down as bound parameters, stepped row by row; a second
 * prepared statement for key lookups. Values are read as text: amounts are
 * parsed exactly by normalize, and an amount stored as a floating-point value
 * is a reject (it may already have lost cents).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_source.h"
#include "recon_time.h"

struct sqlite_source {
	struct recon_source base;
	sqlite3 *db;
	sqlite3_stmt *scan;
	sqlite3_stmt *lookup;
	sqlite3_stmt *cur; /* the statement next() steps */
	char *path;
	const struct recon_side *side;
	int colidx[RECON_COL__COUNT]; /* result column per role, -1 when unmapped */
	struct recon_raw_row row;
};

static int fail(struct sqlite_source *s, struct recon_err *err, int code, const char *what)
{
	return recon_err_set(err, code, s->path, "%s: %s", what,
			     s->db ? sqlite3_errmsg(s->db) : "cannot open");
}

/*
 * A statement over the table that does not prepare: a column the job names
 * that the table lacks is the job's fault (RECON_ECONFIG, exit 78, naming it);
 * anything else (no such table, a locked or damaged file) is unavailability.
 */
static int fail_prepare(struct sqlite_source *s, struct recon_err *err)
{
	const char *msg = s->db ? sqlite3_errmsg(s->db) : "";

	if (!strncmp(msg, "no such column: ", 16))
		return recon_err_set(err, RECON_ECONFIG, s->path,
				     "column '%s' not found in table '%s' (%s side's \"columns\")",
				     msg + 16, s->side->table,
				     s->side->role ? s->side->role : "local");
	return fail(s, err, RECON_EUNAVAIL, "cannot read the table");
}

static void build_select(struct sqlite_source *s, struct recon_buf *sql)
{
	recon_source_sql_select(s->side, '"', sql, s->colidx);
}

/*
 * A writer that died mid-transaction (the merchant's application, or recon's
 * own replay killed with SIGKILL) leaves a hot rollback journal, and a
 * read-only connection cannot roll it back: every read fails with
 * SQLITE_READONLY_ROLLBACK. Rolling the journal back restores the last
 * committed state, which is what SQLite does on any read-write open, so do
 * exactly that once, then read on through the read-only connection.
 */
static int recover_hot_journal(struct sqlite_source *s, struct recon_err *err)
{
	sqlite3 *rw = NULL;
	int rc = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);

	if (rc == SQLITE_OK || sqlite3_extended_errcode(s->db) != SQLITE_READONLY_ROLLBACK)
		return 0; /* anything else surfaces when the table is read */
	recon_log(RECON_LOG_WARN,
		  "'%s' has the journal of an interrupted transaction: rolling it back before "
		  "reading",
		  s->path);
	if (sqlite3_open_v2(s->path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
		SQLITE_OK ||
	    (sqlite3_busy_timeout(rw, 10000), sqlite3_exec(rw, "SELECT count(*) FROM sqlite_master",
							   NULL, NULL, NULL)) != SQLITE_OK) {
		rc = recon_err_set(err, RECON_EUNAVAIL, s->path,
				   "cannot roll back an interrupted transaction: %s",
				   rw ? sqlite3_errmsg(rw) : "out of memory");
		sqlite3_close(rw);
		return rc;
	}
	sqlite3_close(rw);
	/* the read-only connection caches nothing of the old state: read again */
	if (sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return fail(s, err, RECON_EUNAVAIL, "cannot read the database");
	return 0;
}

static const struct recon_source_ops sqlite_ops;

static int sqlite_open(struct recon_source **out, const struct recon_side *side,
		       const struct recon_window *win, struct recon_err *err)
{
	struct sqlite_source *s = recon_xcalloc(1, sizeof(*s));
	struct recon_buf sql;
	char lo[32], hi[32];
	int rc = 0;

	recon_buf_init(&sql);
	s->base.ops = &sqlite_ops;
	s->side = side;
	s->path = recon_job_expand_path(side->path, win->day);
	s->base.name = side->table;
	if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		rc = fail(s, err, RECON_EUNAVAIL, "cannot open the database read-only");
		goto out;
	}
	sqlite3_busy_timeout(s->db, 10000);
	/*
	 * SQLite reads a double-quoted name that is no column as a string
	 * constant: a misspelt key column would give every row the same key and
	 * pass. With that fallback off it is an error naming the column.
	 */
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DQS_DDL, 0, (int *)NULL);
	if ((rc = recover_hot_journal(s, err)) < 0)
		goto out;
	build_select(s, &sql);
	/*
	 * Timestamps are text in the side's zone. The bound is widened by a day
	 * on each side so that a 'T' separator or an offset suffix in stored
	 * values cannot hide a row from the lexicographic range; the index on
	 * the time column still limits the scan, and rows are filtered exactly
	 * on their parsed time afterwards.
	 */
	recon_time_format_local(side->tz, win->read_start - RECON_MS_PER_DAY, lo, sizeof(lo));
	recon_time_format_local(side->tz, win->read_end + RECON_MS_PER_DAY, hi, sizeof(hi));
	if (side->time_format) /* times in their own form (epoch, d/m/Y) do not sort as text:
				  the whole table is read, and filtered once parsed */
		recon_buf_adds(&sql, " WHERE ?1 IS NOT NULL AND ?2 IS NOT NULL");
	else
		recon_buf_addf(&sql, " WHERE \"%s\" >= ?1 AND \"%s\" < ?2",
			       side->cols[RECON_COL_TIME], side->cols[RECON_COL_TIME]);
	if (sqlite3_prepare_v2(s->db, sql.s, -1, &s->scan, NULL) != SQLITE_OK) {
		rc = fail_prepare(s, err);
		goto out;
	}
	sqlite3_bind_text(s->scan, 1, lo, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s->scan, 2, hi, -1, SQLITE_TRANSIENT);
	/* lookups by key, without a time bound */
	recon_buf_reset(&sql);
	build_select(s, &sql);
	for (unsigned i = 0; i < side->nkey; i++) {
		recon_buf_adds(&sql, i ? " AND " : " WHERE ");
		recon_source_sql_key(side, '"', i, &sql);
		recon_buf_addf(&sql, " = ?%u", i + 1);
	}
	if (sqlite3_prepare_v2(s->db, sql.s, -1, &s->lookup, NULL) != SQLITE_OK) {
		rc = fail_prepare(s, err);
		goto out;
	}
	s->cur = s->scan;
	*out = &s->base;
	s = NULL;
out:
	recon_buf_release(&sql);
	if (s)
		sqlite_ops.close(&s->base);
	return rc;
}

static int sqlite_next(struct recon_source *src, const struct recon_raw_row **row,
		       struct recon_err *err)
{
	struct sqlite_source *s = (struct sqlite_source *)src;
	int rc;

	if (!s->cur)
		return RECON_DONE;
	rc = sqlite3_step(s->cur);
	if (rc == SQLITE_DONE) {
		s->cur = NULL;
		return RECON_DONE;
	}
	if (rc != SQLITE_ROW)
		return fail(s, err, RECON_EUNAVAIL, "cannot read the table");
	memset(&s->row, 0, sizeof(s->row));
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		int i = s->colidx[c];
		if (i < 0 || sqlite3_column_type(s->cur, i) == SQLITE_NULL)
			continue;
		if ((c == RECON_COL_AMOUNT || c == RECON_COL_AMOUNT_MINOR ||
		     c == RECON_COL_REFUND_AMOUNT) &&
		    sqlite3_column_type(s->cur, i) == SQLITE_FLOAT)
			s->row.reject = "amount stored as a floating-point value (exactness lost)";
		s->row.val[c] = (const char *)sqlite3_column_text(s->cur, i);
		s->row.len[c] = (size_t)sqlite3_column_bytes(s->cur, i);
	}
	*row = &s->row;
	return RECON_ROW;
}

static int sqlite_lookup(struct recon_source *src, const char *const *parts, const size_t *lens,
			 struct recon_err *err)
{
	struct sqlite_source *s = (struct sqlite_source *)src;

	(void)err;
	sqlite3_reset(s->lookup);
	for (unsigned i = 0; i < s->side->nkey; i++)
		sqlite3_bind_text(s->lookup, (int)i + 1, parts[i], (int)lens[i], SQLITE_TRANSIENT);
	s->cur = s->lookup;
	return 0;
}

static void sqlite_close(struct recon_source *src)
{
	struct sqlite_source *s = (struct sqlite_source *)src;

	if (!s)
		return;
	sqlite3_finalize(s->scan);
	sqlite3_finalize(s->lookup);
	sqlite3_close(s->db);
	free(s->path);
	free(s);
}

static const struct recon_source_ops sqlite_ops = {
    .kind = "sqlite",
    .open = sqlite_open,
    .next = sqlite_next,
    .lookup = sqlite_lookup,
    .close = sqlite_close,
};

const struct recon_source_backend recon_source_sqlite = {
    .name = "sqlite",
    .caps = RECON_SOURCE_PATH | RECON_SOURCE_TABLE | RECON_SOURCE_TIME_PUSHDOWN |
	    RECON_SOURCE_REREADABLE,
    .path_what = "SQLite database",
    .ops = &sqlite_ops,
};
