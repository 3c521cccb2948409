/*
 * recon_mem: allocation that cannot fail silently, checked size arithmetic,
 * and the arena a window's rows live in.
 *
 * recon_xmalloc() and friends print a message and abort on out-of-memory: a
 * batch job cannot recover from it, and half-done work is worse than none.
 * Size arithmetic goes through recon_st_mult()/recon_st_add(), which abort on
 * overflow instead of wrapping.
 *
 * An arena hands out memory that lives until recon_arena_release(): one per
 * window, so no per-row malloc and no per-row free.
 */
#ifndef RECON_MEM_H
#define RECON_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

void *recon_xmalloc(size_t n);
void *recon_xcalloc(size_t nmemb, size_t size);
void *recon_xrealloc(void *p, size_t n);
char *recon_xstrdup(const char *s);
char *recon_xstrndup(const char *s, size_t n);
/* Prints "size overflow: a op b" and aborts. */
_Noreturn void recon_st_overflow(size_t a, char op, size_t b);

/* Inline: they are on every row's way (an arena copy of a key or an id). */
static inline size_t recon_st_mult(size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b)
		recon_st_overflow(a, '*', b);
	return a * b;
}

static inline size_t recon_st_add(size_t a, size_t b)
{
	if (a > SIZE_MAX - b)
		recon_st_overflow(a, '+', b);
	return a + b;
}

/*
 * Zeroes p[0..n) in a way the optimiser keeps even when p is freed next:
 * passwords do not linger in freed memory. NULL-safe.
 */
void recon_mem_wipe(void *p, size_t n);
/* Wipes the string s (a password) and frees it. NULL-safe. */
void recon_mem_free_secret(char *s);

/* Grows *p (holding *alloc elements of `size` bytes) so it holds at least `need`. */
void recon_grow(void **p, size_t *alloc, size_t need, size_t size);

/*
 * Asks the system to back p[0..n) with huge pages where it allows them (the
 * 2 MiB aligned part; Linux's MADV_HUGEPAGE, else nothing): one fault and one
 * zeroing per 2 MiB instead of 512, for big buffers written once, front to
 * back. p stays malloc()'s: free() frees it.
 */
void recon_mem_advise_huge(void *p, size_t n);

/* recon_grow(), the array advised as recon_mem_advise_huge() once it is big. */
void recon_grow_huge(void **p, size_t *alloc, size_t need, size_t size);

/*
 * Memory faulted in already that arenas may take instead of fresh pages
 * (recon_arena_use_donor): blocks of `size` bytes from take(arg), which is
 * thread-safe and returns NULL once none is left. The donor owns them: an
 * arena never frees them, and is released before its donor goes.
 */
struct recon_donor {
	void *(*take)(void *arg);
	void *arg;
	size_t size;
};

struct recon_arena_block;
struct recon_arena {
	struct recon_arena_block *head;
	char *cur;			 /* next free byte in head */
	char *end;			 /* end of head */
	size_t total;			 /* bytes obtained from the system */
	int huge;			 /* recon_arena_init_huge() */
	const struct recon_donor *donor; /* recon_arena_use_donor() */
};

void recon_arena_init(struct recon_arena *a);

/*
 * An arena whose blocks, from the second on, are at least 4 MiB, 2 MiB
 * aligned and advised as recon_mem_advise_huge(): for one that may take tens
 * of megabytes at once. recon_arena_release() keeps it so.
 */
void recon_arena_init_huge(struct recon_arena *a);
/*
 * From now on a's new blocks come from donor d while it has any, when the
 * allocation fits one (NULL: none). Fresh memory costs the kernel's zeroing
 * and, on a VM, the host's faults; a donor's blocks were paid for already.
 */
void recon_arena_use_donor(struct recon_arena *a, const struct recon_donor *d);
/* Frees every block (a donor's go back to nobody); the arena can be used again. NULL-safe. */
void recon_arena_release(struct recon_arena *a);
/*
 * Forgets every allocation but keeps the newest block for reuse: a scratch
 * arena reset per row costs no malloc. NULL-safe.
 */
void recon_arena_reset(struct recon_arena *a);
/* recon_arena_alloc() of need bytes (a multiple of the alignment) from a new block. */
void *recon_arena_alloc_block(struct recon_arena *a, size_t need);

/*
 * Memory aligned for any scalar, valid until recon_arena_release() or _reset().
 * Inline: the common case is a bump of a pointer, on every row.
 */
static inline void *recon_arena_alloc(struct recon_arena *a, size_t n)
{
	const size_t align = sizeof(max_align_t);
	size_t need = recon_st_add(n, align - 1) & ~(align - 1);
	char *p;

	if (!need)
		need = align;
	if (!a->cur || (size_t)(a->end - a->cur) < need)
		return recon_arena_alloc_block(a, need);
	p = a->cur;
	a->cur += need;
	return p;
}

/*
 * Copies n bytes of a short string (a key, an id) without a call: two
 * overlapping moves of 16, 8 or 4 bytes up to 32 bytes, memcpy() beyond.
 * Through the PLT to libc's memcpy a key's copy was 8% of staging; a memcpy
 * whose length the compiler knows to be bounded is inlined as `rep movsq`,
 * whose start-up took 16% of normalizing a row (an id's copy).
 */
static inline void recon_copy_short(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (n > 32) {
		memcpy(d, s, n);
	} else if (n >= 16) {
		memcpy(d, s, 16);
		memcpy(d + n - 16, s + n - 16, 16);
	} else if (n >= 8) {
		memcpy(d, s, 8);
		memcpy(d + n - 8, s + n - 8, 8);
	} else if (n >= 4) {
		memcpy(d, s, 4);
		memcpy(d + n - 4, s + n - 4, 4);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = s[i];
	}
}

/* A NUL-terminated copy of s[0..n). */
static inline char *recon_arena_strndup(struct recon_arena *a, const char *s, size_t n)
{
	char *p = recon_arena_alloc(a, recon_st_add(n, 1));

	recon_copy_short(p, s, n);
	p[n] = '\0';
	return p;
}

#endif
