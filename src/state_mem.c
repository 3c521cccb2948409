/*
 * state_mem: SQLite's page-sized allocations in huge pages
 * (recon_state_memory_setup, declared in recon_state.h).
 *
 * The state store's pages are 64 KiB. SQLite asks for a buffer a little
 * bigger than that for each page it caches (32 MiB a connection) and for the
 * scratch space of every B-tree balance, and frees the scratch at once. From
 * glibc these came in fresh 4 KiB pages: recording a 10M run's 140,000
 * differences and 160,000 action records took 7,300 page faults, each served
 * from the host on a VM. Here allocations of BIG_MIN bytes and more come from
 * chunks of CHUNK bytes advised for huge pages, kept on a free list by size
 * class once freed, and reused; smaller ones go to SQLite's own allocator,
 * unchanged. The chunks live as long as the process (a recon command is one
 * batch run: the pool stays as big as SQLite's most at once).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_mem.h"
#include "recon_state.h"

#define BIG_MIN	  ((size_t)32 << 10) /* from here on: the pool */
#define CLASS	  ((size_t)4 << 10)  /* sizes rounded up to a multiple of this */
#define NCLASS	  64		     /* classes up to 256 KiB; bigger: SQLite's allocator */
#define CHUNK	  ((size_t)8 << 20)
#define CHUNK_MAX 64 /* 512 MiB of chunks; past that: SQLite's allocator */
#define HEAD	  16 /* before each pool allocation: its size (keeps 16-byte alignment) */

/*
 * Under mu, but for what mine() reads without it: a chunk's entry and the
 * bounds are written before nchunk is (release), and read after it (acquire).
 * A block of the pool was handed out after its chunk was published, so the
 * thread that frees it sees the chunk.
 */
static struct {
	sqlite3_mem_methods def; /* SQLite's own, for everything else */
	pthread_mutex_t mu;
	char *chunk[CHUNK_MAX]; /* the chunks, in the order they were made */
	atomic_size_t nchunk;
	char *cur, *end;	  /* the newest chunk's unused part */
	void *free_list[NCLASS];  /* freed blocks by class; a block's first word links the next */
	_Atomic uintptr_t lo, hi; /* every chunk lies in [lo, hi) */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Whether p came from the pool (its chunks are few: a scan, after a bounds check). */
static bool mine(const void *p)
{
	const uintptr_t a = (uintptr_t)p;
	const size_t n = atomic_load_explicit(&pool.nchunk, memory_order_acquire);

	if (a < atomic_load_explicit(&pool.lo, memory_order_relaxed) ||
	    a >= atomic_load_explicit(&pool.hi, memory_order_relaxed))
		return false;
	for (size_t i = 0; i < n; i++)
		if (a >= (uintptr_t)pool.chunk[i] && a < (uintptr_t)pool.chunk[i] + CHUNK)
			return true;
	return false;
}

/* Class k holds blocks of (k + 1) * CLASS bytes, head included. */
static size_t class_of(size_t n)
{
	return (n + HEAD + CLASS - 1) / CLASS - 1;
}

/* A block of class k from the pool (under mu); NULL when the pool cannot grow. */
static void *take(size_t k)
{
	const size_t bytes = (k + 1) * CLASS;
	void *b = pool.free_list[k];

	if (b) {
		memcpy(&pool.free_list[k], b, sizeof(void *));
		return b;
	}
	if ((size_t)(pool.end - pool.cur) < bytes) {
		const size_t n = atomic_load_explicit(&pool.nchunk, memory_order_relaxed);
		const uintptr_t lo = atomic_load_explicit(&pool.lo, memory_order_relaxed);
		const uintptr_t hi = atomic_load_explicit(&pool.hi, memory_order_relaxed);
		void *c = NULL;
		if (n == CHUNK_MAX || posix_memalign(&c, (size_t)2 << 20, CHUNK))
			return NULL;
		recon_mem_advise_huge(c, CHUNK);
		pool.chunk[n] = c;
		if (!lo || (uintptr_t)c < lo)
			atomic_store_explicit(&pool.lo, (uintptr_t)c, memory_order_relaxed);
		if ((uintptr_t)c + CHUNK > hi)
			atomic_store_explicit(&pool.hi, (uintptr_t)c + CHUNK, memory_order_relaxed);
		atomic_store_explicit(&pool.nchunk, n + 1, memory_order_release);
		/* the old chunk's tail is left unused (less than one block) */
		pool.cur = c;
		pool.end = pool.cur + CHUNK;
	}
	b = pool.cur;
	pool.cur += bytes;
	return b;
}

static void *mem_malloc(int n)
{
	size_t k;
	char *b;

	if (n <= 0 || (size_t)n < BIG_MIN || (k = class_of((size_t)n)) >= NCLASS)
		return pool.def.xMalloc(n);
	pthread_mutex_lock(&pool.mu);
	b = take(k);
	pthread_mutex_unlock(&pool.mu);
	if (!b)
		return pool.def.xMalloc(n);
	memcpy(b, &(size_t){(size_t)n}, sizeof(size_t));
	return b + HEAD;
}

static int mem_size(void *p)
{
	size_t n;

	if (!p || !mine(p))
		return pool.def.xSize(p);
	memcpy(&n, (char *)p - HEAD, sizeof(n));
	return (int)n;
}

static void mem_free(void *p)
{
	char *b;
	size_t n;

	if (!p || !mine(p)) {
		pool.def.xFree(p);
		return;
	}
	b = (char *)p - HEAD;
	memcpy(&n, b, sizeof(n));
	const size_t k = class_of(n);
	pthread_mutex_lock(&pool.mu);
	memcpy(b, &pool.free_list[k], sizeof(void *));
	pool.free_list[k] = b;
	pthread_mutex_unlock(&pool.mu);
}

static void *mem_realloc(void *p, int n)
{
	void *q;
	bool own;
	int old;

	if (!p)
		return mem_malloc(n);
	own = mine(p);
	if (!own && (n <= 0 || (size_t)n < BIG_MIN))
		return pool.def.xRealloc(p, n);
	old = mem_size(p);
	if (own && n > 0 && (size_t)n >= BIG_MIN && class_of((size_t)n) == class_of((size_t)old)) {
		memcpy((char *)p - HEAD, &(size_t){(size_t)n}, sizeof(size_t));
		return p;
	}
	if (!(q = mem_malloc(n)))
		return NULL;
	memcpy(q, p, (size_t)(old < n ? old : n));
	mem_free(p);
	return q;
}

static int mem_roundup(int n)
{
	return n >= 0 && (size_t)n >= BIG_MIN && class_of((size_t)n) < NCLASS
		   ? n
		   : pool.def.xRoundup(n);
}

static int mem_init(void *arg)
{
	(void)arg;
	return pool.def.xInit(pool.def.pAppData);
}

static void mem_shutdown(void *arg)
{
	(void)arg;
	pool.def.xShutdown(pool.def.pAppData);
}

size_t recon_state_memory_pooled(void)
{
	return atomic_load_explicit(&pool.nchunk, memory_order_acquire) * CHUNK;
}

void recon_state_memory_setup(void)
{
	static const sqlite3_mem_methods mine_methods = {
	    mem_malloc, mem_free, mem_realloc, mem_size, mem_roundup, mem_init, mem_shutdown, NULL,
	};

	/* before SQLite's first use only: a later call changes nothing (SQLITE_MISUSE) */
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &pool.def) != SQLITE_OK)
		return;
	(void)sqlite3_config(SQLITE_CONFIG_MALLOC, &mine_methods);
	/*
	 * No memory statistics (recon reads none): with them every allocation and
	 * free takes one process-wide mutex, 12% of the time spent recording 160k
	 * action records.
	 */
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	/*
	 * Statement journals in memory up to 4 MiB (SQLite's default: 64 KiB,
	 * one of the store's pages). A statement that writes several rows (the
	 * actions, RECON_STATE_ACTION_ROWS at a time) keeps a copy of each page
	 * it changes until it is done: past the default, every such statement
	 * wrote its two or three 64 KiB pages to a temporary file, 690 MB in
	 * /var/tmp for a run with 160k actions.
	 */
	(void)sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, 4 << 20);
}
