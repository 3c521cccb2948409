/* madvise(MADV_HUGEPAGE) is Linux's, beyond POSIX: asked for, used when present */
#define _DEFAULT_SOURCE

#include "recon_compare.h"

#include "compare_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "recon_time.h"

static const char *const class_names[] = {
    "missing",	 "extra",   "stuck",	"amount_mismatch", "status_mismatch",
    "duplicate", "matched", "awaiting", "in_flight",
};

const char *recon_class_name(enum recon_class c)
{
	return (unsigned)c <= RECON_CLASS_IN_FLIGHT ? class_names[c] : "?";
}

int recon_class_from_name(const char *name)
{
	for (int i = 0; i <= RECON_CLASS_IN_FLIGHT; i++)
		if (!strcmp(name, class_names[i]))
			return i;
	return -1;
}

/*
 * Memory layout (the window's rows are the bulk of the process):
 *
 * - A key is one `struct krec` in its partition's record chunks, key bytes
 *   inline. While a key holds at most one upstream entry and one local row
 *   (nearly every key) the record is the whole truth: narrow. A second entry
 *   or row, a time more than 24 days from the window, a line beyond 2^32 or an
 *   odd currency widen it: the full fold state (`struct keyent`, the same
 *   fields and rules as ever) is allocated and the narrow state replayed into
 *   it. Classification reads a narrow record through the same replay, so both
 *   forms give the same answers.
 * - Keys split into partitions by their hash (part_of); each has its own
 *   open-addressing table of (hash, record reference) pairs, 8 bytes a slot,
 *   small enough to stay in the cache while its partition is built. The
 *   records live in one store per writer, in BLOCK-sized chunks.
 * - Duplicate statement entries (same entry id and type) are found in one
 *   table of ids, packed (a digit string takes half its length), owned by the
 *   upstream side; entries without an id are identified per key.
 *
 * Feeding on two threads (rows staged by partition, then the partitions
 * built on both threads): compare_feed.c. The structures both files share:
 * compare_internal.h.
 */

/* The full fold state of one key (a widened record). */
struct keyent {
	/* upstream fold */
	uint32_t n_up;	    /* entries */
	uint32_t n_payment; /* payment entries (plain success/refunded rows count too) */
	int64_t paid;
	int64_t refunded;
	int64_t other;	  /* plain closed/pending rows and lone revocations: no payment entry */
	int64_t up_first; /* first entry time */
	int64_t up_last;  /* last entry time */
	uint64_t up_line;
	char up_currency[4];
	bool up_currency_conflict;
	bool up_revoked; /* revoke entry, or plain closed row */
	bool up_pending; /* plain pending row */
	bool up_dup;	 /* the same provider entry listed twice */
	bool up_looked_up;
	bool up_plain_amount; /* a plain closed/pending row carries the order amount in `other` */
	bool up_plain;	      /* plain rows (orders in their status), not entries */
	/* the ledger (recon_compare_carry / recon_compare_item) */
	bool carried, item, evaluate;
	int8_t item_class;
	int64_t item_opened;
	struct recon_carry carry;
	/* local rows: the first one is kept (key and entry_id NULL), more are duplicates */
	uint32_t n_local;
	struct recon_row local;
};

/* krec.fl */
#define F_UP	    0x01u /* narrow: one upstream entry */
#define F_LOC	    0x02u /* narrow: one local row */
#define F_EXT	    0x04u /* widened: u.ext holds everything but key, rejects and class */
#define F_UP_LOOKED 0x08u
#define F_LOC_LOOK  0x10u
#define F_REJ_UP    0x20u /* a row of this key on that side could not be read */
#define F_REJ_LOC   0x40u
#define F_UP_ID	    0x80u /* the narrow entry had an entry id */

/* krec.up_kind's top bit: prematched (struct recon_compare's npre), on no list */
#define U_PRE 0x80u

struct krec {
	union {
		struct {
			int32_t up_amount; /* a narrow record's amounts fit 32 bits */
			int32_t loc_amount;
		} n;
		struct keyent *ext;
	} u;
	int32_t up_time; /* ms from cmp->tbase */
	int32_t loc_time;
	uint32_t up_line;
	uint32_t loc_line;
	uint8_t key_len; /* of the key's form (struct kref); KEY_LONG: see rec_key_len() */
	uint8_t fl;
	uint8_t up_kind; /* status | entry << 3 | has_status << 6; U_PRE */
	uint8_t lk;	 /* the local row's status (low 4 bits), rec_class() + 1 (high 4) */
	uint16_t up_cur; /* packed currency, 0: none */
	uint16_t loc_cur;
	char key[]; /* the key's form */
};

/*
 * 32 bytes and the key's form, to the next 8: at 10M keys each byte of the
 * header is 10 MB written, faulted in and read again.
 */
#define REC_HEAD ((size_t)offsetof(struct krec, key))
_Static_assert(offsetof(struct krec, key) == 32, "a record's header is 32 bytes");
_Static_assert(RECON_CLASS_IN_FLIGHT + 1 < 16 && RECON_ST__COUNT <= 16, "lk holds both");

/* key_len of a record whose key's form is longer: its length is in the form's first 4 bytes. */
#define KEY_LONG 255

/* A record's bytes for a key's form of len bytes. */
static inline size_t rec_size_for(size_t len)
{
	return (REC_HEAD + len + (len >= KEY_LONG ? 4 : 0) + 7) & ~(size_t)7;
}

static inline size_t rec_key_len(const struct krec *r)
{
	uint32_t n;

	if (r->key_len < KEY_LONG)
		return r->key_len;
	memcpy(&n, r->key, 4);
	return n;
}

static inline const char *rec_key(const struct krec *r)
{
	return r->key_len < KEY_LONG ? r->key : r->key + 4;
}

static inline size_t rec_size(const struct krec *r)
{
	return rec_size_for(rec_key_len(r));
}

/* The record's class (enum recon_class); -1: not owned, or not classifiable (a row was rejected).
 */
static inline int rec_class(const struct krec *r)
{
	return (int)(r->lk >> 4) - 1;
}

static inline void rec_set_class(struct krec *r, int klass)
{
	r->lk = (uint8_t)((r->lk & 0x0fu) | (unsigned)(klass + 1) << 4);
}

static inline uint8_t rec_loc_status(const struct krec *r)
{
	return r->lk & 0x0fu;
}

static inline void rec_set_loc_status(struct krec *r, uint8_t status)
{
	r->lk = (uint8_t)((r->lk & 0xf0u) | status);
}

/*
 * Big allocations of the exact id check (its table, its chunks of packed ids):
 * the table (zeroed) asks for huge pages, where the system allows them, since
 * it is probed at random; a chunk, filled front to back, is faulted in at once.
 * (The records, the partitions' tables and the staged rows live in the
 * blocks below.)
 */
#define HUGE_ALIGN ((size_t)2 << 20)

/* zero: a table (zeroed, in huge pages); else a chunk */
static void *big_alloc(size_t n, bool zero)
{
	void *p = NULL;

	if (n < HUGE_ALIGN)
		return zero ? recon_xcalloc(1, n) : recon_xmalloc(n);
	if (zero) {
		/* calloc maps fresh (zero) pages: no second pass over them */
		p = recon_xcalloc(1, n);
	} else if (posix_memalign(&p, HUGE_ALIGN, n)) {
		p = recon_xmalloc(n); /* aborts on out-of-memory */
	}
#ifdef MADV_HUGEPAGE
	if (zero) {
		/* the 2 MiB aligned part of the block */
		uintptr_t a = ((uintptr_t)p + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
		uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE_ALIGN - 1);
		if (e > a)
			(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
#endif
#ifdef MADV_POPULATE_WRITE
	/* one call, not 512 faults (Linux 5.14, else ignored) */
	if (!zero)
		(void)madvise(p, n, MADV_POPULATE_WRITE);
#endif
	return p;
}

static void store_init(struct store *s, unsigned shift, unsigned bits, unsigned refbits,
		       uint32_t refbase, struct pool *pool)
{
	memset(s, 0, sizeof(*s));
	s->shift = shift;
	s->bits = bits;
	s->refbits = refbits;
	s->refbase = refbase;
	s->pool = pool;
}

/* The reference of the item at offset o of chunk c of store s. */
static inline uint32_t store_ref(const struct store *s, size_t c, size_t o)
{
	return (uint32_t)((c << (s->bits - s->shift)) | (o >> s->shift)) | s->refbase;
}

/*
 * Allocates in a store (compare_internal.h); reference 0 is never handed out.
 * cmp and w: the compare and writer whose pool gives a pooled store its chunks.
 */
static void *store_alloc(struct recon_compare *cmp, unsigned w, struct store *s, size_t size,
			 uint32_t *ref)
{
	const size_t chunk = (size_t)1 << s->bits;
	size_t off;

	if (size > chunk - 8) { /* normalize bounds keys (4 KiB) and ids far below this */
		fprintf(stderr, "recon: compare: an item of %zu bytes does not fit a chunk\n",
			size);
		abort();
	}

	if (!s->n || s->used[s->n - 1] + size > chunk) {
		size_t a = s->alloc;
		if (s->n >> (s->refbits - s->bits + s->shift)) {
			fprintf(stderr, "recon: compare: more than %zu GiB of keys in one window\n",
				(size_t)1 << (s->refbits + s->shift - 30));
			abort();
		}
		recon_grow((void **)&s->chunk, &a, s->n + 1, sizeof(*s->chunk));
		s->used = recon_xrealloc(s->used, recon_st_mult(a, sizeof(*s->used)));
		s->alloc = a;
		s->chunk[s->n] = s->pool ? recon_compare_block(cmp, w) : big_alloc(chunk, false);
		s->used[s->n] = s->n ? 0 : (size_t)1 << s->shift; /* keep reference 0 free */
		s->n++;
	}
	off = s->used[s->n - 1];
	s->used[s->n - 1] += size;
	*ref = store_ref(s, s->n - 1, off);
	return s->chunk[s->n - 1] + off;
}

/* Frees a store's chunks (a pooled store's go with the slabs). */
static void store_release(struct store *s)
{
	for (size_t i = 0; i < s->n && !s->pool; i++)
		free(s->chunk[i]);
	free(s->chunk);
	free(s->used);
	memset(s, 0, sizeof(*s));
}

/* The record a reference names (in its writer's store). */
static inline struct krec *rec_at(const struct recon_compare *cmp, uint32_t ref)
{
	return store_at(&cmp->recs[REF_STORE(ref)], REF_IN(ref));
}

static void fps_push(struct recon_fppairs *fps, const void *rec, uint64_t fp)
{
	if (fps->n == fps->alloc)
		recon_grow((void **)&fps->v, &fps->alloc, fps->n + 1, sizeof(*fps->v));
	fps->v[fps->n].rec = rec;
	fps->v[fps->n++].fp = fp;
}

/* ---- blocks (compare_internal.h): slabs carved into BLOCK-sized pieces ---- */

/*
 * Slabs double from SLAB_MIN up to cmp->slab_max: at most a sixteenth of the
 * rows a side is expected to stage (recon_compare_reserve), between 2 and 32
 * MiB, so that the last, partly used slab (faulted in whole) and the one
 * faulted in ahead cost a few percent of the memory, whatever the size.
 */
#define SLAB_MIN       ((size_t)256 << 10)
#define SLAB_MAX       ((size_t)32 << 20)
#define SLAB_MAX_LEAST ((size_t)2 << 20)
#define STAGED_ROW     48 /* bytes a staged row takes, about (compare_feed.c) */

/*
 * Maps len bytes (a multiple of the page size), zero, in huge pages where it
 * spans some and the system allows them: the staged rows and tables are
 * written all over (a thousand streams at once), and on small pages nearly
 * every row would miss the TLB. populate: faulted in at once (one call).
 * Unmapped by recon_compare_free().
 */
static void *map_region(struct recon_compare *cmp, size_t len, bool populate)
{
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	const size_t extra = len >= HUGE_ALIGN ? HUGE_ALIGN : 0;
	unsigned char *m = mmap(NULL, len + extra, PROT_READ | PROT_WRITE, flags, -1, 0), *a;

	if (m == MAP_FAILED) {
		fprintf(stderr, "recon: compare: cannot map %zu bytes\n", len);
		abort();
	}
	/* 2 MiB aligned: whole huge pages; the mapping's ends beyond go back */
	a = extra ? (unsigned char *)(((uintptr_t)m + extra - 1) & ~(uintptr_t)(extra - 1)) : m;
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + len < m + len + extra)
		munmap(a + len, (size_t)(m + extra - a));
#ifdef MADV_HUGEPAGE
	if (extra)
		(void)madvise(a, len, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
	if (populate)
		(void)madvise(a, len, MADV_POPULATE_WRITE);
#else
	(void)populate;
#endif
	pthread_mutex_lock(&cmp->mu);
	if (cmp->nslabs == cmp->aslabs) {
		size_t na = cmp->aslabs;
		recon_grow((void **)&cmp->slabs, &na, cmp->nslabs + 1, sizeof(*cmp->slabs));
		cmp->slab_len =
		    recon_xrealloc(cmp->slab_len, recon_st_mult(na, sizeof(*cmp->slab_len)));
		cmp->aslabs = na;
	}
	cmp->slabs[cmp->nslabs] = a;
	cmp->slab_len[cmp->nslabs++] = len;
	pthread_mutex_unlock(&cmp->mu);
	return a;
}

/* A block lent to an arena (struct recon_donor's take); NULL once none is left. */
static void *recycled_take(void *arg)
{
	struct recon_compare *cmp = arg;
	void *b;

	pthread_mutex_lock(&cmp->recycle_mu);
	b = cmp->recycled;
	if (b)
		memcpy(&cmp->recycled, b, sizeof(void *));
	pthread_mutex_unlock(&cmp->recycle_mu);
	return b;
}

void *recon_compare_block(struct recon_compare *cmp, unsigned w)
{
	struct pool *pl = &cmp->pool[w];
	void *b = pl->free;

	if (b) {
		memcpy(&pl->free, b, sizeof(void *));
		return b;
	}
	if (pl->cur == pl->end) {
		size_t len = pl->next_slab ? pl->next_slab : SLAB_MIN;
		void *m = NULL;
		/* after the read: the blocks lent to the arenas, while they last */
		if ((b = recycled_take(cmp)) != NULL)
			return b;
		/* a slab the other thread faulted in while it waited (recon_compare_prefault) */
		pthread_mutex_lock(&cmp->mu);
		if (cmp->spare && len == cmp->slab_max) {
			m = cmp->spare;
			cmp->spare = NULL;
			pthread_cond_broadcast(&cmp->cv);
		}
		pthread_mutex_unlock(&cmp->mu);
		if (!m)
			m = map_region(cmp, len, true);
		pl->next_slab = len * 2 < cmp->slab_max ? len * 2 : cmp->slab_max;
		pl->cur = m;
		pl->end = pl->cur + len;
	}
	b = pl->cur;
	pl->cur += BLOCK;
	return b;
}

void recon_compare_on_wait(struct recon_compare *cmp, int (*fn)(void *arg, int side), void *arg)
{
	cmp->on_wait = fn;
	cmp->on_wait_arg = arg;
}

void recon_compare_wait(struct recon_compare *cmp, long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* cv's clock */
	t.tv_nsec += ms * 1000 * 1000;
	t.tv_sec += t.tv_nsec / (1000 * 1000 * 1000);
	t.tv_nsec %= 1000 * 1000 * 1000;
	pthread_cond_timedwait(&cmp->cv, &cmp->mu, &t);
}

void recon_compare_prefault(struct recon_compare *cmp, int side,
			    bool (*more)(struct recon_compare *cmp))
{
	bool ask = cmp->on_wait != NULL;

	pthread_mutex_lock(&cmp->mu);
	while (more(cmp)) {
		if (ask) {
			pthread_mutex_unlock(&cmp->mu);
			int did = cmp->on_wait(cmp->on_wait_arg, side);
			pthread_mutex_lock(&cmp->mu);
			if (did > 0)
				continue;
			ask = did == 0;
		}
		if (cmp->spare) {
			/* woken by the other side's slab taken or its end; else a look at its
			   work again in a millisecond */
			recon_compare_wait(cmp, ask ? 1 : RECON_COMPARE_WAIT_MS);
			continue;
		}
		pthread_mutex_unlock(&cmp->mu);
		void *m = map_region(cmp, cmp->slab_max, true);
		pthread_mutex_lock(&cmp->mu);
		cmp->spare = m;
	}
	pthread_mutex_unlock(&cmp->mu);
}

const struct recon_donor *recon_compare_donor(struct recon_compare *cmp)
{
	return &cmp->donor;
}

/* A chain of blocks (linked through their first word) being gathered for the arenas. */
struct chain {
	void *first, *last;
};

static void chain_add(struct chain *c, void *b)
{
	memcpy(b, &c->first, sizeof(void *));
	c->first = b;
	if (!c->last)
		c->last = b;
}

/* The blocks of span [p, p + n) that are whole, onto c. */
static void chain_span(struct chain *c, void *p, size_t n)
{
	for (size_t o = 0; p && o + BLOCK <= n; o += BLOCK)
		chain_add(c, (unsigned char *)p + o);
}

/* Lends c's blocks to the arenas (struct recon_donor). */
static void chain_lend(struct recon_compare *cmp, const struct chain *c)
{
	if (!c->first)
		return;
	pthread_mutex_lock(&cmp->recycle_mu);
	memcpy(c->last, &cmp->recycled, sizeof(void *));
	cmp->recycled = c->first;
	pthread_mutex_unlock(&cmp->recycle_mu);
}

void recon_compare_pool_release(struct recon_compare *cmp, unsigned w)
{
	struct pool *pl = &cmp->pool[w];
	struct chain c = {NULL, NULL};
	void *next;

	/*
	 * They stay where they are, faulted in: handed back to the system, they
	 * cost the arenas after the read as many fresh pages (and on a VM the
	 * host's faults: ~1.5 s a GiB here, bench/README.md).
	 */
	for (void *b = pl->free; b; b = next) {
		memcpy(&next, b, sizeof(next));
		chain_add(&c, b);
	}
	pl->free = NULL;
	/* the rest of the slab being carved, and a slab faulted in ahead that nobody took */
	if (pl->cur)
		chain_span(&c, pl->cur, (size_t)(pl->end - pl->cur));
	pl->cur = pl->end;
	pthread_mutex_lock(&cmp->mu);
	chain_span(&c, cmp->spare, cmp->slab_max);
	cmp->spare = NULL;
	pthread_mutex_unlock(&cmp->mu);
	chain_lend(cmp, &c);
}

/*
 * Lends the first n bytes of p (malloc()'s, written already) to the arenas
 * as well; p is freed by recon_compare_free().
 */
static void lend_buffer(struct recon_compare *cmp, void *p, size_t n)
{
	struct chain c = {NULL, NULL};

	if (!p || n < BLOCK) {
		free(p);
		return;
	}
	recon_grow((void **)&cmp->lent, &cmp->alent, cmp->nlent + 1, sizeof(*cmp->lent));
	cmp->lent[cmp->nlent++] = p;
	chain_span(&c, p, n);
	chain_lend(cmp, &c);
}

void recon_compare_block_put(struct recon_compare *cmp, unsigned w, void *b)
{
	struct pool *pl = &cmp->pool[w];

	memcpy(b, &pl->free, sizeof(void *));
	pl->free = b;
}

/* Slots for n keys under the 0.7 load limit (n capped at 2^31). */
static size_t slots_for(uint64_t n)
{
	if (n > ((uint64_t)1 << 31))
		n = (uint64_t)1 << 31;
	return (size_t)(n * 10 / 7 + 64);
}

/* ---- partition tables (compare_internal.h) ---- */

static void pt_init(struct recon_compare *cmp, unsigned w, struct ptable *t, size_t cap)
{
	t->cap = cap;
	t->n = 0;
	t->nseg = (cap + SEG_SLOTS - 1) / SEG_SLOTS;
	t->seg = recon_xmalloc(recon_st_mult(t->nseg ? t->nseg : 1, sizeof(*t->seg)));
	for (size_t i = 0; i < t->nseg; i++) {
		t->seg[i] = recon_compare_block(cmp, w);
		memset(t->seg[i], 0,
		       (i + 1 < t->nseg ? SEG_SLOTS : cap - i * SEG_SLOTS) * sizeof(struct slot));
	}
}

static void pt_release(struct recon_compare *cmp, unsigned w, struct ptable *t)
{
	for (size_t i = 0; i < t->nseg; i++)
		recon_compare_block_put(cmp, w, t->seg[i]);
	free(t->seg);
	memset(t, 0, sizeof(*t));
}

/* Rehashes partition p's table into ncap slots (ncap > cap). */
static void pt_resize(struct recon_compare *cmp, struct part *p, size_t ncap)
{
	struct ptable nt, *t = &p->keys;

	pt_init(cmp, p->w, &nt, ncap);
	for (size_t i = 0; i < t->cap; i++) {
		const struct slot *x = pt_at(t, i);
		size_t j;
		if (!x->ref)
			continue;
		for (j = pt_home(&nt, x->h); pt_at(&nt, j)->ref; j = pt_next(&nt, j))
			;
		*pt_at(&nt, j) = *x;
	}
	nt.n = t->n;
	pt_release(cmp, p->w, t);
	*t = nt;
}

static void pt_grow(struct recon_compare *cmp, struct part *p)
{
	const size_t cap = p->keys.cap;

	if (cap >= (size_t)1 << 32) {
		fprintf(stderr, "recon: compare: more than 2^32 slots in one table\n");
		abort();
	}
	pt_resize(cmp, p, !cap ? 64 : cap * 2 < (size_t)1 << 32 ? cap * 2 : (size_t)1 << 32);
}

static void slots_init(struct slots *t, size_t cap)
{
	t->cap = cap;
	t->n = 0;
	t->v = big_alloc(recon_st_mult(cap, sizeof(*t->v)), true);
}

/* Rehashes into ncap slots (ncap > t->cap). */
static void slots_resize(struct slots *t, size_t ncap)
{
	struct slots nt;

	slots_init(&nt, ncap);
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;
		if (!t->v[i].ref)
			continue;
		for (j = slot_home(&nt, t->v[i].h); nt.v[j].ref; j = slot_next(&nt, j))
			;
		nt.v[j] = t->v[i];
	}
	free(t->v);
	t->v = nt.v;
	t->cap = ncap;
}

static void slots_grow(struct slots *t)
{
	if (t->cap >= (size_t)1 << 32) {
		fprintf(stderr, "recon: compare: more than 2^32 slots in one table\n");
		abort();
	}
	slots_resize(t, t->cap * 2 < (size_t)1 << 32 ? t->cap * 2 : (size_t)1 << 32);
}

/* Memory for a widened key's state, in its partition's writer's store (8-byte aligned). */
static void *kalloc(struct recon_compare *cmp, const struct part *p, size_t n)
{
	uint32_t ref;

	return store_alloc(cmp, p->w, &cmp->kstore[p->w], (n + 7) & ~(size_t)7, &ref);
}

/* Identity of one statement entry without an id, in a widened key. */
struct ident {
	uint64_t hash;
	uint8_t entry;
	int64_t amount;
	int64_t time;
	const struct keyent *k;
};

/* FNV-1a 64 for the rare idents. */
static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static void table_init(struct table *t)
{
	t->cap = 64;
	t->n = 0;
	t->slot = recon_xcalloc(t->cap, sizeof(*t->slot));
}

/*
 * Partitions: at least PARTS_MIN; recon_compare_reserve() makes one per
 * PART_KEYS keys (a power of two, at most PARTS_MAX), so that a partition's
 * table and records (~75 bytes a key) stay in a core's cache while it is
 * built, and its rows are staged in few enough streams to stay cheap.
 */
#define PARTS_MIN 16
#define PARTS_MAX 1024
#define PART_KEYS 8192

/* Partitions, their tables empty (made on first use). */
static void parts_init(struct recon_compare *cmp, size_t n)
{
	cmp->part = recon_xcalloc(n, sizeof(*cmp->part));
	cmp->nparts = n;
}

static void parts_release(struct recon_compare *cmp)
{
	for (size_t i = 0; i < cmp->nparts; i++) {
		free(cmp->part[i].keys.seg);
		free(cmp->part[i].idents.slot);
	}
	free(cmp->part);
	cmp->part = NULL;
	cmp->nparts = 0;
}

struct recon_compare *recon_compare_new(const struct recon_job *job, const struct recon_window *win,
					int64_t now, bool upstream_is_statement)
{
	struct recon_compare *cmp = recon_xcalloc(1, sizeof(*cmp));

	cmp->job = job;
	cmp->win = *win;
	cmp->now = now;
	cmp->upstream_is_statement = upstream_is_statement;
	cmp->history_start = win->start;
	cmp->horizon = win->end;
	cmp->tbase = win->start;
	if (cmp->tbase < INT64_MIN / 2 || cmp->tbase > INT64_MAX / 2)
		cmp->tbase = 0;
	cmp->tlo = cmp->tbase + INT32_MIN;
	cmp->thi = cmp->tbase + INT32_MAX;
	recon_arena_init(&cmp->arena);
	recon_arena_init_huge(&cmp->dkeys[0]);
	recon_arena_init_huge(&cmp->dkeys[1]);
	recon_arena_init_huge(&cmp->skeys[0]);
	recon_arena_init_huge(&cmp->skeys[1]);
	recon_arena_init(&cmp->pkeys);
	recon_arena_init(&cmp->ckeys);
	cmp->donor = (struct recon_donor){recycled_take, cmp, BLOCK};
	pthread_mutex_init(&cmp->recycle_mu, NULL);
	for (int i = 0; i < 2; i++) {
		recon_arena_use_donor(&cmp->dkeys[i], &cmp->donor);
		recon_arena_use_donor(&cmp->skeys[i], &cmp->donor);
	}
	recon_arena_use_donor(&cmp->pkeys, &cmp->donor);
	recon_arena_use_donor(&cmp->ckeys, &cmp->donor);
	parts_init(cmp, PARTS_MIN);
	for (unsigned w = 0; w < NWRITERS; w++) {
		store_init(&cmp->recs[w], 3, BLOCK_BITS, 31, (uint32_t)w << 31, &cmp->pool[w]);
		store_init(&cmp->kstore[w], 3, BLOCK_BITS, 31, 0, &cmp->pool[w]);
	}
	slots_init(&cmp->ids, 1024);
	store_init(&cmp->idstore, 2, 21, 32, 0, NULL);
	atomic_init(&cmp->next_part, 0);
	cmp->slab_max = SLAB_MAX_LEAST;
	pthread_mutex_init(&cmp->mu, NULL);
	{
		/* its timed waits (recon_compare_prefault) on the monotonic clock */
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&cmp->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	return cmp;
}

void recon_compare_horizon(struct recon_compare *cmp, int64_t history_start, int64_t horizon)
{
	cmp->history_start = history_start;
	cmp->horizon = horizon;
}

void recon_compare_free(struct recon_compare *cmp)
{
	if (!cmp)
		return;
	recon_arena_release(&cmp->arena);
	recon_arena_release(&cmp->dkeys[0]);
	recon_arena_release(&cmp->dkeys[1]);
	recon_arena_release(&cmp->skeys[0]);
	recon_arena_release(&cmp->skeys[1]);
	recon_arena_release(&cmp->pkeys);
	recon_arena_release(&cmp->ckeys);
	parts_release(cmp);
	for (unsigned w = 0; w < NWRITERS; w++) {
		store_release(&cmp->recs[w]);
		store_release(&cmp->kstore[w]);
	}
	for (size_t i = 0; i < cmp->nslabs; i++)
		munmap(cmp->slabs[i], cmp->slab_len[i]);
	free(cmp->slabs);
	free(cmp->slab_len);
	free(cmp->ids.v);
	store_release(&cmp->idstore);
	for (size_t i = 0; i < FP_BUCKETS; i++)
		free(cmp->fps[i].v);
	for (size_t i = 0; i < cmp->nlent; i++)
		free(cmp->lent[i]);
	free(cmp->lent);
	pthread_mutex_destroy(&cmp->mu);
	pthread_mutex_destroy(&cmp->recycle_mu);
	pthread_cond_destroy(&cmp->cv);
	for (unsigned w = 0; w < NWRITERS; w++)
		free(cmp->listed[w].v);
	free(cmp->touched.v);
	free(cmp->pend_keys);
	free(cmp->pend_lens);
	free(cmp->diffs);
	free(cmp->pending);
	free(cmp);
}

struct recon_arena *recon_compare_arena(struct recon_compare *cmp)
{
	return &cmp->arena;
}

static uint32_t ident_hash(const void *e)
{
	return (uint32_t)((const struct ident *)e)->hash;
}

static void table_grow(struct table *t, uint32_t (*hashof)(const void *))
{
	size_t ncap = t->cap * 2;
	void **ns = recon_xcalloc(ncap, sizeof(*ns));

	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i])
			continue;
		size_t j = hashof(t->slot[i]) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = ncap;
}

/*
 * The record of a key in table t (tag: its hash's low 32 bits) and *at its
 * slot, or NULL with *at the empty slot where it would go (t->cap is not 0).
 */
static inline struct krec *probe(const struct recon_compare *cmp, const struct ptable *t,
				 const char *key, size_t len, uint32_t tag, size_t *at)
{
	size_t i;

	for (i = pt_home(t, tag); pt_at(t, i)->ref; i = pt_next(t, i)) {
		if (pt_at(t, i)->h == tag) {
			struct krec *r = rec_at(cmp, pt_at(t, i)->ref);
			if (rec_key_len(r) == len && bytes_eq(rec_key(r), key, len)) {
				*at = i;
				return r;
			}
		}
	}
	*at = i;
	return NULL;
}

static struct krec *find_rec(const struct recon_compare *cmp, const char *key, size_t len,
			     uint64_t h)
{
	const struct ptable *t = &cmp->part[part_of(cmp, h)].keys;
	size_t at;

	return t->cap ? probe(cmp, t, key, len, (uint32_t)h, &at) : NULL;
}

static void reflist_push(struct reflist *l, uint32_t ref)
{
	if (l->n == l->alloc)
		recon_grow((void **)&l->v, &l->alloc, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = ref;
}

/* A prematched record about to change (after the build): on the touched list from now on. */
static void unprematch(struct recon_compare *cmp, struct krec *r, uint32_t ref)
{
	r->up_kind &= (uint8_t)~U_PRE;
	rec_set_class(r, -1);
	cmp->npre_total--;
	reflist_push(&cmp->touched, ref);
}

/*
 * The record of a key in partition p, created (empty) when there is none.
 * The caller changes it: once the build is over, it is listed (pre_on).
 */
static struct krec *get_rec(struct recon_compare *cmp, struct part *p, const char *key, size_t len,
			    uint64_t h)
{
	struct ptable *t = &p->keys;
	const uint32_t tag = (uint32_t)h;
	size_t i = 0;
	struct krec *r;
	uint32_t ref;

	if (t->cap && (r = probe(cmp, t, key, len, tag, &i))) {
		if (cmp->pre_on && (r->up_kind & U_PRE))
			unprematch(cmp, r, pt_at(t, i)->ref);
		return r;
	}
	if (len > UINT16_MAX) {
		fprintf(stderr, "recon: compare: key of %zu bytes\n", len);
		abort();
	}
	if ((t->n + 1) * 10 > t->cap * 7) {
		pt_grow(cmp, p);
		for (i = pt_home(t, tag); pt_at(t, i)->ref; i = pt_next(t, i))
			;
	}
	r = store_alloc(cmp, p->w, &cmp->recs[p->w], rec_size_for(len), &ref);
	memset(r, 0, REC_HEAD);
	rec_set_class(r, -1);
	if (len < KEY_LONG) {
		r->key_len = (uint8_t)len;
		recon_copy_short(r->key, key, len);
	} else {
		const uint32_t n = (uint32_t)len;
		r->key_len = KEY_LONG;
		memcpy(r->key, &n, 4);
		memcpy(r->key + 4, key, len);
	}
	pt_at(t, i)->h = tag;
	pt_at(t, i)->ref = ref;
	t->n++;
	if (cmp->pre_on)
		reflist_push(&cmp->touched, ref);
	return r;
}

/* Record r's key, whole and NUL-terminated, in arena a; *len its length. */
static const char *key_out(const struct recon_compare *cmp, struct recon_arena *a,
			   const struct krec *r, uint32_t *len)
{
	const size_t n = kform_len(rec_key(r), rec_key_len(r));
	char *k = recon_arena_alloc(a, recon_st_add(n, 1));

	kform_get(cmp, rec_key(r), rec_key_len(r), k);
	k[n] = '\0';
	*len = (uint32_t)n;
	return k;
}

/*
 * Entry ids: (entry type, id) packed as [entry][form][bytes]. form < 0x80: raw
 * bytes of that length (0x7f: a 4-byte length follows); 0x80 | n: n decimal
 * digits (n < 128), two to a byte. Equal entries have equal packings.
 */
size_t recon_compare_id_pack(uint8_t entry, const char *key, uint32_t klen, const char *id,
			     size_t len, unsigned char *out)
{
	size_t i, o = 0;
	bool digits = len < 128;

	for (i = 0; digits && i < len; i++)
		digits = id[i] >= '0' && id[i] <= '9';
	/* the key first: one provider id under two keys is two entries (DESIGN "Entry identity") */
	out[o++] = entry;
	memcpy(out + o, &klen, 4);
	o += 4;
	memcpy(out + o, key, klen);
	o += klen;
	if (digits) {
		out[o++] = (unsigned char)(0x80 | len);
		for (i = 0; i < len; i += 2)
			out[o++] = (unsigned char)((id[i] - '0') << 4 |
						   (i + 1 < len ? id[i + 1] - '0' + 1 : 0));
		return o;
	}
	if (len < 0x7f) {
		out[o++] = (unsigned char)len;
	} else {
		uint32_t l = (uint32_t)len;
		out[o++] = 0x7f;
		memcpy(out + o, &l, 4);
		o += 4;
	}
	memcpy(out + o, id, len);
	return o + len;
}

static size_t id_packed_len(const unsigned char *p)
{
	uint32_t l, klen;
	size_t head;

	memcpy(&klen, p + 1, 4);
	head = 5 + (size_t)klen;
	p += head - 1; /* p[1]: the id's form */
	if (p[1] & 0x80)
		return head + 1 + ((p[1] & 0x7fu) + 1) / 2;
	if (p[1] < 0x7f)
		return head + 1 + (size_t)p[1];
	memcpy(&l, p + 2, 4);
	return head + 5 + (size_t)l;
}

/* Whether a packed id (h: its key_hash()) is in the table already (a duplicate); else adds it. */
bool recon_compare_id_seen_packed(struct recon_compare *cmp, const unsigned char *pk, size_t n,
				  uint64_t h)
{
	struct slots *t = &cmp->ids;
	const uint32_t tag = (uint32_t)h;
	size_t i;
	uint32_t ref;

	for (i = slot_home(t, tag); t->v[i].ref; i = slot_next(t, i)) {
		if (t->v[i].h == tag) {
			const unsigned char *q = store_at(&cmp->idstore, t->v[i].ref);
			if (id_packed_len(q) == n && bytes_eq(q, pk, n))
				return true;
		}
	}
	if ((t->n + 1) * 10 > t->cap * 7) {
		slots_grow(t);
		for (i = slot_home(t, tag); t->v[i].ref; i = slot_next(t, i))
			;
	}
	memcpy(store_alloc(cmp, 0, &cmp->idstore, (n + 3) & ~(size_t)3, &ref), pk, n);
	t->v[i].h = tag;
	t->v[i].ref = ref;
	t->n++;
	return false;
}

/* Records the entry id of an upstream row; true when it was seen before (a duplicate). */
bool recon_compare_id_seen(struct recon_compare *cmp, const struct recon_row *row)
{
	unsigned char small[160], *pk = small;
	size_t n;
	bool dup;

	if (id_pack_max(row) > sizeof(small))
		pk = recon_xmalloc(id_pack_max(row));
	n = recon_compare_id_pack(row->entry, row->key, row->key_len, row->entry_id,
				  row->entry_id_len, pk);
	dup = recon_compare_id_seen_packed(cmp, pk, n, key_hash(pk, n));
	if (pk != small)
		free(pk);
	return dup;
}

static bool ident_eq(const struct ident *a, const struct ident *b)
{
	return a->hash == b->hash && a->entry == b->entry && a->k == b->k &&
	       a->amount == b->amount && a->time == b->time;
}

/* Records a widened key's id-less entry; true when the same entry was seen before. */
static bool ident_seen(struct recon_compare *cmp, struct part *p, const struct keyent *k,
		       const struct recon_row *row)
{
	struct table *t = &p->idents;
	struct ident probe = {0}, *e;
	uint64_t h = FNV_BASIS;
	size_t i;

	probe.entry = row->entry;
	probe.k = k;
	probe.amount = row->amount;
	probe.time = row->time;
	h = hash_bytes(&probe.entry, 1, h);
	h = hash_bytes(&k, sizeof(k), h);
	h = hash_bytes(&row->amount, sizeof(row->amount), h);
	h = hash_bytes(&row->time, sizeof(row->time), h);
	probe.hash = h;
	if (!t->cap)
		table_init(t);
	for (i = (uint32_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (ident_eq(t->slot[i], &probe))
			return true;
	if ((t->n + 1) * 10 > t->cap * 7) {
		table_grow(t, ident_hash);
		for (i = (uint32_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
			;
	}
	e = kalloc(cmp, p, sizeof(*e));
	*e = probe;
	t->slot[i] = e;
	t->n++;
	return false;
}

static bool add_saturating(int64_t *acc, int64_t v)
{
	if ((v > 0 && *acc > INT64_MAX - v) || (v < 0 && *acc < INT64_MIN - v))
		return false;
	*acc += v;
	return true;
}

/* Folds one upstream entry into a key (dup: the same provider entry seen before). */
static void fold_up(struct keyent *k, const struct recon_row *row, bool dup)
{
	if (dup) {
		/* the same provider entry again: flagged, and not counted twice in the sums */
		k->up_dup = true;
		k->n_up++;
		return;
	}
	if (k->n_up == 0 || row->time < k->up_first) {
		k->up_first = row->time;
		k->up_line = row->line;
	}
	if (k->n_up == 0 || row->time > k->up_last)
		k->up_last = row->time;
	if (k->n_up == 0)
		memcpy(k->up_currency, row->currency, 4);
	else if (memcmp(k->up_currency, row->currency, 4))
		k->up_currency_conflict = true;
	k->n_up++;
	if (row->flags & RECON_ROW_LOOKED_UP)
		k->up_looked_up = true;
	bool ok = true;
	if (row->flags & RECON_ROW_HAS_STATUS) {
		k->up_plain = true;
		/* plain rows: each row is an order in the status its source says */
		switch (row->status) {
		case RECON_ST_SUCCESS:
			ok = add_saturating(&k->paid, row->amount);
			k->n_payment++;
			break;
		case RECON_ST_REFUNDED:
			ok = add_saturating(&k->paid, row->amount) &&
			     add_saturating(&k->refunded, row->amount);
			k->n_payment++;
			break;
		case RECON_ST_CLOSED:
			ok = add_saturating(&k->other, row->amount);
			k->up_revoked = true;
			k->up_plain_amount = true;
			break;
		default:
			ok = add_saturating(&k->other, row->amount);
			k->up_pending = true;
			k->up_plain_amount = true;
			break;
		}
	} else {
		switch (row->entry) {
		case RECON_ENTRY_PAYMENT:
			ok = add_saturating(&k->paid, row->amount);
			k->n_payment++;
			break;
		case RECON_ENTRY_REFUND:
			ok = add_saturating(&k->refunded, row->amount);
			break;
		case RECON_ENTRY_REVOKE:
			/* its amount (often 0.00) is never the order amount: the payment's is
			   (DESIGN "Refunds and revocations across days") */
			k->up_revoked = true;
			break;
		default:
			break;
		}
	}
	if (!ok) /* sums beyond int64: no honest comparison is possible */
		k->up_currency_conflict = true;
}

static void fold_local(struct keyent *k, const struct recon_row *row)
{
	if (k->n_local++ == 0) {
		k->local = *row;
		k->local.key = NULL;
		k->local.key_len = 0;
		k->local.entry_id = NULL;
		k->local.entry_id_len = 0;
	} else if (row->time < k->local.time) {
		k->local.time = row->time; /* duplicates: the earliest row owns the key */
	}
}

/* The narrow record's upstream entry / local row, as rows. */
static void narrow_up_row(const struct recon_compare *cmp, const struct krec *r,
			  struct recon_row *row)
{
	memset(row, 0, sizeof(*row));
	row->amount = r->u.n.up_amount;
	row->time = cmp->tbase + r->up_time;
	row->line = r->up_line;
	row->status = r->up_kind & 7;
	row->entry = r->up_kind >> 3 & 7;
	row->flags = (uint8_t)((r->up_kind & 0x40 ? RECON_ROW_HAS_STATUS : 0) |
			       (r->fl & F_UP_LOOKED ? RECON_ROW_LOOKED_UP : 0));
	cur_unpack(r->up_cur, row->currency);
}

static void narrow_loc_row(const struct recon_compare *cmp, const struct krec *r,
			   struct recon_row *row)
{
	memset(row, 0, sizeof(*row));
	row->amount = r->u.n.loc_amount;
	row->time = cmp->tbase + r->loc_time;
	row->line = r->loc_line;
	row->status = rec_loc_status(r);
	row->flags = r->fl & F_LOC_LOOK ? RECON_ROW_LOOKED_UP : 0;
	cur_unpack(r->loc_cur, row->currency);
}

/* The full state of a record: its keyent, or the narrow state replayed into tmp. */
static const struct keyent *view(const struct recon_compare *cmp, const struct krec *r,
				 struct keyent *tmp)
{
	struct recon_row row;

	if (r->fl & F_EXT)
		return r->u.ext;
	memset(tmp, 0, sizeof(*tmp));
	if (r->fl & F_UP) {
		narrow_up_row(cmp, r, &row);
		fold_up(tmp, &row, false);
	}
	if (r->fl & F_LOC) {
		narrow_loc_row(cmp, r, &row);
		fold_local(tmp, &row);
	}
	return tmp;
}

static void widen(struct recon_compare *cmp, struct part *p, struct krec *r)
{
	struct keyent *k = kalloc(cmp, p, sizeof(*k));
	struct recon_row row;

	view(cmp, r, k);
	if ((r->fl & (F_UP | F_UP_ID)) == F_UP) {
		narrow_up_row(cmp, r, &row);
		(void)ident_seen(cmp, p, k, &row);
	}
	r->u.ext = k;
	r->fl = (uint8_t)((r->fl & (F_REJ_UP | F_REJ_LOC)) | F_EXT);
}

/*
 * Applies a row of `side` to its key in partition p. iddup (upstream): 1 the
 * entry id was seen before, 0 it was not, -1 the row has no entry id.
 */
void recon_compare_apply_row(struct recon_compare *cmp, struct part *p, int side, uint64_t h,
			     const struct recon_row *row, int iddup)
{
	struct krec *r = get_rec(cmp, p, row->key, row->key_len, h);
	const uint16_t cur = cur_pack(row->currency);

	if (side == RECON_SIDE_LOCAL) {
		if (!(r->fl & F_EXT)) {
			if (!(r->fl & F_LOC) && narrow_fits(cmp, row, cur)) {
				r->fl |=
				    F_LOC | (row->flags & RECON_ROW_LOOKED_UP ? F_LOC_LOOK : 0);
				r->u.n.loc_amount = (int32_t)row->amount;
				r->loc_time = (int32_t)(row->time - cmp->tbase);
				r->loc_line = (uint32_t)row->line;
				rec_set_loc_status(r, row->status);
				r->loc_cur = cur;
				return;
			}
			widen(cmp, p, r);
		}
		fold_local(r->u.ext, row);
		return;
	}
	if (!(r->fl & F_EXT)) {
		if (!(r->fl & F_UP) && iddup != 1 && row->status < 8 && row->entry < 8 &&
		    narrow_fits(cmp, row, cur)) {
			r->fl |= F_UP | (row->flags & RECON_ROW_LOOKED_UP ? F_UP_LOOKED : 0) |
				 (iddup == 0 ? F_UP_ID : 0);
			r->u.n.up_amount = (int32_t)row->amount;
			r->up_time = (int32_t)(row->time - cmp->tbase);
			r->up_line = (uint32_t)row->line;
			r->up_kind = (uint8_t)(row->status | row->entry << 3 |
					       (row->flags & RECON_ROW_HAS_STATUS ? 0x40 : 0));
			r->up_cur = cur;
			return;
		}
		widen(cmp, p, r);
	}
	fold_up(r->u.ext, row, iddup < 0 ? ident_seen(cmp, p, r->u.ext, row) : iddup == 1);
}

bool recon_compare_apply_narrow(struct recon_compare *cmp, struct part *p, int side, uint64_t h,
				const char *key, size_t len, const struct recon_narrow *n)
{
	struct krec *r = get_rec(cmp, p, key, len, h);

	if (side == RECON_SIDE_LOCAL) {
		/* apply_row's narrow local branch (a narrow staged row fits a narrow record) */
		if (r->fl & (F_EXT | F_LOC))
			return false;
		r->fl |= F_LOC | (n->flags & RECON_ROW_LOOKED_UP ? F_LOC_LOOK : 0);
		r->u.n.loc_amount = n->amount;
		r->loc_time = n->time;
		r->loc_line = n->line;
		rec_set_loc_status(r, n->status);
		r->loc_cur = n->cur;
		return true;
	}
	/* apply_row's narrow upstream branch with iddup 0, and apply_up_spec's first entry */
	if ((r->fl & (F_EXT | F_UP)) || n->status >= 8 || n->entry >= 8)
		return false;
	r->fl |= F_UP | (n->flags & RECON_ROW_LOOKED_UP ? F_UP_LOOKED : 0) | F_UP_ID;
	r->u.n.up_amount = n->amount;
	r->up_time = n->time;
	r->up_line = n->line;
	r->up_kind =
	    (uint8_t)(n->status | n->entry << 3 | (n->flags & RECON_ROW_HAS_STATUS ? 0x40 : 0));
	r->up_cur = n->cur;
	if (n->fp_set) /* the stash: no local row comes before; read back as uint32_t */
		r->u.n.loc_amount = (int32_t)n->fp32;
	return true;
}

void recon_compare_reject_key(struct recon_compare *cmp, struct part *p, int side,
			      const struct recon_row *row, uint64_t h)
{
	struct krec *r = get_rec(cmp, p, row->key, row->key_len, h);

	r->fl |= side == RECON_SIDE_LOCAL ? F_REJ_LOC : F_REJ_UP;
}

/*
 * A statement row of partition p while p is built by writer w, before any
 * local row of p, speculating that no entry is listed twice: a speculated
 * entry (fp its fingerprint, iddup 0) or a row without an id (iddup -1). Two
 * entries share an id only under one key: a key's first entry leaves its
 * fingerprint in the record (in the local amount, unused until a local row
 * comes); when a later row of the key comes (and widens the record), that
 * fingerprint and every later entry's go to *fps, which the builder checks
 * once the partition's statement rows are applied.
 */
void recon_compare_apply_up_spec(struct recon_compare *cmp, struct part *p, uint64_t h,
				 const struct recon_row *row, int iddup, uint64_t fp,
				 struct recon_fppairs *fps)
{
	struct krec *r = get_rec(cmp, p, row->key, row->key_len, h);
	const bool first = !(r->fl & (F_EXT | F_UP));

	/* the narrow record's entry had an id (F_UP_ID): its fingerprint, before it widens */
	if ((r->fl & (F_EXT | F_UP | F_UP_ID)) == (F_UP | F_UP_ID))
		fps_push(fps, r, (uint32_t)r->u.n.loc_amount);
	if (!first && iddup == 0)
		fps_push(fps, r, fp);
	recon_compare_apply_row(cmp, p, RECON_SIDE_UPSTREAM, h, row, iddup);
	if (first && iddup == 0 && !(r->fl & F_EXT))
		r->u.n.loc_amount = (int32_t)(uint32_t)fp; /* fp: 32 bits (a staged row's) */
	else if (first && iddup == 0)
		fps_push(fps, r, fp);
}

static int fppair_cmp(const void *a, const void *b)
{
	const struct recon_fppair *x = a, *y = b;

	if (x->rec != y->rec)
		return (uintptr_t)x->rec < (uintptr_t)y->rec ? -1 : 1;
	return (x->fp > y->fp) - (x->fp < y->fp);
}

bool recon_compare_fppairs_distinct(struct recon_fppairs *fps)
{
	bool distinct = true;

	if (fps->n > 1)
		qsort(fps->v, fps->n, sizeof(*fps->v), fppair_cmp);
	for (size_t i = 1; i < fps->n && distinct; i++)
		distinct = fps->v[i].rec != fps->v[i - 1].rec || fps->v[i].fp != fps->v[i - 1].fp;
	fps->n = 0;
	return distinct;
}

void recon_compare_speculate_ids(struct recon_compare *cmp)
{
	cmp->speculate = true;
}

void recon_compare_fp_add(struct recon_compare *cmp, uint64_t fp)
{
	struct fpbucket *b = &cmp->fps[fp >> (64 - FP_BITS)];

	if (b->n == b->alloc)
		recon_grow((void **)&b->v, &b->alloc, b->n + 1, sizeof(*b->v));
	b->v[b->n++] = fp;
}

bool recon_compare_ids_distinct(struct recon_compare *cmp)
{
	uint64_t *set = NULL;
	size_t cap = 0;
	bool distinct = true;

	if (!cmp->speculate)
		return true;
	if (cmp->ids_checked)
		return cmp->ids_distinct;
	distinct = !cmp->spec_dup; /* the builders' verdict (feeders) */
	for (size_t bi = 0; bi < FP_BUCKETS && distinct; bi++) {
		const struct fpbucket *b = &cmp->fps[bi];
		size_t want = 16, mask;

		while (want < b->n * 2)
			want *= 2;
		if (want > cap) {
			free(set);
			cap = want;
			set = recon_xmalloc(recon_st_mult(cap, sizeof(*set)));
		}
		mask = want - 1;
		/* 0 marks a free slot: fingerprint 0 is kept aside */
		memset(set, 0, want * sizeof(*set));
		bool zero = false;
		for (size_t i = 0; i < b->n && distinct; i++) {
			uint64_t fp = b->v[i];
			size_t j;
			if (!fp) {
				distinct = !zero;
				zero = true;
				continue;
			}
			/* the top bits chose the bucket: the low ones place it in the set */
			for (j = fp & mask; set[j]; j = (j + 1) & mask) {
				if (set[j] == fp) {
					distinct = false;
					break;
				}
			}
			set[j] = fp;
		}
	}
	free(set);
	/* the fingerprints (8 bytes an entry) are not needed past this: their memory goes
	   before classification and recording, where the run's peak would otherwise be */
	for (size_t bi = 0; bi < FP_BUCKETS; bi++) {
		free(cmp->fps[bi].v);
		memset(&cmp->fps[bi], 0, sizeof(cmp->fps[bi]));
	}
	cmp->ids_checked = true;
	cmp->ids_distinct = distinct;
	return distinct;
}

void recon_compare_kref_set(struct recon_compare *cmp, const char *key, size_t len)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&cmp->kref.state, &none, 1)) {
		cmp->kref.len = (uint8_t)(len < KREF_MAX ? len : KREF_MAX);
		memcpy(cmp->kref.s, key, cmp->kref.len);
		atomic_store_explicit(&cmp->kref.state, 2, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&cmp->kref.state, memory_order_acquire) != 2)
		; /* the other thread copies at most KREF_MAX bytes */
}

void recon_compare_add(struct recon_compare *cmp, int side, const struct recon_row *in)
{
	char buf[KFORM_STACK], *heap;
	struct recon_row er;
	const struct recon_row *row = kform_row(cmp, in, &er, buf, &heap);
	uint64_t h = key_hash(row->key, row->key_len);
	int iddup = -1;

	if (side != RECON_SIDE_LOCAL && row->entry_id && cmp->speculate) {
		recon_compare_fp_add(cmp, id_fingerprint(row, h));
		iddup = 0;
	} else if (side != RECON_SIDE_LOCAL && row->entry_id) {
		iddup = recon_compare_id_seen(cmp, row);
	}
	recon_compare_apply_row(cmp, &cmp->part[part_of(cmp, h)], side, h, row, iddup);
	free(heap);
}

void recon_compare_add_rejected(struct recon_compare *cmp, int side, const struct recon_row *in)
{
	char buf[KFORM_STACK], *heap;
	struct recon_row er;
	const struct recon_row *row = kform_row(cmp, in, &er, buf, &heap);
	uint64_t h = key_hash(row->key, row->key_len);

	recon_compare_reject_key(cmp, &cmp->part[part_of(cmp, h)], side, row, h);
	free(heap);
}

/* Grows a table to hold n entries under the 0.7 load limit. */
static void slots_reserve(struct slots *t, uint64_t n)
{
	const size_t cap = slots_for(n);

	if (cap <= t->cap)
		return;
	if (!t->n) {
		free(t->v);
		slots_init(t, cap);
		return;
	}
	slots_resize(t, cap);
}

void recon_compare_part_reserve(struct recon_compare *cmp, struct part *p, uint64_t n)
{
	const size_t cap = slots_for(n);

	if (cap > p->keys.cap)
		pt_resize(cmp, p, cap);
}

void recon_compare_reserve(struct recon_compare *cmp, uint64_t keys, uint64_t upstream_entries)
{
	size_t n = PARTS_MIN;
	bool empty = true;

	/* the partitions are laid out anew while nothing is in them (before the read) */
	for (size_t i = 0; i < cmp->nparts && empty; i++)
		empty = !cmp->part[i].keys.n;
	while (n < PARTS_MAX && (uint64_t)n * PART_KEYS < keys)
		n *= 2;
	if (empty && n != cmp->nparts) {
		parts_release(cmp);
		parts_init(cmp, n);
	}
	while (cmp->slab_max < SLAB_MAX && cmp->slab_max * 2 * 16 <= keys * STAGED_ROW)
		cmp->slab_max *= 2;
	/* speculating, the fingerprints travel with the staged rows: no id table */
	if (!cmp->speculate)
		slots_reserve(&cmp->ids, upstream_entries);
}

/* ---- the ledger's inputs ---- */

/*
 * The record of a whole key (not its form), or NULL. Before any key set the
 * reference there is none.
 */
static struct krec *find_key(const struct recon_compare *cmp, const char *key, size_t len)
{
	char buf[KFORM_STACK], *f;
	struct krec *r;
	size_t n;

	if (atomic_load_explicit(&cmp->kref.state, memory_order_acquire) != 2)
		return NULL;
	f = kform_room(buf, len);
	/* the reference is set: nothing of cmp is changed */
	n = kform_put((struct recon_compare *)cmp, key, len, f);
	r = find_rec(cmp, f, n, key_hash(f, n));
	kform_free(f, buf);
	return r;
}

/* A key's widened record, created when the window read nothing of it (single-threaded). */
static struct keyent *ledger_rec(struct recon_compare *cmp, const char *key, size_t len)
{
	char buf[KFORM_STACK], *f = kform_room(buf, len);
	const size_t n = kform_put(cmp, key, len, f);
	const uint64_t h = key_hash(f, n);
	struct part *p = &cmp->part[part_of(cmp, h)];
	struct krec *r = get_rec(cmp, p, f, n, h);

	kform_free(f, buf);
	if (!(r->fl & F_EXT))
		widen(cmp, p, r);
	return r->u.ext;
}

void recon_compare_carry(struct recon_compare *cmp, const char *key, size_t len,
			 const struct recon_carry *c)
{
	struct keyent *k;

	/* history of a key this window does not touch is not needed (unless a rerun's own) */
	if (!c->mine && !find_key(cmp, key, len))
		return;
	k = ledger_rec(cmp, key, len);
	k->carried = true;
	k->carry = *c;
	k->evaluate = k->evaluate || c->mine;
}

void recon_compare_item(struct recon_compare *cmp, const char *key, size_t len, int klass,
			int64_t opened)
{
	struct keyent *k = ledger_rec(cmp, key, len);

	k->item = true;
	k->item_class = (int8_t)klass;
	k->item_opened = opened;
	k->evaluate = true;
}

/* ---- classification ---- */

/* Runs body for every record of chunk c of writer w's store (chunk 0 starts past reference 0). */
#define FOR_EACH_REC_IN(cmp, w, c, r, body)                                                        \
	do {                                                                                       \
		const struct store *s_ = &(cmp)->recs[w];                                          \
		for (size_t o_ = (c) ? 0 : 8; o_ < s_->used[c];) {                                 \
			struct krec *r = (struct krec *)(s_->chunk[c] + o_);                       \
			o_ += rec_size(r);                                                         \
			body                                                                       \
		}                                                                                  \
	} while (0)

/* Runs body for every record of writer w's store, in storage order. */
#define FOR_EACH_REC_OF(cmp, w, r, body)                                                           \
	for (size_t c_ = 0, n_ = (cmp)->recs[w].n; c_ < n_; c_++)                                  \
	FOR_EACH_REC_IN(cmp, w, c_, r, body)

/* Runs body for every record of every store, in storage order. */
#define FOR_EACH_REC(cmp, r, body)                                                                 \
	for (unsigned w_ = 0; w_ < NWRITERS; w_++)                                                 \
	FOR_EACH_REC_OF(cmp, w_, r, body)

/* The i-th of the records to evaluate (listed[0], listed[1], then touched): its reference. */
static uint32_t eval_ref(const struct recon_compare *cmp, size_t i)
{
	for (unsigned w = 0; w < NWRITERS; w++) {
		if (i < cmp->listed[w].n)
			return cmp->listed[w].v[i];
		i -= cmp->listed[w].n;
	}
	return cmp->touched.v[i];
}

/* How many records the lists name (pre_on). */
static size_t eval_count(const struct recon_compare *cmp)
{
	return cmp->listed[0].n + cmp->listed[1].n + cmp->touched.n;
}

/*
 * Runs body for every record but the prematched ones (every record when
 * nothing was prematched), in no particular order.
 */
#define FOR_EACH_EVAL_REC(cmp, r, body)                                                            \
	do {                                                                                       \
		if ((cmp)->pre_on) {                                                               \
			for (size_t i_ = 0, n_ = eval_count(cmp); i_ < n_; i_++) {                 \
				struct krec *r = rec_at(cmp, eval_ref(cmp, i_));                   \
				body                                                               \
			}                                                                          \
		} else {                                                                           \
			FOR_EACH_REC(cmp, r, body);                                                \
		}                                                                                  \
	} while (0)

/* The key's local row lies in the window (not only in its margins). */
static bool local_touched(const struct recon_compare *cmp, const struct keyent *k)
{
	return k->n_local && !(k->local.flags & RECON_ROW_LOOKED_UP) &&
	       k->local.time >= cmp->win.start && k->local.time < cmp->win.end;
}

/* Entries of this window (a lookup's entries belong to other windows). */
static bool up_touched(const struct keyent *k)
{
	return k->n_up && !k->up_looked_up;
}

/* DESIGN "Entries belong to windows; keys do not": which keys this run evaluates. */
static bool evaluated(const struct recon_compare *cmp, const struct keyent *k)
{
	return k->evaluate || up_touched(k) || local_touched(cmp, k);
}

static bool carried_entries(const struct keyent *k)
{
	return k->carried && k->carry.entries;
}

static bool terminal(int st)
{
	return st == RECON_ST_SUCCESS || st == RECON_ST_REFUNDED || st == RECON_ST_CLOSED;
}

static int64_t add_clamped(int64_t a, int64_t b)
{
	return add_saturating(&a, b) ? a : (b > 0 ? INT64_MAX : INT64_MIN);
}

/* A key's cumulative upstream view: this window's entries plus the carried ones. */
struct upview {
	int64_t paid, refunded, other;
	uint32_t n, payments;
	bool revoked, pending, conflict, dup, plain_amount, plain, carried, looked_up;
	char cur[4];
	int64_t first, last;
	uint64_t line;
};

static void up_view(const struct recon_compare *cmp, const struct keyent *k, struct upview *v)
{
	const struct recon_carry *c = &k->carry;

	memset(v, 0, sizeof(*v));
	if (k->n_up) {
		v->paid = k->paid;
		v->refunded = k->refunded;
		v->other = k->other;
		v->n = k->n_up;
		v->payments = k->n_payment;
		v->revoked = k->up_revoked;
		v->pending = k->up_pending;
		v->conflict = k->up_currency_conflict;
		v->dup = k->up_dup;
		v->plain_amount = k->up_plain_amount;
		v->plain = k->up_plain;
		v->looked_up = k->up_looked_up;
		memcpy(v->cur, k->up_currency, 4);
		v->first = k->up_first;
		v->last = k->up_last;
		v->line = k->up_line;
	}
	if (k->carried && c->assumed && !c->entries && !v->payments) {
		/* only an assumed payment is known besides this window: it stands in */
		if (!v->n) {
			memcpy(v->cur, c->currency, 4);
			v->first = c->first;
			v->last = c->last;
		}
		if (!add_saturating(&v->paid, c->assumed_paid))
			v->conflict = true;
		v->n++;
		v->payments = 1;
		v->carried = true;
		return;
	}
	if (!carried_entries(k))
		return;
	/*
	 * Plain rows are snapshots of the order, not entries: the latest
	 * window's stands alone (a notification row updated from paid to
	 * refunded is one order, not two payments).
	 */
	if (c->plain && k->up_plain && up_touched(k)) {
		if (c->window < cmp->win.start)
			return; /* this window's snapshot is the latest */
		memset(v, 0, sizeof(*v));
	}
	if (!v->n) {
		memcpy(v->cur, c->currency, 4);
		v->first = c->first;
		v->last = c->last;
	} else {
		if (memcmp(v->cur, c->currency, 4))
			v->conflict = true;
		if (c->first < v->first)
			v->first = c->first;
		if (c->last > v->last)
			v->last = c->last;
	}
	if (!add_saturating(&v->paid, c->paid) || !add_saturating(&v->refunded, c->refunded))
		v->conflict = true;
	v->n += c->entries;
	v->payments += c->payments;
	if (!v->payments && c->assumed) {
		/* an assumed payment stands only where no real one is known */
		if (!add_saturating(&v->paid, c->assumed_paid))
			v->conflict = true;
		v->payments = 1;
		v->n++;
	}
	v->revoked = v->revoked || c->revoked;
	v->pending = v->pending || c->pending;
	v->conflict = v->conflict || c->conflict;
	v->dup = v->dup || c->duplicate;
	v->plain = v->plain || c->plain;
	v->carried = true;
}

/*
 * The order amount the view says: its payments; a plain closed or pending
 * row's amount; else (no payment in the view: it matched in an earlier
 * window, or lies before the job's history) the local row's.
 */
static int64_t order_amount(const struct upview *v, const struct keyent *k)
{
	if (v->payments)
		return v->paid;
	if (v->plain_amount)
		return v->other;
	return k->n_local ? k->local.amount : 0;
}

/* The folded upstream status of a view. */
static int up_status(const struct upview *v, int64_t order)
{
	if (v->revoked)
		return RECON_ST_CLOSED; /* never paid, or paid then revoked: no money kept */
	if (v->refunded > 0 && order > 0 && v->refunded >= order)
		return RECON_ST_REFUNDED;
	if (v->payments || v->refunded > 0)
		return RECON_ST_SUCCESS;
	return RECON_ST_PENDING;
}

static bool amounts_differ(const struct recon_compare *cmp, int64_t a, int64_t b)
{
	int64_t d;

	if ((b > 0 && a < INT64_MIN + b) || (b < 0 && a > INT64_MAX + b))
		return true;
	d = a - b;
	if (d < 0) {
		if (d == INT64_MIN)
			return true;
		d = -d;
	}
	return d > cmp->job->tolerance_minor;
}

/* A local-only key or a local refund ahead of upstream: awaiting until *due passes the horizon. */
static enum recon_class awaiting_or(const struct recon_compare *cmp, int64_t *due,
				    enum recon_class klass, struct recon_compare_counts *counts)
{
	if (*due <= cmp->horizon) {
		*due = 0;
		return klass;
	}
	counts->awaiting++;
	return RECON_CLASS_AWAITING;
}

/* DESIGN "Classification" over the cumulative view; *due for awaiting and in flight. */
static enum recon_class classify_key(const struct recon_compare *cmp, const struct keyent *k,
				     const struct upview *v, int64_t *due,
				     struct recon_compare_counts *counts)
{
	const struct recon_job *job = cmp->job;
	const bool up = v->n > 0, local = k->n_local > 0;
	int ust, lst = local ? k->local.status : -1;
	int64_t order;

	*due = 0;
	if (v->dup || k->n_local > 1)
		return RECON_CLASS_DUPLICATE;
	if (!up) {
		/* a local pending or closed order without upstream is not a difference */
		if (lst != RECON_ST_SUCCESS && lst != RECON_ST_REFUNDED)
			return RECON_CLASS_MATCHED;
		*due = add_clamped(k->local.time, job->settle_after_ms);
		return awaiting_or(cmp, due, RECON_CLASS_EXTRA, counts);
	}
	order = order_amount(v, k);
	ust = up_status(v, order);
	if (!local) {
		if (ust == RECON_ST_SUCCESS || ust == RECON_ST_REFUNDED)
			return RECON_CLASS_MISSING;
		if (ust == RECON_ST_PENDING)
			counts->in_flight++;
		return RECON_CLASS_MATCHED;
	}
	if (v->conflict || memcmp(v->cur, k->local.currency, 4))
		return RECON_CLASS_AMOUNT_MISMATCH;
	if (amounts_differ(cmp, order, k->local.amount) || v->refunded > order)
		return RECON_CLASS_AMOUNT_MISMATCH; /* or refunded more than was paid */
	if (terminal(ust) && lst == RECON_ST_PENDING) {
		/* stuck_after counts from the upstream's terminal entry, not the local creation */
		*due = add_clamped(v->last, job->stuck_after_ms);
		if (cmp->now > *due) {
			*due = 0;
			return RECON_CLASS_STUCK;
		}
		counts->in_flight++;
		return RECON_CLASS_IN_FLIGHT;
	}
	if (terminal(ust) && terminal(lst) && ust != lst) {
		if (lst != RECON_ST_REFUNDED || ust != RECON_ST_SUCCESS)
			return RECON_CLASS_STATUS_MISMATCH;
		/*
		 * The local flow shows a refund upstream does not (yet): refunds reach
		 * later statements, in parts over days. Before the job's history a
		 * consistent refund is not a difference; else it is awaited for
		 * refund_after (3d) from the run that first saw it.
		 */
		if (!v->payments && k->local.time < cmp->history_start)
			return RECON_CLASS_MATCHED;
		*due = add_clamped(k->item && k->item_class == RECON_CLASS_AWAITING ? k->item_opened
										    : cmp->now,
				   job->refund_after_ms);
		return awaiting_or(cmp, due, RECON_CLASS_STATUS_MISMATCH, counts);
	}
	if (ust == RECON_ST_PENDING)
		counts->in_flight++;
	return RECON_CLASS_MATCHED;
}

/* A key to look up, whole. */
struct pend {
	const char *key;
	uint32_t len;
};

static int pend_cmp(const void *a, const void *b)
{
	const struct pend *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

size_t recon_compare_pending_lookups(struct recon_compare *cmp, int side, const char ***keys,
				     const uint32_t **lens)
{
	struct pend *list = NULL;
	size_t n = 0, alist = 0;
	struct keyent tmp;

	recon_arena_reset(&cmp->pkeys);
	FOR_EACH_EVAL_REC(cmp, r, {
		const struct keyent *k;
		bool want;
		if (r->fl & (F_REJ_UP | F_REJ_LOC))
			continue; /* its class is undecidable anyway: no lookup */
		k = view(cmp, r, &tmp);
		if (side == RECON_SIDE_LOCAL)
			want =
			    !k->n_local && evaluated(cmp, k) && (k->n_up || k->carried || k->item);
		else
			want = !k->n_up && !carried_entries(k) && k->n_local == 1 &&
			       local_touched(cmp, k) &&
			       (k->local.status == RECON_ST_SUCCESS ||
				k->local.status == RECON_ST_REFUNDED);
		if (!want)
			continue;
		recon_grow((void **)&list, &alist, n + 1, sizeof(*list));
		list[n].key = key_out(cmp, &cmp->pkeys, r, &list[n].len);
		n++;
	});
	/* key order: the same lookups in the same order whatever the threads did */
	if (n)
		qsort(list, n, sizeof(*list), pend_cmp);
	if (n > cmp->apend) {
		cmp->pend_keys = recon_xrealloc(cmp->pend_keys, recon_st_mult(n, sizeof(char *)));
		cmp->pend_lens = recon_xrealloc(cmp->pend_lens, recon_st_mult(n, sizeof(uint32_t)));
		cmp->apend = n;
	}
	for (size_t i = 0; i < n; i++) {
		cmp->pend_keys[i] = list[i].key;
		cmp->pend_lens[i] = list[i].len;
	}
	free(list);
	*keys = cmp->pend_keys;
	*lens = cmp->pend_lens;
	return n;
}

static int diff_cmp(const void *a, const void *b)
{
	const struct recon_diff *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/*
 * One classifying thread's share: the record chunks it took (both stores'
 * chunks, numbered one after the other, taken CLASSIFY_TAKE at a time from
 * *next), its counts, differences and pending items, and each list's order by
 * key once it is done (pointers sorted: the lists are copied once, merged).
 * The lists grow in huge pages (tens of megabytes at 10M rows).
 */
#define CLASSIFY_TAKE	4
#define CLASSIFY_LISTED 1024 /* listed records a thread takes at a time (prematched) */
struct classified {
	struct recon_compare *cmp;
	struct recon_arena *keys; /* the differences' keys */
	atomic_size_t *next;
	struct recon_compare_counts counts;
	struct recon_diff *diffs, *pending;
	size_t n, alloc, npending, apending;
	struct sortent *sorted, *psorted; /* diffs and pending, in key order */
};

/* Both sides' views of an evaluated key, as a difference shows them. */
static void fill_diff(struct recon_diff *d, const struct krec *r, const struct keyent *k,
		      const struct upview *v)
{
	memset(d, 0, sizeof(*d));
	d->klass = (uint8_t)rec_class(r);
	if (v->n) {
		int64_t order = order_amount(v, k);
		d->up.present = true;
		d->up.status = (uint8_t)up_status(v, order);
		memcpy(d->up.currency, v->cur, 4);
		d->up.amount = v->payments || v->plain_amount ? order : 0;
		d->up.assumed = !v->payments && !v->plain_amount;
		d->up.refunded = v->refunded;
		d->up.time = v->first;
		d->up.last = v->last;
		d->up.line = k->n_up ? v->line : 0;
		d->up.rows = v->n;
		d->up.looked_up = v->looked_up;
		d->up.carried = v->carried;
		d->up.conflict = v->conflict;
	}
	if (k->n_local) {
		d->local.present = true;
		d->local.status = k->local.status;
		memcpy(d->local.currency, k->local.currency, 4);
		d->local.amount = k->local.amount;
		d->local.time = k->local.time;
		d->local.line = k->local.line;
		d->local.rows = k->n_local;
		d->local.looked_up = (k->local.flags & RECON_ROW_LOOKED_UP) != 0;
	}
}

/*
 * The common record, decided without replaying it: narrow, one payment entry
 * of this window or one plain row saying paid (not looked up: a plain row
 * folds as a payment, and a narrow record is never carried), and one local
 * row, paid, in the same currency, the amounts within tolerance, nothing
 * rejected. classify_key() says matched for it, as it does for nothing else
 * that this test lets through (the amount is not negative: refunds of 0 never
 * exceed it).
 */
static bool plain_match(const struct recon_compare *cmp, const struct krec *r)
{
	return (r->fl & (F_EXT | F_UP | F_LOC | F_REJ_UP | F_REJ_LOC | F_UP_LOOKED | F_LOC_LOOK)) ==
		   (F_UP | F_LOC) &&
	       ((r->up_kind & 0x40) ? (r->up_kind & 7) == RECON_ST_SUCCESS
				    : (r->up_kind >> 3 & 7) == RECON_ENTRY_PAYMENT) &&
	       rec_loc_status(r) == RECON_ST_SUCCESS && r->up_cur && r->up_cur == r->loc_cur &&
	       r->u.n.up_amount >= 0 && !amounts_differ(cmp, r->u.n.up_amount, r->u.n.loc_amount);
}

/* A plain match whose local row lies in the window (not only in its margins). */
static bool plain_in_window(const struct recon_compare *cmp, const struct krec *r)
{
	return plain_match(cmp, r) && cmp->tbase + r->loc_time >= cmp->win.start &&
	       cmp->tbase + r->loc_time < cmp->win.end;
}

void recon_compare_rec_mark(const struct recon_compare *cmp, unsigned w, struct recmark *m)
{
	const struct store *s = &cmp->recs[w];

	m->c = s->n ? s->n - 1 : 0;
	m->o = s->n ? s->used[s->n - 1] : (size_t)1 << s->shift; /* chunk 0 starts past ref 0 */
}

void recon_compare_prematch(struct recon_compare *cmp, unsigned w, const struct recmark *m)
{
	const struct store *s = &cmp->recs[w];

	for (size_t c = m->c; c < s->n; c++) {
		for (size_t o = c == m->c ? m->o : (c ? 0 : (size_t)1 << s->shift);
		     o < s->used[c];) {
			struct krec *r = (struct krec *)(s->chunk[c] + o);
			const uint32_t ref = store_ref(s, c, o);
			o += rec_size(r);
			/* classification: matched; the lookups: none; the contributions: nothing */
			if (plain_in_window(cmp, r)) {
				rec_set_class(r, RECON_CLASS_MATCHED);
				r->up_kind |= U_PRE;
				cmp->npre[w]++;
			} else {
				reflist_push(&cmp->listed[w], ref);
			}
		}
	}
}

/* Classifies record r (tmp, v: scratch), into out's lists and counts. */
static void classify_one(struct classified *out, struct krec *r, struct keyent *tmp,
			 struct upview *v)
{
	struct recon_compare *cmp = out->cmp;
	struct recon_compare_counts *c = &out->counts;

	if (plain_match(cmp, r)) {
		rec_set_class(r, RECON_CLASS_MATCHED);
		c->keys_owned++;
		c->rows_owned[0]++;
		c->rows_owned[1]++;
		c->matched++;
		return;
	}
	const struct keyent *k = view(cmp, r, tmp);
	int64_t due;
	if (r->fl & (F_REJ_UP | F_REJ_LOC)) {
		/* a row of this key is unreadable: no class can be asserted */
		rec_set_class(r, -1);
		c->keys_rejected++;
		c->rows_other[0] += k->n_up;
		c->rows_other[1] += k->n_local;
		return;
	}
	if (!evaluated(cmp, k)) {
		rec_set_class(r, -1);
		c->rows_other[0] += k->n_up;
		c->rows_other[1] += k->n_local;
		return;
	}
	up_view(cmp, k, v);
	rec_set_class(r, (int8_t)classify_key(cmp, k, v, &due, c));
	c->keys_owned++;
	c->carried += v->carried;
	c->rows_owned[0] += k->n_up;
	c->rows_owned[1] += k->n_local;
	if (rec_class(r) == RECON_CLASS_MATCHED) {
		c->matched++;
		return;
	}
	struct recon_diff *d;
	if (rec_class(r) > RECON_CLASS_MATCHED) {
		recon_grow_huge((void **)&out->pending, &out->apending, out->npending + 1,
				sizeof(*out->pending));
		d = &out->pending[out->npending++];
	} else {
		c->classes[rec_class(r)]++;
		recon_grow_huge((void **)&out->diffs, &out->alloc, out->n + 1, sizeof(*out->diffs));
		d = &out->diffs[out->n++];
	}
	fill_diff(d, r, k, v);
	d->key = key_out(cmp, out->keys, r, &d->key_len);
	d->due = due;
}

static void classify_chunk(struct classified *out, int pi, size_t chunk)
{
	struct keyent tmp;
	struct upview v;

	FOR_EACH_REC_IN(out->cmp, pi, chunk, r, { classify_one(out, r, &tmp, &v); });
}

/*
 * The listed records g..e (eval_ref()), prefetched a few ahead: they lie
 * anywhere in the window's records.
 */
#define EVAL_AHEAD 16

/* Both cache lines a record's header may span, and a widened one's state. */
static inline void prefetch_rec(const struct recon_compare *cmp, size_t i)
{
	const unsigned char *r = (const unsigned char *)rec_at(cmp, eval_ref(cmp, i));

	__builtin_prefetch(r);
	__builtin_prefetch(r + REC_HEAD - 1);
}

static void classify_listed(struct classified *out, size_t g, size_t e)
{
	const struct recon_compare *cmp = out->cmp;
	struct keyent tmp;
	struct upview v;

	for (size_t i = g; i < e && i < g + EVAL_AHEAD; i++)
		prefetch_rec(cmp, i);
	for (size_t i = g; i < e; i++) {
		if (i + EVAL_AHEAD < e)
			prefetch_rec(cmp, i + EVAL_AHEAD);
		if (i + EVAL_AHEAD / 2 < e) {
			const struct krec *r = rec_at(cmp, eval_ref(cmp, i + EVAL_AHEAD / 2));
			if (r->fl & F_EXT)
				__builtin_prefetch(r->u.ext);
		}
		classify_one(out, rec_at(cmp, eval_ref(cmp, i)), &tmp, &v);
	}
}

/*
 * A difference in a sorted list: 16 bytes of its key as two big-endian
 * words, zero-padded, from where the list's keys stop being alike (they all
 * begin with the same bytes: a merchant's prefix, a date). Keys in that order
 * are in key order (bytewise, the shorter first), but for keys alike in those
 * 16 bytes (or alike but for trailing zero bytes): those ties are settled by
 * diff_cmp().
 */
struct sortent {
	uint64_t hi, lo;
	const struct recon_diff *d;
};

/* The big-endian word of key bytes [at, at + 8), zero past the key's end. */
static uint64_t key_word(const char *key, size_t len, size_t at)
{
	unsigned char b[8] = {0};

	if (at < len)
		memcpy(b, key + at, len - at < 8 ? len - at : 8);
	return (uint64_t)b[0] << 56 | (uint64_t)b[1] << 48 | (uint64_t)b[2] << 40 |
	       (uint64_t)b[3] << 32 | (uint64_t)b[4] << 24 | (uint64_t)b[5] << 16 |
	       (uint64_t)b[6] << 8 | b[7];
}

/* Ties on the sort words: runs this long or shorter by insertion, longer ones by qsort(). */
#define SORT_RUN_INSERT 16

static int sortent_qcmp(const void *a, const void *b)
{
	return diff_cmp(((const struct sortent *)a)->d, ((const struct sortent *)b)->d);
}

/* How many first bytes every key of v[0..n) has alike (none is shorter). */
static size_t common_prefix(const struct recon_diff *v, size_t n)
{
	size_t lcp = n ? v[0].key_len : 0;

	for (size_t i = 1; i < n && lcp; i++) {
		const size_t m = v[i].key_len < lcp ? v[i].key_len : lcp;
		size_t p = 0;
		while (p < m && v[i].key[p] == v[0].key[p])
			p++;
		lcp = p;
	}
	return lcp;
}

/* Byte k (0: the lowest) of the 16-byte sort word of e. */
static inline unsigned sort_byte(const struct sortent *e, unsigned k)
{
	return (unsigned)((k < 8 ? e->lo >> (8 * k) : e->hi >> (8 * (k - 8))) & 0xff);
}

/*
 * The n differences of v in key order: a radix sort on 16 bytes of the keys
 * past their common prefix (least significant byte first; a byte every key
 * has alike costs no pass), then each run of ties put in order by
 * diff_cmp(). Was qsort() with diff_cmp(): a call and a memcmp() per
 * comparison, 17 comparisons a difference.
 */
static struct sortent *sort_list(const struct recon_diff *v, size_t n)
{
	const size_t bytes = recon_st_mult(n ? n : 1, sizeof(struct sortent));
	struct sortent *a = recon_xmalloc(bytes), *b = recon_xmalloc(bytes), *t;
	size_t(*count)[256] = recon_xcalloc(16, sizeof(*count));
	const size_t skip = common_prefix(v, n);

	for (size_t i = 0; i < n; i++) {
		a[i].hi = key_word(v[i].key, v[i].key_len, skip);
		a[i].lo = key_word(v[i].key, v[i].key_len, skip + 8);
		a[i].d = &v[i];
		for (unsigned k = 0; k < 16; k++)
			count[k][sort_byte(&a[i], k)]++;
	}
	for (unsigned k = 0; k < 16 && n > 1; k++) {
		size_t at = 0;
		if (count[k][sort_byte(&a[0], k)] == n)
			continue; /* every key has this byte alike */
		for (unsigned c = 0; c < 256; c++) {
			const size_t m = count[k][c];
			count[k][c] = at;
			at += m;
		}
		for (size_t i = 0; i < n; i++)
			b[count[k][sort_byte(&a[i], k)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	/*
	 * Runs of ties on the 16 bytes: short ones by insertion, long ones by
	 * qsort() (keys alike far past the common prefix, two merchants' long
	 * prefixes in composite keys: no quadratic run)
	 */
	for (size_t i = 0, e; i < n; i = e) {
		for (e = i + 1; e < n && a[e].hi == a[i].hi && a[e].lo == a[i].lo; e++)
			;
		if (e - i > SORT_RUN_INSERT) {
			qsort(a + i, e - i, sizeof(*a), sortent_qcmp);
			continue;
		}
		for (size_t k = i + 1; k < e; k++)
			for (size_t j = k; j > i && diff_cmp(a[j - 1].d, a[j].d) > 0; j--) {
				const struct sortent x = a[j];
				a[j] = a[j - 1];
				a[j - 1] = x;
			}
	}
	free(count);
	free(b);
	return a;
}

/* Takes chunks until none is left: the two writers' stores need not be the same size. */
static void classify_share(struct classified *out)
{
	const struct recon_compare *cmp = out->cmp;
	const size_t n0 = cmp->recs[0].n, total = n0 + cmp->recs[1].n;

	/*
	 * prematched: only the listed records, CLASSIFY_LISTED at a time. The lists
	 * are reserved for all of them at once, which costs address space only: a
	 * list grown by doubling faulted in (and copied) as much again as it kept.
	 */
	if (cmp->pre_on && eval_count(cmp)) {
		recon_grow_huge((void **)&out->diffs, &out->alloc, eval_count(cmp),
				sizeof(*out->diffs));
		recon_grow_huge((void **)&out->pending, &out->apending, eval_count(cmp),
				sizeof(*out->pending));
	}
	for (size_t n = cmp->pre_on ? eval_count(cmp) : 0; n;) {
		size_t g = atomic_fetch_add(out->next, CLASSIFY_LISTED);
		if (g >= n)
			break;
		classify_listed(out, g, g + CLASSIFY_LISTED < n ? g + CLASSIFY_LISTED : n);
	}
	for (; !cmp->pre_on;) {
		size_t g = atomic_fetch_add(out->next, CLASSIFY_TAKE);
		if (g >= total)
			break;
		for (size_t e = g + CLASSIFY_TAKE < total ? g + CLASSIFY_TAKE : total; g < e; g++)
			classify_chunk(out, g < n0 ? 0 : 1, g < n0 ? g : g - n0);
	}
	/* each thread sorts its own lists: recon_compare_classify merges them */
	out->sorted = sort_list(out->diffs, out->n);
	out->psorted = sort_list(out->pending, out->npending);
}

static void *classify_share_thread(void *arg)
{
	classify_share(arg);
	return NULL;
}

/* Merges lists[0][i..ie) and lists[1][j..je) into out, their keys into keys. */
struct merge_run {
	const struct sortent *const *lists;
	size_t i, ie, j, je;
	struct recon_diff *out;
	struct recon_arena *keys;
};

/* Appends *d to m->out, its key copied to m->keys (the merged list's keys, in its order). */
static void merge_put(struct merge_run *m, const struct recon_diff *d)
{
	*m->out = *d;
	m->out->key = recon_arena_strndup(m->keys, d->key, d->key_len);
	m->out++;
}

static void *merge_run(void *arg)
{
	struct merge_run *m = arg;
	const struct sortent *a = m->lists[0], *b = m->lists[1];

	while (m->i < m->ie && m->j < m->je)
		merge_put(m, diff_cmp(a[m->i].d, b[m->j].d) < 0 ? a[m->i++].d : b[m->j++].d);
	while (m->i < m->ie)
		merge_put(m, a[m->i++].d);
	while (m->j < m->je)
		merge_put(m, b[m->j++].d);
	return NULL;
}

/* Lists at least this long are merged in two halves, on two threads. */
#define MERGE_SPLIT 8192

/*
 * Merges the two threads' lists, each in key order (a key is in one list
 * only; their sort words begin at different bytes: keys compared), into
 * one. Long lists in two halves at once: the first half's keys
 * in keys[0], the second's in keys[1], each half written by one thread.
 */
static struct recon_diff *merge_lists(const struct sortent *const *lists, const size_t *ns,
				      size_t *n, struct recon_arena *keys)
{
	const size_t total = ns[0] + ns[1], half = total / 2;
	const size_t bytes = recon_st_mult(total ? total : 1, sizeof(struct recon_diff));
	struct recon_diff *all = recon_xmalloc(bytes);
	struct merge_run m[2] = {{lists, 0, ns[0], 0, ns[1], all, &keys[0]}};
	size_t lo = half > ns[1] ? half - ns[1] : 0, hi = half < ns[0] ? half : ns[0];
	pthread_t th;

	recon_mem_advise_huge(all, bytes);
	*n = total;
	if (total < MERGE_SPLIT) {
		(void)merge_run(&m[0]);
		return all;
	}
	/* the first half: the least i of list 0's and half - i of list 1's with no later
	   one of list 0 below an earlier one of list 1 (lists[0][i] is not among them) */
	while (lo < hi) {
		const size_t i = lo + (hi - lo) / 2, j = half - i;
		if (i < ns[0] && j > 0 && diff_cmp(lists[0][i].d, lists[1][j - 1].d) < 0)
			lo = i + 1;
		else
			hi = i;
	}
	m[0].ie = lo;
	m[0].je = half - lo;
	m[1] = (struct merge_run){lists, lo, ns[0], half - lo, ns[1], all + half, &keys[1]};
	if (pthread_create(&th, NULL, merge_run, &m[1]) != 0) {
		(void)merge_run(&m[0]);
		(void)merge_run(&m[1]);
		return all;
	}
	(void)merge_run(&m[0]);
	pthread_join(th, NULL);
	return all;
}

/*
 * Classified on two threads sharing the record chunks (records share nothing
 * but reads; each is written by the thread that took its chunk). The lists
 * are sorted by key after: the result does not depend on who took what.
 */
void recon_compare_classify(struct recon_compare *cmp)
{
	struct classified part[2]; /* this thread's share, the other's */
	const struct sortent *lists[2];
	size_t ns[2];
	atomic_size_t next;
	pthread_t th;
	bool threaded;

	memset(&cmp->counts, 0, sizeof(cmp->counts));
	free(cmp->diffs);
	free(cmp->pending);
	memset(part, 0, sizeof(part));
	atomic_init(&next, 0);
	for (int i = 0; i < 2; i++) {
		part[i].cmp = cmp;
		part[i].next = &next;
		recon_arena_reset(&cmp->dkeys[i]);
		part[i].keys = &cmp->dkeys[i];
	}
	threaded = pthread_create(&th, NULL, classify_share_thread, &part[1]) == 0;
	classify_share(&part[0]);
	if (threaded)
		pthread_join(th, NULL);
	for (int i = 0; i < 2; i++) {
		const struct recon_compare_counts *c = &part[i].counts;
		cmp->counts.keys_owned += c->keys_owned;
		cmp->counts.matched += c->matched;
		cmp->counts.in_flight += c->in_flight;
		cmp->counts.awaiting += c->awaiting;
		cmp->counts.carried += c->carried;
		cmp->counts.keys_rejected += c->keys_rejected;
		for (int s = 0; s < 2; s++) {
			cmp->counts.rows_owned[s] += c->rows_owned[s];
			cmp->counts.rows_other[s] += c->rows_other[s];
		}
		for (int k = 0; k < RECON_CLASS__COUNT; k++)
			cmp->counts.classes[k] += c->classes[k];
	}
	if (cmp->pre_on) {
		/* the prematched records: matched, as classify_one() finds them */
		cmp->counts.keys_owned += cmp->npre_total;
		cmp->counts.matched += cmp->npre_total;
		cmp->counts.rows_owned[0] += cmp->npre_total;
		cmp->counts.rows_owned[1] += cmp->npre_total;
	}
	for (int i = 0; i < 2; i++) {
		lists[i] = part[i].sorted;
		ns[i] = part[i].n;
	}
	recon_arena_reset(&cmp->skeys[0]);
	recon_arena_reset(&cmp->skeys[1]);
	cmp->diffs = merge_lists(lists, ns, &cmp->ndiffs, cmp->skeys);
	for (int i = 0; i < 2; i++) {
		lists[i] = part[i].psorted;
		ns[i] = part[i].npending;
	}
	cmp->pending = merge_lists(lists, ns, &cmp->npending, cmp->skeys);
	/* what the lists took, faulted in, for the arenas filled next (the lines) */
	for (int i = 0; i < 2; i++) {
		lend_buffer(cmp, part[i].sorted, part[i].n * sizeof(*part[i].sorted));
		lend_buffer(cmp, part[i].psorted, part[i].npending * sizeof(*part[i].psorted));
		lend_buffer(cmp, part[i].diffs, part[i].n * sizeof(*part[i].diffs));
		lend_buffer(cmp, part[i].pending, part[i].npending * sizeof(*part[i].pending));
	}
}

const struct recon_compare_counts *recon_compare_counts(const struct recon_compare *cmp)
{
	return &cmp->counts;
}

const struct recon_diff *recon_compare_diffs(const struct recon_compare *cmp, size_t *n)
{
	*n = cmp->ndiffs;
	return cmp->diffs;
}

const struct recon_diff *recon_compare_pending(const struct recon_compare *cmp, size_t *n)
{
	*n = cmp->npending;
	return cmp->pending;
}

int recon_compare_key_class(const struct recon_compare *cmp, const char *key, size_t len)
{
	const struct krec *r = find_key(cmp, key, len);

	return r ? rec_class(r) : -1;
}

/*
 * A refund or revocation whose payment matched in an earlier reconciled day
 * (no ledger row: a plain matched payment needs none) was judged against
 * "paid = the local amount". That assumption is written down as the payment
 * of the local row's day, so a rerun that drops this window's entries still
 * knows the order was paid; a rerun of that day replaces it with the truth.
 */
static void assumed_payment(const struct recon_compare *cmp, const struct keyent *k,
			    const struct upview *v, const struct recon_contrib *base,
			    void (*fn)(void *arg, const struct recon_contrib *c), void *arg)
{
	struct recon_contrib c = *base;
	int64_t start, end;

	/* an open item (an extra, say) means no earlier window matched a payment */
	if (v->payments || v->plain_amount || v->plain || k->item || k->n_local != 1 ||
	    k->local.time >= cmp->win.start || k->local.time < cmp->history_start)
		return;
	recon_tz_day_bounds(cmp->job->tz, recon_tz_day_of(cmp->job->tz, k->local.time), &start,
			    &end);
	if (start >= cmp->win.start)
		return;
	memset(&c.c, 0, sizeof(c.c));
	c.c.paid = k->local.amount;
	c.c.assumed = true;
	memcpy(c.c.currency, k->local.currency, 4);
	c.c.first = c.c.last = k->local.time;
	c.window_start = start;
	c.window_end = end;
	c.carried = true; /* the key has rows in two windows now */
	fn(arg, &c);
}

void recon_compare_contributions(struct recon_compare *cmp,
				 void (*fn)(void *arg, const struct recon_contrib *c), void *arg)
{
	struct keyent tmp;
	struct upview v;

	FOR_EACH_EVAL_REC(cmp, r, {
		const struct keyent *k;
		struct recon_contrib c;
		bool need;
		if (rec_class(r) < 0)
			continue; /* not evaluated, or a row was rejected */
		/* a plain match whose local row lies in the window: nothing to keep */
		if (rec_class(r) == RECON_CLASS_MATCHED && plain_in_window(cmp, r))
			continue;
		k = view(cmp, r, &tmp);
		if (!up_touched(k))
			continue; /* nothing of this window's upstream */
		up_view(cmp, k, &v);
		int64_t order = order_amount(&v, k);
		bool partial = !v.revoked && v.refunded > 0 && v.refunded < order;
		/* refunds and revocations are entries a later window builds on; a plain
		   row is the whole order in its status, replaced by a later one */
		need = rec_class(r) != RECON_CLASS_MATCHED || k->carried || k->item ||
		       (!k->up_plain && (k->refunded > 0 || k->up_revoked || partial)) ||
		       !local_touched(cmp, k);
		if (!need)
			continue;
		memset(&c, 0, sizeof(c));
		c.key = key_out(cmp, &cmp->ckeys, r, &c.key_len);
		c.klass = rec_class(r);
		c.partial = partial;
		c.carried = k->carried;
		c.c.paid = k->paid;
		c.c.refunded = k->refunded;
		c.c.payments = k->n_payment;
		c.c.entries = k->n_up;
		c.c.revoked = k->up_revoked;
		c.c.pending = k->up_pending;
		c.c.conflict = k->up_currency_conflict;
		c.c.duplicate = k->up_dup;
		c.c.plain = k->up_plain;
		memcpy(c.c.currency, k->up_currency, 4);
		c.c.first = k->up_first;
		c.c.last = k->up_last;
		fn(arg, &c);
		assumed_payment(cmp, k, &v, &c, fn, arg);
	});
}
