/*
 * Tests for src/recon_pump.c: the bytes a read function gives on the pump's
 * thread come back in order, whatever the sizes of its reads and of the
 * caller's; its end and its error (with the message) come where the stream
 * met them; a pump freed early, its thread waiting for room, stops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "recon_err.h"
#include "recon_pump.h"

/* A stream of `total` bytes (byte i is i * 7 + i / 251), read in pieces of odd sizes. */
struct stream {
	size_t total, at;
	size_t fail_at; /* the read that starts at or past this fails (SIZE_MAX: none) */
	uint64_t rng;
	unsigned calls;
};

static unsigned char byte_at(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static long stream_read(void *arg, void *buf, size_t n, struct recon_err *err)
{
	struct stream *s = arg;
	size_t k;

	s->calls++;
	if (s->at >= s->fail_at)
		return recon_err_set(err, RECON_EINPUT, "stream", "damaged at byte %zu", s->at);
	s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	k = 1 + (size_t)(s->rng >> 33) % n; /* 1 to n bytes a call */
	if (k > s->total - s->at)
		k = s->total - s->at;
	for (size_t i = 0; i < k; i++)
		((unsigned char *)buf)[i] = byte_at(s->at + i);
	s->at += k;
	return (long)k;
}

/* Reads the pump to its end in pieces of up to `piece` bytes; returns the last result. */
static long drain(struct recon_pump *p, size_t piece, size_t *got, struct recon_err *err)
{
	unsigned char buf[4096];
	long n;

	*got = 0;
	while ((n = recon_pump_read(p, buf, piece, err)) > 0) {
		assert_true((size_t)n <= piece);
		for (long i = 0; i < n; i++)
			if (buf[i] != byte_at(*got + (size_t)i))
				fail_msg("byte %zu differs", *got + (size_t)i);
		*got += (size_t)n;
	}
	return n;
}

static void test_pump_bytes_in_order(void **state)
{
	static const size_t totals[] = {0, 1, 999, 4096, 100000, 1234567};
	static const size_t pieces[] = {1, 7, 512, 4096};

	(void)state;
	for (size_t t = 0; t < sizeof(totals) / sizeof(totals[0]); t++)
		for (size_t q = 0; q < sizeof(pieces) / sizeof(pieces[0]); q++) {
			struct stream s = {totals[t], 0, SIZE_MAX, t * 31 + q, 0};
			struct recon_pump *p = recon_pump_new(stream_read, &s, 1000);
			struct recon_err err;
			size_t got;

			assert_non_null(p);
			recon_err_init(&err);
			assert_int_equal(drain(p, pieces[q], &got, &err), 0);
			assert_int_equal(got, totals[t]);
			/* after the end: the end again */
			assert_int_equal(drain(p, pieces[q], &got, &err), 0);
			assert_int_equal(got, 0);
			recon_pump_free(p);
		}
}

static void test_pump_error_in_place(void **state)
{
	struct stream s = {1000000, 0, 300000, 5, 0};
	struct recon_pump *p;
	struct recon_err err;
	size_t got;

	(void)state;
	p = recon_pump_new(stream_read, &s, 777);
	assert_non_null(p);
	recon_err_init(&err);
	assert_int_equal(drain(p, 1000, &got, &err), RECON_EINPUT);
	/* every byte before the failing read, then its message */
	assert_true(got >= 300000 && got < 300000 + 777);
	assert_non_null(strstr(err.msg, "damaged at byte"));
	recon_pump_free(p);
}

static void test_pump_freed_early(void **state)
{
	struct stream s = {(size_t)50 << 20, 0, SIZE_MAX, 9, 0};
	struct recon_pump *p;
	struct recon_err err;
	unsigned char buf[100];

	(void)state;
	p = recon_pump_new(stream_read, &s, 4096);
	assert_non_null(p);
	recon_err_init(&err);
	assert_true(recon_pump_read(p, buf, sizeof(buf), &err) > 0);
	/* its thread is ahead, or waiting for room: freeing stops it */
	recon_pump_free(p);
	assert_true(s.at < s.total);
	/* nothing read ahead without room: a few blocks at most */
	assert_true(s.calls <= 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pump_bytes_in_order),
	    cmocka_unit_test(test_pump_error_in_place),
	    cmocka_unit_test(test_pump_freed_early),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
