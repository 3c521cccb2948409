/*
 * recon_state, read-only queries: what `recon diff`, `status`, `check`,
 * `tickets`, `rejects`, the heartbeat and the daily report show, read from
 * the schema here so that no reader knows it. Each query is one statement
 * whose rows are handed out as plain structs.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_normalize.h"
#include "recon_state.h"
#include "state_int.h"

#define READ RECON_STATE_ERR_READ

/* The caller's callback (one of these, by the query) and its argument. */
struct reader {
	recon_state_run_fn run;
	recon_state_line_fn line;
	int (*mode)(void *arg, const struct recon_state_mode *m);
	int (*count)(void *arg, const char *klass, int64_t n);
	int (*ticket)(void *arg, const struct recon_ticket_row *t);
	int (*reject)(void *arg, int64_t run_id, const struct recon_reject *x);
	int (*item)(void *arg, const struct recon_item_row *it);
	int (*stake)(void *arg, const char *klass, const char *sev, int64_t amount,
		     const char *cur);
	int (*totals)(void *arg, const struct recon_state_totals *t);
	int (*by_mode)(void *arg, const char *mode, const char *klass, int64_t n, int64_t oldest);
	int (*actions)(void *arg, const char *mode, const char *action, const char *outcome,
		       int64_t n);
	void *arg;
};

/* Integer column i, or dflt when SQL NULL. */
static int64_t col_int(sqlite3_stmt *q, int i, int64_t dflt)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(q, i);
}

/* Text column i, NULL when SQL NULL. */
static const char *col(sqlite3_stmt *q, int i)
{
	return (const char *)sqlite3_column_text(q, i);
}

/* ---- runs ------------------------------------------------------------------ */

/* The columns run_at() reads, of `runs r`. */
#define RUN_COLUMNS                                                                                \
	"r.id, r.mode, r.business_date, r.outcome, r.error, r.dry_run, r.window_start_ms, "        \
	"r.window_end_ms, r.started_at_ms, r.finished_at_ms, r.exit_code, r.rows_upstream, "       \
	"r.rows_local, r.rows_rejected, r.rows_skipped, r.keys_compared, r.matched, "              \
	"r.n_missing + r.n_extra + r.n_stuck + r.n_amount_mismatch + r.n_status_mismatch + "       \
	"r.n_duplicate, r.resolved, r.in_flight, r.awaiting, r.upstream_sha256, r.local_sha256, "  \
	"r.config_sha256"

/* The run whose RUN_COLUMNS start at column c. */
static void run_at(sqlite3_stmt *q, int c, struct recon_state_run *r)
{
	int64_t *n[] = {&r->rows_upstream, &r->rows_local, &r->rows_rejected, &r->rows_skipped,
			&r->keys_compared, &r->matched,	   &r->differences,   &r->resolved,
			&r->in_flight,	   &r->awaiting};

	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(q, c);
	r->mode = col(q, c + 1);
	r->business_date = col(q, c + 2);
	r->outcome = col(q, c + 3);
	r->error = col(q, c + 4);
	r->dry_run = sqlite3_column_int(q, c + 5) != 0;
	r->window_start = sqlite3_column_int64(q, c + 6);
	r->window_end = sqlite3_column_int64(q, c + 7);
	r->started_at = sqlite3_column_int64(q, c + 8);
	r->finished_at = col_int(q, c + 9, -1);
	r->exit_code = col_int(q, c + 10, -1);
	for (int i = 0; i < 10; i++)
		*n[i] = sqlite3_column_int64(q, c + 11 + i);
	r->upstream_sha256 = col(q, c + 21);
	r->local_sha256 = col(q, c + 22);
	r->config_sha256 = col(q, c + 23);
}

static int run_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_state_run r;

	run_at(q, 0, &r);
	return rd->run(rd->arg, &r);
}

static const struct recon_state_sql latest_run_sql = {
    "SELECT max(id) FROM runs WHERE job = ?1 AND outcome = 'success' AND (?2 IS NULL OR "
    "(business_date = ?2 AND mode = ?3))",
    "cannot read runs", READ};

int recon_state_latest_run(struct recon_state *st, const char *job, const char *date,
			   const char *mode, int64_t *run_id, struct recon_err *err)
{
	return recon_state_int(
	    st, &latest_run_sql,
	    STATE_ARGS(STATE_TEXT(job), STATE_TEXT(date), date ? STATE_TEXT(mode) : STATE_NULL),
	    run_id, err);
}

static const struct recon_state_sql run_get_sql = {
    "SELECT " RUN_COLUMNS " FROM runs r WHERE r.id = ? AND r.job = ?", "cannot read runs", READ};

/* Counts the rows it passes on (run_get: was there one). */
struct counted {
	struct reader rd;
	int n;
};

static int counted_run(void *arg, sqlite3_stmt *q)
{
	struct counted *c = arg;

	c->n++;
	return run_row(&c->rd, q);
}

int recon_state_run_get(struct recon_state *st, const char *job, int64_t run_id,
			recon_state_run_fn fn, void *arg, struct recon_err *err)
{
	struct counted c = {{.run = fn, .arg = arg}, 0};
	int rc = recon_state_each(st, &run_get_sql, STATE_ARGS(STATE_INT(run_id), STATE_TEXT(job)),
				  counted_run, &c, err);

	return rc == 0 && !c.n ? RECON_ENOTFOUND : rc;
}

static const struct recon_state_sql recent_sql = {
    "SELECT " RUN_COLUMNS " FROM runs r WHERE r.job = ? ORDER BY r.id DESC LIMIT ?",
    "cannot read runs", READ};

int recon_state_recent_runs(struct recon_state *st, const char *job, int limit,
			    recon_state_run_fn fn, void *arg, struct recon_err *err)
{
	struct reader rd = {.run = fn, .arg = arg};

	return recon_state_each(st, &recent_sql, STATE_ARGS(STATE_TEXT(job), STATE_INT(limit)),
				run_row, &rd, err);
}

static const struct recon_state_sql between_sql = {
    "SELECT " RUN_COLUMNS " FROM runs r WHERE r.job = ?1 AND r.mode = ?2 AND r.dry_run = 0 AND "
    "r.business_date BETWEEN ?3 AND ?4 ORDER BY r.id",
    "cannot read runs", READ};

int recon_state_runs_between(struct recon_state *st, const char *job, const char *mode,
			     const char *from, const char *to, recon_state_run_fn fn, void *arg,
			     struct recon_err *err)
{
	struct reader rd = {.run = fn, .arg = arg};

	return recon_state_each(
	    st, &between_sql,
	    STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_TEXT(from), STATE_TEXT(to)),
	    run_row, &rd, err);
}

static const struct recon_state_sql latest_date_sql = {
    "SELECT max(business_date) FROM runs WHERE job = ?1 AND mode = ?2 AND outcome = 'success' "
    "AND dry_run = 0",
    "cannot read runs", READ};

static int date_row(void *arg, sqlite3_stmt *q)
{
	const char *d = col(q, 0);

	if (!d)
		return 0;
	snprintf(arg, 16, "%s", d);
	return 0;
}

int recon_state_latest_date(struct recon_state *st, const char *job, const char *mode,
			    char date[16], struct recon_err *err)
{
	int rc;

	date[0] = '\0';
	rc = recon_state_each(st, &latest_date_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
			      date_row, date, err);
	return rc == 0 && !date[0] ? RECON_ENOTFOUND : rc;
}

/* ---- differences and open items ------------------------------------------------ */

static int line_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;

	return rd->line(rd->arg, col(q, 0));
}

static const struct recon_state_sql differences_sql = {
    "SELECT json FROM run_differences WHERE run_id = ?1 AND (?2 IS NULL OR class = ?2) ORDER BY "
    "key, class",
    "cannot read differences", READ};

int recon_state_differences(struct recon_state *st, int64_t run_id, const char *klass,
			    recon_state_line_fn fn, void *arg, struct recon_err *err)
{
	struct reader rd = {.line = fn, .arg = arg};

	return recon_state_each(st, &differences_sql,
				STATE_ARGS(STATE_INT(run_id), STATE_TEXT(klass)), line_row, &rd,
				err);
}

static const struct recon_state_sql open_lines_sql = {
    "SELECT json FROM items WHERE job = ?1 AND state = 'open' AND (?2 IS NULL OR mode = ?2) AND "
    "(?3 IS NULL AND severity <> 'info' OR class = ?3) ORDER BY key, mode",
    "cannot read open items", READ};

int recon_state_open_lines(struct recon_state *st, const char *job, const char *mode,
			   const char *klass, recon_state_line_fn fn, void *arg,
			   struct recon_err *err)
{
	struct reader rd = {.line = fn, .arg = arg};

	return recon_state_each(st, &open_lines_sql,
				STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_TEXT(klass)),
				line_row, &rd, err);
}

/* ---- status and check ----------------------------------------------------------- */

static const struct recon_state_sql modes_sql = {
    "SELECT m.mode, w.reconciled_until_ms, h.last_success_ms, " RUN_COLUMNS " "
    "FROM (SELECT DISTINCT mode FROM runs WHERE job = ?1) m "
    "LEFT JOIN watermarks w ON w.job = ?1 AND w.mode = m.mode "
    "LEFT JOIN heartbeats h ON h.job = ?1 AND h.mode = m.mode "
    "JOIN runs r ON r.id = (SELECT max(id) FROM runs WHERE job = ?1 AND mode = m.mode) "
    "ORDER BY m.mode",
    "cannot read runs", READ};

static int mode_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_state_mode m = {
	    .mode = col(q, 0),
	    .has_watermark = sqlite3_column_type(q, 1) != SQLITE_NULL,
	    .has_success = sqlite3_column_type(q, 2) != SQLITE_NULL,
	    .watermark = sqlite3_column_int64(q, 1),
	    .last_success = sqlite3_column_int64(q, 2),
	};

	run_at(q, 3, &m.last);
	return rd->mode(rd->arg, &m);
}

int recon_state_modes(struct recon_state *st, const char *job,
		      int (*fn)(void *arg, const struct recon_state_mode *m), void *arg,
		      struct recon_err *err)
{
	struct reader rd = {.mode = fn, .arg = arg};

	return recon_state_each(st, &modes_sql, STATE_ARGS(STATE_TEXT(job)), mode_row, &rd, err);
}

static const struct recon_state_sql open_counts_sql = {
    "SELECT class, count(*) FROM items WHERE job = ? AND state = 'open' GROUP BY class",
    "cannot read differences", READ};

static int count_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;

	return rd->count(rd->arg, col(q, 0), sqlite3_column_int64(q, 1));
}

int recon_state_open_counts(struct recon_state *st, const char *job,
			    int (*fn)(void *arg, const char *klass, int64_t n), void *arg,
			    struct recon_err *err)
{
	struct reader rd = {.count = fn, .arg = arg};

	return recon_state_each(st, &open_counts_sql, STATE_ARGS(STATE_TEXT(job)), count_row, &rd,
				err);
}

static const struct recon_state_sql health_sql = {
    "SELECT w.reconciled_until_ms, h.last_success_ms, "
    "(SELECT id FROM runs WHERE job = ?1 AND mode = ?2 AND dry_run = 0 "
    " ORDER BY id DESC LIMIT 1), "
    "(SELECT outcome = 'failed' FROM runs WHERE job = ?1 AND mode = ?2 "
    " AND dry_run = 0 ORDER BY id DESC LIMIT 1), "
    "(SELECT error FROM runs WHERE job = ?1 AND mode = ?2 AND dry_run = 0 "
    " ORDER BY id DESC LIMIT 1) "
    "FROM watermarks w JOIN heartbeats h ON h.job = w.job AND h.mode = w.mode "
    "WHERE w.job = ?1 AND w.mode = ?2",
    "cannot read the state store", RECON_STATE_ERR_READ_PATH};

static int health_row(void *arg, sqlite3_stmt *q)
{
	struct recon_state_health *h = arg;

	h->found = true;
	h->watermark = sqlite3_column_int64(q, 0);
	h->last_success = sqlite3_column_int64(q, 1);
	h->last_run = sqlite3_column_int64(q, 2);
	h->failed = sqlite3_column_int(q, 3) != 0;
	if (h->failed && col(q, 4))
		snprintf(h->error, sizeof(h->error), "%s", col(q, 4));
	return 0;
}

int recon_state_health(struct recon_state *st, const char *job, const char *mode,
		       struct recon_state_health *h, struct recon_err *err)
{
	int rc;

	memset(h, 0, sizeof(*h));
	rc = recon_state_each(st, &health_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
			      health_row, h, err);
	if (rc == 0 && !h->found)
		return RECON_ENOTFOUND;
	return rc;
}

/* ---- tickets and rejects -------------------------------------------------------- */

static const struct recon_state_sql tickets_sql = {
    "SELECT key, class, severity, status, opened_run, opened_at_ms, last_seen_run, json, "
    "resolved_run, note FROM tickets WHERE job = ? AND (? OR status = 'open') ORDER BY key, "
    "class",
    "cannot read tickets", READ};

static int ticket_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_ticket_row t = {
	    .key = col(q, 0),
	    .klass = col(q, 1),
	    .severity = col(q, 2),
	    .status = col(q, 3),
	    .opened_run = sqlite3_column_int64(q, 4),
	    .opened_at = sqlite3_column_int64(q, 5),
	    .last_seen_run = sqlite3_column_int64(q, 6),
	    .json = col(q, 7),
	    .resolved_run = sqlite3_column_int64(q, 8),
	    .note = col(q, 9),
	};

	return rd->ticket(rd->arg, &t);
}

int recon_state_tickets_list(struct recon_state *st, const char *job, bool all,
			     int (*fn)(void *arg, const struct recon_ticket_row *t), void *arg,
			     struct recon_err *err)
{
	struct reader rd = {.ticket = fn, .arg = arg};

	return recon_state_each(st, &tickets_sql, STATE_ARGS(STATE_TEXT(job), STATE_INT(all)),
				ticket_row, &rd, err);
}

static const struct recon_state_sql rejects_sql = {
    "SELECT x.run_id, x.side, x.origin, x.field, x.reason, x.raw FROM rejects x JOIN runs r ON "
    "r.id = x.run_id WHERE r.job = ?1 AND x.run_id = CASE WHEN ?2 > 0 THEN ?2 ELSE (SELECT "
    "max(y.run_id) FROM rejects y JOIN runs z ON z.id = y.run_id WHERE z.job = ?1) END ORDER BY "
    "x.rowid LIMIT ?3",
    "cannot read rejects", READ};

static int reject_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_reject x = {col(q, 1), col(q, 2), col(q, 3), col(q, 4), col(q, 5)};

	return rd->reject(rd->arg, sqlite3_column_int64(q, 0), &x);
}

int recon_state_rejects(struct recon_state *st, const char *job, int64_t run_id, int64_t limit,
			int (*fn)(void *arg, int64_t run_id, const struct recon_reject *x),
			void *arg, struct recon_err *err)
{
	struct reader rd = {.reject = fn, .arg = arg};

	return recon_state_each(st, &rejects_sql,
				STATE_ARGS(STATE_TEXT(job), STATE_INT(run_id), STATE_INT(limit)),
				reject_row, &rd, err);
}

static const struct recon_state_sql rejects_count_sql = {
    "SELECT count(*) FROM rejects WHERE run_id = ?1", "cannot read rejects", READ};

int recon_state_rejects_count(struct recon_state *st, int64_t run_id, int64_t *n,
			      struct recon_err *err)
{
	return recon_state_int(st, &rejects_count_sql, STATE_ARGS(STATE_INT(run_id)), n, err);
}

/* ---- the daily report's items and the money at stake ---------------------------- */

/* The ticket join below spells RECON_KEY_SEP as char(31). */
_Static_assert(RECON_KEY_SEP == '\x1f', "items_since_sql's char(31) is RECON_KEY_SEP");

/*
 * The items open at some point since since_ms: open now, or ended then or
 * later. The same key's ticket comes along, its key in the display form.
 */
static const struct recon_state_sql items_since_sql = {
    "SELECT i.id, i.key, i.class, i.severity, i.amount_minor, i.currency, i.opened_at_ms, "
    "ro.business_date, re.business_date, i.json, t.status, i.state, i.ended_at_ms "
    "FROM items i LEFT JOIN runs ro ON ro.id = i.opened_run "
    "LEFT JOIN runs re ON re.id = i.ended_run "
    "LEFT JOIN tickets t ON t.job = i.job AND t.class = i.class AND t.key = CASE WHEN "
    "instr(i.key, char(31)) THEN replace(replace(replace(i.key, '\\', '\\\\'), '|', '\\|'), "
    "char(31), '|') ELSE i.key END "
    "WHERE i.job = ?1 AND i.mode = ?2 AND (i.state = 'open' OR i.ended_at_ms >= ?3)",
    "cannot read open items", READ};

static int item_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_item_row it = {
	    .id = sqlite3_column_int64(q, 0),
	    .key = col(q, 1),
	    .key_len = (size_t)sqlite3_column_bytes(q, 1),
	    .klass = col(q, 2),
	    .severity = col(q, 3),
	    .amount = sqlite3_column_int64(q, 4),
	    .currency = col(q, 5),
	    .opened_at = sqlite3_column_int64(q, 6),
	    .opened_date = col(q, 7),
	    .ended_date = col(q, 8),
	    .json = col(q, 9),
	    .ticket = col(q, 10),
	    .state = col(q, 11),
	    .ended = sqlite3_column_type(q, 12) != SQLITE_NULL,
	    .ended_at = sqlite3_column_int64(q, 12),
	};

	return rd->item(rd->arg, &it);
}

int recon_state_items_since(struct recon_state *st, const char *job, const char *mode,
			    int64_t since_ms, int (*fn)(void *arg, const struct recon_item_row *it),
			    void *arg, struct recon_err *err)
{
	struct reader rd = {.item = fn, .arg = arg};

	return recon_state_each(st, &items_since_sql,
				STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_INT(since_ms)),
				item_row, &rd, err);
}

/* differences only: awaiting and in-flight items are not money at stake yet */
static const struct recon_state_sql stakes_sql = {
    "SELECT class, severity, amount_minor, currency FROM items WHERE job = ?1 AND state = "
    "'open' AND severity <> 'info' AND (?2 = 0 OR last_run = ?2) ORDER BY class, currency",
    "cannot read the money at stake", READ};

static int stake_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;

	return rd->stake(rd->arg, col(q, 0), col(q, 1), sqlite3_column_int64(q, 2), col(q, 3));
}

int recon_state_open_stakes(struct recon_state *st, const char *job, int64_t run_id,
			    int (*fn)(void *arg, const char *klass, const char *sev, int64_t amount,
				      const char *cur),
			    void *arg, struct recon_err *err)
{
	struct reader rd = {.stake = fn, .arg = arg};

	return recon_state_each(st, &stakes_sql, STATE_ARGS(STATE_TEXT(job), STATE_INT(run_id)),
				stake_row, &rd, err);
}

/* ---- the heartbeat ------------------------------------------------------------- */

_Static_assert(RECON_CLASS__COUNT == 6, "totals_sql sums six classes");

/* one row per mode that has succeeded at least once; sums over its real successful runs */
static const struct recon_state_sql totals_sql = {
    "SELECT h.mode, h.last_success_ms, coalesce(w.reconciled_until_ms, 0), h.duration_ms, "
    " t.up, t.loc, t.missing, t.extra, t.stuck, t.amount, t.status, t.dup, t.rej, "
    " l.rows_rejected "
    "FROM heartbeats h JOIN runs l ON l.id = h.run_id "
    "LEFT JOIN watermarks w ON w.job = h.job AND w.mode = h.mode "
    "JOIN (SELECT mode, coalesce(sum(rows_upstream), 0) AS up, "
    "  coalesce(sum(rows_local), 0) AS loc, coalesce(sum(n_missing), 0) AS missing, "
    "  coalesce(sum(n_extra), 0) AS extra, coalesce(sum(n_stuck), 0) AS stuck, "
    "  coalesce(sum(n_amount_mismatch), 0) AS amount, "
    "  coalesce(sum(n_status_mismatch), 0) AS status, "
    "  coalesce(sum(n_duplicate), 0) AS dup, coalesce(sum(rows_rejected), 0) AS rej "
    "  FROM runs WHERE job = ?1 AND outcome = 'success' AND dry_run = 0 GROUP BY mode) t "
    " ON t.mode = h.mode "
    "WHERE h.job = ?1 ORDER BY h.mode",
    "cannot read heartbeat data", READ};

static int totals_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;
	struct recon_state_totals t = {
	    .mode = col(q, 0),
	    .last_success = sqlite3_column_int64(q, 1),
	    .watermark = sqlite3_column_int64(q, 2),
	    .duration_ms = sqlite3_column_int64(q, 3),
	    .rows_upstream = sqlite3_column_int64(q, 4),
	    .rows_local = sqlite3_column_int64(q, 5),
	    .rejected = sqlite3_column_int64(q, 6 + RECON_CLASS__COUNT),
	    .rejects = sqlite3_column_int64(q, 7 + RECON_CLASS__COUNT),
	};

	for (int c = 0; c < RECON_CLASS__COUNT; c++)
		t.found[c] = sqlite3_column_int64(q, 6 + c);
	return rd->totals(rd->arg, &t);
}

int recon_state_totals(struct recon_state *st, const char *job,
		       int (*fn)(void *arg, const struct recon_state_totals *t), void *arg,
		       struct recon_err *err)
{
	struct reader rd = {.totals = fn, .arg = arg};

	return recon_state_each(st, &totals_sql, STATE_ARGS(STATE_TEXT(job)), totals_row, &rd, err);
}

static const struct recon_state_sql by_mode_sql = {
    "SELECT mode, class, count(*), min(opened_at_ms) FROM items WHERE job = ? AND state = "
    "'open' GROUP BY 1, 2",
    "cannot read open items", READ};

static int by_mode_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;

	return rd->by_mode(rd->arg, col(q, 0), col(q, 1), sqlite3_column_int64(q, 2),
			   sqlite3_column_int64(q, 3));
}

int recon_state_open_by_mode(struct recon_state *st, const char *job,
			     int (*fn)(void *arg, const char *mode, const char *klass, int64_t n,
				       int64_t oldest),
			     void *arg, struct recon_err *err)
{
	struct reader rd = {.by_mode = fn, .arg = arg};

	return recon_state_each(st, &by_mode_sql, STATE_ARGS(STATE_TEXT(job)), by_mode_row, &rd,
				err);
}

static const struct recon_state_sql actions_sql = {
    "SELECT r.mode, a.action, a.outcome, count(*) FROM actions a JOIN runs r ON r.id = "
    "a.run_id WHERE r.job = ? AND r.dry_run = 0 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    "cannot read action counts", READ};

static int actions_row(void *arg, sqlite3_stmt *q)
{
	const struct reader *rd = arg;

	return rd->actions(rd->arg, col(q, 0), col(q, 1), col(q, 2), sqlite3_column_int64(q, 3));
}

int recon_state_action_counts(struct recon_state *st, const char *job,
			      int (*fn)(void *arg, const char *mode, const char *action,
					const char *outcome, int64_t n),
			      void *arg, struct recon_err *err)
{
	struct reader rd = {.actions = fn, .arg = arg};

	return recon_state_each(st, &actions_sql, STATE_ARGS(STATE_TEXT(job)), actions_row, &rd,
				err);
}
