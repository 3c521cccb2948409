/*
 * Action dispatch: one difference -> its actions (DESIGN classification
 * table), each idempotent, retried on transient failures, recorded in the
 * state store, and gated by --dry-run.
 */
#include "recon_action.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_normalize.h"
#include "recon_state.h"
#include "recon_time.h"

static const char *const action_names[] = {"replay", "ticket", "repush", "transition", "alert"};
static const char *const outcome_names[] = {"done",  "already", "skipped",
					    "would", "failed",	"refused"};

const char *recon_action_name(enum recon_action_kind a)
{
	return (unsigned)a < RECON_ACT__COUNT ? action_names[a] : "?";
}

const char *recon_action_outcome_name(enum recon_action_outcome o)
{
	return (unsigned)o < RECON_OUT__COUNT ? outcome_names[o] : "?";
}

const char *recon_action_replay_refusal(const struct recon_diff *d)
{
	if (d->up.conflict)
		return "its entries are in mixed currencies or their sums overflow";
	if (d->up.amount <= 0)
		return "its amount is zero or less";
	if (d->up.refunded < 0)
		return "its refunds sum to less than zero";
	if (d->up.refunded > d->up.amount)
		return "it refunds more than was paid";
	return NULL;
}

/* ---- retries ----------------------------------------------------------------- */

void recon_retry_policy_init(struct recon_retry_policy *p, uint64_t seed)
{
	memset(p, 0, sizeof(*p));
	p->max_attempts = 5;
	p->first_ms = 100;
	p->cap_ms = 5000;
	p->seed = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

/* xorshift64*: jitter only, not security */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

int64_t recon_retry_delay(struct recon_retry_policy *p, int attempt)
{
	int64_t d = p->first_ms;

	for (int i = 2; i < attempt && d < p->cap_ms; i++)
		d *= 2;
	if (d > p->cap_ms)
		d = p->cap_ms;
	/* full range [d/2, d]: spreads retries of concurrent runs apart */
	return d / 2 + (int64_t)(next_random(&p->seed) % (uint64_t)(d / 2 + 1));
}

static void default_sleep(int64_t ms, void *arg)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	(void)arg;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int recon_retry(struct recon_retry_policy *p, int (*fn)(void *arg, struct recon_err *err),
		void *arg, int *attempts, struct recon_err *err)
{
	struct recon_err e;
	int rc = 0;

	for (int n = 1; n <= p->max_attempts; n++) {
		*attempts = n;
		if (n > 1) {
			int64_t ms = recon_retry_delay(p, n);
			if (p->sleep_ms)
				p->sleep_ms(ms, p->sleep_arg);
			else
				default_sleep(ms, NULL);
		}
		recon_err_init(&e);
		rc = fn(arg, &e);
		if (rc != RECON_ERETRY) {
			if (rc < 0)
				*err = e;
			return rc;
		}
		if (n < p->max_attempts)
			recon_log(RECON_LOG_WARN, "attempt %d of %d failed, retrying: %s", n,
				  p->max_attempts, e.msg);
	}
	recon_err_set(err, RECON_EUNAVAIL, e.where, "gave up after %d attempts: %s",
		      p->max_attempts, e.msg);
	return RECON_EUNAVAIL;
}

/* ---- one run's actions ---------------------------------------------------- */

/*
 * A state store transaction of tickets and action records ends once it has
 * been open STATE_BATCH_MS (looked at every STATE_BATCH_LOOK rows).
 */
#define STATE_BATCH_MS	 50
#define STATE_BATCH_LOOK 64

struct actx {
	const struct recon_job *job;
	struct recon_state *st;
	const struct recon_record *rec;
	int64_t run_id, now;
	bool dry_run;
	const struct recon_writer_backend *backend; /* NULL: nothing to write to */
	struct recon_writer *w;			    /* opened on first use */
	bool writer_tried;
	int writer_rc;
	struct recon_err writer_err;
	struct recon_retry_policy retry;
	struct recon_action_counts *counts;
	struct recon_err first; /* the first failure */
	int64_t unavailable;	/* consecutive actions failed on an unavailable writer */
	struct recon_err last;	/* the latest of those failures */
	bool in_batch;		/* a state store transaction is open */
	size_t batched;		/* rows written in it */
	int64_t batch_ms;	/* when it began (monotonic) */
	/* action records of the open transaction not written yet (their strings in
	   pend_strs): written RECON_STATE_ACTION_ROWS at a time, and before it ends */
	struct recon_state_action_row pend[RECON_STATE_ACTION_ROWS];
	size_t npend;
	struct recon_arena pend_strs;
	/* a replay refused for a reason every other replay shares (a grant, a column the
	   job cannot fill): named once, the later ones are not tried */
	struct recon_err replay_broken;
	uint64_t replays_not_tried;
	bool denied; /* the writer lacks a grant: the other writes are skipped */
};

/* Writes the action records held back (in the open transaction). */
static void pend_flush(struct actx *a)
{
	struct recon_err e;

	if (!a->npend)
		return;
	recon_err_init(&e);
	if (recon_state_actions(a->st, a->run_id, a->pend, a->npend, &e) < 0 && !a->first.code)
		a->first = e;
	a->npend = 0;
	recon_arena_reset(&a->pend_strs);
}

/*
 * The state store's tickets and action records are grouped into short
 * transactions (STATE_BATCH_MS of work at most), and a transaction is ended
 * before every call to the writer database: the store's write lock is never
 * held across a remote call, so another job sharing the store waits for one
 * short local commit at most (the record phase before holds it longer),
 * never for a slow or failing writer; readers do not wait at all (WAL). A
 * crash loses at most the rows of one open transaction; the next run writes
 * them again (tickets are unique, so no duplicate appears). The bound is a
 * time, not a count of rows: every commit writes each 64 KiB page it
 * touched, and 512 rows a commit wrote 267 MB to the WAL for a 10M run's
 * 70,000 tickets and 140,000 action records, in 410 commits (actions 0.48
 * s). A run that calls no writer (a dry run, actions off) has no remote call
 * to end a transaction before: its records go in one, as the differences do.
 */
static void state_flush(struct actx *a)
{
	struct recon_err e;

	if (!a->in_batch)
		return;
	pend_flush(a);
	a->in_batch = false;
	recon_err_init(&e);
	if (recon_state_batch_end(a->st, &e) < 0 && !a->first.code)
		a->first = e;
}

/* True when the next writer action may call the writer database. */
static bool remote(const struct actx *a)
{
	return a->backend && (!a->writer_tried || a->writer_rc == 0);
}

/* Before a state store write: joins the open transaction, or opens one. */
static void state_write(struct actx *a)
{
	struct recon_err e;

	if (a->in_batch && !a->dry_run && a->batched % STATE_BATCH_LOOK == 0 &&
	    recon_monotonic_ms() - a->batch_ms >= STATE_BATCH_MS)
		state_flush(a);
	if (a->in_batch) {
		a->batched++;
		return;
	}
	recon_err_init(&e);
	if (recon_state_batch_begin(a->st, &e) < 0) {
		if (!a->first.code)
			a->first = e;
		return; /* the write goes through on its own (autocommit) */
	}
	a->in_batch = true;
	a->batched = 1;
	a->batch_ms = recon_monotonic_ms();
}

/* What one attempt of a writer action needs. */
struct attempt {
	struct actx *a;
	const struct recon_diff *d;
	const char *key, *klass, *severity, *json;
	enum recon_action_kind kind;
	int64_t affected;
	int64_t opened_run; /* tickets: the run that opened it, as the state store says */
};

static int attempt_once(void *arg, struct recon_err *err)
{
	struct attempt *t = arg;
	struct recon_writer *w = t->a->w;

	t->affected = 0;
	switch (t->kind) {
	case RECON_ACT_REPLAY:
		return recon_action_replay(w, t->a->job, t->d, &t->affected, err);
	case RECON_ACT_TICKET:
		return recon_action_writer_ticket(w, t->a->job, t->key, t->klass, t->severity,
						  t->opened_run, t->json, &t->affected, err);
	case RECON_ACT_REPUSH:
		return recon_action_outbox(w, t->a->job, t->key, t->json, &t->affected, err);
	case RECON_ACT_TRANSITION:
		return recon_action_transition(w, t->a->job, t->d, &t->affected, err);
	default:
		return 0;
	}
}

static int writer(struct actx *a, struct recon_err *err)
{
	if (a->writer_tried) {
		if (a->writer_rc < 0)
			*err = a->writer_err;
		return a->writer_rc;
	}
	a->writer_tried = true;
	if (!a->backend) {
		a->writer_rc = RECON_ENOTFOUND; /* nothing to write to: actions skipped */
		return a->writer_rc;
	}
	recon_err_init(&a->writer_err);
	a->writer_rc = recon_writer_open(&a->w, a->backend, a->job, &a->writer_err);
	if (a->writer_rc < 0) {
		*err = a->writer_err;
	} else {
		a->w->now = a->now;
		a->w->run_id = a->run_id;
	}
	return a->writer_rc;
}

static void note(struct actx *a, const char *key, const char *klass, enum recon_action_kind k,
		 enum recon_action_outcome o, int attempts, const struct recon_err *e)
{
	struct recon_err serr;
	char buf[512];
	const char *es;

	a->counts->n[k][o]++;
	if (attempts > 1)
		a->counts->retries += (uint64_t)(attempts - 1);
	recon_err_init(&serr);
	state_write(a);
	es = e && e->code ? recon_err_str(e, buf, sizeof(buf)) : NULL;
	if (a->in_batch) {
		/* held back with copies of its strings (the key is the caller's buffer) */
		struct recon_state_action_row *r = &a->pend[a->npend++];
		r->key = recon_arena_strndup(&a->pend_strs, key, strlen(key));
		r->klass = klass;
		r->action = recon_action_name(k);
		r->outcome = recon_action_outcome_name(o);
		r->attempts = attempts;
		r->error = es ? recon_arena_strndup(&a->pend_strs, es, strlen(es)) : NULL;
		if (a->npend == RECON_STATE_ACTION_ROWS)
			pend_flush(a);
	} else if (recon_state_action(a->st, a->run_id, key, klass, recon_action_name(k),
				      recon_action_outcome_name(o), attempts, es, &serr) < 0 &&
		   !a->first.code) {
		a->first = serr;
	}
	if (o == RECON_OUT_FAILED && e && !a->first.code)
		a->first = *e;
	/* the circuit breaker counts writer outages in a row; any success resets it */
	if (o == RECON_OUT_FAILED && e && e->code == RECON_EUNAVAIL) {
		a->unavailable++;
		a->last = *e;
	} else if (o == RECON_OUT_DONE || o == RECON_OUT_ALREADY) {
		a->unavailable = 0;
	}
}

/*
 * A replay failure that every replay of the run will meet: the message says
 * what to change, and the action is remembered so the others are not tried.
 */
static void replay_broken(struct actx *a, struct recon_err *e)
{
	const struct recon_job *job = a->job;
	struct recon_err h;

	recon_err_init(&h);
	if (e->code == RECON_EPERM)
		recon_err_set(
		    &h, RECON_EPERM, e->where,
		    "replay: the writer lacks a grant: %s (grant INSERT on '%s' and "
		    "'idempotency_record', or 'recon_outbox' with \"replay\": \"outbox\")",
		    e->msg,
		    job->actions.replay == RECON_REPLAY_OUTBOX ? "recon_outbox" : job->local.table);
	else if (job->actions.replay == RECON_REPLAY_OUTBOX)
		recon_err_set(&h, RECON_ECONFIG, e->where,
			      "replay: 'recon_outbox' cannot take the event: %s (apply "
			      "sql/<engine>/merchant.sql)",
			      e->msg);
	else
		recon_err_set(&h, RECON_ECONFIG, e->where,
			      "replay: table '%s' cannot be filled: %s (give the column a value in "
			      "actions.replay_values, or set actions.replay to \"outbox\")",
			      job->local.table, e->msg);
	*e = h;
	a->replay_broken = h;
}

/*
 * The writer lacks a grant: every later writer action of the run is skipped,
 * and the run fails with exit 77 and this one message (not one line per key).
 */
static void denied(struct actx *a, struct recon_err *e)
{
	size_t n = strlen(e->msg);

	a->denied = true;
	snprintf(e->msg + n, sizeof(e->msg) - n, "%s",
		 " (a grant is missing: the run's other writes were skipped; recon validate "
		 "lists the grants)");
}

/* A writer action: skipped without a writer, "would" on a dry run, else retried. */
static void writer_action(struct actx *a, struct attempt *t)
{
	struct recon_err e;
	int attempts = 0, rc;

	recon_err_init(&e);
	if (a->dry_run) {
		note(a, t->key, t->klass, t->kind, RECON_OUT_WOULD, 0, NULL);
		return;
	}
	if (a->denied) {
		note(a, t->key, t->klass, t->kind, RECON_OUT_SKIPPED, 0, NULL);
		return;
	}
	if (t->kind == RECON_ACT_REPLAY && a->replay_broken.code) {
		a->replays_not_tried++;
		note(a, t->key, t->klass, t->kind, RECON_OUT_FAILED, 0, &a->replay_broken);
		return;
	}
	if (remote(a))
		state_flush(a); /* no state transaction across a remote call */
	rc = writer(a, &e);
	if (rc == RECON_ENOTFOUND) {
		note(a, t->key, t->klass, t->kind, RECON_OUT_SKIPPED, 0, NULL);
		return;
	}
	if (rc < 0) {
		note(a, t->key, t->klass, t->kind, RECON_OUT_FAILED, 1, &e);
		return;
	}
	rc = recon_retry(&a->retry, attempt_once, t, &attempts, &e);
	if (rc == RECON_EPERM) {
		denied(a, &e);
		note(a, t->key, t->klass, t->kind, RECON_OUT_FAILED, attempts, &e);
		return;
	}
	if (rc < 0) {
		char buf[512];
		if (t->kind == RECON_ACT_REPLAY && (rc == RECON_EPERM || rc == RECON_ECONFIG))
			replay_broken(a, &e); /* named once, by the run's error */
		else
			recon_log(RECON_LOG_ERROR, "%s of '%s' failed: %s",
				  recon_action_name(t->kind), t->key,
				  recon_err_str(&e, buf, sizeof(buf)));
		note(a, t->key, t->klass, t->kind, RECON_OUT_FAILED, attempts, &e);
		return;
	}
	note(a, t->key, t->klass, t->kind, t->affected > 0 ? RECON_OUT_DONE : RECON_OUT_ALREADY,
	     attempts, NULL);
	/* the order is in the local flow now: its missing item is closed */
	if (t->kind == RECON_ACT_REPLAY && a->rec->ledger)
		state_write(a);
	if (t->kind == RECON_ACT_REPLAY && a->rec->ledger &&
	    recon_state_item_replayed(a->st, a->rec, t->d->key, t->d->key_len, &e) < 0 &&
	    !a->first.code)
		a->first = e;
}

static void ticket(struct actx *a, const struct recon_diff *d, const char *key, const char *klass,
		   const char *severity, const char *json)
{
	struct attempt t = {a, d, key, klass, severity, json, RECON_ACT_TICKET, 0, 0};
	struct recon_err e;
	bool opened = false;
	int attempts = 0, rc;

	if (a->dry_run) {
		note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_WOULD, 0, NULL);
		return;
	}
	recon_err_init(&e);
	state_write(a);
	if (recon_state_ticket(a->st, a->job->name, key, klass, severity, a->run_id, a->now, json,
			       &opened, &t.opened_run, &e) < 0) {
		note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_FAILED, 1, &e);
		return;
	}
	if (!t.opened_run) {
		/* a person closed it: their word stands while the difference is the same */
		note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_SKIPPED, 0, NULL);
		return;
	}
	/* and in the merchant's recon_ticket table when there is a writer database */
	if (a->denied) {
		note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_SKIPPED, 0, NULL);
		return;
	}
	if (remote(a))
		state_flush(a); /* no state transaction across a remote call */
	rc = writer(a, &e);
	if (rc == 0) {
		rc = recon_retry(&a->retry, attempt_once, &t, &attempts, &e);
		if (rc == RECON_EPERM)
			denied(a, &e);
		if (rc < 0) {
			note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_FAILED, attempts, &e);
			return;
		}
		opened = opened || t.affected > 0;
	} else if (rc != RECON_ENOTFOUND) {
		note(a, key, klass, RECON_ACT_TICKET, RECON_OUT_FAILED, 1, &e);
		return;
	}
	note(a, key, klass, RECON_ACT_TICKET, opened ? RECON_OUT_DONE : RECON_OUT_ALREADY,
	     attempts ? attempts : 1, NULL);
}

/* The ALERT line names the figures behind it (DESIGN: a deliberate alert is not an error). */
static void alert(struct actx *a, const struct recon_diff *d, const char *key)
{
	char ua[40], la[40], ra[40], why[200];
	int ue = recon_money_exponent(d->up.currency), le = recon_money_exponent(d->local.currency);

	recon_money_format(d->up.amount, ue < 0 ? 0 : ue, ua, sizeof(ua));
	recon_money_format(d->local.amount, le < 0 ? 0 : le, la, sizeof(la));
	recon_money_format(d->up.refunded, ue < 0 ? 0 : ue, ra, sizeof(ra));
	if (d->up.conflict)
		snprintf(why, sizeof(why),
			 "upstream entries in more than one currency (or beyond int64): last seen "
			 "%s, local %s %s",
			 d->up.currency, la, d->local.currency);
	else if (strcmp(d->up.currency, d->local.currency))
		snprintf(why, sizeof(why), "upstream %s %s, local %s %s: another currency", ua,
			 d->up.currency, la, d->local.currency);
	else if (d->up.refunded > (d->up.assumed ? d->local.amount : d->up.amount))
		snprintf(why, sizeof(why), "refunds of %s %s on an order of %s %s", ra,
			 d->up.currency, d->up.assumed ? la : ua, d->up.currency);
	else
		snprintf(why, sizeof(why), "upstream %s %s, local %s %s", ua, d->up.currency, la,
			 d->local.currency);
	if (!a->dry_run)
		recon_log_alert("amount_mismatch job '%s' key '%s': %s", a->job->name, key, why);
	note(a, key, "amount_mismatch", RECON_ACT_ALERT,
	     a->dry_run ? RECON_OUT_WOULD : RECON_OUT_DONE, a->dry_run ? 0 : 1, NULL);
}

/* Ends one ticket in the merchant's copy (tickets_unsynced callback). */
static int sync_one(void *arg, const struct recon_ticket_end *t)
{
	struct actx *a = arg;
	struct recon_err e;
	int64_t affected = 0;
	int rc;

	recon_err_init(&e);
	rc = recon_action_ticket_end(a->w, a->job, t->key, t->klass, t->status, t->run_id, t->note,
				     &affected, &e);
	if (rc == 0)
		rc = recon_state_ticket_synced(a->st, a->job->name, t->key, t->klass, &e);
	if (rc < 0 && !a->first.code)
		a->first = e;
	return rc < 0 ? rc : 0;
}

/* The merchant's copy hears of every ticket that ended (a run's resolution, a person's close). */
static void sync_tickets(struct actx *a)
{
	struct recon_err e;
	int rc;

	recon_err_init(&e);
	rc = writer(a, &e);
	if (rc == RECON_ENOTFOUND)
		return;
	if (rc < 0 || recon_state_tickets_unsynced(a->st, a->job->name, sync_one, a, &e) < 0) {
		if (!a->first.code)
			a->first = e;
	}
}

/* The writer of the job, found by its local side's backend: the one place that looks it up. */
static void actx_init(struct actx *a, const struct recon_job *job, struct recon_state *st)
{
	memset(a, 0, sizeof(*a));
	a->job = job;
	a->st = st;
	a->backend = recon_writer_find(job->local.backend->name);
	recon_arena_init(&a->pend_strs);
}

/* Closes the writer; the first failure, if any, into err. */
static int actx_release(struct actx *a, struct recon_err *err)
{
	state_flush(a); /* nothing is left held back (every path flushed already) */
	recon_arena_release(&a->pend_strs);
	recon_writer_close(a->w);
	a->w = NULL;
	if (!a->first.code)
		return 0;
	*err = a->first;
	return a->first.code;
}

int recon_actions_sync_tickets(const struct recon_job *job, struct recon_state *st,
			       struct recon_err *err)
{
	struct actx a;

	actx_init(&a, job, st);
	sync_tickets(&a);
	return actx_release(&a, err);
}

/*
 * A replay the upstream order does not justify: never inserted; a critical
 * ticket and an ALERT line instead, and the replay recorded as refused with
 * the reason.
 */
static void refuse(struct actx *a, const struct recon_diff *d, const char *key, const char *klass,
		   const char *json)
{
	const char *why = recon_action_replay_refusal(d);
	char amount[40], refunded[40];
	int e = recon_money_exponent(d->up.currency);
	struct recon_err r;

	recon_money_format(d->up.amount, e < 0 ? 0 : e, amount, sizeof(amount));
	recon_money_format(d->up.refunded, e < 0 ? 0 : e, refunded, sizeof(refunded));
	recon_err_init(&r);
	recon_err_set(&r, RECON_EINPUT, NULL,
		      "replay refused: %s (upstream %s %s paid, %s refunded, %u entries)", why,
		      amount, d->up.currency, refunded, (unsigned)d->up.rows);
	if (!a->dry_run)
		recon_log_alert("missing job '%s' key '%s': %s", a->job->name, key, r.msg);
	ticket(a, d, key, klass, "critical", json);
	note(a, key, klass, RECON_ACT_REPLAY, RECON_OUT_REFUSED, 0, &r);
}

char *recon_action_counts_json(const struct recon_action_counts *c)
{
	json_t *o = json_object();
	char *s;

	for (int k = 0; k < RECON_ACT__COUNT; k++) {
		json_t *x = json_object();
		for (int u = 0; u < RECON_OUT__COUNT; u++)
			if (c->n[k][u])
				json_object_set_new(x, outcome_names[u],
						    json_integer((json_int_t)c->n[k][u]));
		json_object_set_new(o, action_names[k], x);
	}
	json_object_set_new(o, "retries", json_integer((json_int_t)c->retries));
	s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	return s ? s : recon_xstrdup("{}");
}

/*
 * The circuit breaker, before difference i: after `breaker` actions in a row
 * failed on an unavailable writer (each after its retries), the rest would
 * only fail the same way, seconds each. Stop; the run fails with exit 69,
 * moves no watermark, and the next run acts on them all again
 * (idempotently).
 */
static bool breaker_tripped(struct actx *a, size_t i)
{
	const size_t n = a->rec->n;
	char buf[512];

	if (a->job->actions.breaker <= 0 || a->unavailable < a->job->actions.breaker)
		return false;
	recon_err_init(&a->first);
	recon_err_set(&a->first, RECON_EUNAVAIL, NULL,
		      "actions stopped after %lld in a row failed on an unavailable writer; %zu "
		      "of %zu differences left for the next run (last: %s)",
		      (long long)a->unavailable, n - i, n,
		      recon_err_str(&a->last, buf, sizeof(buf)));
	return true;
}

/* stuck: the outbox re-push, then the guarded transition when the job has one. */
static void stuck(struct actx *a, struct attempt *t)
{
	const char *to = a->job->actions.transition_to;

	t->kind = RECON_ACT_REPUSH;
	writer_action(a, t);
	if (!to)
		return;
	/* only toward the status upstream reports: never mark a revoked or refunded order as paid
	 */
	t->kind = RECON_ACT_TRANSITION;
	if (recon_map_get(&a->job->local.status_map, to, strlen(to)) == (int)t->d->up.status)
		writer_action(a, t);
	else
		note(a, t->key, t->klass, RECON_ACT_TRANSITION, RECON_OUT_SKIPPED, 0, NULL);
}

/* The actions of one difference (the DESIGN classification table). */
static void act(struct actx *a, const struct recon_diff *d, const char *json)
{
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];
	const char *klass = recon_class_name(d->klass);
	struct attempt t = {a, d, key, klass, NULL, json, RECON_ACT_REPLAY, 0, 0};

	recon_key_display(d->key, d->key_len, key, sizeof(key));
	switch (d->klass) {
	case RECON_CLASS_MISSING:
		if (!d->up.conflict && d->up.amount == 0 && d->up.refunded > 0)
			/* refund-only: its payment was in an earlier statement, so the order
			   amount is unknown; a person has to look */
			ticket(a, d, key, klass, "normal", json);
		else if (recon_action_replay_refusal(d))
			refuse(a, d, key, klass, json);
		else
			writer_action(a, &t);
		break;
	case RECON_CLASS_STUCK:
		stuck(a, &t);
		break;
	case RECON_CLASS_AMOUNT_MISMATCH:
		ticket(a, d, key, klass, "critical", json);
		alert(a, d, key);
		break;
	default: /* extra, status_mismatch, duplicate */
		ticket(a, d, key, klass, "normal", json);
		break;
	}
}

/* After the last difference: tickets synced, the counts recorded with the run. */
static void finish(struct actx *a)
{
	struct recon_err e;
	char *cj;

	state_flush(a);
	if (!a->dry_run)
		sync_tickets(a);
	if (a->replays_not_tried)
		recon_log(RECON_LOG_ERROR,
			  "%llu more replay(s) not tried: each would fail as the first did",
			  (unsigned long long)a->replays_not_tried);
	cj = recon_action_counts_json(a->counts);
	recon_err_init(&e);
	if (recon_state_run_actions(a->st, a->run_id, cj, a->counts->retries, &e) < 0 &&
	    !a->first.code)
		a->first = e;
	free(cj);
}

int recon_actions_run(const struct recon_job *job, struct recon_state *st,
		      const struct recon_record *rec, bool dry_run,
		      struct recon_action_counts *counts, struct recon_err *err)
{
	struct actx a;

	memset(counts, 0, sizeof(*counts));
	actx_init(&a, job, st);
	a.rec = rec;
	a.run_id = rec->run_id;
	a.now = rec->now;
	a.dry_run = dry_run || !job->actions.enabled;
	a.counts = counts;
	recon_retry_policy_init(&a.retry, (uint64_t)rec->now ^ ((uint64_t)rec->run_id << 32));
	a.retry.max_attempts = (int)job->actions.attempts;
	for (size_t i = 0; i < rec->n && !breaker_tripped(&a, i); i++)
		act(&a, &rec->diffs[i], rec->json[i]);
	finish(&a);
	return actx_release(&a, err);
}
