#include "recon_sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_mem.h"

#ifdef RECON_HAVE_LIBCRYPTO
/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 for EVP, yet the same code and no allocation */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#endif

#define FILE_CHUNK (1u << 20) /* recon_sha256_file reads 1 MiB at a time */

/* ---- our own SHA-256 (the SHA extensions where the CPU has them) ---- */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHANI 1
#endif

/* FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* FIPS 180-4, 5.3.3: the initial hash value H(0). */
static const uint32_t H0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* FIPS 180-4, 6.2.2: one 512-bit block into the hash value. */
static void compress(uint32_t h[8], const unsigned char *block)
{
	uint32_t w[64];
	uint32_t a, b, c, d, e, f, g, hh;

	for (int t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	f = h[5];
	g = h[6];
	hh = h[7];
	for (int t = 0; t < 64; t++) {
		uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = hh + S1 + ch + K[t] + w[t];
		uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

#ifdef HAVE_SHANI
/*
 * The x86 SHA extensions (Intel SHA-NI, AMD Zen): about five times the
 * portable speed. A hash value is kept as ABEF and CDGH, the order
 * sha256rnds2 takes.
 */
#define SHANI __attribute__((target("sha,sse4.1,ssse3")))

SHANI static inline void shani_load(const uint32_t h[8], __m128i *abef, __m128i *cdgh)
{
	__m128i t = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
	__m128i s = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);

	t = _mm_shuffle_epi32(t, 0xB1);	     /* CDAB */
	s = _mm_shuffle_epi32(s, 0x1B);	     /* EFGH */
	*abef = _mm_alignr_epi8(t, s, 8);    /* ABEF */
	*cdgh = _mm_blend_epi16(s, t, 0xF0); /* CDGH */
}

SHANI static inline void shani_store(uint32_t h[8], __m128i abef, __m128i cdgh)
{
	__m128i t = _mm_shuffle_epi32(abef, 0x1B); /* FEBA */

	cdgh = _mm_shuffle_epi32(cdgh, 0xB1);					    /* DCHG */
	_mm_storeu_si128((__m128i *)(void *)&h[0], _mm_blend_epi16(t, cdgh, 0xF0)); /* DCBA */
	_mm_storeu_si128((__m128i *)(void *)&h[4], _mm_alignr_epi8(cdgh, t, 8));    /* HGFE */
}

/*
 * Four rounds (group g of 16) of a block whose first 16 bytes of group g are
 * at p (g < 4); m[] holds the last four message words' vectors. Inline and
 * unrolled: m[] stays in registers (twice the speed of a loop).
 */
#define SHANI_ROUNDS(g, p, m, s0, s1)                                                              \
	do {                                                                                       \
		__m128i t_, msg_;                                                                  \
		if ((g) < 4) {                                                                     \
			m[(g)] = _mm_shuffle_epi8(                                                 \
			    _mm_loadu_si128((const __m128i *)(const void *)((p) + 16 * (g))),      \
			    bswap);                                                                \
		} else {                                                                           \
			/* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], 4 at a time */      \
			t_ = _mm_sha256msg1_epu32(m[(g)&3], m[((g) + 1) & 3]);                     \
			t_ = _mm_add_epi32(                                                        \
			    t_, _mm_alignr_epi8(m[((g) + 3) & 3], m[((g) + 2) & 3], 4));           \
			m[(g)&3] = _mm_sha256msg2_epu32(t_, m[((g) + 3) & 3]);                     \
		}                                                                                  \
		msg_ = _mm_add_epi32(m[(g)&3],                                                     \
				     _mm_loadu_si128((const __m128i *)(const void *)&K[4 * (g)])); \
		s1 = _mm_sha256rnds2_epu32(s1, s0, msg_);                                          \
		msg_ = _mm_shuffle_epi32(msg_, 0x0E);                                              \
		s0 = _mm_sha256rnds2_epu32(s0, s1, msg_);                                          \
	} while (0)

SHANI static void compress_shani(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i s0, s1, m[4];

	shani_load(h, &s0, &s1);
	for (; nblocks; nblocks--, p += 64) {
		const __m128i abef = s0, cdgh = s1;
#pragma GCC unroll 16
		for (int g = 0; g < 16; g++)
			SHANI_ROUNDS(g, p, m, s0, s1);
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	shani_store(h, s0, s1);
}

/*
 * n blocks of two streams at once, their rounds interleaved: a round waits
 * for the one before it in its own stream only, so two streams fill the
 * latency one leaves idle (1.4x the bytes per second of one at a time here,
 * bench/README.md).
 */
SHANI static void compress_shani2(uint32_t ha[8], const unsigned char *p, uint32_t hb[8],
				  const unsigned char *q, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i s0, s1, u0, u1, m[4], n[4];

	shani_load(ha, &s0, &s1);
	shani_load(hb, &u0, &u1);
	for (; nblocks; nblocks--, p += 64, q += 64) {
		const __m128i abef = s0, cdgh = s1, abef2 = u0, cdgh2 = u1;
#pragma GCC unroll 16
		for (int g = 0; g < 16; g++) {
			SHANI_ROUNDS(g, p, m, s0, s1);
			SHANI_ROUNDS(g, q, n, u0, u1);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
		u0 = _mm_add_epi32(u0, abef2);
		u1 = _mm_add_epi32(u1, cdgh2);
	}
	shani_store(ha, s0, s1);
	shani_store(hb, u0, u1);
}

/* cpuid: SHA (leaf 7 EBX bit 29), SSE4.1 and SSSE3 (leaf 1 ECX bits 19 and 9). */
static bool cpu_has_shani(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)) || !(c & (1u << 9)))
		return false;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return (b & (1u << 29)) != 0;
}
#endif

/* Whether the SHA extensions are there; cpuid is asked once (a microsecond in a VM). */
static bool shani(void)
{
#ifdef HAVE_SHANI
	static atomic_int known; /* 0 not asked yet, 1 yes, 2 no */
	int k = atomic_load_explicit(&known, memory_order_relaxed);

	if (!k) {
		k = cpu_has_shani() ? 1 : 2;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 1;
#else
	return false;
#endif
}

static void compress_blocks(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
#ifdef HAVE_SHANI
	if (nblocks && shani()) {
		compress_shani(h, p, nblocks);
		return;
	}
#endif
	for (; nblocks; nblocks--, p += 64)
		compress(h, p);
}

static void own_init(struct recon_sha256 *c)
{
	memcpy(c->u.own.h, H0, sizeof(c->u.own.h));
	c->u.own.len = 0;
	c->u.own.fill = 0;
}

/* Tops up a partial block from *p (compressed once whole); what is left follows. */
static void own_head(struct recon_sha256 *c, const unsigned char **p, size_t *n)
{
	size_t take;

	if (!c->u.own.fill)
		return;
	take = 64 - c->u.own.fill < *n ? 64 - c->u.own.fill : *n;
	memcpy(c->u.own.block + c->u.own.fill, *p, take);
	c->u.own.fill += take;
	*p += take;
	*n -= take;
	if (c->u.own.fill == 64) {
		compress(c->u.own.h, c->u.own.block);
		c->u.own.fill = 0;
	}
}

/* Whole blocks straight from the input (no copy), the tail kept; no partial block before. */
static void own_rest(struct recon_sha256 *c, const unsigned char *p, size_t n)
{
	if (!n)
		return;
	compress_blocks(c->u.own.h, p, n / 64);
	p += n / 64 * 64;
	n %= 64;
	memcpy(c->u.own.block, p, n);
	c->u.own.fill = n;
}

static void own_update(struct recon_sha256 *c, const void *p, size_t n)
{
	const unsigned char *in = p;

	c->u.own.len += n;
	own_head(c, &in, &n);
	own_rest(c, in, n);
}

/* The same as own_update(a, p, n) and own_update(b, q, m), the blocks they share side by side. */
static void own_update2(struct recon_sha256 *a, const unsigned char *p, size_t n,
			struct recon_sha256 *b, const unsigned char *q, size_t m)
{
	a->u.own.len += n;
	b->u.own.len += m;
	own_head(a, &p, &n);
	own_head(b, &q, &m);
#ifdef HAVE_SHANI
	if (n >= 64 && m >= 64 && !a->u.own.fill && !b->u.own.fill && shani()) {
		const size_t k = (n < m ? n : m) / 64;
		compress_shani2(a->u.own.h, p, b->u.own.h, q, k);
		p += 64 * k;
		n -= 64 * k;
		q += 64 * k;
		m -= 64 * k;
	}
#endif
	own_rest(a, p, n);
	own_rest(b, q, m);
}

static void own_final_hex(struct recon_sha256 *c, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint64_t bits = c->u.own.len * 8; /* FIPS 180-4, 5.1.1: the length in bits, mod 2^64 */

	/* Padding: a 1 bit, zeros up to 56 mod 64, then the 64-bit big-endian length. */
	c->u.own.block[c->u.own.fill++] = 0x80;
	if (c->u.own.fill > 56) {
		memset(c->u.own.block + c->u.own.fill, 0, 64 - c->u.own.fill);
		compress(c->u.own.h, c->u.own.block);
		c->u.own.fill = 0;
	}
	memset(c->u.own.block + c->u.own.fill, 0, 56 - c->u.own.fill);
	for (int i = 0; i < 8; i++)
		c->u.own.block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress(c->u.own.h, c->u.own.block);
	for (int i = 0; i < 8; i++) {
		for (int j = 0; j < 8; j++)
			hex[8 * i + j] = digits[(c->u.own.h[i] >> (28 - 4 * j)) & 0xf];
	}
	hex[64] = '\0';
}

/*
 * Ours where the CPU has the SHA extensions (as fast as libcrypto's on one
 * stream, and it can hash two streams at once: recon_sha_lane_pair);
 * libcrypto's, when built with it, where it has not.
 */
void recon_sha256_init(struct recon_sha256 *c)
{
#ifdef RECON_HAVE_LIBCRYPTO
	c->own = shani();
	if (!c->own) {
		SHA256_CTX x;
		_Static_assert(sizeof(SHA256_CTX) <= sizeof(c->u.ossl),
			       "struct recon_sha256 holds a SHA256_CTX");
		SHA256_Init(&x);
		memcpy(c->u.ossl, &x, sizeof(x));
		return;
	}
#else
	c->own = true;
#endif
	own_init(c);
}

void recon_sha256_update(struct recon_sha256 *c, const void *p, size_t n)
{
#ifdef RECON_HAVE_LIBCRYPTO
	if (!c->own) {
		SHA256_CTX x;
		memcpy(&x, c->u.ossl, sizeof(x));
		SHA256_Update(&x, p, n);
		memcpy(c->u.ossl, &x, sizeof(x));
		return;
	}
#endif
	own_update(c, p, n);
}

void recon_sha256_final_hex(struct recon_sha256 *c, char hex[65])
{
#ifdef RECON_HAVE_LIBCRYPTO
	if (!c->own) {
		static const char digits[] = "0123456789abcdef";
		unsigned char md[SHA256_DIGEST_LENGTH];
		SHA256_CTX x;
		memcpy(&x, c->u.ossl, sizeof(x));
		SHA256_Final(md, &x);
		for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
			hex[2 * i] = digits[md[i] >> 4];
			hex[2 * i + 1] = digits[md[i] & 0xf];
		}
		hex[64] = '\0';
		recon_sha256_init(c);
		return;
	}
#endif
	own_final_hex(c, hex);
	/* Leave the context in a defined state; it must be re-initialised before reuse. */
	recon_sha256_init(c);
}

/* ---- lanes ---- */

/* 8: a paired lane's reader finds one queued beside nearly each of its pieces (4: 70-85%) */
#define LANE_SLOTS 8
#define LANE_SLOT  ((size_t)1 << 20) /* bigger updates go through in pieces */

struct recon_sha_lane {
	struct recon_sha256 *ctx;
	pthread_mutex_t mu;	 /* the queue */
	pthread_mutex_t hash_mu; /* held while the context takes bytes: one hasher, in order */
	atomic_bool helped;	 /* a helper came: the reader queues */
	const unsigned char *at[LANE_SLOTS]; /* the queued pieces: the reader's own bytes */
	size_t len[LANE_SLOTS];
	size_t head, tail; /* queued: [head, tail), counting up; a slot is head % LANE_SLOTS */
	/* recon_sha_lane_pair: a lane whose queued buffers this one's reader hashes beside its own
	 */
	_Atomic(struct recon_sha_lane *) partner;
};

struct recon_sha_lane *recon_sha_lane_new(struct recon_sha256 *ctx)
{
	struct recon_sha_lane *l = recon_xcalloc(1, sizeof(*l));

	l->ctx = ctx;
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->hash_mu, NULL);
	atomic_init(&l->helped, false);
	atomic_init(&l->partner, NULL);
	return l;
}

/*
 * Under l's hash_mu, and q's (q: l's partner, or NULL): l's queued pieces,
 * oldest first, each hashed beside q's oldest queued one, both streams'
 * blocks at once. Where q has none queued: hashed alone when `alone`, else
 * left queued (the partner's reader may queue more soon). Stops once l's
 * count reaches `upto` (UINT64_MAX: everything). A piece's slot is released
 * only once hashed. Returns how many were.
 */
static size_t lane_hash_queued(struct recon_sha_lane *l, struct recon_sha_lane *q, bool alone,
			       uint64_t upto)
{
	for (size_t done = 0;; done++) {
		size_t i, j = 0;
		bool theirs = false;

		pthread_mutex_lock(&l->mu);
		if (l->head == l->tail || l->head >= upto) {
			pthread_mutex_unlock(&l->mu);
			return done;
		}
		i = l->head % LANE_SLOTS;
		pthread_mutex_unlock(&l->mu);
		if (q) {
			pthread_mutex_lock(&q->mu);
			theirs = q->head != q->tail;
			j = q->head % LANE_SLOTS;
			pthread_mutex_unlock(&q->mu);
		}
		if (theirs) {
			own_update2(l->ctx, l->at[i], l->len[i], q->ctx, q->at[j], q->len[j]);
			pthread_mutex_lock(&q->mu);
			q->head++;
			pthread_mutex_unlock(&q->mu);
		} else if (alone) {
			recon_sha256_update(l->ctx, l->at[i], l->len[i]);
		} else {
			return done;
		}
		pthread_mutex_lock(&l->mu);
		l->head++;
		pthread_mutex_unlock(&l->mu);
	}
}

/*
 * l's queued pieces hashed up to its count `upto`: beside its partner's
 * where it has one (the reader of a paired lane queues its own pieces too,
 * lane_pair), else alone. Nobody holding the partner's hash_mu waits for
 * l's: the partner's reader takes only its own, and helps l (a try, never a
 * wait) only once it has read all.
 */
static void lane_settle(struct recon_sha_lane *l, uint64_t upto)
{
	struct recon_sha_lane *q = atomic_load_explicit(&l->partner, memory_order_acquire);

	pthread_mutex_lock(&l->hash_mu);
	if (q)
		pthread_mutex_lock(&q->hash_mu);
	lane_hash_queued(l, q, true, upto);
	if (q)
		pthread_mutex_unlock(&q->hash_mu);
	pthread_mutex_unlock(&l->hash_mu);
}

void recon_sha_lane_flush(struct recon_sha_lane *l)
{
	lane_settle(l, UINT64_MAX);
}

/* Queues k bytes at b (under mu, with room for them); returns the queue's count. */
static uint64_t lane_push(struct recon_sha_lane *l, const unsigned char *b, size_t k)
{
	l->at[l->tail % LANE_SLOTS] = b;
	l->len[l->tail % LANE_SLOTS] = k;
	return ++l->tail;
}

/*
 * The reader of a paired lane l: its k bytes at b queued behind its own
 * earlier ones, then as many of them as the partner has queued pieces for
 * hashed beside those, both streams' blocks at once; the rest stay queued
 * for the next time (*ticket: their count, for recon_sha_lane_wait). Neither
 * reader waits for the other: where a hash_mu is taken (the partner's reader
 * hashing a piece alone, its queue full), the pieces stay queued, and this
 * reader goes on parsing. A full queue's oldest is hashed at once, beside
 * the partner's oldest where it has one, else alone. false, having done nothing, when
 * there is no partner.
 */
static bool lane_pair(struct recon_sha_lane *l, const unsigned char *b, size_t k, uint64_t *ticket)
{
	struct recon_sha_lane *q = atomic_load_explicit(&l->partner, memory_order_acquire);
	uint64_t room = 0;

	if (!q)
		return false;
	pthread_mutex_lock(&l->mu);
	if (l->tail - l->head == LANE_SLOTS)
		room = l->head + 1;
	pthread_mutex_unlock(&l->mu);
	if (room)
		lane_settle(l, room); /* its oldest, to make room */
	pthread_mutex_lock(&l->mu);
	*ticket = lane_push(l, b, k);
	pthread_mutex_unlock(&l->mu);
	if (pthread_mutex_trylock(&l->hash_mu) != 0)
		return true; /* a helper is at it */
	if (pthread_mutex_trylock(&q->hash_mu) == 0) {
		lane_hash_queued(l, q, false, UINT64_MAX);
		pthread_mutex_unlock(&q->hash_mu);
	}
	pthread_mutex_unlock(&l->hash_mu);
	return true;
}

/*
 * Queues k bytes at b (where they lie) for a helper or a paired reader; false
 * when the queue is full and stays so, or nobody helps: the caller hashes
 * them. The queue's count once they are in goes to *ticket.
 */
static bool lane_queue(struct recon_sha_lane *l, const unsigned char *b, size_t k, uint64_t *ticket)
{
	bool queued = false;

	if (!atomic_load_explicit(&l->helped, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&l->mu);
	if (l->tail - l->head >= LANE_SLOTS / 2 && pthread_mutex_trylock(&l->hash_mu) == 0) {
		/* half full: the oldest hashed here, so that the queue stays half
		   full for the one hashing it beside its own, and room is there
		   while that one holds the lock */
		const uint64_t oldest = l->head + 1;
		pthread_mutex_unlock(&l->mu);
		(void)lane_hash_queued(l, NULL, true, oldest);
		pthread_mutex_unlock(&l->hash_mu);
		pthread_mutex_lock(&l->mu);
	}
	if (l->tail - l->head < LANE_SLOTS) {
		*ticket = lane_push(l, b, k);
		queued = true;
	}
	pthread_mutex_unlock(&l->mu);
	return queued;
}

uint64_t recon_sha_lane_update(struct recon_sha_lane *l, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t ticket = 0;

	while (n) {
		size_t k = n < LANE_SLOT ? n : LANE_SLOT;

		if (!lane_pair(l, b, k, &ticket) && !lane_queue(l, b, k, &ticket)) {
			/* no helper, or it fell behind: the queue first, then these bytes */
			pthread_mutex_lock(&l->hash_mu);
			(void)lane_hash_queued(l, NULL, true, UINT64_MAX);
			recon_sha256_update(l->ctx, b, k);
			pthread_mutex_unlock(&l->hash_mu);
			ticket = 0;
		}
		b += k;
		n -= k;
	}
	return ticket;
}

void recon_sha_lane_wait(struct recon_sha_lane *l, uint64_t ticket)
{
	bool done;

	if (!ticket)
		return;
	pthread_mutex_lock(&l->mu);
	done = l->head >= ticket;
	pthread_mutex_unlock(&l->mu);
	/* the helper may be hashing one now: after it, the rest here, in order */
	if (!done)
		lane_settle(l, ticket);
}

bool recon_sha_lane_pair(struct recon_sha_lane *reader, struct recon_sha_lane *queuer)
{
	if (!reader || !queuer || reader == queuer || !reader->ctx->own || !queuer->ctx->own ||
	    !shani())
		return false;
	atomic_store_explicit(&queuer->helped, true, memory_order_relaxed);
	atomic_store_explicit(&reader->partner, queuer, memory_order_release);
	return true;
}

void recon_sha_lane_unpair(struct recon_sha_lane *reader)
{
	if (reader)
		atomic_store_explicit(&reader->partner, NULL, memory_order_release);
}

bool recon_sha_lane_help(struct recon_sha_lane *l)
{
	bool did;

	atomic_store_explicit(&l->helped, true, memory_order_relaxed);
	/* the reader hashing its queue itself (it fell behind, or it ends): nothing to do here */
	if (pthread_mutex_trylock(&l->hash_mu) != 0)
		return false;
	did = lane_hash_queued(l, NULL, true, UINT64_MAX) > 0;
	pthread_mutex_unlock(&l->hash_mu);
	return did;
}

void recon_sha_lane_free(struct recon_sha_lane *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->hash_mu);
	free(l);
}

void recon_sha256_hex(const void *p, size_t n, char hex[65])
{
	struct recon_sha256 c;

	recon_sha256_init(&c);
	recon_sha256_update(&c, p, n);
	recon_sha256_final_hex(&c, hex);
}

int recon_sha256_file(const char *path, char hex[65], struct recon_err *err)
{
	struct recon_sha256 c;
	unsigned char *buf = NULL;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = recon_err_set(err, RECON_EUNAVAIL, NULL, "cannot open '%s': %s", path,
				    strerror(errno));
		goto out;
	}
	buf = recon_xmalloc(FILE_CHUNK);
	recon_sha256_init(&c);
	for (;;) {
		ssize_t n = read(fd, buf, FILE_CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = recon_err_set(err, RECON_EUNAVAIL, NULL, "cannot read '%s': %s", path,
					    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		recon_sha256_update(&c, buf, (size_t)n);
	}
	recon_sha256_final_hex(&c, hex);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}
