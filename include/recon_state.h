/*
 * recon_state: the SQLite state store (WAL): runs, differences, rejects,
 * the open-items ledger (window contributions and open items), tickets,
 * watermarks, heartbeats; schema migrations by PRAGMA user_version; and the
 * per-job run lock.
 *
 * The only module that knows the state schema (sql/sqlite/state): the
 * commands, the heartbeat and the daily report read through the queries at
 * the end of this header. Files: recon_state.c (opening, migrations, lock,
 * statement helpers), state_runs.c, state_items.c, state_tickets.c,
 * state_query.c, sharing src/state_int.h. RECON_ENOTFOUND from a lookup (a
 * run, a watermark, a date, a check) is an answer, not an error: err is left
 * untouched (recon_state_open and recon_state_ticket_close set their message).
 *
 * Invariants: a watermark never moves backwards (recon_state_success keeps
 * the larger value) and only over contiguous successful windows; one open
 * item per (job, mode, key); a ticket follows its item; every multi-row
 * write is one transaction.
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
 * Gives SQLite an allocator whose page-sized allocations come from memory in
 * huge pages (src/state_mem.c); smaller ones stay SQLite's own. Turns SQLite's
 * memory statistics off (sqlite3_memory_used() says 0), and keeps statement
 * journals in memory (up to 4 MiB a statement). Called once, first thing in
 * main(), before SQLite's first use: called later, it changes nothing.
 */
void recon_state_memory_setup(void);
/* Bytes of huge-page memory the allocator above holds (0 while unused or not set up). */
size_t recon_state_memory_pooled(void);

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
 * The run wrote its last for now: the WAL goes back into the database on the
 * checkpointer's thread (when a run woke it) while the caller frees and
 * prints, so that closing the store has little left to copy.
 */
void recon_state_checkpoint_soon(struct recon_state *st);
/*
 * The page cache for appends only (small: true), or back to its size for
 * everything else. A dry run records nothing but its differences, appended
 * in key order: 4 MiB holds what that touches, where the 32 MiB a real run
 * needs for its items and ledger (index seeks all over) came in as fresh
 * memory, 30 MB of a 10M run's peak and 0.04 s of its record phase.
 */
int recon_state_cache_small(struct recon_state *st, bool small, struct recon_err *err);

/*
 * Takes the job's run lock: an exclusive flock(2) on "<state path>.<job>.lock",
 * which the kernel releases when the process dies. RECON_ELOCKED with
 * "job 'X' is already running (pid N, since T)" when still held after
 * waiting wait_ms for it (lock_wait). *fd is released by recon_state_unlock().
 */
RECON_MUSTCHECK int recon_state_lock(const char *state_path, const char *job, int64_t now,
				     int64_t wait_ms, int *fd, struct recon_err *err);
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
	uint64_t keys_compared, matched, in_flight, resolved, superseded, awaiting;
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

/* One run's evaluation, as the state store records it. Borrowed for the call. */
struct recon_record {
	const char *job, *mode; /* mode: "t1" or "hot" */
	int64_t run_id, now;
	int64_t window_start, window_end;
	const struct recon_diff *diffs; /* differences in key order ... */
	char *const *json;		/* ... and their output lines */
	/* NULL, or json[i] may be read once ready(ready_arg, i) returned (still rendered) */
	void (*ready)(void *arg, size_t i);
	void *ready_arg;
	size_t n;
	const struct recon_diff *pending; /* awaiting and in flight ... */
	char *const *pjson;		  /* ... and their lines */
	size_t npending;
	const struct recon_compare *cmp;  /* which class each evaluated key got */
	bool ledger;			  /* false on a dry run: nothing a later run reads */
	int64_t settled_ms, retention_ms; /* ledger.settled, ledger.retention */
};

/* What a run did to the open items. */
struct recon_item_counts {
	uint64_t opened;     /* difference items opened */
	uint64_t resolved;   /* difference items now matched */
	uint64_t superseded; /* difference items whose key got another class */
	uint64_t settled;    /* awaiting / in-flight items now matched */
};

/*
 * Records a run's differences (always, for `recon diff`) and, when
 * rec->ledger, the open items (DESIGN "One open item per key and mode"): an
 * item opens for a new class, stays for the same, is superseded by another;
 * open items of rec->mode that cmp evaluated as matched are resolved (a t1
 * run also resolves hot items). Tickets of ended items are resolved in the
 * state store (marked for the merchant copy: recon_state_tickets_unsynced).
 * One transaction.
 */
RECON_MUSTCHECK int recon_state_record_diffs(struct recon_state *st, const struct recon_record *rec,
					     struct recon_item_counts *ic, struct recon_err *err);
/* Resolves key's open `missing` item once its replay committed (in the caller's batch). */
RECON_MUSTCHECK int recon_state_item_replayed(struct recon_state *st,
					      const struct recon_record *rec, const char *key,
					      size_t len, struct recon_err *err);
/* "critical" (amount_mismatch), "info" (awaiting, in flight) or "normal". */
const char *recon_state_severity(int klass);

/* Where recon_state_ledger_load() delivers what it reads. */
struct recon_ledger_sink {
	/* a key's contributions summed (c->mine: this window contributed before) */
	void (*carry)(void *arg, const char *key, size_t len, const struct recon_carry *c);
	/* an open item of the mode, and when it was opened */
	void (*item)(void *arg, const char *key, size_t len, int klass, int64_t opened);
	void *arg;
};
/*
 * Reads the (job, mode) ledger for the window starting at window_start: each
 * key's contributions of other windows, and every open item. Cost: the
 * ledger's size (open items, partial refunds, recently settled keys).
 */
RECON_MUSTCHECK int recon_state_ledger_load(struct recon_state *st, const char *job,
					    const char *mode, int64_t window_start,
					    const struct recon_ledger_sink *sink,
					    struct recon_err *err);
/*
 * Replaces the window's contributions (rec->window_start) with c[0..n), sets
 * each key's retention, and purges expired rows. One transaction.
 */
RECON_MUSTCHECK int recon_state_ledger_save(struct recon_state *st, const struct recon_record *rec,
					    const struct recon_contrib *c, size_t n,
					    struct recon_err *err);

/* Start of the first successful window of (job, mode): RECON_ENOTFOUND when none. */
RECON_MUSTCHECK int recon_state_history_start(struct recon_state *st, const char *job,
					      const char *mode, int64_t *start,
					      struct recon_err *err);
/* The latest successful real run of exactly [start, end): its id, or RECON_ENOTFOUND. */
RECON_MUSTCHECK int recon_state_window_reconciled(struct recon_state *st, const char *job,
						  const char *mode, int64_t start, int64_t end,
						  int64_t *run_id, struct recon_err *err);

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
 * true when it is new or was reopened (it had been resolved or closed), false
 * when it was open already (then its last_seen_run moves). *opened_run: the
 * run that opened it, for the merchant's copy. Not in a transaction of its
 * own: each call commits.
 */
RECON_MUSTCHECK int recon_state_ticket(struct recon_state *st, const char *job, const char *key,
				       const char *klass, const char *severity, int64_t run_id,
				       int64_t now, const char *json, bool *opened,
				       int64_t *opened_run, struct recon_err *err);

/* A ticket whose end the merchant's recon_ticket table has not seen yet. */
struct recon_ticket_end {
	const char *key, *klass, *status, *note; /* borrowed for the callback */
	int64_t run_id;				 /* the run that ended it (0: a person) */
	int64_t at;
};
/* Calls fn for each ended ticket of the job not yet in the merchant's copy; fn returns < 0 to stop.
 */
RECON_MUSTCHECK int recon_state_tickets_unsynced(struct recon_state *st, const char *job,
						 int (*fn)(void *arg,
							   const struct recon_ticket_end *t),
						 void *arg, struct recon_err *err);
/* Marks the end of (job, key, class) as carried to the merchant's copy. */
RECON_MUSTCHECK int recon_state_ticket_synced(struct recon_state *st, const char *job,
					      const char *key, const char *klass,
					      struct recon_err *err);
/*
 * A person closes the open ticket (job, key shown as in tickets, class) with
 * a note, and the open items behind it. RECON_ENOTFOUND when no such ticket is open.
 */
RECON_MUSTCHECK int recon_state_ticket_close(struct recon_state *st, const char *job,
					     const char *key, const char *klass, const char *note,
					     int64_t now, struct recon_err *err);

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

/* One action of a run, for recon_state_actions(). */
struct recon_state_action_row {
	const char *key, *klass, *action, *outcome;
	int attempts;
	const char *error; /* NULL: none */
};
/* How many rows recon_state_actions() writes with one statement. */
#define RECON_STATE_ACTION_ROWS 128
/*
 * Records n actions of a run, in order: as recon_state_action() does each,
 * RECON_STATE_ACTION_ROWS to a statement (a statement's step and reset were a
 * third of recording a row). Such a statement keeps a journal of the pages it
 * changes: in memory after recon_state_memory_setup().
 */
RECON_MUSTCHECK int recon_state_actions(struct recon_state *st, int64_t run_id,
					const struct recon_state_action_row *rows, size_t n,
					struct recon_err *err);

/* Stores a run's action counts (JSON object) and retries. */
RECON_MUSTCHECK int recon_state_run_actions(struct recon_state *st, int64_t run_id,
					    const char *actions_json, uint64_t retries,
					    struct recon_err *err);

/* ---- read-only queries: the commands, the heartbeat, the daily report ----
 *
 * Each reads what one reader shows, as plain structs: one struct for a value,
 * a callback per row for a list (its strings borrowed for the call; the
 * callback returns < 0 to stop, and that is returned). Errors are RECON_EIO
 * with "cannot read ...: <SQLite's message>".
 */

/* A run as recorded (NULL where nothing is recorded). */
struct recon_state_run {
	int64_t id;
	const char *mode, *business_date, *outcome, *error;
	bool dry_run;
	int64_t window_start, window_end, started_at;
	int64_t finished_at, exit_code; /* -1 while it runs */
	int64_t rows_upstream, rows_local, rows_rejected, rows_skipped;
	int64_t keys_compared, matched, differences, resolved, in_flight, awaiting;
	const char *upstream_sha256, *local_sha256, *config_sha256;
};
typedef int (*recon_state_run_fn)(void *arg, const struct recon_state_run *r);
/* One difference or open item line (the JSON a run printed for it). */
typedef int (*recon_state_line_fn)(void *arg, const char *json);

/*
 * The latest successful run of the job (with date: of that business day and
 * mode): its id, or RECON_ENOTFOUND.
 */
RECON_MUSTCHECK int recon_state_latest_run(struct recon_state *st, const char *job,
					   const char *date, const char *mode, int64_t *run_id,
					   struct recon_err *err);
/* Run run_id of the job: fn called once, or RECON_ENOTFOUND. */
RECON_MUSTCHECK int recon_state_run_get(struct recon_state *st, const char *job, int64_t run_id,
					recon_state_run_fn fn, void *arg, struct recon_err *err);
/* The job's latest `limit` runs, newest first. */
RECON_MUSTCHECK int recon_state_recent_runs(struct recon_state *st, const char *job, int limit,
					    recon_state_run_fn fn, void *arg,
					    struct recon_err *err);
/* The real runs of (job, mode) whose business day is in [from, to] (YYYY-MM-DD), by id. */
RECON_MUSTCHECK int recon_state_runs_between(struct recon_state *st, const char *job,
					     const char *mode, const char *from, const char *to,
					     recon_state_run_fn fn, void *arg,
					     struct recon_err *err);
/* The latest business day a successful real run of (job, mode) reconciled, or RECON_ENOTFOUND. */
RECON_MUSTCHECK int recon_state_latest_date(struct recon_state *st, const char *job,
					    const char *mode, char date[16], struct recon_err *err);

/* The differences run_id recorded (klass NULL: every class), in key order. */
RECON_MUSTCHECK int recon_state_differences(struct recon_state *st, int64_t run_id,
					    const char *klass, recon_state_line_fn fn, void *arg,
					    struct recon_err *err);
/*
 * The job's open items as last evaluated, by key and mode (mode NULL: both;
 * klass NULL: every difference, awaiting and in flight left out).
 */
RECON_MUSTCHECK int recon_state_open_lines(struct recon_state *st, const char *job,
					   const char *mode, const char *klass,
					   recon_state_line_fn fn, void *arg,
					   struct recon_err *err);

/* A mode of the job as `recon status` shows it. */
struct recon_state_mode {
	const char *mode;
	bool has_watermark, has_success;
	int64_t watermark, last_success;
	struct recon_state_run last; /* its latest run */
};
/* Every mode the job has run in, by name. */
RECON_MUSTCHECK int recon_state_modes(struct recon_state *st, const char *job,
				      int (*fn)(void *arg, const struct recon_state_mode *m),
				      void *arg, struct recon_err *err);
/* The job's open items per class (classes with none are not called). */
RECON_MUSTCHECK int recon_state_open_counts(struct recon_state *st, const char *job,
					    int (*fn)(void *arg, const char *klass, int64_t n),
					    void *arg, struct recon_err *err);

/* What `recon check` weighs for (job, mode). */
struct recon_state_health {
	bool found; /* false: RECON_ENOTFOUND */
	int64_t watermark, last_success;
	int64_t last_run; /* the latest real run */
	bool failed;	  /* ... failed */
	char error[300];  /* ... and why ("" when it did not fail or says nothing) */
};
/*
 * RECON_ENOTFOUND when (job, mode) has no watermark and heartbeat yet (no
 * successful run). Errors say "cannot read the state store '<path>': ...".
 */
RECON_MUSTCHECK int recon_state_health(struct recon_state *st, const char *job, const char *mode,
				       struct recon_state_health *h, struct recon_err *err);

/* A ticket as `recon tickets` lists it. */
struct recon_ticket_row {
	const char *key, *klass, *severity, *status;
	int64_t opened_run, opened_at, last_seen_run, resolved_run; /* resolved_run 0: none */
	const char *json, *note;				    /* note NULL: none */
};
/* The job's open tickets (all: every one), by key and class. */
RECON_MUSTCHECK int recon_state_tickets_list(struct recon_state *st, const char *job, bool all,
					     int (*fn)(void *arg, const struct recon_ticket_row *t),
					     void *arg, struct recon_err *err);

/*
 * The first `limit` rejects (-1: all) of run run_id of the job, or of its
 * latest run that has any (run_id 0), in the order they were recorded.
 */
RECON_MUSTCHECK int
recon_state_rejects(struct recon_state *st, const char *job, int64_t run_id, int64_t limit,
		    int (*fn)(void *arg, int64_t run_id, const struct recon_reject *x), void *arg,
		    struct recon_err *err);
/* How many rejects run_id recorded. */
RECON_MUSTCHECK int recon_state_rejects_count(struct recon_state *st, int64_t run_id, int64_t *n,
					      struct recon_err *err);

/* An item of (job, mode) as the daily report reads it. */
struct recon_item_row {
	int64_t id;
	const char *key; /* stored form (RECON_KEY_SEP between parts) */
	size_t key_len;
	const char *klass, *severity, *currency, *state;
	int64_t amount; /* money at stake, minor units */
	int64_t opened_at;
	const char *opened_date, *ended_date; /* business days of the runs; NULL: none */
	bool ended;			      /* ended_at recorded (a run or a person) */
	int64_t ended_at;
	const char *json;   /* the difference as last evaluated */
	const char *ticket; /* its ticket's status; NULL: none */
};
/* The items of (job, mode) open now, or ended at or after since_ms. */
RECON_MUSTCHECK int recon_state_items_since(struct recon_state *st, const char *job,
					    const char *mode, int64_t since_ms,
					    int (*fn)(void *arg, const struct recon_item_row *it),
					    void *arg, struct recon_err *err);
/*
 * The open differences of the job (awaiting and in flight left out; run_id >
 * 0: those that run evaluated last), by class and currency: fn gets each
 * item's class, severity, money at stake and currency. Errors say "cannot
 * read the money at stake: ...".
 */
RECON_MUSTCHECK int recon_state_open_stakes(struct recon_state *st, const char *job, int64_t run_id,
					    int (*fn)(void *arg, const char *klass, const char *sev,
						      int64_t amount, const char *cur),
					    void *arg, struct recon_err *err);

/* What the heartbeat says of a mode that has succeeded at least once. */
struct recon_state_totals {
	const char *mode;
	int64_t last_success, watermark, duration_ms; /* watermark 0: none */
	/* sums over the mode's successful real runs: they only grow */
	int64_t rows_upstream, rows_local, rejected;
	int64_t found[RECON_CLASS__COUNT];
	int64_t rejects; /* rows rejected by the last successful run */
};
/* Per mode, by name. Errors say "cannot read heartbeat data: ...". */
RECON_MUSTCHECK int recon_state_totals(struct recon_state *st, const char *job,
				       int (*fn)(void *arg, const struct recon_state_totals *t),
				       void *arg, struct recon_err *err);
/*
 * The open items per mode and class, and the oldest one's opening time.
 * Errors say "cannot read open items: ...".
 */
RECON_MUSTCHECK int recon_state_open_by_mode(struct recon_state *st, const char *job,
					     int (*fn)(void *arg, const char *mode,
						       const char *klass, int64_t n,
						       int64_t oldest),
					     void *arg, struct recon_err *err);
/*
 * The actions of the job's real runs per mode, action and outcome, in that
 * order. Errors say "cannot read action counts: ...".
 */
RECON_MUSTCHECK int recon_state_action_counts(struct recon_state *st, const char *job,
					      int (*fn)(void *arg, const char *mode,
							const char *action, const char *outcome,
							int64_t n),
					      void *arg, struct recon_err *err);

/* The raw SQLite handle, for the tests' own checks of the schema. Borrowed. */
struct sqlite3 *recon_state_db(struct recon_state *st);

#endif
