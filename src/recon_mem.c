/* madvise(MADV_HUGEPAGE) is Linux's, beyond POSIX: asked for, used when present */
#define _DEFAULT_SOURCE

#include "recon_mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static void die_oom(size_t n)
{
	fprintf(stderr, "recon: out of memory allocating %zu bytes\n", n);
	abort();
}

void *recon_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die_oom(n);
	return p;
}

void *recon_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		die_oom(recon_st_mult(nmemb, size));
	return p;
}

void *recon_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		die_oom(n);
	return q;
}

char *recon_xstrdup(const char *s)
{
	return recon_xstrndup(s, strlen(s));
}

char *recon_xstrndup(const char *s, size_t n)
{
	char *p = recon_xmalloc(recon_st_add(n, 1));

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void recon_mem_wipe(void *p, size_t n)
{
	volatile unsigned char *v =
	    p; /* volatile: the compiler keeps stores to memory freed next */

	if (!v)
		return;
	while (n--)
		*v++ = 0;
}

void recon_mem_free_secret(char *s)
{
	if (s)
		recon_mem_wipe(s, strlen(s));
	free(s);
}

_Noreturn void recon_st_overflow(size_t a, char op, size_t b)
{
	fprintf(stderr, "recon: size overflow: %zu %c %zu\n", a, op, b);
	abort();
}

/* The element count a growing array of `alloc` goes to, to hold `need` (> alloc). */
static size_t grown(size_t alloc, size_t need)
{
	size_t n = alloc ? alloc : 16;

	while (n < need)
		n = recon_st_mult(n, 2);
	return n;
}

void recon_grow(void **p, size_t *alloc, size_t need, size_t size)
{
	size_t n;

	if (need <= *alloc)
		return;
	n = grown(*alloc, need);
	*p = recon_xrealloc(*p, recon_st_mult(n, size));
	*alloc = n;
}

void recon_mem_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	const uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)(HUGE_PAGE - 1);

	if (p && e > a)
		(void)madvise((void *)a, e - a,
			      MADV_HUGEPAGE); /* advice: a refusal changes nothing */
#else
	(void)p;
	(void)n;
#endif
}

void recon_grow_huge(void **p, size_t *alloc, size_t need, size_t size)
{
	size_t n, bytes;
	void *q;

	if (need <= *alloc)
		return;
	n = grown(*alloc, need);
	bytes = recon_st_mult(n, size);
	if (bytes < 2 * HUGE_PAGE) {
		*p = recon_xrealloc(*p, bytes);
	} else {
		/* advised before the copy touches it (realloc would copy first) */
		q = recon_xmalloc(bytes);
		recon_mem_advise_huge(q, bytes);
		if (*alloc)
			memcpy(q, *p, *alloc * size);
		free(*p);
		*p = q;
	}
	*alloc = n;
}

/* Arena: a list of blocks, each at least 1 MiB (or a donor's), newest first. */
struct recon_arena_block {
	struct recon_arena_block *next;
	size_t size;
	bool donated; /* a donor's: never freed here */
	max_align_t data[];
};

#define ARENA_BLOCK (1u << 20)

void recon_arena_init(struct recon_arena *a)
{
	a->head = NULL;
	a->cur = a->end = NULL;
	a->total = 0;
	a->huge = 0;
	a->donor = NULL;
}

void recon_arena_init_huge(struct recon_arena *a)
{
	recon_arena_init(a);
	a->huge = 1;
}

/* A block of `size` bytes of data (huge: in huge pages). */
static struct recon_arena_block *arena_block(bool huge, size_t size)
{
	const size_t n = recon_st_add(sizeof(struct recon_arena_block), size);
	struct recon_arena_block *b = NULL;

	if (!huge) {
		b = recon_xmalloc(n);
	} else if (posix_memalign((void **)&b, HUGE_PAGE, n)) {
		b = recon_xmalloc(n); /* aborts on out-of-memory */
	} else {
		recon_mem_advise_huge(b, n);
	}
	b->donated = false;
	return b;
}

void recon_arena_use_donor(struct recon_arena *a, const struct recon_donor *d)
{
	a->donor = d;
}

static void block_free(struct recon_arena_block *b)
{
	if (!b->donated)
		free(b);
}

void recon_arena_release(struct recon_arena *a)
{
	struct recon_arena_block *b, *next;

	if (!a)
		return;
	for (b = a->head; b; b = next) {
		next = b->next;
		block_free(b);
	}
	/* empty again; a huge arena stays one */
	a->head = NULL;
	a->cur = a->end = NULL;
	a->total = 0;
}

void recon_arena_reset(struct recon_arena *a)
{
	struct recon_arena_block *b, *next;

	if (!a || !a->head)
		return;
	for (b = a->head->next; b; b = next) {
		next = b->next;
		block_free(b);
	}
	a->head->next = NULL;
	a->cur = (char *)a->head->data;
	a->end = a->cur + a->head->size;
	a->total = a->head->size;
}

void *recon_arena_alloc_block(struct recon_arena *a, size_t need)
{
	/* a huge arena's first block is an ordinary one: a small run faults in only
	   the pages it uses, a big one has its huge blocks from the second on */
	const bool huge = a->huge && a->total >= ARENA_BLOCK;
	const size_t min = huge ? 2 * HUGE_PAGE - sizeof(struct recon_arena_block) : ARENA_BLOCK;
	/* what a donor's block holds (0: no donor) */
	const size_t dsize = a->donor ? a->donor->size - sizeof(struct recon_arena_block) : 0;
	size_t bsize = need > min ? need : min;
	struct recon_arena_block *b = NULL;
	char *p;

	if (a->donor && need > dsize && a->head) {
		/* too big for a donor's block: one of its own, behind the one in use */
		b = arena_block(false, need);
		b->size = need;
		b->next = a->head->next;
		a->head->next = b;
		a->total += need;
		return b->data;
	}
	if (need <= dsize && (b = a->donor->take(a->donor->arg))) {
		bsize = dsize;
		b->donated = true;
	} else {
		/* grow block size with the arena so big windows use few blocks */
		if (a->total / 4 > bsize)
			bsize = a->total / 4 > need ? a->total / 4 : need;
		b = arena_block(huge, bsize);
	}
	b->next = a->head;
	b->size = bsize;
	a->head = b;
	a->cur = (char *)b->data;
	a->end = a->cur + bsize;
	a->total += bsize;
	p = a->cur;
	a->cur += need;
	return p;
}
