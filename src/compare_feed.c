/*
 * compare_feed: feeding both sides of a compare on two threads at once
 * (recon_compare_feeder_*, declared in recon_compare.h).
 *
 * Feeder s owns partition s. A row of the other partition goes, in a batch,
 * to the other feeder, which applies it. Every key's rows of one side reach
 * its partition in that side's read order, and the two sides touch disjoint
 * fields, so the result does not depend on how the threads interleave: it
 * equals adding the upstream rows, then the local ones, with
 * recon_compare_add(). Upstream entry ids are checked (or fingerprinted when
 * speculating) in read order before their rows are routed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"

#define INBOX_MAX  8
#define POLL_EVERY 4096 /* rows fed between looks at the inbox */
#define AHEAD	   64	/* rows ahead whose table slot is prefetched; half that: the record */

#define OP_ADD	  0
#define OP_DUP	  1
#define OP_NOID	  2
#define OP_REJECT 3

/* One row in a batch; the key bytes follow (then, before the id check, the packed id). */
struct wire {
	uint64_t h;
	int64_t amount;
	int64_t time;
	uint64_t line;
	uint32_t key_len;
	uint16_t id_len; /* packed id bytes after the key (0: none) */
	uint8_t status, entry, flags, op;
	char currency[4];
};

#define WIRE_SIZE(klen, idlen) (sizeof(struct wire) + (((size_t)(klen) + (idlen) + 7) & ~(size_t)7))

struct recon_compare_feeder {
	struct recon_compare *cmp;
	int side;	   /* also the partition it owns */
	struct batch *pre; /* upstream rows waiting for their id check */
	struct batch *self;
	struct batch *out;
	size_t *offs; /* row offsets of the batch being applied */
	size_t aoffs;
	size_t *pre_offs; /* ...of the batch whose ids are being checked */
	size_t apre_offs;
	unsigned since_poll;
};

static struct batch *batch_get(struct recon_compare *cmp)
{
	struct batch *b;

	pthread_mutex_lock(&cmp->mu);
	b = cmp->free_batches;
	if (b)
		cmp->free_batches = b->next;
	pthread_mutex_unlock(&cmp->mu);
	if (!b)
		b = recon_xmalloc(sizeof(*b));
	b->next = NULL;
	b->len = 0;
	return b;
}

static void batch_put(struct recon_compare *cmp, struct batch *first, struct batch *last)
{
	pthread_mutex_lock(&cmp->mu);
	last->next = cmp->free_batches;
	cmp->free_batches = first;
	pthread_mutex_unlock(&cmp->mu);
}

/* Offsets of the rows of b into *offs; returns their count. */
static size_t batch_index(const struct batch *b, size_t **offs, size_t *aoffs)
{
	size_t n = 0;

	for (size_t o = 0; o < b->len;) {
		struct wire w;
		memcpy(&w, b->data + o, sizeof(w));
		if (n == *aoffs)
			recon_grow((void **)offs, aoffs, n + 1, sizeof(**offs));
		(*offs)[n++] = o;
		o += WIRE_SIZE(w.key_len, w.id_len);
	}
	return n;
}

static inline void prefetch_slot(const struct slots *t, uint64_t h)
{
	__builtin_prefetch(&t->v[slot_home(t, (uint32_t)h)]);
}

/* Prefetches the record of the first slot whose tag matches h, if any (a few probes). */
static inline void prefetch_rec(const struct slots *t, const struct store *st, uint64_t h)
{
	for (size_t i = slot_home(t, (uint32_t)h), k = 0; k < 8 && t->v[i].ref;
	     i = slot_next(t, i), k++) {
		if (t->v[i].h == (uint32_t)h) {
			/* records are 8-byte aligned: the key usually ends in the next line */
			const char *r = store_at(st, t->v[i].ref);
			__builtin_prefetch(r);
			__builtin_prefetch(r + 64);
			return;
		}
	}
}

static uint64_t wire_h(const struct batch *b, size_t off)
{
	uint64_t h;

	memcpy(&h, b->data + off, sizeof(h));
	return h;
}

/*
 * Applies the rows of a list of batches of side `from` to partition pi, the
 * table slots and records prefetched a few rows ahead (the table is far
 * bigger than the caches: these misses are the cost of a hash join), then
 * recycles the batches. The caller is the partition's only writer.
 */
static void apply_batches(struct recon_compare *cmp, int pi, int from, struct batch *b,
			  size_t **offs, size_t *aoffs)
{
	struct part *p = &cmp->part[pi];
	struct batch *last = NULL;

	for (struct batch *x = b; x; x = x->next) {
		size_t n = batch_index(x, offs, aoffs);
		const size_t *off = *offs;

		for (size_t i = 0; i < n && i < AHEAD; i++)
			prefetch_slot(&p->keys, wire_h(x, off[i]));
		for (size_t i = 0; i < n && i < AHEAD / 2; i++)
			prefetch_rec(&p->keys, &p->recs, wire_h(x, off[i]));
		for (size_t i = 0; i < n; i++) {
			struct wire w;
			struct recon_row row;

			if (i + AHEAD < n)
				prefetch_slot(&p->keys, wire_h(x, off[i + AHEAD]));
			if (i + AHEAD / 2 < n)
				prefetch_rec(&p->keys, &p->recs, wire_h(x, off[i + AHEAD / 2]));
			memcpy(&w, x->data + off[i], sizeof(w));
			memset(&row, 0, sizeof(row));
			row.key = (const char *)x->data + off[i] + sizeof(w);
			row.key_len = w.key_len;
			row.status = w.status;
			row.entry = w.entry;
			row.flags = w.flags;
			memcpy(row.currency, w.currency, 4);
			row.amount = w.amount;
			row.time = w.time;
			row.line = w.line;
			if (w.op == OP_REJECT)
				recon_compare_reject_key(p, from, &row, w.h);
			else
				recon_compare_apply_row(cmp, p, from, w.h, &row,
							w.op == OP_NOID	 ? -1
							: w.op == OP_DUP ? 1
									 : 0);
		}
		last = x;
	}
	if (last)
		batch_put(cmp, b, last);
}

/* Takes a partition's inbox (caller holds mu). */
static struct batch *take_inbox(struct recon_compare *cmp, struct part *p)
{
	struct batch *b = p->inbox;

	p->inbox = p->inbox_tail = NULL;
	p->inbox_n = 0;
	if (b)
		pthread_cond_broadcast(&cmp->cv);
	return b;
}

static void apply_inbox(struct recon_compare_feeder *f, struct batch *b)
{
	apply_batches(f->cmp, f->side, !f->side, b, &f->offs, &f->aoffs);
}

static void poll_inbox(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp = f->cmp;
	struct batch *b;

	pthread_mutex_lock(&cmp->mu);
	b = take_inbox(cmp, &cmp->part[f->side]);
	pthread_mutex_unlock(&cmp->mu);
	apply_inbox(f, b);
}

/*
 * Hands the outgoing batch to the other partition's feeder. While its inbox
 * is full, applies this feeder's own inbox (or waits): neither side can block
 * the other for good. Once the other feeder is gone, nobody else writes its
 * partition: the batch is applied here.
 */
static void send_out(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp = f->cmp;
	struct part *me = &cmp->part[f->side], *to = &cmp->part[!f->side];
	struct batch *b = f->out, *mine;

	f->out = NULL;
	if (!b)
		return;
	if (!b->len) {
		batch_put(cmp, b, b);
		return;
	}
	pthread_mutex_lock(&cmp->mu);
	for (;;) {
		if (to->gone) {
			pthread_mutex_unlock(&cmp->mu);
			apply_batches(cmp, !f->side, f->side, b, &f->offs, &f->aoffs);
			return;
		}
		if (to->inbox_n < INBOX_MAX) {
			if (to->inbox_tail)
				to->inbox_tail->next = b;
			else
				to->inbox = b;
			to->inbox_tail = b;
			to->inbox_n++;
			pthread_cond_broadcast(&cmp->cv);
			break;
		}
		mine = take_inbox(cmp, me);
		if (mine) {
			pthread_mutex_unlock(&cmp->mu);
			apply_inbox(f, mine);
			pthread_mutex_lock(&cmp->mu);
			continue;
		}
		pthread_cond_wait(&cmp->cv, &cmp->mu);
	}
	pthread_mutex_unlock(&cmp->mu);
}

/* Applies the rows of this feeder's own partition gathered so far. */
static void flush_self(struct recon_compare_feeder *f)
{
	struct batch *b = f->self;

	f->self = NULL;
	if (b)
		apply_batches(f->cmp, f->side, f->side, b, &f->offs, &f->aoffs);
}

/* Appends a row to *bp (a new batch when full: the full one goes through `full`). */
static void put_row(struct recon_compare_feeder *f, struct batch **bp,
		    void (*full)(struct recon_compare_feeder *), const struct wire *w,
		    const char *key, const unsigned char *id)
{
	size_t need = WIRE_SIZE(w->key_len, w->id_len);

	if (*bp && (*bp)->len + need > sizeof((*bp)->data))
		full(f);
	if (!*bp)
		*bp = batch_get(f->cmp);
	memcpy((*bp)->data + (*bp)->len, w, sizeof(*w));
	memcpy((*bp)->data + (*bp)->len + sizeof(*w), key, w->key_len);
	if (w->id_len && id)
		memcpy((*bp)->data + (*bp)->len + sizeof(*w) + w->key_len, id, w->id_len);
	(*bp)->len += need;
}

/* Sends a row, its id checked, to the partition of its key. */
static void route(struct recon_compare_feeder *f, struct wire *w, const char *key)
{
	w->id_len = 0;
	if (PART_OF(f->cmp, w->h) == f->side)
		put_row(f, &f->self, flush_self, w, key, NULL);
	else
		put_row(f, &f->out, send_out, w, key, NULL);
}

/* Checks the ids of the upstream rows gathered in f->pre, in order, then routes them. */
static void flush_pre(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp = f->cmp;
	struct batch *b = f->pre;
	size_t n, *off;
	uint64_t *ih = NULL;

	f->pre = NULL;
	if (!b)
		return;
	/* own offsets: routing may apply batches (and index them) meanwhile */
	n = batch_index(b, &f->pre_offs, &f->apre_offs);
	off = f->pre_offs;
	ih = recon_xmalloc(recon_st_mult(n ? n : 1, sizeof(*ih)));
	for (size_t i = 0; i < n; i++) {
		struct wire w;
		memcpy(&w, b->data + off[i], sizeof(w));
		ih[i] = w.id_len ? key_hash(b->data + off[i] + sizeof(w) + w.key_len, w.id_len) : 0;
	}
	for (size_t i = 0; i < n && i < AHEAD; i++)
		prefetch_slot(&cmp->ids, ih[i]);
	for (size_t i = 0; i < n; i++) {
		struct wire w;
		const unsigned char *key = b->data + off[i] + sizeof(w);

		if (i + AHEAD < n)
			prefetch_slot(&cmp->ids, ih[i + AHEAD]);
		if (i + AHEAD / 2 < n)
			prefetch_rec(&cmp->ids, &cmp->idstore, ih[i + AHEAD / 2]);
		memcpy(&w, b->data + off[i], sizeof(w));
		if (w.op != OP_REJECT)
			w.op = !w.id_len ? OP_NOID
			       : recon_compare_id_seen_packed(cmp, key + w.key_len, w.id_len, ih[i])
				   ? OP_DUP
				   : OP_ADD;
		route(f, &w, (const char *)key);
	}
	free(ih);
	batch_put(cmp, b, b);
}

struct recon_compare_feeder *recon_compare_feeder_new(struct recon_compare *cmp, int side)
{
	struct recon_compare_feeder *f = recon_xcalloc(1, sizeof(*f));

	f->cmp = cmp;
	f->side = side == RECON_SIDE_LOCAL;
	pthread_mutex_lock(&cmp->mu);
	cmp->part[f->side].feeding = true;
	cmp->part[f->side].ended = false;
	cmp->part[f->side].gone = false;
	pthread_mutex_unlock(&cmp->mu);
	return f;
}

/* Everything gathered goes on: ids checked, own rows applied, the rest sent. */
static void flush_all(struct recon_compare_feeder *f)
{
	flush_pre(f);
	flush_self(f);
	send_out(f);
}

static void feed(struct recon_compare_feeder *f, const struct recon_row *row, bool rejected)
{
	struct wire w;
	unsigned char small[160];

	memset(&w, 0, sizeof(w));
	w.h = key_hash(row->key, row->key_len);
	w.amount = row->amount;
	w.time = row->time;
	w.line = row->line;
	w.key_len = row->key_len;
	w.status = row->status;
	w.entry = row->entry;
	w.flags = row->flags;
	w.op = rejected ? OP_REJECT : OP_NOID;
	memcpy(w.currency, row->currency, 4);
	if (f->side == RECON_SIDE_UPSTREAM && f->cmp->speculate) {
		if (!rejected && row->entry_id) {
			recon_compare_fp_add(f->cmp, id_fingerprint(row, w.h));
			w.op = OP_ADD;
		}
		route(f, &w, row->key);
	} else if (f->side == RECON_SIDE_UPSTREAM) {
		/* ids are checked in read order, a batch at a time */
		if (!rejected && row->entry_id && id_pack_max(row) <= sizeof(small)) {
			w.id_len = (uint16_t)recon_compare_id_pack(row->entry, row->key,
								   row->key_len, row->entry_id,
								   row->entry_id_len, small);
		} else if (!rejected && row->entry_id) {
			/* a long id: checked now, in order, after the rows gathered */
			flush_pre(f);
			w.op = recon_compare_id_seen(f->cmp, row) ? OP_DUP : OP_ADD;
			route(f, &w, row->key);
			goto polled;
		}
		if (WIRE_SIZE(w.key_len, w.id_len) > sizeof(f->pre->data)) {
			fprintf(stderr, "recon: compare: key of %u bytes\n", row->key_len);
			abort();
		}
		put_row(f, &f->pre, flush_pre, &w, row->key, small);
	} else {
		route(f, &w, row->key);
	}
polled:
	if (++f->since_poll >= POLL_EVERY) {
		f->since_poll = 0;
		flush_all(f);
		poll_inbox(f);
	}
}

void recon_compare_feeder_add(struct recon_compare_feeder *f, const struct recon_row *row)
{
	feed(f, row, false);
}

void recon_compare_feeder_add_rejected(struct recon_compare_feeder *f, const struct recon_row *row)
{
	feed(f, row, true);
}

void recon_compare_feeder_free(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp;
	struct part *me, *other;
	struct batch *b;

	if (!f)
		return;
	cmp = f->cmp;
	me = &cmp->part[f->side];
	other = &cmp->part[!f->side];
	flush_all(f);
	/* serve the other side's rows for this partition until it ends too */
	pthread_mutex_lock(&cmp->mu);
	me->ended = true;
	pthread_cond_broadcast(&cmp->cv);
	for (;;) {
		b = take_inbox(cmp, me);
		if (b) {
			pthread_mutex_unlock(&cmp->mu);
			apply_inbox(f, b);
			pthread_mutex_lock(&cmp->mu);
			continue;
		}
		if (!other->feeding || other->ended)
			break;
		pthread_cond_wait(&cmp->cv, &cmp->mu);
	}
	me->gone = true;
	pthread_cond_broadcast(&cmp->cv);
	pthread_mutex_unlock(&cmp->mu);
	free(f->offs);
	free(f->pre_offs);
	free(f);
}
