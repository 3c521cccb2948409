/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_err.h"
#include "recon_sha256.h"

/* NIST FIPS 180-4 example vectors (csrc.nist.gov, SHA256.pdf / SHA2_Additional). */
static const char abc448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
static const char abc896[] = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
			     "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

static void check_hex(const char *msg, size_t len, const char *want)
{
	char hex[65];

	recon_sha256_hex(msg, len, hex);
	assert_string_equal(hex, want);
}

static void test_sha256_empty(void **state)
{
	(void)state;
	check_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_sha256_abc(void **state)
{
	(void)state;
	check_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_sha256_448_bits(void **state)
{
	(void)state;
	assert_int_equal(strlen(abc448) * 8, 448);
	check_hex(abc448, strlen(abc448),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_sha256_896_bits(void **state)
{
	(void)state;
	assert_int_equal(strlen(abc896) * 8, 896);
	check_hex(abc896, strlen(abc896),
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_sha256_million_a(void **state)
{
	struct recon_sha256 c;
	char block[1000], hex[65];

	(void)state;
	memset(block, 'a', sizeof(block));
	recon_sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		recon_sha256_update(&c, block, sizeof(block));
	recon_sha256_final_hex(&c, hex);
	assert_string_equal(hex,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the padding boundaries (55, 56, 63, 64 bytes) against known digests. */
static void test_sha256_padding_boundaries(void **state)
{
	char buf[65];

	(void)state;
	memset(buf, 'a', sizeof(buf));
	check_hex(buf, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	check_hex(buf, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	check_hex(buf, 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
	check_hex(buf, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

/* Splitting the input anywhere (including empty updates) never changes the digest. */
static void test_sha256_split_updates(void **state)
{
	unsigned char msg[200];
	char want[65], got[65];

	(void)state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 37 + 11);
	recon_sha256_hex(msg, sizeof(msg), want);
	for (size_t off = 0; off <= 130; off++) {
		struct recon_sha256 c;
		recon_sha256_init(&c);
		recon_sha256_update(&c, msg, off);
		recon_sha256_update(&c, msg + off, 0);
		recon_sha256_update(&c, msg + off, sizeof(msg) - off);
		recon_sha256_final_hex(&c, got);
		assert_string_equal(got, want);
	}
	/* and byte by byte */
	{
		struct recon_sha256 c;
		recon_sha256_init(&c);
		for (size_t i = 0; i < sizeof(msg); i++)
			recon_sha256_update(&c, msg + i, 1);
		recon_sha256_final_hex(&c, got);
		assert_string_equal(got, want);
	}
}

/* A context can be reused after final_hex + init. */
static void test_sha256_reuse_after_init(void **state)
{
	struct recon_sha256 c;
	char hex[65];

	(void)state;
	recon_sha256_init(&c);
	recon_sha256_update(&c, "something else", 14);
	recon_sha256_final_hex(&c, hex);
	recon_sha256_init(&c);
	recon_sha256_update(&c, "abc", 3);
	recon_sha256_final_hex(&c, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* A file larger than one 1 MiB read, with a size that is not a multiple of 64. */
static void test_sha256_file_matches_one_shot(void **state)
{
	char path[] = "/tmp/recon_sha256_XXXXXX";
	size_t n = (1u << 20) * 2 + 12345;
	unsigned char *data = malloc(n);
	char want[65], got[65];
	struct recon_err err;
	FILE *f;
	int fd;

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)((i * 2654435761u) >> 13);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);

	recon_sha256_hex(data, n, want);
	recon_err_init(&err);
	assert_int_equal(recon_sha256_file(path, got, &err), 0);
	assert_int_equal(err.code, 0);
	assert_string_equal(got, want);
	unlink(path);
	free(data);
}

static void test_sha256_file_empty(void **state)
{
	char path[] = "/tmp/recon_sha256_XXXXXX";
	char got[65];
	struct recon_err err;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	recon_err_init(&err);
	assert_int_equal(recon_sha256_file(path, got, &err), 0);
	assert_string_equal(got,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	unlink(path);
}

static void test_sha256_file_missing(void **state)
{
	const char *path = "/nonexistent/recon-sha256-missing.csv";
	char got[65];
	struct recon_err err;

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_sha256_file(path, got, &err), RECON_EUNAVAIL);
	assert_int_equal(err.code, RECON_EUNAVAIL);
	assert_string_equal(err.msg, "cannot open '/nonexistent/recon-sha256-missing.csv': No such "
				     "file or directory");
}

/* A directory opens but cannot be read. */
static void test_sha256_file_directory(void **state)
{
	char got[65];
	struct recon_err err;

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_sha256_file("/", got, &err), RECON_EUNAVAIL);
	assert_int_equal(err.code, RECON_EUNAVAIL);
	assert_non_null(strstr(err.msg, "'/'"));
}

/* Bytes of a xorshift stream from seed x (the lane tests' inputs). */
static unsigned char *noise(size_t n, uint64_t x)
{
	unsigned char *d = malloc(n ? n : 1);

	assert_non_null(d);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		d[i] = (unsigned char)x;
	}
	return d;
}

/* A helper thread for the lane tests: helps until told to stop. */
struct helper {
	struct recon_sha_lane *lane;
	atomic_bool stop;
	unsigned long helped; /* calls that hashed something */
};

static void *help_loop(void *arg)
{
	struct helper *h = arg;

	while (!atomic_load(&h->stop))
		if (recon_sha_lane_help(h->lane))
			h->helped++;
	return NULL;
}

/* A lane on ctx (started afresh), and a thread helping it when helped. */
static void helper_start(struct helper *h, struct recon_sha256 *ctx, bool helped, pthread_t *th)
{
	recon_sha256_init(ctx);
	h->lane = recon_sha_lane_new(ctx);
	atomic_init(&h->stop, false);
	if (helped)
		assert_int_equal(pthread_create(th, NULL, help_loop, h), 0);
}

/* The lane flushed, its helper (if any) stopped. */
static void helper_end(struct helper *h, bool helped, pthread_t th)
{
	recon_sha_lane_flush(h->lane);
	if (helped) {
		atomic_store(&h->stop, true);
		pthread_join(th, NULL);
	}
}

/*
 * A lane gives the one-shot digest whoever hashes which bytes: with no
 * helper, and with one hashing beside the reader (pieces of every size, some
 * bigger than a queue slot, a queue that fills up), flushed before it is read.
 */
static void test_sha256_lane_same_digest(void **state)
{
	const size_t total = (9u << 20) + 12345;
	unsigned char *data = noise(total, 88172645463325252ULL);
	char want[65], got[65];

	(void)state;
	recon_sha256_hex(data, total, want);
	for (int helped = 0; helped < 2; helped++) {
		struct recon_sha256 ctx;
		struct helper h = {0};
		pthread_t th;
		size_t o = 0, step = 1;

		helper_start(&h, &ctx, helped, &th);
		while (o < total) {
			size_t n = step < total - o ? step : total - o;
			recon_sha_lane_update(h.lane, data + o, n);
			o += n;
			step = step * 7 % ((3u << 20) + 17) + 1; /* 1 byte to 3 MiB */
		}
		helper_end(&h, helped, th);
		recon_sha256_final_hex(&ctx, got);
		assert_string_equal(got, want);
		recon_sha_lane_free(h.lane);
	}
	free(data);
}

/*
 * Bytes queued where they lie (recon_sha_lane_update), as the CSV reader
 * queues its reads: a ring of three buffers, each written again only once
 * recon_sha_lane_wait() says what was queued from it is hashed, and written
 * over with junk first. With no helper, and with one hashing beside the
 * reader: the one-shot digest (a wait that returned early would hash junk).
 */
static void test_sha256_lane_by_ref(void **state)
{
	const size_t total = (11u << 20) + 4321, cap = (3u << 20) / 2;
	unsigned char *data = noise(total, 0x2545F4914F6CDD1DULL), *ring[3];
	char want[65], got[65];

	(void)state;
	recon_sha256_hex(data, total, want);
	for (int i = 0; i < 3; i++) {
		ring[i] = malloc(cap);
		assert_non_null(ring[i]);
	}
	for (int helped = 0; helped < 2; helped++) {
		struct recon_sha256 ctx;
		struct helper h = {0};
		uint64_t ticket[3] = {0, 0, 0};
		pthread_t th;
		size_t o = 0, step = 5;
		unsigned at = 0;

		helper_start(&h, &ctx, helped, &th);
		while (o < total) {
			size_t n = step < total - o ? step : total - o;
			at = (at + 1) % 3;
			recon_sha_lane_wait(h.lane, ticket[at]);
			memset(ring[at], 0xcc, cap);
			memcpy(ring[at], data + o, n);
			ticket[at] = recon_sha_lane_update(h.lane, ring[at], n);
			o += n;
			step = step * 7 % cap + 1; /* 1 byte to 1.5 MiB */
		}
		helper_end(&h, helped, th);
		if (helped)
			print_message("pieces hashed by the helper: %lu calls\n", h.helped);
		recon_sha256_final_hex(&ctx, got);
		assert_string_equal(got, want);
		recon_sha_lane_free(h.lane);
	}
	for (int i = 0; i < 3; i++)
		free(ring[i]);
	free(data);
}

/*
 * Two paired lanes, one thread, their updates taking turns: the queuer's
 * pieces queue, the reader's are hashed beside them, both streams' blocks at
 * once. Pieces of every size (1 byte to 2 MiB, most not whole blocks), so
 * each side meets the other with a partial block held, both as one-shot
 * digests; then the same with the reader's input the longer one.
 */
static void test_sha256_lane_pair_one_thread(void **state)
{
	const size_t len[2][2] = {{(3u << 20) + 77, (5u << 20) + 1001}, {(6u << 20) + 3, 4099}};

	(void)state;
	for (int c = 0; c < 2; c++) {
		unsigned char *in[2];
		struct recon_sha256 ctx[2];
		struct recon_sha_lane *lane[2];
		char want[2][65], got[65];
		size_t o[2] = {0, 0}, step = 63;
		bool paired;

		for (int i = 0; i < 2; i++) {
			in[i] = noise(len[c][i], 0x9E3779B97F4A7C15ULL + (uint64_t)(2 * c + i));
			recon_sha256_hex(in[i], len[c][i], want[i]);
			recon_sha256_init(&ctx[i]);
			lane[i] = recon_sha_lane_new(&ctx[i]);
		}
		/* lane 0 reads beside what lane 1 queues */
		paired = recon_sha_lane_pair(lane[0], lane[1]);
		print_message("lanes paired: %s\n", paired ? "yes" : "no (no SHA extensions)");
		while (o[0] < len[c][0] || o[1] < len[c][1]) {
			for (int i = 1; i >= 0; i--) {
				size_t n = step < len[c][i] - o[i] ? step : len[c][i] - o[i];
				recon_sha_lane_update(lane[i], in[i] + o[i], n);
				o[i] += n;
				step = step * 5 % ((2u << 20) + 13) + 1;
			}
		}
		recon_sha_lane_unpair(lane[0]);
		for (int i = 0; i < 2; i++) {
			recon_sha_lane_flush(lane[i]);
			recon_sha256_final_hex(&ctx[i], got);
			assert_string_equal(got, want[i]);
			recon_sha_lane_free(lane[i]);
			free(in[i]);
		}
	}
}

/* One side of the two-thread pairing tests. */
struct pair_side {
	struct recon_sha_lane *lane, *other;
	const unsigned char *in;
	size_t len, step;
	atomic_int *done; /* sides that have read all */
};

/* Read all, then (done first) help the other until it is done too, as the readers of a run do. */
static void pair_done(struct pair_side *p)
{
	atomic_fetch_add(p->done, 1);
	while (atomic_load(p->done) < 2)
		(void)recon_sha_lane_help(p->other);
}

static void *pair_read(void *arg)
{
	struct pair_side *p = arg;

	for (size_t o = 0; o < p->len;) {
		size_t n = p->step < p->len - o ? p->step : p->len - o;
		recon_sha_lane_update(p->lane, p->in + o, n);
		o += n;
	}
	recon_sha_lane_flush(p->lane);
	pair_done(p);
	return NULL;
}

#define RING_N	 4
#define RING_CAP ((size_t)(5u << 20) / 4)

/* pair_read() through a ring of buffers, as source_csv.c reads: each written again
   (junk first) only once recon_sha_lane_wait() says what was queued from it is hashed */
static void *ring_read(void *arg)
{
	struct pair_side *p = arg;
	unsigned char *ring[RING_N];
	uint64_t ticket[RING_N] = {0};
	unsigned at = 0;

	for (int i = 0; i < RING_N; i++) {
		ring[i] = malloc(RING_CAP);
		assert_non_null(ring[i]);
	}
	for (size_t o = 0; o < p->len;) {
		size_t n = p->step < p->len - o ? p->step : p->len - o;
		at = (at + 1) % RING_N;
		recon_sha_lane_wait(p->lane, ticket[at]);
		memset(ring[at], 0xa5, RING_CAP);
		memcpy(ring[at], p->in + o, n);
		ticket[at] = recon_sha_lane_update(p->lane, ring[at], n);
		o += n;
		p->step = p->step * 7 % RING_CAP + 1;
	}
	recon_sha_lane_flush(p->lane);
	/* nothing may be hashed from the buffers from here on: junk in them now */
	for (int i = 0; i < RING_N; i++) {
		memset(ring[i], 0x5a, RING_CAP);
		free(ring[i]);
	}
	pair_done(p);
	return NULL;
}

/*
 * Paired lanes read on two threads at once by read(), as a run's two readers
 * do: for each pair of lengths (the queuer's input the longer, then the
 * shorter: the reader done first helps the other), both digests are the
 * one-shot ones.
 */
static void pair_two_threads(const size_t len[2][2], uint64_t seed, void *(*read)(void *))
{
	for (int c = 0; c < 2; c++) {
		struct recon_sha256 ctx[2];
		struct pair_side side[2];
		unsigned char *in[2];
		char want[2][65], got[65];
		atomic_int done;
		pthread_t th;

		atomic_init(&done, 0);
		for (int i = 0; i < 2; i++) {
			in[i] = noise(len[c][i], seed * (uint64_t)(2 * c + i + 1));
			recon_sha256_hex(in[i], len[c][i], want[i]);
			recon_sha256_init(&ctx[i]);
			side[i].lane = recon_sha_lane_new(&ctx[i]);
			side[i].in = in[i];
			side[i].len = len[c][i];
			side[i].done = &done;
		}
		side[0].other = side[1].lane;
		side[1].other = side[0].lane;
		side[0].step = (1u << 20) - 7; /* a read's size, about */
		side[1].step = (1u << 20) + 333;
		(void)recon_sha_lane_pair(side[0].lane, side[1].lane);
		assert_int_equal(pthread_create(&th, NULL, read, &side[1]), 0);
		(void)read(&side[0]);
		pthread_join(th, NULL);
		recon_sha_lane_unpair(side[0].lane);
		for (int i = 0; i < 2; i++) {
			recon_sha256_final_hex(&ctx[i], got);
			assert_string_equal(got, want[i]);
			recon_sha_lane_free(side[i].lane);
			free(in[i]);
		}
	}
}

static void test_sha256_lane_pair_two_threads(void **state)
{
	const size_t len[2][2] = {{(7u << 20) + 5, (13u << 20) + 99}, {(11u << 20) + 1, 3u << 20}};

	(void)state;
	pair_two_threads(len, 0xD1B54A32D192ED03ULL, pair_read);
}

/*
 * The same through rings of buffers: the reader of the pair queues its own
 * pieces too (where the queuer's lock is taken, it does not wait), so its
 * tickets count as the queuer's do; a wait that returned early hashes junk.
 */
static void test_sha256_lane_pair_by_ref(void **state)
{
	const size_t len[2][2] = {{(9u << 20) + 5, (17u << 20) + 99}, {(15u << 20) + 1, 6u << 20}};

	(void)state;
	pair_two_threads(len, 0xA0761D6478BD642FULL, ring_read);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sha256_empty),
	    cmocka_unit_test(test_sha256_abc),
	    cmocka_unit_test(test_sha256_448_bits),
	    cmocka_unit_test(test_sha256_896_bits),
	    cmocka_unit_test(test_sha256_million_a),
	    cmocka_unit_test(test_sha256_padding_boundaries),
	    cmocka_unit_test(test_sha256_split_updates),
	    cmocka_unit_test(test_sha256_reuse_after_init),
	    cmocka_unit_test(test_sha256_file_matches_one_shot),
	    cmocka_unit_test(test_sha256_file_empty),
	    cmocka_unit_test(test_sha256_file_missing),
	    cmocka_unit_test(test_sha256_file_directory),
	    cmocka_unit_test(test_sha256_lane_same_digest),
	    cmocka_unit_test(test_sha256_lane_by_ref),
	    cmocka_unit_test(test_sha256_lane_pair_one_thread),
	    cmocka_unit_test(test_sha256_lane_pair_two_threads),
	    cmocka_unit_test(test_sha256_lane_pair_by_ref),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
