/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <stdlib.h>
#include <string.h>

/*
 * The compare's key hash (src/compare_internal.h, private to the compare):
 * its tail is read with loads inside the key, not copied byte by byte.
 */
#include "../src/compare_internal.h"

/* The hash as first written: the tail copied into a zeroed little-endian word. */
static uint64_t ref_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL), w;

	for (; n >= 8; p += 8, n -= 8) {
		w = 0;
		for (size_t i = 0; i < 8; i++)
			w |= (uint64_t)p[i] << (8 * i);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)p[i] << (8 * i);
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

/*
 * Every length to 72, random bytes (the top bit too), each key alone in a
 * block of its exact size: AddressSanitizer fails a load before its first
 * byte or past its last.
 */
static void test_key_hash_every_length(void **state)
{
	(void)state;
	srand(17);
	for (size_t n = 0; n <= 72; n++) {
		for (int round = 0; round < 200; round++) {
			unsigned char *k = malloc(n ? n : 1);
			assert_non_null(k);
			for (size_t i = 0; i < n; i++)
				k[i] = (unsigned char)rand();
			assert_true(key_hash(k, n) == ref_hash(k, n));
			free(k);
		}
	}
}

/* Keys that differ only in their last byte, or only in a byte of the tail's overlap. */
static void test_key_hash_tail_bytes_count(void **state)
{
	(void)state;
	for (size_t n = 1; n <= 40; n++) {
		unsigned char a[40], b[40];
		memset(a, 'x', sizeof(a));
		for (size_t i = 0; i < n; i++) {
			memcpy(b, a, sizeof(b));
			b[i] = 'y';
			assert_true(key_hash(a, n) != key_hash(b, n));
		}
		/* a byte past the key does not count */
		memcpy(b, a, sizeof(b));
		if (n < sizeof(b))
			b[n] = 'y';
		assert_true(key_hash(a, n) == key_hash(b, n));
	}
}

/*
 * kform_hash() hashes a key's form (compare_internal.h, struct kref) from
 * the key itself: equal to key_hash() of the form written out, for every
 * key length to 40 and every shared prefix, each key alone in a block of its
 * exact size (AddressSanitizer fails a load outside it).
 */
static void test_key_hash_of_forms(void **state)
{
	(void)state;
	srand(29);
	for (size_t len = 0; len <= 40; len++) {
		for (size_t p = 0; p <= len; p++) {
			for (int round = 0; round < 20; round++) {
				char *k = malloc(len ? len : 1), form[41];
				assert_non_null(k);
				for (size_t i = 0; i < len; i++)
					k[i] = (char)rand();
				kform_write(k, len, p, form);
				assert_true(kform_hash(k, len, p) == key_hash(form, len - p + 1));
				free(k);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key_hash_of_forms),
	    cmocka_unit_test(test_key_hash_every_length),
	    cmocka_unit_test(test_key_hash_tail_bytes_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
