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

void *recon_xmalloc(size_t n);
void *recon_xcalloc(size_t nmemb, size_t size);
void *recon_xrealloc(void *p, size_t n);
char *recon_xstrdup(const char *s);
char *recon_xstrndup(const char *s, size_t n);
size_t recon_st_mult(size_t a, size_t b);
size_t recon_st_add(size_t a, size_t b);

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

struct recon_arena_block;
struct recon_arena {
	struct recon_arena_block *head;
	char *cur;    /* next free byte in head */
	char *end;    /* end of head */
	size_t total; /* bytes obtained from the system */
	int huge;     /* recon_arena_init_huge() */
};

void recon_arena_init(struct recon_arena *a);

/*
 * An arena whose blocks, from the second on, are at least 4 MiB, 2 MiB
 * aligned and advised as recon_mem_advise_huge(): for one that may take tens
 * of megabytes at once. recon_arena_release() keeps it so.
 */
void recon_arena_init_huge(struct recon_arena *a);
/* Frees every block; the arena can be used again afterwards. NULL-safe. */
void recon_arena_release(struct recon_arena *a);
/*
 * Forgets every allocation but keeps the newest block for reuse: a scratch
 * arena reset per row costs no malloc. NULL-safe.
 */
void recon_arena_reset(struct recon_arena *a);
/* Memory aligned for any scalar, valid until recon_arena_release() or _reset(). */
void *recon_arena_alloc(struct recon_arena *a, size_t n);
/* A NUL-terminated copy of s[0..n). */
char *recon_arena_strndup(struct recon_arena *a, const char *s, size_t n);

#endif
