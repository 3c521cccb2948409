/*
 * recon_state: the SQLite state store (WAL): runs, differences, rejects,
 * watermarks, heartbeats; schema migrations by PRAGMA user_version; and the
 * per-job run lock.
 *
 * Invariants: a watermark never moves backwards (recon_state_watermark_set
 * keeps the larger value); differences are upserted on (job, key, class);
 * every multi-row write is one transaction.
 */
#ifndef RECON_STATE_H
#define RECON_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_compare.h"
#include "recon_err.h"

struct recon_state;

/*
 * Opens the store at path. `writable`: create the file and its folder if
 * needed and migrate the schema; otherwise open read-only (RECON_ENOTFOUND
 * when the file does not exist; RECON_EIO when the schema is newer than this
 * build). Caller closes with recon_state_close().
 */
RECON_MUSTCHECK int recon_state_open(struct recon_state **out, const char *path, bool writable,
				     struct recon_err *err);
void recon_state_close(struct recon_state *st);

/*
 * Takes the job's run lock: an exclusive flock(2) on "<state path>.<job>.lock",
 * which the kernel releases when the process dies. RECON_ELOCKED with
 * "job 'X' is already running (pid N, since T)" when held. *fd is released by
 * recon_state_unlock().
 */
RECON_MUSTCHECK int recon_state_lock(const char *state_path, const char *job, int64_t now, int *fd,
				     struct recon_err *err);
void recon_state_unlock(int fd);

/*
 * Marks the job's runs still recorded as running as 'abandoned' (call with
 * the job's lock held: such a run was killed or crashed).
 */
RECON_MUSTCHECK int recon_state_abandon_running(struct recon_state *st, const char *job,
						struct recon_err *err);

/* What a run is, when it starts. */
struct recon_run_info {
	const char *job;
	const char *mode; /* "t1" or "hot" */
	int64_t window_start, window_end;
	const char *business_date;
	bool dry_run;
	int64_t started_at;
	const char *config_sha256;
};

/* What a run found, when it ends. */
struct recon_run_result {
	const char *outcome; /* "success" or "failed" */
	int exit_code;
	const char *error; /* NULL on success */
	int64_t finished_at;
	uint64_t rows_upstream, rows_local, rows_rejected, rows_skipped, rows_other;
	uint64_t keys_compared, matched, in_flight, resolved;
	uint64_t classes[RECON_CLASS__COUNT];
	const char *upstream_sha256, *local_sha256; /* NULL for databases */
};

RECON_MUSTCHECK int recon_state_run_begin(struct recon_state *st, const struct recon_run_info *info,
					  int64_t *run_id, struct recon_err *err);
RECON_MUSTCHECK int recon_state_run_finish(struct recon_state *st, int64_t run_id,
					   const struct recon_run_result *res,
					   struct recon_err *err);

/* One reject as recorded. Strings borrowed for the call. */
struct recon_reject {
	const char *side; /* "upstream" / "local" */
	const char *origin;
	const char *field;
	const char *reason;
	const char *raw; /* may be NULL */
};
RECON_MUSTCHECK int recon_state_add_rejects(struct recon_state *st, int64_t run_id,
					    const struct recon_reject *rejects, size_t n,
					    struct recon_err *err);

/*
 * Records a run's differences: json[i] is the output line of diffs[i].
 * Always stored per run (for `recon diff`). When `ledger` is true, also
 * upserts them into the job's difference ledger and marks resolved every
 * open ledger entry whose key this window owns (cmp) but which is no longer
 * in that class; *resolved receives their count. One transaction.
 */
RECON_MUSTCHECK int recon_state_record_diffs(struct recon_state *st, const char *job,
					     int64_t run_id, int64_t now,
					     const struct recon_diff *diffs, char *const *json,
					     size_t n, const struct recon_compare *cmp, bool ledger,
					     uint64_t *resolved, struct recon_err *err);

/* Watermark of (job, mode): RECON_ENOTFOUND when none yet. */
RECON_MUSTCHECK int recon_state_watermark_get(struct recon_state *st, const char *job,
					      const char *mode, int64_t *until,
					      struct recon_err *err);
/*
 * Creates the (job, mode) watermark at `at` when there is none: the first
 * real run of a job seeds it at its window's start, so a first run that fails
 * holds the watermark there and later days cannot jump over it.
 */
RECON_MUSTCHECK int recon_state_watermark_seed(struct recon_state *st, const char *job,
					       const char *mode, int64_t at, int64_t now,
					       struct recon_err *err);
/* Moves the watermark to max(current, until) and records the heartbeat row. */
RECON_MUSTCHECK int recon_state_success(struct recon_state *st, const char *job, const char *mode,
					int64_t until, int64_t run_id, int64_t now,
					int64_t duration_ms, struct recon_err *err);

/*
 * Opens a ticket in the state store, unique on (job, key, class): *opened is
 * true when it is new, false when it was already there (then its
 * last_seen_run moves). Not in a transaction of its own: each call commits.
 */
RECON_MUSTCHECK int recon_state_ticket(struct recon_state *st, const char *job, const char *key,
				       const char *klass, const char *severity, int64_t run_id,
				       int64_t now, const char *json, bool *opened,
				       struct recon_err *err);

/*
 * Groups the calls that follow into one transaction until recon_state_batch_end
 * (tickets and action records of a run's action phase): one commit per batch
 * instead of one per row. Nested calls are not allowed.
 */
RECON_MUSTCHECK int recon_state_batch_begin(struct recon_state *st, struct recon_err *err);
RECON_MUSTCHECK int recon_state_batch_end(struct recon_state *st, struct recon_err *err);

/* Records one action of a run (error may be NULL). */
RECON_MUSTCHECK int recon_state_action(struct recon_state *st, int64_t run_id, const char *key,
				       const char *klass, const char *action, const char *outcome,
				       int attempts, const char *error, struct recon_err *err);

/* Stores a run's action counts (JSON object) and retries. */
RECON_MUSTCHECK int recon_state_run_actions(struct recon_state *st, int64_t run_id,
					    const char *actions_json, uint64_t retries,
					    struct recon_err *err);

/* Keys settled by the window ending at window_end (see recon_compare_settle). */
RECON_MUSTCHECK int recon_state_boundary_load(struct recon_state *st, const char *job,
					      const char *mode, int64_t window_end,
					      void (*fn)(void *arg, const char *key, size_t len),
					      void *arg, struct recon_err *err);
/* Records them (idempotent); one transaction. */
RECON_MUSTCHECK int recon_state_boundary_save(struct recon_state *st, const char *job,
					      const char *mode, int64_t window_end,
					      const char *const *keys, const size_t *lens, size_t n,
					      struct recon_err *err);

/* The raw SQLite handle, for read-only queries (cmd_query.c). Borrowed. */
struct sqlite3 *recon_state_db(struct recon_state *st);

#endif
