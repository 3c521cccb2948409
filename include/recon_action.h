/*
 * recon_action: the compensations a run drives after its differences are
 * committed (DESIGN classification table), and the writes they make through
 * the job's writer (recon_writer.h).
 *
 *   missing          -> replay: the upstream order inserted into the local flow
 *                       table with its idempotency record, in one transaction;
 *                       refused (a critical ticket instead, never an insert)
 *                       when its entries are in mixed currencies or overflow,
 *                       its amount is zero or less, or it refunds more than
 *                       was paid (recon_action_replay_refusal())
 *   extra            -> ticket (never a refund, never a delete)
 *   stuck            -> re-push: an outbox event; optionally a guarded transition
 *   amount_mismatch  -> critical ticket + alert line; never auto-fixed
 *   status_mismatch,
 *   duplicate        -> ticket
 *
 * Every write is idempotent through a unique key ((job, key, class) tickets,
 * (job, key, event) outbox rows, the business key and idem_key for replays),
 * so a run killed at any point and run again ends in the state of one clean
 * run. Transient failures are retried with the same idempotency key
 * (exponential backoff with jitter); anything else fails the action and the
 * run. --dry-run performs nothing and reports what it would have done.
 */
#ifndef RECON_ACTION_H
#define RECON_ACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_compare.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_writer.h"

/*
 * The writes behind the actions, one statement (or transaction) each, in the
 * writer's dialect; *affected tells done (> 0) from already there (0).
 * action_replay.c: the missing order and its idempotency record, one transaction,
 * with the job's replay_values; or, with "replay": "outbox", a "replay" event
 * carrying the upstream order as JSON. A table the replay cannot fill (a NOT
 * NULL, CHECK or foreign key the job gives no value for, a missing column)
 * is RECON_ECONFIG; a missing grant RECON_EPERM.
 * action_notify.c: recon_ticket, recon_outbox rows, the guarded transition.
 */
int recon_action_replay(struct recon_writer *w, const struct recon_job *job,
			const struct recon_diff *d, int64_t *affected, struct recon_err *err);
int recon_action_writer_ticket(struct recon_writer *w, const struct recon_job *job, const char *key,
			       const char *klass, const char *severity, int64_t run_id,
			       const char *json, int64_t *affected, struct recon_err *err);
/* The merchant's copy of a ticket that ended (status "resolved" or "closed"; run_id 0: a person).
 */
int recon_action_ticket_end(struct recon_writer *w, const struct recon_job *job, const char *key,
			    const char *klass, const char *status, int64_t run_id, const char *note,
			    int64_t *affected, struct recon_err *err);
int recon_action_outbox(struct recon_writer *w, const struct recon_job *job, const char *key,
			const char *json, int64_t *affected, struct recon_err *err);
/* As recon_action_outbox() with its own event name ("replay"): unique on (job, key, event). */
int recon_action_outbox_event(struct recon_writer *w, const struct recon_job *job, const char *key,
			      const char *event, const char *json, int64_t *affected,
			      struct recon_err *err);
int recon_action_transition(struct recon_writer *w, const struct recon_job *job,
			    const struct recon_diff *d, int64_t *affected, struct recon_err *err);

/*
 * Why the upstream side of a `missing` difference does not justify inserting
 * it (a static string), or NULL when the replay may go ahead: entries in mixed
 * currencies or sums beyond int64 (up.conflict), an order amount of zero or
 * less, negative refunds, or refunds above the payment. A refund-only key
 * (amount 0, refunds > 0: its payment lies in an earlier statement) is not
 * judged here; it gets a normal ticket.
 */
const char *recon_action_replay_refusal(const struct recon_diff *d);

/* ---- retries ---- */

struct recon_retry_policy {
	int max_attempts;			 /* 5 */
	int64_t first_ms;			 /* 100 */
	int64_t cap_ms;				 /* 5000 */
	uint64_t seed;				 /* jitter PRNG state */
	void (*sleep_ms)(int64_t ms, void *arg); /* NULL: nanosleep */
	void *sleep_arg;
};
void recon_retry_policy_init(struct recon_retry_policy *p, uint64_t seed);
/* Delay before attempt n (n >= 2): first * 2^(n-2), capped, with jitter in [d/2, d]. */
int64_t recon_retry_delay(struct recon_retry_policy *p, int attempt);
/*
 * Calls fn until it returns something other than RECON_ERETRY or the attempts
 * run out; *attempts receives how many were made. A last RECON_ERETRY becomes
 * RECON_EUNAVAIL ("gave up after 5 attempts: ...").
 */
int recon_retry(struct recon_retry_policy *p, int (*fn)(void *arg, struct recon_err *err),
		void *arg, int *attempts, struct recon_err *err);

/* ---- the actions of one run ---- */

enum recon_action_kind {
	RECON_ACT_REPLAY = 0,
	RECON_ACT_TICKET,
	RECON_ACT_REPUSH,
	RECON_ACT_TRANSITION,
	RECON_ACT_ALERT,
	RECON_ACT__COUNT
};
enum recon_action_outcome {
	RECON_OUT_DONE = 0, /* inserted, opened, published, moved */
	RECON_OUT_ALREADY,  /* the idempotent write found it done before */
	RECON_OUT_SKIPPED,  /* not configured (e.g. no writer for a csv local side) */
	RECON_OUT_WOULD,    /* dry run: what would have been done */
	RECON_OUT_FAILED,
	RECON_OUT_REFUSED, /* a replay the upstream order does not justify: a critical ticket */
	RECON_OUT__COUNT
};
const char *recon_action_name(enum recon_action_kind a);
const char *recon_action_outcome_name(enum recon_action_outcome o);

struct recon_action_counts {
	uint64_t n[RECON_ACT__COUNT][RECON_OUT__COUNT];
	uint64_t retries;
};

/* {"replay":{"done":1},"ticket":{...},...,"retries":0}: caller frees with free(). */
char *recon_action_counts_json(const struct recon_action_counts *c);

struct recon_state;
struct recon_record;

/*
 * Acts on the differences of run rec->run_id (rec->diffs[i] rendered as
 * rec->json[i]). Tickets go to the state store always, and to the writer's
 * recon_ticket when the job has a writer (with the run that opened them, as
 * the state store has it); a committed replay resolves its `missing` item;
 * tickets that ended since the merchant's copy last heard are ended there
 * too. Each action is recorded in the state store. Returns 0 when every
 * action succeeded (or was skipped/dry), else the first failure's error
 * (RECON_EUNAVAIL when the writer is down).
 */
RECON_MUSTCHECK int recon_actions_run(const struct recon_job *job, struct recon_state *st,
				      const struct recon_record *rec, bool dry_run,
				      struct recon_action_counts *counts, struct recon_err *err);

/*
 * Carries every ended ticket of the job to the merchant's recon_ticket (a
 * person's close, a run's resolution). No writer: nothing to do.
 */
RECON_MUSTCHECK int recon_actions_sync_tickets(const struct recon_job *job, struct recon_state *st,
					       struct recon_err *err);

#endif
