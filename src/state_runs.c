/*
 * recon_state, runs: a run's row from its start to its outcome, its rejects
 * and actions, and the watermarks and heartbeat rows a successful run moves.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_state.h"
#include "state_int.h"

static const struct recon_state_sql run_begin_sql = {
    "INSERT INTO runs (job, mode, window_start_ms, window_end_ms, business_date, dry_run, "
    "started_at_ms, config_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "cannot record the run", 0};

int recon_state_run_begin(struct recon_state *st, const struct recon_run_info *info,
			  int64_t *run_id, struct recon_err *err)
{
	int rc = recon_state_run(
	    st, &run_begin_sql,
	    STATE_ARGS(STATE_TEXT(info->job), STATE_TEXT(info->mode), STATE_INT(info->window_start),
		       STATE_INT(info->window_end), STATE_TEXT(info->business_date),
		       STATE_INT(info->dry_run), STATE_INT(info->started_at),
		       STATE_TEXT(info->config_sha256)),
	    err);

	if (rc == 0)
		*run_id = sqlite3_last_insert_rowid(st->db);
	return rc;
}

static const struct recon_state_sql run_finish_sql = {
    "UPDATE runs SET outcome = ?, exit_code = ?, error = ?, finished_at_ms = ?, "
    "rows_upstream = ?, rows_local = ?, rows_rejected = ?, rows_skipped = ?, "
    "rows_other = ?, keys_compared = ?, matched = ?, in_flight = ?, resolved = ?, "
    "superseded = ?, awaiting = ?, n_missing = ?, n_extra = ?, n_stuck = ?, "
    "n_amount_mismatch = ?, n_status_mismatch = ?, n_duplicate = ?, upstream_sha256 = ?, "
    "local_sha256 = ? WHERE id = ?",
    "cannot record the run's outcome", 0};

_Static_assert(RECON_CLASS__COUNT == 6, "run_finish_sql names six classes' counts");

int recon_state_run_finish(struct recon_state *st, int64_t run_id,
			   const struct recon_run_result *res, struct recon_err *err)
{
	const uint64_t *n = res->classes;

	return recon_state_run(
	    st, &run_finish_sql,
	    STATE_ARGS(STATE_TEXT(res->outcome), STATE_INT(res->exit_code), STATE_TEXT(res->error),
		       STATE_INT(res->finished_at), STATE_INT(res->rows_upstream),
		       STATE_INT(res->rows_local), STATE_INT(res->rows_rejected),
		       STATE_INT(res->rows_skipped), STATE_INT(res->rows_other),
		       STATE_INT(res->keys_compared), STATE_INT(res->matched),
		       STATE_INT(res->in_flight), STATE_INT(res->resolved),
		       STATE_INT(res->superseded), STATE_INT(res->awaiting), STATE_INT(n[0]),
		       STATE_INT(n[1]), STATE_INT(n[2]), STATE_INT(n[3]), STATE_INT(n[4]),
		       STATE_INT(n[5]), STATE_TEXT(res->upstream_sha256),
		       STATE_TEXT(res->local_sha256), STATE_INT(run_id)),
	    err);
}

static const struct recon_state_sql reject_sql = {
    "INSERT INTO rejects (run_id, side, origin, field, reason, raw) VALUES (?, ?, ?, ?, ?, ?)",
    "cannot record a reject", 0};

int recon_state_add_rejects(struct recon_state *st, int64_t run_id,
			    const struct recon_reject *rejects, size_t n, struct recon_err *err)
{
	int rc = 0;

	if (!n)
		return 0;
	if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct recon_reject *x = &rejects[i];
		rc = recon_state_run(st, &reject_sql,
				     STATE_ARGS(STATE_INT(run_id), STATE_TEXT(x->side),
						STATE_TEXT(x->origin), STATE_TEXT(x->field),
						STATE_TEXT(x->reason), STATE_TEXT(x->raw)),
				     err);
	}
	return recon_state_tx_end(st, rc, err);
}

static const struct recon_state_sql abandon_sql = {
    "UPDATE runs SET outcome = 'abandoned', error = 'the process ended before the run did "
    "(killed or crashed)' WHERE job = ? AND outcome = 'running'",
    "cannot update abandoned runs", 0};

int recon_state_abandon_running(struct recon_state *st, const char *job, struct recon_err *err)
{
	return recon_state_run(st, &abandon_sql, STATE_ARGS(STATE_TEXT(job)), err);
}

static const struct recon_state_sql run_actions_sql = {
    "UPDATE runs SET actions_json = ?, retries = ? WHERE id = ?", "cannot record the run's actions",
    0};

int recon_state_run_actions(struct recon_state *st, int64_t run_id, const char *actions_json,
			    uint64_t retries, struct recon_err *err)
{
	return recon_state_run(
	    st, &run_actions_sql,
	    STATE_ARGS(STATE_TEXT(actions_json), STATE_INT(retries), STATE_INT(run_id)), err);
}

static const struct recon_state_sql action_sql = {
    "INSERT INTO actions (run_id, key, class, action, outcome, attempts, error) VALUES (?, ?, "
    "?, ?, ?, ?, ?)",
    "cannot record an action", 0};

int recon_state_action(struct recon_state *st, int64_t run_id, const char *key, const char *klass,
		       const char *action, const char *outcome, int attempts, const char *error,
		       struct recon_err *err)
{
	return recon_state_run(st, &action_sql,
			       STATE_ARGS(STATE_INT(run_id), STATE_TEXT(key), STATE_TEXT(klass),
					  STATE_TEXT(action), STATE_TEXT(outcome),
					  STATE_INT(attempts), STATE_TEXT(error)),
			       err);
}

_Static_assert(RECON_STATE_ACTION_ROWS == 128, "actions_sql's rows");
static const struct recon_state_sql actions_sql = {
    "INSERT INTO actions (run_id, key, class, action, outcome, attempts, error) "
    "VALUES " STATE_ROWS2(STATE_ROWS4(STATE_ROWS16("(?, ?, ?, ?, ?, ?, ?)"))),
    "cannot record an action", 0};

int recon_state_actions(struct recon_state *st, int64_t run_id,
			const struct recon_state_action_row *rows, size_t n, struct recon_err *err)
{
	struct recon_state_arg args[RECON_STATE_ACTION_ROWS * 7 + 1];
	int rc = 0;

	while (n && rc == 0) {
		const size_t k = n < RECON_STATE_ACTION_ROWS ? n : RECON_STATE_ACTION_ROWS;
		for (size_t i = 0; i < k; i++) {
			struct recon_state_arg *a = &args[7 * i];
			a[0] = STATE_INT(run_id);
			a[1] = STATE_TEXT(rows[i].key);
			a[2] = STATE_TEXT(rows[i].klass);
			a[3] = STATE_TEXT(rows[i].action);
			a[4] = STATE_TEXT(rows[i].outcome);
			a[5] = STATE_INT(rows[i].attempts);
			a[6] = STATE_TEXT(rows[i].error);
		}
		rc = recon_state_run_rows(st, &action_sql, &actions_sql, RECON_STATE_ACTION_ROWS, 7,
					  args, k, err);
		rows += k;
		n -= k;
	}
	return rc;
}

/* ---- history ----------------------------------------------------------------- */

static const struct recon_state_sql history_sql = {
    "SELECT min(window_start_ms) FROM runs WHERE job = ? AND mode = ? AND outcome = 'success' "
    "AND dry_run = 0",
    "cannot read the runs", 0};

int recon_state_history_start(struct recon_state *st, const char *job, const char *mode,
			      int64_t *start, struct recon_err *err)
{
	return recon_state_int(st, &history_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
			       start, err);
}

static const struct recon_state_sql reconciled_sql = {
    "SELECT max(id) FROM runs WHERE job = ? AND mode = ? AND outcome = 'success' AND "
    "dry_run = 0 AND window_start_ms = ? AND window_end_ms = ?",
    "cannot read the runs", 0};

int recon_state_window_reconciled(struct recon_state *st, const char *job, const char *mode,
				  int64_t start, int64_t end, int64_t *run_id,
				  struct recon_err *err)
{
	return recon_state_int(
	    st, &reconciled_sql,
	    STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_INT(start), STATE_INT(end)), run_id,
	    err);
}

/* ---- watermarks -------------------------------------------------------------- */

static const struct recon_state_sql watermark_sql = {
    "SELECT reconciled_until_ms FROM watermarks WHERE job = ? AND mode = ?",
    "cannot read the watermark", 0};

int recon_state_watermark_get(struct recon_state *st, const char *job, const char *mode,
			      int64_t *until, struct recon_err *err)
{
	return recon_state_int(st, &watermark_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
			       until, err);
}

static const struct recon_state_sql seed_sql = {
    "INSERT INTO watermarks (job, mode, reconciled_until_ms, run_id, updated_at_ms) VALUES (?, "
    "?, ?, 0, ?) ON CONFLICT (job, mode) DO NOTHING",
    "cannot seed the watermark", 0};

int recon_state_watermark_seed(struct recon_state *st, const char *job, const char *mode,
			       int64_t at, int64_t now, struct recon_err *err)
{
	return recon_state_run(
	    st, &seed_sql,
	    STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_INT(at), STATE_INT(now)), err);
}

/*
 * Windows reconciled ahead of a gap (a day run by --date before the days
 * before it) count once the gap is filled: the watermark moves over every
 * successful, non-dry window that starts where it stands.
 */
static const struct recon_state_sql extend_sql = {
    "UPDATE watermarks SET reconciled_until_ms = (SELECT max(r.window_end_ms) FROM runs r "
    "WHERE r.job = ?1 AND r.mode = ?2 AND r.outcome = 'success' AND r.dry_run = 0 AND "
    "r.window_start_ms <= reconciled_until_ms), "
    "run_id = (SELECT r.id FROM runs r WHERE r.job = ?1 AND r.mode = ?2 AND "
    "r.outcome = 'success' AND r.dry_run = 0 AND r.window_start_ms <= reconciled_until_ms "
    "ORDER BY r.window_end_ms DESC, r.id DESC LIMIT 1) "
    "WHERE job = ?1 AND mode = ?2 AND EXISTS (SELECT 1 FROM runs r WHERE r.job = ?1 AND "
    "r.mode = ?2 AND r.outcome = 'success' AND r.dry_run = 0 AND "
    "r.window_start_ms <= reconciled_until_ms AND r.window_end_ms > reconciled_until_ms)",
    "cannot extend the watermark", 0};

static const struct recon_state_sql watermark_up_sql = {
    "INSERT INTO watermarks (job, mode, reconciled_until_ms, run_id, updated_at_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job, mode) DO UPDATE SET "
    "reconciled_until_ms = max(reconciled_until_ms, excluded.reconciled_until_ms), "
    "run_id = CASE WHEN excluded.reconciled_until_ms > reconciled_until_ms "
    "THEN excluded.run_id ELSE run_id END, updated_at_ms = excluded.updated_at_ms",
    "cannot record the watermark", 0};

static const struct recon_state_sql heartbeat_up_sql = {
    "INSERT INTO heartbeats (job, mode, last_success_ms, run_id, duration_ms) VALUES (?1, ?2, "
    "?3, ?4, ?5) ON CONFLICT (job, mode) DO UPDATE SET last_success_ms = "
    "excluded.last_success_ms, run_id = excluded.run_id, duration_ms = excluded.duration_ms",
    "cannot record the watermark", 0};

int recon_state_success(struct recon_state *st, const char *job, const char *mode, int64_t until,
			int64_t run_id, int64_t now, int64_t duration_ms, struct recon_err *err)
{
	int rc;

	if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	rc = recon_state_run(st, &watermark_up_sql,
			     STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_INT(until),
					STATE_INT(run_id), STATE_INT(now)),
			     err);
	if (rc == 0)
		rc = recon_state_run(st, &heartbeat_up_sql,
				     STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode), STATE_INT(now),
						STATE_INT(run_id), STATE_INT(duration_ms)),
				     err);
	/* each pass moves over one more contiguous window; stops when none starts there */
	while (rc == 0 &&
	       (rc = recon_state_run(st, &extend_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
				     err)) == 0 &&
	       sqlite3_changes(st->db) > 0)
		;
	return recon_state_tx_end(st, rc, err);
}
