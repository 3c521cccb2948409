/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"

/*
 * recon_grow_huge: the contents survive every growth, past the size where the
 * array moves to memory advised for huge pages (4 MiB) and beyond, and the
 * array is free()'s.
 */
static void test_grow_huge_keeps_contents(void **state)
{
	uint32_t *v = NULL;
	size_t alloc = 0;
	const size_t n = (size_t)3 << 20; /* 12 MiB of uint32_t */

	(void)state;
	for (size_t i = 0; i < n; i++) {
		recon_grow_huge((void **)&v, &alloc, i + 1, sizeof(*v));
		v[i] = (uint32_t)(i * 2654435761u);
	}
	assert_true(alloc >= n);
	for (size_t i = 0; i < n; i++)
		if (v[i] != (uint32_t)(i * 2654435761u))
			fail_msg("element %zu lost in a growth", i);
	/* asking for no more than it holds changes nothing */
	uint32_t *before = v;
	recon_grow_huge((void **)&v, &alloc, n, sizeof(*v));
	assert_ptr_equal(v, before);
	free(v);
}

/* Allocation i of the count in p, 1 + (i * 7919) % mod bytes, still holds byte i & 0xff. */
static void assert_filled(char *const *p, size_t count, size_t mod, int round)
{
	for (size_t i = 0; i < count; i++) {
		const size_t n = 1 + (i * 7919) % mod;
		for (size_t k = 0; k < n; k++)
			if ((unsigned char)p[i][k] != (i & 0xff))
				fail_msg("round %d: allocation %zu overwritten at %zu", round, i,
					 k);
	}
}

/*
 * A huge arena: allocations of every size are distinct, aligned, hold what
 * was written; a reset and a release leave it huge, and it takes more after.
 */
static void test_arena_huge(void **state)
{
	struct recon_arena a;
	char *p[2000];

	(void)state;
	recon_arena_init_huge(&a);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < 2000; i++) {
			const size_t n = 1 + (i * 7919) % 9000; /* past 4 MiB in all */
			p[i] = recon_arena_alloc(&a, n);
			assert_int_equal((uintptr_t)p[i] % _Alignof(max_align_t), 0);
			memset(p[i], (int)(i & 0xff), n);
		}
		assert_filled(p, 2000, 9000, round);
		assert_true(a.total >= ((size_t)4 << 20) - 64);
		char *s = recon_arena_strndup(&a, "ORD20240301000162127xyz", 20);
		assert_string_equal(s, "ORD20240301000162127");
		if (round == 0)
			recon_arena_reset(&a);
		else
			recon_arena_release(&a);
		assert_int_equal(a.huge, 1);
	}
	/* one allocation bigger than a block */
	char *big = recon_arena_alloc(&a, (size_t)9 << 20);
	memset(big, 1, (size_t)9 << 20);
	recon_arena_release(&a);
}

/* A donor of NBLOCKS blocks of DSIZE bytes, cut from one allocation, taken in order. */
#define NBLOCKS 6
#define DSIZE	((size_t)32 << 10)
struct blocks {
	unsigned char *mem;
	size_t taken;
};

static void *take_block(void *arg)
{
	struct blocks *b = arg;

	return b->taken < NBLOCKS ? b->mem + DSIZE * b->taken++ : NULL;
}

static bool in_donor(const struct blocks *b, const void *p, size_t n)
{
	const unsigned char *c = p;

	return c >= b->mem && c + n <= b->mem + NBLOCKS * DSIZE;
}

/*
 * An arena with a donor: allocations that fit a donor block come from the
 * donor's blocks while it has any, then from the system; one bigger than a
 * block never does. Nothing overlaps, everything holds what was written,
 * and a reset and a release never free() a donor's block (which ASan and
 * glibc would catch: they are not malloc()'s).
 */
static void test_arena_donor(void **state)
{
	struct blocks b = {aligned_alloc(4096, NBLOCKS * DSIZE), 0};
	const struct recon_donor d = {take_block, &b, DSIZE};
	struct recon_arena a;
	char *p[400];
	size_t from_donor = 0;

	(void)state;
	assert_non_null(b.mem);
	for (int round = 0; round < 2; round++) {
		recon_arena_init_huge(&a);
		recon_arena_use_donor(&a, &d);
		char *big = NULL;
		for (size_t i = 0; i < 400; i++) {
			if (i == 30) { /* one allocation bigger than a block: from the system */
				big = recon_arena_alloc(&a, DSIZE);
				assert_false(in_donor(&b, big, DSIZE));
				memset(big, 0xee, DSIZE);
			}
			const size_t n = 1 + (i * 7919) % 3000; /* 600 KB in all: past the donor */
			p[i] = recon_arena_alloc(&a, n);
			assert_int_equal((uintptr_t)p[i] % _Alignof(max_align_t), 0);
			from_donor += in_donor(&b, p[i], n);
			memset(p[i], (int)(i & 0xff), n);
		}
		assert_filled(p, 400, 3000, round);
		for (size_t k = 0; k < DSIZE; k++)
			if ((unsigned char)big[k] != 0xee)
				fail_msg("round %d: the big allocation overwritten at %zu", round,
					 k);
		/* the first round took every block; the second found none left */
		assert_int_equal(b.taken, NBLOCKS);
		if (round == 0) {
			assert_true(from_donor > 40);
			recon_arena_reset(&a);
			assert_non_null(recon_arena_alloc(&a, 100));
		}
		recon_arena_release(&a);
	}
	free(b.mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grow_huge_keeps_contents),
	    cmocka_unit_test(test_arena_huge),
	    cmocka_unit_test(test_arena_donor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
