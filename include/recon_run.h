/*
 * recon_run: one window, start to end: read both sides, normalize, compare,
 * record the run, its rejects and differences in the state store, then (not
 * on a dry run) advance the watermark and rewrite the heartbeat, last.
 *
 * The order is the crash-safety argument: nothing that says "reconciled up
 * to T" is written before everything up to T is committed.
 */
#ifndef RECON_RUN_H
#define RECON_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "recon_action.h"
#include "recon_compare.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_source.h"

struct recon_state;

enum recon_mode {
	RECON_MODE_T1,
	RECON_MODE_HOT,
};
const char *recon_mode_name(enum recon_mode mode);

/* Everything a run needs besides the window: no globals. */
struct recon_ctx {
	const struct recon_job *job;
	enum recon_mode mode;
	int64_t now; /* the run's clock (RECON_NOW in tests) */
	bool dry_run;
	bool quiet;
};

/* What one window's run did; filled even when it fails (as far as it got). */
struct recon_run_summary {
	int64_t run_id; /* 0 when the run could not even be recorded */
	struct recon_window win;
	uint64_t rows_read[2]; /* RECON_SIDE_*: every row read */
	uint64_t rows_rejected[2];
	uint64_t rows_skipped;	/* keyless statement lines */
	uint64_t lookups[2];	/* keys looked up on each side */
	uint64_t rows_other[2]; /* rows read that other windows own (margins) */
	/* rows of other key-hash partitions: neither compared nor rejected, not in rows_read */
	uint64_t rows_partition[2];
	struct recon_compare_counts counts;
	struct recon_action_counts actions;
	uint64_t resolved;   /* earlier differences now matched */
	uint64_t superseded; /* earlier differences whose key now has another class */
	uint64_t settled;    /* awaiting / in-flight items now matched */
	int64_t duration_ms;
	bool success;
	int exit_code;
	char error[420]; /* first error, already redacted; empty on success */
};

/* Builds the window for business day `day` of the job (t1): that day in the job's zone. */
void recon_run_day_window(const struct recon_job *job, int64_t day, struct recon_window *win);
/* A window [start, end) (hot); day = the job-zone day holding start. */
void recon_run_span_window(const struct recon_job *job, int64_t start, int64_t end,
			   struct recon_window *win);

/*
 * Runs one window. Returns 0 when the run succeeded (differences are
 * results), else the error (also in sum->error and the state store).
 */
RECON_MUSTCHECK int recon_run_window(const struct recon_ctx *ctx, struct recon_state *st,
				     const struct recon_window *win, struct recon_run_summary *sum,
				     struct recon_err *err);

#endif
