/*
 * recon_state, the open-items ledger: one open item per (job, mode, key)
 * that opens, stays, is superseded or ends as runs evaluate the key (DESIGN
 * "One open item per key and mode"), and the per-window contributions of
 * keys whose history a later window needs (partial refunds, open items,
 * recently settled keys). A ticket follows its item: ending an item resolves
 * its ticket unless another mode's item keeps it open.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_state.h"
#include "state_int.h"

static int64_t add_sat(int64_t a, int64_t b, bool *overflow)
{
	if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
		*overflow = true;
		return b > 0 ? INT64_MAX : INT64_MIN;
	}
	return a + b;
}

/* ---- the ledger ------------------------------------------------------------- */

static const struct recon_state_sql open_items_sql = {
    "SELECT key, class, opened_at_ms FROM items WHERE job = ? AND mode = ? AND state = 'open'",
    "cannot read the open items", 0};
/* the primary key's order: every key's rows together */
static const struct recon_state_sql ledger_sql = {
    "SELECT key, window_start_ms, paid, refunded, payments, entries, revoked, pending, "
    "conflict, duplicate, currency, first_ms, last_ms, plain, assumed FROM ledger WHERE "
    "job = ? AND mode = ? ORDER BY key, window_start_ms",
    "cannot read the ledger", 0};

/* Sums one ledger row into c (this window's own rows only mark c->mine). */
static void carry_add(struct recon_carry *c, sqlite3_stmt *q, int64_t window_start)
{
	bool over = false;
	const char *cur = (const char *)sqlite3_column_text(q, 10);

	if (sqlite3_column_int64(q, 1) == window_start) {
		c->mine = true;
		return;
	}
	if (sqlite3_column_int(q, 14)) {
		/* an assumed payment: kept aside, it stands only where no real one is known */
		c->assumed = true;
		c->assumed_paid = sqlite3_column_int64(q, 2);
		if (!c->entries) {
			snprintf(c->currency, sizeof(c->currency), "%s", cur ? cur : "");
			c->first = sqlite3_column_int64(q, 11);
			c->last = sqlite3_column_int64(q, 12);
		}
		return;
	}
	/* plain order rows are snapshots: a later window's replaces an earlier one's */
	if (sqlite3_column_int(q, 13) && c->plain) {
		bool mine = c->mine;
		memset(c, 0, sizeof(*c));
		c->mine = mine;
	}
	c->plain = sqlite3_column_int(q, 13) != 0;
	c->window = sqlite3_column_int64(q, 1);
	if (c->entries && cur && strncmp(c->currency, cur, 3))
		c->conflict = true;
	if (!c->entries) {
		snprintf(c->currency, sizeof(c->currency), "%s", cur ? cur : "");
		c->first = sqlite3_column_int64(q, 11);
		c->last = sqlite3_column_int64(q, 12);
	}
	if (sqlite3_column_int64(q, 11) < c->first)
		c->first = sqlite3_column_int64(q, 11);
	if (sqlite3_column_int64(q, 12) > c->last)
		c->last = sqlite3_column_int64(q, 12);
	c->paid = add_sat(c->paid, sqlite3_column_int64(q, 2), &over);
	c->refunded = add_sat(c->refunded, sqlite3_column_int64(q, 3), &over);
	c->payments += (uint32_t)sqlite3_column_int64(q, 4);
	c->entries += (uint32_t)sqlite3_column_int64(q, 5);
	c->revoked = c->revoked || sqlite3_column_int(q, 6);
	c->pending = c->pending || sqlite3_column_int(q, 7);
	c->conflict = c->conflict || sqlite3_column_int(q, 8) || over;
	c->duplicate = c->duplicate || sqlite3_column_int(q, 9);
}

/* The ledger read in progress: the key whose rows are being summed. */
struct load {
	const struct recon_ledger_sink *sink;
	int64_t window_start;
	struct recon_buf key;
	struct recon_carry c;
	bool have;
};

static int load_item(void *arg, sqlite3_stmt *q)
{
	const struct recon_ledger_sink *sink = ((struct load *)arg)->sink;

	sink->item(sink->arg, (const char *)sqlite3_column_text(q, 0),
		   (size_t)sqlite3_column_bytes(q, 0),
		   recon_class_from_name((const char *)sqlite3_column_text(q, 1)),
		   sqlite3_column_int64(q, 2));
	return 0;
}

static int load_row(void *arg, sqlite3_stmt *q)
{
	struct load *l = arg;
	const char *k = (const char *)sqlite3_column_text(q, 0);
	size_t len = (size_t)sqlite3_column_bytes(q, 0);

	if (l->have && (len != l->key.len || memcmp(k, l->key.s, len))) {
		l->sink->carry(l->sink->arg, l->key.s, l->key.len, &l->c);
		l->have = false;
	}
	if (!l->have) {
		recon_buf_reset(&l->key);
		recon_buf_add(&l->key, k, len);
		memset(&l->c, 0, sizeof(l->c));
		l->have = true;
	}
	carry_add(&l->c, q, l->window_start);
	return 0;
}

int recon_state_ledger_load(struct recon_state *st, const char *job, const char *mode,
			    int64_t window_start, const struct recon_ledger_sink *sink,
			    struct recon_err *err)
{
	struct load l = {.sink = sink, .window_start = window_start};
	int rc;

	recon_buf_init(&l.key);
	/* the open items first: their keys then take their carried history too */
	rc = recon_state_each(st, &open_items_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
			      load_item, &l, err);
	if (rc == 0)
		rc =
		    recon_state_each(st, &ledger_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(mode)),
				     load_row, &l, err);
	if (rc == 0 && l.have)
		sink->carry(sink->arg, l.key.s, l.key.len, &l.c);
	recon_buf_release(&l.key);
	return rc;
}

static const struct recon_state_sql ledger_del_sql = {
    "DELETE FROM ledger WHERE job = ?1 AND mode = ?2 AND window_start_ms = ?3",
    "cannot write the ledger", 0};
/* A ledger row's LEDGER_COLS columns (ledger_args()), then what follows. */
#define LEDGER_INTO                                                                                \
	"INSERT INTO ledger (job, mode, key, window_start_ms, window_end_ms, paid, refunded, "     \
	"payments, entries, revoked, pending, conflict, duplicate, currency, first_ms, last_ms, "  \
	"run_id, keep_until_ms, plain"
static const struct recon_state_sql ledger_ins_sql = {
    LEDGER_INTO ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
		"?16, ?17, ?18, ?19)",
    "cannot write the ledger", 0};
/* an assumed payment of an earlier day: that day's own rows, if any, stand */
static const struct recon_state_sql ledger_assume_sql = {
    LEDGER_INTO ", assumed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
		"?15, ?16, ?17, ?18, ?19, 1) ON CONFLICT (job, mode, key, window_start_ms) DO "
		"NOTHING",
    "cannot write the ledger", 0};
#define LEDGER_COLS 19 /* ledger_ins_sql's arguments */
#define LEDGER_ROWS 32 /* rows of ledger_rows_sql */
static const struct recon_state_sql ledger_rows_sql = {
    LEDGER_INTO ") VALUES " STATE_ROWS2(
	STATE_ROWS16("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")),
    "cannot write the ledger", 0};
static const struct recon_state_sql ledger_keep_sql = {
    "UPDATE ledger SET keep_until_ms = ?4 WHERE job = ?1 AND mode = ?2 AND key = ?3",
    "cannot write the ledger", 0};
static const struct recon_state_sql ledger_purge_sql = {
    "DELETE FROM ledger WHERE job = ?1 AND mode = ?2 AND keep_until_ms < ?3",
    "cannot purge the ledger", 0};

/* How long a key's ledger rows stay: open items for good, partial refunds for the retention. */
static int64_t keep_until(const struct recon_record *rec, int klass, bool partial)
{
	bool over = false;

	if (klass != RECON_CLASS_MATCHED)
		return INT64_MAX; /* until its item ends (item_end sets it then) */
	return add_sat(rec->now, partial ? rec->retention_ms : rec->settled_ms, &over);
}

/* ledger_ins_sql's 19 arguments for contribution c, kept until `until`. */
static void ledger_args(const struct recon_record *rec, const struct recon_contrib *c,
			int64_t until, struct recon_state_arg *a)
{
	const struct recon_carry *x = &c->c;
	const struct recon_state_arg v[LEDGER_COLS] = {
	    STATE_TEXT(rec->job),
	    STATE_TEXT(rec->mode),
	    STATE_KEY(c->key, c->key_len),
	    STATE_INT(c->window_start ? c->window_start : rec->window_start),
	    STATE_INT(c->window_start ? c->window_end : rec->window_end),
	    STATE_INT(x->paid),
	    STATE_INT(x->refunded),
	    STATE_INT(x->payments),
	    STATE_INT(x->entries),
	    STATE_INT(x->revoked),
	    STATE_INT(x->pending),
	    STATE_INT(x->conflict),
	    STATE_INT(x->duplicate),
	    STATE_TEXT(x->currency),
	    STATE_INT(x->first),
	    STATE_INT(x->last),
	    STATE_INT(rec->run_id),
	    STATE_INT(until),
	    STATE_INT(x->plain)};

	memcpy(a, v, sizeof(v));
}

/* One key's contribution: this window's row, or an assumed payment of an earlier day. */
static int ledger_put(struct recon_state *st, const struct recon_record *rec,
		      const struct recon_contrib *c, struct recon_err *err)
{
	struct recon_state_arg a[LEDGER_COLS + 1];
	int64_t until = keep_until(rec, c->klass, c->partial);
	int rc;

	ledger_args(rec, c, until, a);
	a[LEDGER_COLS] = (struct recon_state_arg){RECON_STATE_ARG_END, NULL, 0, 0};
	rc = recon_state_run(st, c->window_start ? &ledger_assume_sql : &ledger_ins_sql, a, err);
	if (rc < 0 || !c->carried)
		return rc; /* its only row: nothing else to keep along */
	return recon_state_run(st, &ledger_keep_sql,
			       STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode),
					  STATE_KEY(c->key, c->key_len), STATE_INT(until)),
			       err);
}

/* The contributions waiting to go LEDGER_ROWS to a statement (this window's, not carried). */
struct ledger_batch {
	const struct recon_contrib *c[LEDGER_ROWS];
	size_t n;
	struct recon_state_arg a[LEDGER_COLS * LEDGER_ROWS + 1];
};

/* Writes what b holds, in order: a whole batch as one statement, fewer one by one. */
static int ledger_flush(struct recon_state *st, const struct recon_record *rec,
			struct ledger_batch *b, struct recon_err *err)
{
	int rc;

	for (size_t i = 0; i < b->n; i++)
		ledger_args(rec, b->c[i], keep_until(rec, b->c[i]->klass, b->c[i]->partial),
			    &b->a[LEDGER_COLS * i]);
	rc = recon_state_run_rows(st, &ledger_ins_sql, &ledger_rows_sql, LEDGER_ROWS, LEDGER_COLS,
				  b->a, b->n, err);
	b->n = 0;
	return rc;
}

/* Contributions by key (bytewise), then as given: the ledger's key order, appended. */
static int contrib_cmp(const void *a, const void *b)
{
	const struct recon_contrib *x = *(const struct recon_contrib *const *)a;
	const struct recon_contrib *y = *(const struct recon_contrib *const *)b;
	const size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	const int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	return (x > y) - (x < y);
}

int recon_state_ledger_save(struct recon_state *st, const struct recon_record *rec,
			    const struct recon_contrib *c, size_t n, struct recon_err *err)
{
	const struct recon_contrib **by_key =
	    recon_xmalloc(recon_st_mult(n ? n : 1, sizeof(*by_key)));
	struct ledger_batch *b = recon_xmalloc(sizeof(*b));
	int rc;

	/*
	 * In key order (each key's rows as given), this window's plain rows
	 * LEDGER_ROWS to a statement: the ledger's b-trees are then appended to
	 * rather than written all over (one statement a row took 3-5 us a row at
	 * 90k contributions).
	 */
	for (size_t i = 0; i < n; i++)
		by_key[i] = &c[i];
	if (n > 1)
		qsort(by_key, n, sizeof(*by_key), contrib_cmp);
	b->n = 0;
	if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
		goto out;
	/* a rerun replaces its window's contributions */
	rc = recon_state_run(
	    st, &ledger_del_sql,
	    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode), STATE_INT(rec->window_start)),
	    err);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!by_key[i]->window_start && !by_key[i]->carried) {
			b->c[b->n++] = by_key[i];
			if (b->n == LEDGER_ROWS)
				rc = ledger_flush(st, rec, b, err);
			continue;
		}
		if ((rc = ledger_flush(st, rec, b, err)) == 0)
			rc = ledger_put(st, rec, by_key[i], err);
	}
	if (rc == 0)
		rc = ledger_flush(st, rec, b, err);
	if (rc == 0)
		rc = recon_state_run(
		    st, &ledger_purge_sql,
		    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode), STATE_INT(rec->now)),
		    err);
	rc = recon_state_tx_end(st, rc, err);
out:
	free(b);
	free(by_key);
	return rc;
}

/* ---- items ------------------------------------------------------------------- */

static const struct recon_state_sql item_last_sql = {
    "SELECT id, class, state FROM items WHERE job = ?1 AND mode = ?2 AND key = ?3 ORDER BY id "
    "DESC LIMIT 1",
    "cannot read an item", 0};
static const struct recon_state_sql item_ins_sql = {
    "INSERT INTO items (job, mode, key, class, severity, opened_run, opened_at_ms, last_run, "
    "last_at_ms, due_ms, amount_minor, currency, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?6, "
    "?7, ?8, ?9, ?10, ?11)",
    "cannot record an item", 0};
static const struct recon_state_sql item_seen_sql = {
    "UPDATE items SET last_run = ?2, last_at_ms = ?3, due_ms = coalesce(due_ms, ?4), "
    "amount_minor = ?5, currency = ?6, json = ?7 WHERE id = ?1",
    "cannot record an item", 0};
static const struct recon_state_sql item_end_sql = {
    "UPDATE items SET state = ?2, ended_run = ?3, ended_at_ms = ?4, ended_by = ?5 WHERE id = "
    "?1 AND state = 'open'",
    "cannot end an item", 0};
static const struct recon_state_sql item_keep_sql = {
    "UPDATE ledger SET keep_until_ms = ?4 WHERE job = ?1 AND mode = ?2 AND key = ?3 AND "
    "keep_until_ms > ?4",
    "cannot end an item", 0};
static const struct recon_state_sql ticket_end_sql = {
    "UPDATE tickets SET status = 'resolved', resolved_run = ?4, resolved_at_ms = ?5, "
    "note = ?6, synced = 0 WHERE job = ?1 AND key = ?2 AND class = ?3 AND status = 'open' "
    "AND NOT EXISTS (SELECT 1 FROM items i WHERE i.job = ?1 AND i.mode IN ('t1', 'hot') AND "
    "i.key = ?7 AND i.class = ?3 AND i.state = 'open')",
    "cannot resolve a ticket", 0};
static const struct recon_state_sql items_open_sql = {
    "SELECT id, key, class FROM items WHERE job = ? AND mode = ? AND state = 'open' AND "
    "last_run <> ?",
    "cannot read the open items", 0};
static const struct recon_state_sql run_diff_sql = {
    "INSERT INTO run_differences (run_id, key, class, json) VALUES (?, ?, ?, ?)",
    "cannot record a difference", 0};
/* DIFF_ROWS differences to a statement (its journal in memory: recon_state_memory_setup) */
#define DIFF_ROWS 64
static const struct recon_state_sql run_diffs_sql = {
    "INSERT INTO run_differences (run_id, key, class, json) VALUES " STATE_ROWS4(
	STATE_ROWS16("(?, ?, ?, ?)")),
    "cannot record a difference", 0};
static const struct recon_state_sql item_missing_sql = {
    "SELECT id FROM items WHERE job = ? AND mode = ? AND key = ? AND class = 'missing' AND "
    "state = 'open'",
    "cannot read an item", 0};

const char *recon_state_severity(int klass)
{
	if (klass == RECON_CLASS_AMOUNT_MISMATCH)
		return "critical";
	return klass > RECON_CLASS_MATCHED ? "info" : "normal";
}

/*
 * Ends item `id` (state resolved | superseded | closed, by: matched, replayed,
 * the new class), resolves its ticket (resolved, naming the run, unless
 * another mode's item keeps it open), and lets the key's ledger rows expire
 * after the retention once no item holds them.
 */
static int item_end(struct recon_state *st, const struct recon_record *rec, const char *mode,
		    int64_t id, const char *key, size_t len, const char *klass, const char *state,
		    const char *by, struct recon_err *err)
{
	char why[96], shown[RECON_KEY_PARTS_MAX * 1025 + 8];
	bool over = false;
	int rc;

	rc = recon_state_run(st, &item_end_sql,
			     STATE_ARGS(STATE_INT(id), STATE_TEXT(state), STATE_INT(rec->run_id),
					STATE_INT(rec->now), STATE_TEXT(by)),
			     err);
	if (rc == 0)
		rc = recon_state_run(
		    st, &item_keep_sql,
		    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(mode), STATE_KEY(key, len),
			       STATE_INT(add_sat(rec->now, rec->retention_ms, &over))),
		    err);
	if (rc < 0)
		return rc;
	snprintf(why, sizeof(why), "%s by run %lld (%s)", state, (long long)rec->run_id, by);
	recon_key_display(key, len, shown, sizeof(shown));
	return recon_state_run(st, &ticket_end_sql,
			       STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(shown),
					  STATE_TEXT(klass), STATE_INT(rec->run_id),
					  STATE_INT(rec->now), STATE_TEXT(why),
					  STATE_KEY(key, len)),
			       err);
}

/* Money at stake in a difference (minor units) and its currency. */
static int64_t at_stake(const struct recon_diff *d, const char **cur)
{
	const struct recon_side_view *u = &d->up, *l = &d->local;

	*cur = u->present ? u->currency : l->currency;
	switch (d->klass) {
	case RECON_CLASS_MISSING:
		return u->amount ? u->amount : u->refunded;
	case RECON_CLASS_AMOUNT_MISMATCH:
		if (u->present && l->present && !strcmp(u->currency, l->currency) && !u->conflict) {
			int64_t a = u->amount > l->amount ? u->amount : l->amount;
			int64_t b = u->amount > l->amount ? l->amount : u->amount;
			if (b >= 0 || a <= INT64_MAX + b) {
				int64_t x = a - b;
				if (u->refunded > u->amount)
					x = u->refunded -
					    u->amount; /* refunded beyond the payment */
				return x;
			}
		}
		return l->present ? l->amount : u->amount;
	case RECON_CLASS_STUCK:
		return u->amount;
	default:
		if (l->present) {
			*cur = l->currency;
			return l->amount;
		}
		return u->amount;
	}
}

/* The key's latest item: *id 0 when it has none. */
static int item_last(struct recon_state *st, const struct recon_record *rec,
		     const struct recon_diff *d, int64_t *id, char *klass, char *state, size_t size,
		     struct recon_err *err)
{
	sqlite3_stmt *q = recon_state_stmt(
	    st, &item_last_sql,
	    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode), STATE_KEY(d->key, d->key_len)),
	    err);
	int rc;

	*id = 0;
	if (!q)
		return err->code;
	rc = recon_state_step(st, &item_last_sql, q, err);
	if (rc == RECON_ROW) {
		*id = sqlite3_column_int64(q, 0);
		snprintf(klass, size, "%s", (const char *)sqlite3_column_text(q, 1));
		snprintf(state, size, "%s", (const char *)sqlite3_column_text(q, 2));
	}
	recon_state_done(q);
	return rc < 0 ? rc : 0;
}

/* Records the evaluation of one key that is not matched: its item opens, stays or is superseded. */
static int item_upsert(struct recon_state *st, const struct recon_record *rec,
		       const struct recon_diff *d, const char *json, struct recon_item_counts *ic,
		       struct recon_err *err)
{
	const char *klass = recon_class_name(d->klass), *cur = NULL;
	int64_t stake = at_stake(d, &cur), id;
	char old_class[32], old_state[32];
	int rc;

	if ((rc = item_last(st, rec, d, &id, old_class, old_state, sizeof(old_class), err)) < 0)
		return rc;
	/*
	 * The same class as the open item (or as the item a person closed: the
	 * person's word stands while nothing changes): a new evaluation of it.
	 */
	if (id && !strcmp(old_class, klass) &&
	    (!strcmp(old_state, "open") || !strcmp(old_state, "closed")))
		return recon_state_run(
		    st, &item_seen_sql,
		    STATE_ARGS(STATE_INT(id), STATE_INT(rec->run_id), STATE_INT(rec->now),
			       d->due ? STATE_INT(d->due) : STATE_NULL, STATE_INT(stake),
			       STATE_TEXT(cur), STATE_TEXT(json)),
		    err);
	if (id && !strcmp(old_state, "open")) {
		if ((rc = item_end(st, rec, rec->mode, id, d->key, d->key_len, old_class,
				   "superseded", klass, err)) < 0)
			return rc;
		if (recon_class_from_name(old_class) < RECON_CLASS__COUNT)
			ic->superseded++;
	}
	rc = recon_state_run(st, &item_ins_sql,
			     STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode),
					STATE_KEY(d->key, d->key_len), STATE_TEXT(klass),
					STATE_TEXT(recon_state_severity(d->klass)),
					STATE_INT(rec->run_id), STATE_INT(rec->now),
					d->due ? STATE_INT(d->due) : STATE_NULL, STATE_INT(stake),
					STATE_TEXT(cur), STATE_TEXT(json)),
			     err);
	if (rc == 0 && d->klass < RECON_CLASS__COUNT)
		ic->opened++;
	return rc;
}

/* The open items found matched, collected before they end (the read is over by then). */
struct ending {
	const struct recon_record *rec;
	struct {
		int64_t id;
		char *key, *klass;
		size_t len;
	} * v;
	size_t n, alloc;
};

static int ending_add(void *arg, sqlite3_stmt *q)
{
	struct ending *e = arg;
	const char *key = (const char *)sqlite3_column_text(q, 1);
	size_t len = (size_t)sqlite3_column_bytes(q, 1);

	if (recon_compare_key_class(e->rec->cmp, key, len) != RECON_CLASS_MATCHED)
		return 0; /* not evaluated (a row was rejected), or another mode's class */
	recon_grow((void **)&e->v, &e->alloc, e->n + 1, sizeof(*e->v));
	e->v[e->n].id = sqlite3_column_int64(q, 0);
	e->v[e->n].key = recon_xstrndup(key, len);
	e->v[e->n].len = len;
	e->v[e->n].klass = recon_xstrdup((const char *)sqlite3_column_text(q, 2));
	e->n++;
	return 0;
}

/*
 * Open items of `mode` the run evaluated and found matched are resolved (a
 * t1 run also resolves the hot items of keys it found matched).
 */
static int items_resolve(struct recon_state *st, const struct recon_record *rec, const char *mode,
			 struct recon_item_counts *ic, struct recon_err *err)
{
	struct ending e = {.rec = rec};
	int rc = recon_state_each(
	    st, &items_open_sql,
	    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(mode), STATE_INT(rec->run_id)), ending_add,
	    &e, err);

	for (size_t i = 0; i < e.n; i++) {
		if (rc == 0)
			rc = item_end(st, rec, mode, e.v[i].id, e.v[i].key, e.v[i].len,
				      e.v[i].klass, "resolved", "matched", err);
		if (rc == 0) {
			if (recon_class_from_name(e.v[i].klass) < RECON_CLASS__COUNT)
				ic->resolved++;
			else
				ic->settled++;
		}
		free(e.v[i].key);
		free(e.v[i].klass);
	}
	free(e.v);
	return rc;
}

int recon_state_record_diffs(struct recon_state *st, const struct recon_record *rec,
			     struct recon_item_counts *ic, struct recon_err *err)
{
	int rc;

	memset(ic, 0, sizeof(*ic));
	if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	for (size_t i = 0; i < rec->n && rc == 0;) {
		struct recon_state_arg args[4 * DIFF_ROWS + 1];
		const size_t k = rec->n - i < DIFF_ROWS ? rec->n - i : DIFF_ROWS;
		for (size_t j = 0; j < k; j++, i++) {
			const struct recon_diff *d = &rec->diffs[i];
			/* lines still rendered are waited for (or rendered) inside the
			   transaction: the write lock is held that much longer (0.35 s
			   instead of 0.33 at 10M) */
			if (rec->ready)
				rec->ready(rec->ready_arg, i);
			args[4 * j] = STATE_INT(rec->run_id);
			args[4 * j + 1] = STATE_KEY(d->key, d->key_len);
			args[4 * j + 2] = STATE_TEXT(recon_class_name(d->klass));
			args[4 * j + 3] = STATE_TEXT(rec->json[i]);
		}
		rc = recon_state_run_rows(st, &run_diff_sql, &run_diffs_sql, DIFF_ROWS, 4, args, k,
					  err);
	}
	if (!rec->ledger)
		return recon_state_tx_end(st, rc,
					  err); /* a dry run writes nothing a later run reads */
	for (size_t i = 0; i < rec->n && rc == 0; i++)
		rc = item_upsert(st, rec, &rec->diffs[i], rec->json[i], ic, err);
	for (size_t i = 0; i < rec->npending && rc == 0; i++)
		rc = item_upsert(st, rec, &rec->pending[i], rec->pjson[i], ic, err);
	if (rc == 0)
		rc = items_resolve(st, rec, rec->mode, ic, err);
	if (rc == 0 && !strcmp(rec->mode, "t1"))
		rc = items_resolve(st, rec, "hot", ic, err);
	return recon_state_tx_end(st, rc, err);
}

int recon_state_item_replayed(struct recon_state *st, const struct recon_record *rec,
			      const char *key, size_t len, struct recon_err *err)
{
	int64_t id = 0;
	int rc = recon_state_int(
	    st, &item_missing_sql,
	    STATE_ARGS(STATE_TEXT(rec->job), STATE_TEXT(rec->mode), STATE_KEY(key, len)), &id, err);

	if (rc == RECON_ENOTFOUND)
		return 0;
	if (rc < 0 || !id)
		return rc;
	return item_end(st, rec, rec->mode, id, key, len, "missing", "resolved", "replayed", err);
}
