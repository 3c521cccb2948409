/*
 * compare_internal: what recon_compare.c (the join tables, the folds, the
 * classification) and compare_feed.c (feeding both sides on two threads)
 * share. Not a public header: nothing outside those two files includes it.
 *
 * Keys split into NPART partitions by their hash's top 32 bits; a partition
 * is a table of (tag, record reference) slots and the records' chunked
 * store. Feeding on two threads: feeder s owns partition s and is its only
 * writer while the feeders run (compare_feed.c says how rows change hands).
 */
#ifndef RECON_COMPARE_INTERNAL_H
#define RECON_COMPARE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "recon_compare.h"
#include "recon_mem.h"

#define NPART 2
/* Partition 0 holds the hashes whose top 32 bits are below cmp->split (recon_compare_balance). */
#define PART_OF(cmp, h) ((int)((uint32_t)((h) >> 32) >= (cmp)->split))

/* Chunked storage addressed by 32-bit references (0: none). */
#define CHUNK_BITS  21
#define STORE_CHUNK ((size_t)1 << CHUNK_BITS)
struct store {
	char **chunk;
	size_t *used;
	size_t n, alloc;
	unsigned shift; /* log2 of the unit: 3 (records) or 2 (ids) */
};

static inline void *store_at(const struct store *s, uint32_t ref)
{
	return s->chunk[ref >> (CHUNK_BITS - s->shift)] +
	       ((size_t)(ref & ((1u << (CHUNK_BITS - s->shift)) - 1)) << s->shift);
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

/* A table of pointers (idents of widened keys: rare). */
struct table {
	void **slot;
	size_t cap; /* power of two */
	size_t n;
};

struct part {
	struct slots keys;
	struct store recs;
	struct recon_arena arena; /* keyents and idents of widened keys */
	struct table idents;
	/* the exchange: batches for this partition (under recon_compare.mu) */
	struct batch *inbox, *inbox_tail;
	size_t inbox_n;
	bool feeding; /* a feeder owns the partition */
	bool ended;   /* ...and sends no more rows */
	bool gone;    /* ...and no longer applies any: others may write the partition */
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

struct batch {
	struct batch *next;
	size_t len;
	unsigned char data[256u << 10];
};

struct recon_compare {
	const struct recon_job *job;
	struct recon_window win;
	int64_t now;
	bool upstream_is_statement;
	int64_t tbase, tlo, thi;  /* narrow times: tbase + int32 */
	uint32_t split;		  /* partition of a hash: PART_OF */
	struct recon_arena arena; /* recon_compare_arena(): the caller's */
	struct part part[NPART];
	struct slots ids; /* entry ids seen upstream: packed in idstore */
	struct store idstore;
	/* speculative duplicate check (recon_compare_speculate_ids) */
	bool speculate;
	bool ids_checked, ids_distinct; /* recon_compare_ids_distinct() ran: its answer */
	struct fpbucket fps[FP_BUCKETS];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *free_batches;
	const char **pend_keys;
	uint32_t *pend_lens;
	size_t apend;
	struct recon_diff *diffs;
	size_t ndiffs;
	struct recon_diff *pending; /* awaiting and in flight */
	size_t npending;
	struct recon_compare_counts counts;
	int64_t history_start, horizon; /* recon_compare_horizon */
};

/* 64-bit hash of a key, 8 bytes at a time, then a full avalanche (murmur3 fmix64). */
static inline uint64_t key_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL), w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
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
/* Marks the key of a rejected row of `side` in partition p. */
void recon_compare_reject_key(struct part *p, int side, const struct recon_row *row, uint64_t h);
/* Packs (entry, key, id) into out (at least id_pack_max() bytes); returns its length. */
size_t recon_compare_id_pack(uint8_t entry, const char *key, uint32_t klen, const char *id,
			     size_t len, unsigned char *out);
/* Records the entry id of an upstream row; true when it was seen before (a duplicate). */
bool recon_compare_id_seen(struct recon_compare *cmp, const struct recon_row *row);
/* The same for an id packed already, h its key_hash(); true when seen before. */
bool recon_compare_id_seen_packed(struct recon_compare *cmp, const unsigned char *pk, size_t n,
				  uint64_t h);
/* Appends a speculated entry's fingerprint (recon_compare_speculate_ids). */
void recon_compare_fp_add(struct recon_compare *cmp, uint64_t fp);

#endif
