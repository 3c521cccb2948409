/*
 * compare_internal: what recon_compare.c (the join tables, the folds, the
 * classification) and compare_feed.c (feeding both sides on two threads)
 * share. Not a public header: nothing outside those two files includes it.
 *
 * Keys split into nparts partitions by their hash's top 32 bits (part_of);
 * a partition is a table of (tag, record reference) slots. The records
 * themselves live in two stores, one per writer (the thread building a
 * partition writes its new records to its own store): a record reference
 * names its store in its top bit. Feeding on two threads stages each row in
 * its partition's stream and builds the partitions once both sides are
 * read, each in the cache (compare_feed.c).
 */
#ifndef RECON_COMPARE_INTERNAL_H
#define RECON_COMPARE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recon_compare.h"
#include "recon_mem.h"

/* Writers (threads that build partitions): a record reference's top bit names its store. */
#define NWRITERS       2
#define REF_STORE(ref) ((ref) >> 31)
#define REF_IN(ref)    ((ref)&0x7fffffffu)

/*
 * Blocks: the staged rows' and the records' unit of memory. A block a
 * partition's build has read becomes a record chunk of that builder's store:
 * the records of a window take the memory its staged rows leave.
 */
#define BLOCK_BITS 15
#define BLOCK	   ((size_t)1 << BLOCK_BITS)

/* Fresh blocks come from slabs (mmap'd, prefaulted at once); freed ones are listed per writer. */
struct pool {
	unsigned char *cur, *end; /* the slab being carved */
	void *free;		  /* freed blocks, linked through their first word */
	size_t next_slab;	  /* bytes of the next slab (doubles up to cmp->slab_max) */
};

/* Chunked storage addressed by 32-bit references (0: none). */
struct store {
	char **chunk;
	size_t *used;
	size_t n, alloc;
	unsigned shift;	   /* log2 of the unit: 3 (records) or 2 (ids) */
	unsigned bits;	   /* log2 of a chunk's size */
	unsigned refbits;  /* bits of a reference (31 for records: the top one is the store) */
	uint32_t refbase;  /* ORed into every reference handed out */
	struct pool *pool; /* where chunks come from (blocks); NULL: big allocations */
};

static inline void *store_at(const struct store *s, uint32_t ref)
{
	return s->chunk[ref >> (s->bits - s->shift)] +
	       ((size_t)(ref & ((1u << (s->bits - s->shift)) - 1)) << s->shift);
}

/*
 * Open addressing, linear probing; ref 0 marks an empty slot. A tag's home
 * slot is its fraction of the capacity (tag * cap / 2^32), so the capacity
 * need not be a power of two: a table is sized to its keys (at most 0.7
 * full), not to the next power of two (up to 2x the memory).
 */
struct slot {
	uint32_t h;
	uint32_t ref;
};

struct slots {
	struct slot *v;
	size_t cap; /* at most 2^32 */
	size_t n;
};

static inline size_t slot_home(const struct slots *t, uint32_t tag)
{
	return (size_t)(((uint64_t)tag * t->cap) >> 32);
}

static inline size_t slot_next(const struct slots *t, size_t i)
{
	return i + 1 == t->cap ? 0 : i + 1;
}

/*
 * A partition's table: the same slots, in segments of one block each (taken
 * from its builder's pool: the blocks its staged rows leave), so that
 * building a partition allocates no fresh memory. cap 0: nothing yet.
 */
#define SEG_SLOTS (BLOCK / sizeof(struct slot))
struct ptable {
	struct slot **seg;
	size_t cap, n, nseg;
};

static inline struct slot *pt_at(const struct ptable *t, size_t i)
{
	return &t->seg[i / SEG_SLOTS][i % SEG_SLOTS];
}

static inline size_t pt_home(const struct ptable *t, uint32_t tag)
{
	return (size_t)(((uint64_t)tag * t->cap) >> 32);
}

static inline size_t pt_next(const struct ptable *t, size_t i)
{
	return i + 1 == t->cap ? 0 : i + 1;
}

/* A table of pointers (idents of widened keys: rare). */
struct table {
	void **slot;
	size_t cap; /* power of two; 0 until first used */
	size_t n;
};

struct part {
	struct ptable keys;
	struct table idents;
	unsigned w; /* the writer whose store and arena take its new records and keyents */
};

/*
 * Speculating that no statement entry is listed twice (recon_compare_speculate_ids):
 * each entry's id leaves a 64-bit fingerprint in one of FP_BUCKETS vectors
 * (by its top bits), appended in read order, instead of a probe into a table
 * of every id far bigger than the caches. After the read each bucket is
 * checked on its own, in a table that stays in the cache.
 */
#define FP_BITS	   8
#define FP_BUCKETS (1u << FP_BITS)
struct fpbucket {
	uint64_t *v;
	size_t n, alloc;
};

/* Record references, appended (struct recon_compare's lists of records to evaluate). */
struct reflist {
	uint32_t *v;
	size_t n, alloc;
};

/*
 * Keys inside the compare take a shorter form (kform_put()): the length of
 * the key's common prefix with a reference key, as one byte, then the rest
 * of the key. The reference is the first key the compare meets, whichever
 * thread meets it (at most KREF_MAX bytes of it); set once (state 2), it
 * never changes, so equal keys have equal forms and unequal keys unequal
 * ones. Order numbers of one merchant share a long prefix (a letter code and
 * a date, a shop number): "ORD20240301001020700" is kept as 8 bytes, not 20,
 * in every staged row and record. What leaves the compare (differences,
 * lookups, contributions) has the key whole again (kform_get()).
 */
#define KREF_MAX 255
/* Room on the stack for most keys' forms; longer ones go to the heap. */
#define KFORM_STACK 256
struct kref {
	atomic_int state; /* 0: none yet, 1: being set, 2: set */
	uint8_t len;
	char s[KREF_MAX];
};

struct recon_compare {
	const struct recon_job *job;
	struct recon_window win;
	int64_t now;
	bool upstream_is_statement;
	int64_t tbase, tlo, thi;  /* narrow times: tbase + int32 */
	struct recon_arena arena; /* recon_compare_arena(): the caller's */
	/* the differences' keys, side by side (by classifying thread), then copied in key
	   order as the lists are merged (skeys): rendered, recorded and acted on from there,
	   in order, not from records spread over the whole window */
	struct recon_arena dkeys[2], skeys[2]; /* skeys: a merge's halves (merge_lists) */
	struct recon_arena pkeys, ckeys; /* the lookups' keys (per call), the contributions' */
	struct part *part;
	size_t nparts;
	struct store recs[NWRITERS];   /* records; writer w's references have top bit w */
	struct store kstore[NWRITERS]; /* keyents and idents of widened keys, per writer */
	struct pool pool[NWRITERS];
	void **slabs;	 /* every slab, unmapped by recon_compare_free() */
	size_t slab_max; /* bytes of the biggest slab (recon_compare_reserve) */
	void *spare; /* a slab of slab_max bytes faulted in ahead (recon_compare_prefault), under mu
		      */
	/* the blocks the builds left unused, and the classification's lists once merged, lent to
	   the post-read arenas (recon_compare_donor) */
	void *recycled; /* linked through their first word, under recycle_mu */
	void **lent;	/* buffers lent to the arenas as well (lend_buffer), freed last */
	size_t nlent, alent;
	pthread_mutex_t recycle_mu;
	struct recon_donor donor;
	/*
	 * Prematched (the feeders' builds): each builder, a partition once built
	 * (in the cache), marks its plain matches whose local row lies in the
	 * window matched (npre) and lists every other record (listed). Once the
	 * build is over (pre_on), a record created or changed is listed in
	 * touched, a prematched one taken off the count. Classification, the
	 * lookups and the contributions then visit the lists, not every record:
	 * what they would do for a prematched record is known (matched; no lookup;
	 * nothing to keep).
	 */
	struct reflist listed[NWRITERS], touched;
	uint64_t npre[NWRITERS], npre_total;
	bool pre_on;
	bool pre_off; /* a record was made outside the feeders' builds: every record is visited */
	int (*on_wait)(void *arg, int side); /* recon_compare_on_wait */
	void *on_wait_arg;
	size_t *slab_len;
	size_t nslabs, aslabs;
	struct slots ids; /* entry ids seen upstream: packed in idstore */
	struct store idstore;
	/* speculative duplicate check (recon_compare_speculate_ids) */
	bool speculate;
	bool ids_checked, ids_distinct; /* recon_compare_ids_distinct() ran: its answer */
	bool spec_dup; /* a builder found two speculated entries of a key with one fingerprint */
	struct fpbucket fps[FP_BUCKETS];
	/* feeding on threads (compare_feed.c), under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct recon_compare_feeder *feeder[2]; /* by side */
	int nfeeders, fed, built;
	atomic_size_t next_part; /* the next partition a builder takes */
	const char **pend_keys;
	uint32_t *pend_lens;
	size_t apend;
	struct recon_diff *diffs;
	size_t ndiffs;
	struct recon_diff *pending; /* awaiting and in flight */
	size_t npending;
	struct recon_compare_counts counts;
	int64_t history_start, horizon; /* recon_compare_horizon */
	struct kref kref;
};

/* The partition of a hash: its top 32 bits' fraction of nparts. */
static inline size_t part_of(const struct recon_compare *cmp, uint64_t h)
{
	return (size_t)(((h >> 32) * cmp->nparts) >> 32);
}

/*
 * Whether a row's amount, time, line and currency (cur: its cur_pack()) fit
 * a narrow record and a narrow staged row: 32 bits, 24 days of the window.
 */
static inline bool narrow_fits(const struct recon_compare *cmp, const struct recon_row *row,
			       uint16_t cur)
{
	return row->amount >= INT32_MIN && row->amount <= INT32_MAX && row->time >= cmp->tlo &&
	       row->time <= cmp->thi && row->line <= UINT32_MAX && cur;
}

/* Three uppercase ASCII letters in 15 bits; 0 when the code is anything else. */
static inline uint16_t cur_pack(const char *c)
{
	const unsigned a = (unsigned char)c[0] - 'A', b = (unsigned char)c[1] - 'A',
		       d = (unsigned char)c[2] - 'A';

	if (a > 25 || b > 25 || d > 25 || c[3])
		return 0;
	return (uint16_t)((a + 1) << 10 | (b + 1) << 5 | (d + 1));
}

static inline void cur_unpack(uint16_t v, char *c)
{
	if (!v) {
		memset(c, 0, 4);
		return;
	}
	c[0] = (char)('A' - 1 + (v >> 10 & 31));
	c[1] = (char)('A' - 1 + (v >> 5 & 31));
	c[2] = (char)('A' - 1 + (v & 31));
	c[3] = '\0';
}

/*
 * The last r (1..7) bytes of a string of `total` bytes ending at p + r, as a
 * little-endian word padded with zeros. A copy of r bytes into a zeroed word
 * stores them one by one and then reads the word back, which the store
 * buffer cannot forward (a stall of a dozen cycles, a third of staging a row
 * when it was one): here, one load of the 8 bytes that end where the string
 * ends, its first bytes (hashed already) shifted out. Shorter strings than 8
 * bytes are read with loads inside them.
 */
static inline uint64_t tail_word(const unsigned char *p, size_t r, size_t total)
{
	uint64_t w;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (total >= 8) {
		memcpy(&w, p + r - 8, 8);
		return w >> (8 * (8 - r));
	}
	if (r >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + r - 4, 4);
		return lo | (uint64_t)hi >> (8 * (8 - r)) << 32;
	}
	return (uint64_t)p[0] | (uint64_t)p[r / 2] << (8 * (r / 2)) |
	       (uint64_t)p[r - 1] << (8 * (r - 1));
#else
	(void)total;
	w = 0;
	for (size_t i = 0; i < r; i++)
		w |= (uint64_t)p[i] << (8 * i);
	return w;
#endif
}

/* key_hash()'s steps: its start for n bytes, one word in, the final avalanche (murmur3 fmix64). */
static inline uint64_t hash_start(size_t n)
{
	return 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
}

static inline uint64_t hash_word(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
	return h ^ h >> 29;
}

static inline uint64_t hash_end(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ h >> 33;
}

/* 64-bit hash of a key, 8 bytes at a time (the last ones as tail_word()), then an avalanche. */
static inline uint64_t key_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	const size_t total = n;
	uint64_t h = hash_start(n), w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = hash_word(h, w);
	}
	if (n)
		h = hash_word(h, tail_word(p, n, total));
	return hash_end(h);
}

/*
 * Room for the form of a key of len bytes: buf (KFORM_STACK bytes) when it
 * fits, else the heap; kform_free() gives it back.
 */
static inline char *kform_room(char *buf, size_t len)
{
	return len < KFORM_STACK ? buf : recon_xmalloc(len + 1);
}

static inline void kform_free(char *f, const char *buf)
{
	if (f != buf)
		free(f);
}

/* Sets cmp's reference key from key, unless another thread did (struct kref). */
void recon_compare_kref_set(struct recon_compare *cmp, const char *key, size_t len);

/* Bytes at the start of a and b that are equal (n: the shorter's length). */
static inline size_t prefix_len(const char *a, const char *b, size_t n)
{
	size_t i = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t u, v;

	for (; i + 8 <= n; i += 8) {
		memcpy(&u, a + i, 8);
		memcpy(&v, b + i, 8);
		if (u != v)
			return i + (size_t)__builtin_ctzll(u ^ v) / 8;
	}
#endif
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* How many bytes key shares with the reference (its form's first byte); the first key sets it. */
static inline size_t kform_prefix(struct recon_compare *cmp, const char *key, size_t len)
{
	if (atomic_load_explicit(&cmp->kref.state, memory_order_acquire) != 2)
		recon_compare_kref_set(cmp, key, len);
	return prefix_len(cmp->kref.s, key, len < cmp->kref.len ? len : cmp->kref.len);
}

/* Writes the form of key, which shares p bytes with the reference, to out (len - p + 1 bytes). */
static inline void kform_write(const char *key, size_t len, size_t p, char *out)
{
	out[0] = (char)(unsigned char)p;
	recon_copy_short(out + 1, key + p, len - p);
}

/*
 * Writes key's form (struct kref) to out, which has room for len + 1 bytes;
 * returns its length.
 */
static inline size_t kform_put(struct recon_compare *cmp, const char *key, size_t len, char *out)
{
	const size_t p = kform_prefix(cmp, key, len);

	kform_write(key, len, p, out);
	return len - p + 1;
}

/*
 * key_hash() of the form of key, which shares p bytes with the reference,
 * read from the key itself: with p > 0 the form is the key from byte p - 1
 * on, that byte replaced by p. A form written out and hashed at once is read
 * back across the stores that wrote it, which the store buffer cannot
 * forward (a stall on every row).
 */
static inline uint64_t kform_hash(const char *key, size_t len, size_t p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (p) {
		const unsigned char *s = (const unsigned char *)key + p - 1;
		const size_t total = len - p + 1;
		size_t n = total;
		uint64_t h = hash_start(n), w;

		if (n >= 8) {
			memcpy(&w, s, 8);
			h = hash_word(h, (w & ~(uint64_t)0xff) | p);
			for (s += 8, n -= 8; n >= 8; s += 8, n -= 8) {
				memcpy(&w, s, 8);
				h = hash_word(h, w);
			}
			if (n) /* its 8 bytes lie past the form's first */
				h = hash_word(h, tail_word(s, n, total));
		} else if (n >= 4) { /* tail_word()'s two loads of 4, the first byte replaced */
			uint32_t lo, hi;
			memcpy(&lo, s, 4);
			memcpy(&hi, s + n - 4, 4);
			lo = (lo & ~(uint32_t)0xff) | (uint32_t)p;
			if (n == 4)
				hi = lo;
			h = hash_word(h, lo | (uint64_t)hi >> (8 * (8 - n)) << 32);
		} else { /* tail_word()'s three bytes */
			const uint64_t b0 = p, bm = n / 2 ? s[n / 2] : p, bl = n > 1 ? s[n - 1] : p;
			h = hash_word(h, b0 | bm << (8 * (n / 2)) | bl << (8 * (n - 1)));
		}
		return hash_end(h);
	}
#endif
	char buf[KFORM_STACK], *f = kform_room(buf, len);
	uint64_t h;

	kform_write(key, len, p, f);
	h = key_hash(f, len - p + 1);
	kform_free(f, buf);
	return h;
}

/* The length of the key whose form is kf (n bytes). */
static inline size_t kform_len(const char *kf, size_t n)
{
	return (unsigned char)kf[0] + n - 1;
}

/* Writes the key whose form is kf (n bytes) to out (kform_len() bytes). */
static inline void kform_get(const struct recon_compare *cmp, const char *kf, size_t n, char *out)
{
	const size_t p = (unsigned char)kf[0];

	memcpy(out, cmp->kref.s, p);
	memcpy(out + p, kf + 1, n - 1);
}

/*
 * A row whose key is in the compare's form: a copy of row in *er, its key in
 * buf (KFORM_STACK bytes) when it fits, else in *heap (for the caller to
 * free; NULL otherwise).
 */
static inline const struct recon_row *kform_row(struct recon_compare *cmp,
						const struct recon_row *row, struct recon_row *er,
						char *buf, char **heap)
{
	char *out = kform_room(buf, row->key_len);

	*heap = out != buf ? out : NULL;
	*er = *row;
	er->key = out;
	er->key_len = (uint32_t)kform_put(cmp, row->key, row->key_len, out);
	return er;
}

/* a == b for short byte strings (keys, packed ids): no call, 8 bytes at a time */
static inline bool bytes_eq(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	uint64_t u, v;

	for (; n >= 8; x += 8, y += 8, n -= 8) {
		memcpy(&u, x, 8);
		memcpy(&v, y, 8);
		if (u != v)
			return false;
	}
	for (; n; x++, y++, n--)
		if (*x != *y)
			return false;
	return true;
}

/* Bytes recon_compare_id_pack() may write for a row. */
static inline size_t id_pack_max(const struct recon_row *row)
{
	return recon_st_add(recon_st_add(row->entry_id_len, row->key_len), 16);
}

/*
 * The fingerprint of an entry (key, type and id); equal entries have equal ones.
 * kh: key_hash() of the row's key, which the caller has already.
 */
static inline uint64_t id_fingerprint(const struct recon_row *row, uint64_t kh)
{
	return key_hash(row->entry_id, row->entry_id_len) ^
	       ((uint64_t)row->entry + 1) * 0x9e3779b97f4a7c15ULL ^ (kh * 0xd6e8feb86659fd93ULL);
}

/* ---- recon_compare.c's, for the feeders ---- */

/*
 * Applies a row of `side` to its key in partition p (h: key_hash() of its key).
 * iddup (upstream): 1 the entry id was seen before, 0 it was not, -1 the row has
 * no entry id. The caller is the partition's only writer.
 */
void recon_compare_apply_row(struct recon_compare *cmp, struct part *p, int side, uint64_t h,
			     const struct recon_row *row, int iddup);

/* A staged row's narrow fields (compare_feed.c), in the form a narrow record keeps them. */
struct recon_narrow {
	int32_t amount;
	int32_t time; /* ms from cmp->tbase */
	uint32_t line;
	uint16_t cur; /* cur_pack(), not 0 */
	uint8_t status, entry, flags;
	bool fp_set; /* a speculated entry: fp32 is its fingerprint */
	uint32_t fp32;
};

/*
 * The build's common rows straight from their narrow form: a local row
 * reaching a record that has none, a statement entry with an entry id (seen
 * first, or speculated) that is its key's first. Equals applying the row with
 * recon_compare_apply_row() (or _apply_up_spec() for a speculated entry).
 * false, having changed nothing but maybe created the key's empty record, for
 * any other row: the caller applies it in full.
 */
bool recon_compare_apply_narrow(struct recon_compare *cmp, struct part *p, int side, uint64_t h,
				const char *key, size_t len, const struct recon_narrow *n);
/* Where writer w's next record goes: recon_compare_prematch() looks from there. */
struct recmark {
	size_t c, o; /* chunk, offset */
};
void recon_compare_rec_mark(const struct recon_compare *cmp, unsigned w, struct recmark *m);
/*
 * Writer w's records from m on (a partition just built, both sides in):
 * prematches the plain matches, lists the others (struct recon_compare's
 * listed).
 */
void recon_compare_prematch(struct recon_compare *cmp, unsigned w, const struct recmark *m);
/* Marks the key of a rejected row of `side` in partition p. */
void recon_compare_reject_key(struct recon_compare *cmp, struct part *p, int side,
			      const struct recon_row *row, uint64_t h);
/* Sizes partition p's table for n keys (before its build, by the writer p->w). */
void recon_compare_part_reserve(struct recon_compare *cmp, struct part *p, uint64_t n);
/* A block of BLOCK bytes (page aligned) from writer w's pool; lives until recon_compare_free(). */
void *recon_compare_block(struct recon_compare *cmp, unsigned w);
/*
 * Waits on cmp->cv (mu held) for at most ms milliseconds; every wait on it
 * is bounded and its condition looked at again after. A run once hung with
 * both threads in untimed waits on cmp->cv while the counters said neither
 * should wait (model_ledger, one run in ~1,700): a wake-up was lost, as
 * Debian 12's glibc (2.36) can lose one (sourceware bug 25847). A bound turns
 * such a loss into a 20 ms delay.
 */
#define RECON_COMPARE_WAIT_MS 20
void recon_compare_wait(struct recon_compare *cmp, long ms);
/*
 * While more(cmp) (called under mu) says so, keeps one slab faulted in ahead
 * for the next pool that needs one: a thread done reading takes over the
 * kernel's zeroing of fresh memory (most of a feeder's system time) from the
 * one still reading. Returns once more() is false (a cv broadcast wakes it).
 */
void recon_compare_prefault(struct recon_compare *cmp, int side,
			    bool (*more)(struct recon_compare *cmp));
/*
 * Writer w's free blocks, and the slab faulted in ahead that nobody took,
 * go to the post-read arenas (recon_compare_donor): faulted in already, they
 * spare those arenas fresh memory.
 */
void recon_compare_pool_release(struct recon_compare *cmp, unsigned w);
/* Gives a block back to writer w's pool. */
void recon_compare_block_put(struct recon_compare *cmp, unsigned w, void *b);
/* Packs (entry, key, id) into out (at least id_pack_max() bytes); returns its length. */
size_t recon_compare_id_pack(uint8_t entry, const char *key, uint32_t klen, const char *id,
			     size_t len, unsigned char *out);
/* Records the entry id of an upstream row; true when it was seen before (a duplicate). */
bool recon_compare_id_seen(struct recon_compare *cmp, const struct recon_row *row);
/* The same for an id packed already, h its key_hash(); true when seen before. */
bool recon_compare_id_seen_packed(struct recon_compare *cmp, const unsigned char *pk, size_t n,
				  uint64_t h);
/* A speculated entry's fingerprint and its record, for the builders' duplicate check. */
struct recon_fppair {
	const void *rec;
	uint64_t fp;
};
struct recon_fppairs {
	struct recon_fppair *v;
	size_t n, alloc;
};
/*
 * Applies a statement row during a partition's build, before its local rows,
 * when speculating: a speculated entry (iddup 0, fingerprint fp) or a row
 * without an id (iddup -1); fps collects what recon_compare_fppairs_distinct()
 * checks once the partition's statement rows are in.
 */
void recon_compare_apply_up_spec(struct recon_compare *cmp, struct part *p, uint64_t h,
				 const struct recon_row *row, int iddup, uint64_t fp,
				 struct recon_fppairs *fps);
/* Whether no record holds two entries with one fingerprint in fps; empties fps. */
bool recon_compare_fppairs_distinct(struct recon_fppairs *fps);
/* Appends a speculated entry's fingerprint (recon_compare_speculate_ids). */
void recon_compare_fp_add(struct recon_compare *cmp, uint64_t fp);

#endif
