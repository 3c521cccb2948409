/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recon_state.h"

/*
 * SQLite with recon_state_memory_setup()'s allocator (src/state_mem.c), as
 * recon runs it: installed first thing, before SQLite's first use.
 */

/* Sizes on both sides of the pool's threshold (32 KiB) keep their bytes through reallocs. */
static void test_realloc_across_the_pool(void **state)
{
	static const int sizes[] = {100,      40000,	70000, 65536 + 300, 300000,
				    33 << 10, 31 << 10, 5,     1 << 20,	    80000};
	unsigned char *p = NULL;
	int have = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const int n = sizes[i];
		p = sqlite3_realloc(p, n);
		assert_non_null(p);
		assert_true(sqlite3_msize(p) >= (sqlite3_uint64)n);
		for (int k = 0; k < (have < n ? have : n); k++)
			if (p[k] != (unsigned char)(k * 7 + have))
				fail_msg("byte %d lost growing from %d to %d bytes", k, have, n);
		for (int k = 0; k < n; k++)
			p[k] = (unsigned char)(k * 7 + n);
		have = n;
	}
	sqlite3_free(p);
	assert_true(recon_state_memory_pooled() > 0); /* the big ones came from the pool */
	/* freed blocks are handed out again, whole */
	void *a[40];
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 40; i++) {
			a[i] = sqlite3_malloc(65536 + 256 + i);
			assert_non_null(a[i]);
			memset(a[i], r + i, 65536 + 256 + (size_t)i);
		}
		for (int i = 0; i < 40; i++) {
			const unsigned char *b = a[i];
			assert_int_equal(b[0], (unsigned char)(r + i));
			assert_int_equal(b[65536 + 255 + i], (unsigned char)(r + i));
			sqlite3_free(a[i]);
		}
	}
}

struct writer {
	char path[512];
	int rows;
	int rc;
};

/* A 64 KiB-page database written hard: B-tree balances, a full page cache, a checkpoint. */
static void *write_db(void *arg)
{
	struct writer *w = arg;
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	char text[700];

	w->rc = sqlite3_open(w->path, &db);
	if (w->rc == SQLITE_OK)
		w->rc = sqlite3_exec(db,
				     "PRAGMA page_size = 65536; PRAGMA journal_mode = WAL;"
				     "PRAGMA cache_size = -8192;"
				     "CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;"
				     "CREATE INDEX t_v ON t (v);",
				     NULL, NULL, NULL);
	if (w->rc == SQLITE_OK)
		w->rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	if (w->rc == SQLITE_OK)
		w->rc = sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?)", -1, &q, NULL);
	for (int i = 0; i < w->rows && w->rc == SQLITE_OK; i++) {
		char key[32];
		/* keys out of order: balances in the middle of the tree too */
		snprintf(key, sizeof(key), "K%010u", (unsigned)i * 2654435761u);
		memset(text, 'a' + i % 26, sizeof(text) - 1);
		text[sizeof(text) - 1] = '\0';
		sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(q, 2, text + i % 300, -1, SQLITE_STATIC);
		w->rc = sqlite3_step(q) == SQLITE_DONE ? sqlite3_reset(q) : SQLITE_ERROR;
	}
	sqlite3_finalize(q);
	if (w->rc == SQLITE_OK)
		w->rc =
		    sqlite3_exec(db, "COMMIT; PRAGMA wal_checkpoint(TRUNCATE);", NULL, NULL, NULL);
	if (w->rc == SQLITE_OK) {
		w->rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL);
		if (w->rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW &&
		    strcmp((const char *)sqlite3_column_text(q, 0), "ok"))
			w->rc = SQLITE_CORRUPT;
		sqlite3_finalize(q);
	}
	if (w->rc == SQLITE_OK) {
		w->rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &q, NULL);
		if (w->rc == SQLITE_OK &&
		    (sqlite3_step(q) != SQLITE_ROW || sqlite3_column_int(q, 0) != w->rows))
			w->rc = SQLITE_ERROR;
		sqlite3_finalize(q);
	}
	sqlite3_close(db);
	return NULL;
}

/* Two threads writing their own databases at once: the pool is shared. */
static void test_two_databases_on_two_threads(void **state)
{
	char dir[] = "/tmp/recon-state-mem.XXXXXX";
	struct writer w[2];
	pthread_t th;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 2; i++) {
		snprintf(w[i].path, sizeof(w[i].path), "%s/db%d.sqlite", dir, i);
		w[i].rows = 60000;
		w[i].rc = SQLITE_OK;
	}
	assert_int_equal(pthread_create(&th, NULL, write_db, &w[1]), 0);
	write_db(&w[0]);
	pthread_join(th, NULL);
	assert_int_equal(w[0].rc, SQLITE_OK);
	assert_int_equal(w[1].rc, SQLITE_OK);
	/* the pool reused what was freed: two caches of 8 MiB and the scratch, not more */
	assert_true(recon_state_memory_pooled() <= ((size_t)40 << 20));
	for (int i = 0; i < 2; i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s/db%d.sqlite-wal", dir, i);
		unlink(p);
		snprintf(p, sizeof(p), "%s/db%d.sqlite-shm", dir, i);
		unlink(p);
		unlink(w[i].path);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_realloc_across_the_pool),
	    cmocka_unit_test(test_two_databases_on_two_threads),
	};

	recon_state_memory_setup();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
