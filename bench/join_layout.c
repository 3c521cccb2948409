/*
 * join_layout: what the hash join's memory layout costs, away from recon.
 * Not part of recon; a measurement for issue 17 (bench/README.md).
 *
 *   join_layout N [RADIX_BITS [BUFFER_ROWS [ROUNDS]]]   (10M, 10, 1M, 5)
 *
 * N keys of 20 bytes, each side a shuffle of its own. Two layouts of the same
 * table (32-bit tag + 32-bit record reference per slot, 72-byte records with
 * the key inline, as recon_compare.c keeps them):
 *   flat:  one slot table and one record store in arrival order (recon today);
 *   radix: 2^RADIX_BITS sub-tables, each with its own slots and records, and
 *          the rows of each side buffered BUFFER_ROWS at a time, copied into
 *          sub-table order (a stable counting sort: a key's rows stay in
 *          order), then applied sub-table by sub-table, so that a buffer's
 *          touches of one sub-table fall in a few hundred kilobytes.
 * Both insert side 1, then find-and-update with side 2, prefetching ahead as
 * compare_feed.c does, on one thread, the layouts interleaved round by round;
 * prints ns per row for each side and the median ratio radix/flat.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_LEN 20
#define AHEAD	64

struct rec {
	int64_t a1, a2;
	int32_t t1, t2;
	uint32_t l1, l2;
	uint16_t key_len;
	uint8_t fl, k1, k2, klass;
	uint16_t c1, c2;
	char key[KEY_LEN + 4]; /* 44 + 24 -> 72 bytes with padding */
};

struct slot {
	uint32_t tag, ref; /* ref: index + 1 into the sub-table's records */
};

struct sub {
	struct slot *v;
	size_t cap, n;
	struct rec *r;
	size_t nr, ar;
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t key_hash(const char *k)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL, w;

	for (int i = 0; i < KEY_LEN; i += 8) {
		w = 0;
		memcpy(&w, k + i, KEY_LEN - i < 8 ? (size_t)(KEY_LEN - i) : 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
	}
	return mix(h);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t home(const struct sub *s, uint32_t tag)
{
	return (size_t)(((uint64_t)tag * s->cap) >> 32);
}

static void prefetch(const struct sub *s, uint64_t h, int side)
{
	const struct slot *v = &s->v[home(s, (uint32_t)h)];

	__builtin_prefetch(v);
	if (side == 2 && v->ref && v->tag == (uint32_t)h) {
		const char *r = (const char *)&s->r[v->ref - 1];
		__builtin_prefetch(r);
		__builtin_prefetch(r + 64);
	}
}

static void apply(struct sub *s, const char *key, uint64_t h, int side, int64_t amount)
{
	uint32_t tag = (uint32_t)h;
	size_t i = home(s, tag);

	for (; s->v[i].ref; i = i + 1 == s->cap ? 0 : i + 1) {
		struct rec *r = &s->r[s->v[i].ref - 1];
		if (s->v[i].tag == tag && !memcmp(r->key, key, KEY_LEN)) {
			if (side == 1)
				r->a1 += amount;
			else
				r->a2 = amount, r->fl |= 2;
			return;
		}
	}
	if (s->nr == s->ar) {
		fprintf(stderr, "sub-table full\n");
		exit(1);
	}
	struct rec *r = &s->r[s->nr++];
	memset(r, 0, sizeof(*r));
	memcpy(r->key, key, KEY_LEN);
	r->key_len = KEY_LEN;
	if (side == 1)
		r->a1 = amount, r->fl = 1;
	else
		r->a2 = amount, r->fl = 2;
	s->v[i].tag = tag;
	s->v[i].ref = (uint32_t)s->nr;
	s->n++;
}

/* Applies rows [0, n) of one side to the sub-tables, in the order given by idx. */
static void apply_rows(struct sub *subs, unsigned bits, const char (*keys)[KEY_LEN],
		       const uint64_t *hs, const uint32_t *idx, size_t n, int side)
{
	for (size_t j = 0; j < n; j++) {
		if (j + AHEAD < n) {
			uint64_t h = hs[idx[j + AHEAD]];
			__builtin_prefetch(&subs[bits ? h >> (64 - bits) : 0].v[home(
			    &subs[bits ? h >> (64 - bits) : 0], (uint32_t)h)]);
		}
		if (j + AHEAD / 2 < n) {
			uint64_t h = hs[idx[j + AHEAD / 2]];
			prefetch(&subs[bits ? h >> (64 - bits) : 0], h, side);
		}
		uint64_t h = hs[idx[j]];
		apply(&subs[bits ? h >> (64 - bits) : 0], keys[idx[j]], h, side, (int64_t)idx[j]);
	}
}

static double run_side(struct sub *subs, unsigned bits, size_t buffer,
		       const char (*all)[KEY_LEN], const uint32_t *order, size_t n, int side)
{
	size_t nsub = (size_t)1 << bits;
	/* the side's rows as the reader hands them over: in arrival order */
	char(*keys)[KEY_LEN] = malloc(n * KEY_LEN);
	uint64_t *hs = malloc(n * sizeof(*hs));
	uint32_t *idx = malloc((buffer ? buffer : n) * sizeof(*idx));
	size_t *cnt = calloc(nsub + 1, sizeof(*cnt));
	size_t sb = buffer ? buffer : n;
	char(*skeys)[KEY_LEN] = malloc(sb * KEY_LEN);
	uint64_t *shs = malloc(sb * sizeof(*shs));

	memset(skeys, 0, sb * KEY_LEN);
	memset(shs, 0, sb * sizeof(*shs));
	for (size_t i = 0; i < n; i++) {
		memcpy(keys[i], all[order[i]], KEY_LEN);
		hs[i] = key_hash(keys[i]);
	}
	memset(idx, 0, (buffer ? buffer : n) * sizeof(*idx));
	double t0 = now_s();
	for (size_t at = 0; at < n;) {
		size_t m = buffer && n - at > buffer ? buffer : n - at;
		if (!bits) {
			for (size_t j = 0; j < m; j++)
				idx[j] = (uint32_t)(at + j);
		} else {
			memset(cnt, 0, (nsub + 1) * sizeof(*cnt));
			for (size_t j = 0; j < m; j++)
				cnt[(hs[at + j] >> (64 - bits)) + 1]++;
			for (size_t b = 1; b <= nsub; b++)
				cnt[b] += cnt[b - 1];
			/* scattered into sub-table order (rows copied, as a radix pass would) */
			for (size_t j = 0; j < m; j++) {
				size_t to = cnt[hs[at + j] >> (64 - bits)]++;
				memcpy(skeys[to], keys[at + j], KEY_LEN);
				shs[to] = hs[at + j];
			}
			for (size_t j = 0; j < m; j++)
				idx[j] = (uint32_t)j;
			apply_rows(subs, bits, (const char(*)[KEY_LEN])skeys, shs, idx, m, side);
			at += m;
			continue;
		}
		apply_rows(subs, bits, (const char(*)[KEY_LEN])keys, hs, idx, m, side);
		at += m;
	}
	double t = now_s() - t0;
	free(keys);
	free(skeys);
	free(shs);
	free(hs);
	free(idx);
	free(cnt);
	return t;
}

static void shuffle(uint32_t *v, size_t n, uint64_t *seed)
{
	for (size_t i = n; i > 1; i--) {
		*seed = mix(*seed + 0x9e3779b97f4a7c15ULL);
		size_t j = (size_t)(*seed % i);
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

struct result {
	double insert, find;
};

/* One layout, both sides, on fresh tables faulted in beforehand. */
static struct result one(unsigned bits, size_t buffer, const char (*keys)[KEY_LEN],
			 const uint32_t *o1, const uint32_t *o2, size_t n)
{
	size_t nsub = (size_t)1 << bits, matched = 0;
	struct sub *subs = calloc(nsub, sizeof(*subs));
	struct result res;

	/* each sub-table sized for its share with slack (hash shares vary by ~sqrt) */
	for (size_t b = 0; b < nsub; b++) {
		size_t share = n / nsub + 6 * (size_t)__builtin_sqrt((double)(n / nsub)) + 64;
		subs[b].cap = share * 10 / 7 + 1;
		subs[b].v = malloc(subs[b].cap * sizeof(struct slot));
		memset(subs[b].v, 0, subs[b].cap * sizeof(struct slot));
		subs[b].ar = share;
		subs[b].r = malloc(share * sizeof(struct rec));
		memset(subs[b].r, 0, share * sizeof(struct rec)); /* faulted in: recon populates */
	}
	res.insert = run_side(subs, bits, buffer, keys, o1, n, 1) * 1e9 / (double)n;
	res.find = run_side(subs, bits, buffer, keys, o2, n, 2) * 1e9 / (double)n;
	for (size_t b = 0; b < nsub; b++) {
		for (size_t i = 0; i < subs[b].nr; i++)
			matched += subs[b].r[i].fl == 3;
		free(subs[b].v);
		free(subs[b].r);
	}
	free(subs);
	if (matched != n) {
		fprintf(stderr, "join_layout: %zu of %zu keys matched\n", matched, n);
		exit(1);
	}
	return res;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	unsigned bits = argc > 2 ? (unsigned)atoi(argv[2]) : 10;
	size_t buffer = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000000;
	int rounds = argc > 4 ? atoi(argv[4]) : 5;
	char(*keys)[KEY_LEN] = malloc(n * KEY_LEN);
	uint32_t *o1 = malloc(n * sizeof(*o1)), *o2 = malloc(n * sizeof(*o2));
	double ri[64], rf[64], fi[64], ff[64];
	uint64_t seed = 42;

	if (rounds < 1 || rounds > 64 || bits < 1 || bits > 16 || !buffer) {
		fprintf(stderr, "usage: join_layout N [RADIX_BITS [BUFFER_ROWS [ROUNDS]]]\n");
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		char b[32];
		snprintf(b, sizeof(b), "ORD2024030%010zu", i);
		memcpy(keys[i], b, KEY_LEN);
		o1[i] = o2[i] = (uint32_t)i;
	}
	shuffle(o1, n, &seed);
	shuffle(o2, n, &seed);
	/* interleaved in one process: the machine's noise hits both layouts alike */
	for (int r = 0; r < rounds; r++) {
		struct result f = one(0, 0, (const char(*)[KEY_LEN])keys, o1, o2, n);
		struct result x = one(bits, buffer, (const char(*)[KEY_LEN])keys, o1, o2, n);
		printf("round %d: flat insert %.1f find %.1f ns/row; radix insert %.1f find %.1f "
		       "ns/row\n",
		       r + 1, f.insert, f.find, x.insert, x.find);
		fi[r] = f.insert, ff[r] = f.find, ri[r] = x.insert / f.insert,
		rf[r] = x.find / f.find;
	}
	printf("n %zu, radix %u bits, buffer %zu rows, %d rounds: flat insert %.1f find %.1f "
	       "ns/row (medians); radix/flat median ratio: insert %.2f, find+update %.2f\n",
	       n, bits, buffer, rounds, median(fi, rounds), median(ff, rounds),
	       median(ri, rounds), median(rf, rounds));
	return 0;
}
