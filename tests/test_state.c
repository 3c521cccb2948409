/*
 * Tests for src/recon_state.c: the SQLite state store in a mkdtemp() folder:
 * creation and migration, read-only opens, runs, rejects, the difference
 * ledger (first/last seen, resolved when a later run owns the key and finds it
 * matched, untouched by dry runs), the never-backwards watermark, and the
 * per-job flock(2) run lock (held, released, and released by a killed holder).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recon_compare.h"
#include "recon_err.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_state.h"
#include "recon_time.h"
#include "support_jobs.h"

#define HOUR RECON_MS_PER_HOUR
#define MIN  RECON_MS_PER_MIN

/* 2024-01-16 00:00 Asia/Shanghai, and the next day */
#define D16 1705334400000LL
#define D17 (D16 + RECON_MS_PER_DAY)

struct fixture {
	char dir[64];
	char path[256]; /* <dir>/a/b/state.db: folders that do not exist yet */
	struct recon_job *job;
	struct recon_state *st;
	struct recon_err err;
};

static void rmtree(const char *path)
{
	struct stat sb;
	DIR *d;
	struct dirent *de;
	char p[512];

	if (lstat(path, &sb) < 0)
		return;
	if (!S_ISDIR(sb.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		rmtree(p);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

static int setup(void **state)
{
	struct fixture *fx = recon_xcalloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/recon_state_XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/a/b/state.db", fx->dir);
	fx->job = support_job_new();
	recon_err_init(&fx->err);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	recon_state_close(fx->st);
	recon_job_free(fx->job);
	rmtree(fx->dir);
	free(fx);
	return 0;
}

static void fail_err(const char *what, const struct recon_err *err)
{
	char buf[512];

	fail_msg("%s: %s", what, recon_err_str(err, buf, sizeof(buf)));
}

static struct recon_state *open_rw(struct fixture *fx)
{
	struct recon_err err;

	recon_err_init(&err);
	recon_state_close(fx->st);
	fx->st = NULL;
	if (recon_state_open(&fx->st, fx->path, true, &err) < 0)
		fail_err("open", &err);
	assert_non_null(fx->st);
	return fx->st;
}

/* The first column of the first row of sql, as an integer (-1 for NULL, -2 for no row). */
static int64_t q_int(struct recon_state *st, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int64_t v = -2;

	if (sqlite3_prepare_v2(recon_state_db(st), sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("prepare '%s': %s", sql, sqlite3_errmsg(recon_state_db(st)));
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_type(q, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

/* The first column of the first row as text into buf ("(null)" / "(none)"). */
static const char *q_text(struct recon_state *st, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *q = NULL;

	snprintf(buf, size, "(none)");
	if (sqlite3_prepare_v2(recon_state_db(st), sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("prepare '%s': %s", sql, sqlite3_errmsg(recon_state_db(st)));
	if (sqlite3_step(q) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(q, 0);
		snprintf(buf, size, "%s", t ? (const char *)t : "(null)");
	}
	sqlite3_finalize(q);
	return buf;
}

static int64_t begin_run(struct fixture *fx, int64_t start, int64_t end, bool dry_run, int64_t now)
{
	struct recon_run_info info = {
	    .job = fx->job->name,
	    .mode = "t1",
	    .window_start = start,
	    .window_end = end,
	    .business_date = "2024-01-16",
	    .dry_run = dry_run,
	    .started_at = now,
	    .config_sha256 = "abc123",
	};
	struct recon_err err;
	int64_t id = 0;

	recon_err_init(&err);
	if (recon_state_run_begin(fx->st, &info, &id, &err) < 0)
		fail_err("run_begin", &err);
	assert_true(id > 0);
	return id;
}

/* ---- compares for the ledger tests -------------------------------------- */

static void add(struct recon_compare *cmp, int side, const char *key, int64_t amount, int64_t t,
		int status, int entry, unsigned flags)
{
	struct recon_arena *a = recon_compare_arena(cmp);
	struct recon_row row;

	memset(&row, 0, sizeof(row));
	row.key = recon_arena_strndup(a, key, strlen(key));
	row.key_len = (uint32_t)strlen(key);
	memcpy(row.currency, "CNY", 4);
	row.amount = amount;
	row.time = t;
	row.status = (uint8_t)status;
	row.entry = (uint8_t)entry;
	row.flags = (uint8_t)flags;
	recon_compare_add(cmp, side, &row);
}

static void up_entry(struct recon_compare *cmp, const char *key, int type, int64_t amount,
		     int64_t t)
{
	add(cmp, RECON_SIDE_UPSTREAM, key, amount, t, 0, type, 0);
}

static void local(struct recon_compare *cmp, const char *key, int status, int64_t amount, int64_t t)
{
	add(cmp, RECON_SIDE_LOCAL, key, amount, t, status, 0, RECON_ROW_HAS_STATUS);
}

static struct recon_compare *new_cmp(struct fixture *fx, int y, unsigned m, unsigned d,
				     struct recon_window *win)
{
	support_window_day(fx->job, y, m, d, win);
	return recon_compare_new(fx->job, win, win->end + 9 * HOUR, true);
}

/* JSON lines "{run,key,class}" for a list. */
static char **lines(int64_t run_id, const struct recon_diff *d, size_t n)
{
	char **json = recon_xcalloc(n ? n : 1, sizeof(*json));

	for (size_t i = 0; i < n; i++) {
		json[i] = recon_xmalloc(64 + d[i].key_len);
		snprintf(json[i], 64 + d[i].key_len,
			 "{\"run\":%lld,\"key\":\"%.*s\",\"class\":\"%s\"}", (long long)run_id,
			 (int)d[i].key_len, d[i].key, recon_class_name(d[i].klass));
	}
	return json;
}

/* Records cmp's evaluation as t1 run run_id (ledger: not a dry run); returns what it did to items.
 */
static struct recon_item_counts record_items(struct fixture *fx, struct recon_compare *cmp,
					     int64_t run_id, int64_t now, bool ledger)
{
	const struct recon_diff *d, *p;
	size_t n, np;
	char **json, **pjson;
	struct recon_item_counts ic;
	struct recon_record rec;
	struct recon_err err;

	recon_compare_classify(cmp);
	d = recon_compare_diffs(cmp, &n);
	p = recon_compare_pending(cmp, &np);
	json = lines(run_id, d, n);
	pjson = lines(run_id, p, np);
	rec = (struct recon_record){.job = fx->job->name,
				    .mode = "t1",
				    .run_id = run_id,
				    .now = now,
				    .diffs = d,
				    .json = json,
				    .n = n,
				    .pending = p,
				    .pjson = pjson,
				    .npending = np,
				    .cmp = cmp,
				    .ledger = ledger,
				    .settled_ms = 35 * RECON_MS_PER_DAY,
				    .retention_ms = 400 * RECON_MS_PER_DAY};
	recon_err_init(&err);
	if (recon_state_record_diffs(fx->st, &rec, &ic, &err) < 0)
		fail_err("record_diffs", &err);
	for (size_t i = 0; i < n; i++)
		free(json[i]);
	free(json);
	for (size_t i = 0; i < np; i++)
		free(pjson[i]);
	free(pjson);
	return ic;
}

/* Records cmp's evaluation; returns the difference items it resolved. */
static uint64_t record(struct fixture *fx, struct recon_compare *cmp, int64_t run_id, int64_t now,
		       bool ledger)
{
	return record_items(fx, cmp, run_id, now, ledger).resolved;
}

/* ---- tests -------------------------------------------------------------- */

/* A writable open creates the folders and the file, and migrates to the latest version. */
static void test_state_open_creates_and_migrates(void **state)
{
	struct fixture *fx = *state;
	struct stat sb;
	char buf[64];

	assert_int_equal(stat(fx->path, &sb), -1);
	open_rw(fx);
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(q_int(fx->st, "PRAGMA user_version"), 4);
	assert_string_equal(q_text(fx->st, "PRAGMA journal_mode", buf, sizeof(buf)), "wal");
	for (const char *const *t =
		 (const char *const[]){"runs", "run_differences", "differences", "rejects",
				       "watermarks", "heartbeats", "tickets", "actions",
				       "boundary_keys", "ledger", "items", NULL};
	     *t; t++) {
		char sql[128];
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
			 *t);
		if (q_int(fx->st, sql) != 1)
			fail_msg("table '%s' missing", *t);
	}
}

/* Reopening migrates nothing twice and keeps the data. */
static void test_state_reopen_idempotent(void **state)
{
	struct fixture *fx = *state;
	int64_t id;

	open_rw(fx);
	id = begin_run(fx, D16, D17, false, D17 + HOUR);
	open_rw(fx);
	assert_int_equal(q_int(fx->st, "PRAGMA user_version"), 4);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM runs"), 1);
	open_rw(fx);
	assert_int_equal(q_int(fx->st, "PRAGMA user_version"), 4);
	assert_int_equal(begin_run(fx, D16, D17, false, D17 + HOUR), id + 1);
}

/* Generated from sql/sqlite/state at build time (linked from the library). */
extern const char *const recon_migrations[];

/*
 * A version-3 store upgrades in place: its open differences become open items
 * (the latest class of each key), nothing is dropped.
 */
static void test_state_upgrade_from_v3(void **state)
{
	struct fixture *fx = *state;
	sqlite3 *db;
	char d[300];

	snprintf(d, sizeof(d), "%s/a", fx->dir);
	assert_int_equal(mkdir(d, 0750), 0);
	snprintf(d, sizeof(d), "%s/a/b", fx->dir);
	assert_int_equal(mkdir(d, 0750), 0);
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	for (int v = 0; v < 3; v++)
		assert_int_equal(sqlite3_exec(db, recon_migrations[v], NULL, NULL, NULL),
				 SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(
		db,
		"PRAGMA user_version = 3;"
		"INSERT INTO runs (id, job, mode, window_start_ms, window_end_ms, "
		"business_date, started_at_ms, config_sha256) VALUES (1, 'test_job', 't1', 0, "
		"1, '2024-01-16', 5, 'x'), (2, 'test_job', 't1', 0, 1, '2024-01-16', 6, 'x');"
		"INSERT INTO differences VALUES ('test_job', 'K1', 'missing', 1, 1, 5, 5, "
		"NULL, NULL, '{\"old\":1}'), ('test_job', 'K1', 'amount_mismatch', 2, 2, 6, "
		"6, NULL, NULL, '{\"new\":1}'), ('test_job', 'K2', 'extra', 1, 1, 5, 5, 2, 6, "
		"'{}');",
		NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	open_rw(fx);
	assert_int_equal(q_int(fx->st, "PRAGMA user_version"), 4);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM differences"), 3);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items"), 1);
	assert_int_equal(q_int(fx->st, "SELECT class = 'amount_mismatch' AND severity = "
				       "'critical' AND state = 'open' AND last_run = 2 FROM items "
				       "WHERE key = 'K1'"),
			 1);
}

/* A read-only open of a missing store is RECON_ENOTFOUND and creates nothing. */
static void test_state_readonly_missing(void **state)
{
	struct fixture *fx = *state;
	struct recon_state *st = (struct recon_state *)1;
	struct stat sb;
	char dir[300];

	assert_int_equal(recon_state_open(&st, fx->path, false, &fx->err), RECON_ENOTFOUND);
	assert_null(st);
	assert_int_equal(fx->err.code, RECON_ENOTFOUND);
	assert_non_null(strstr(fx->err.msg, "does not exist"));
	assert_int_equal(stat(fx->path, &sb), -1);
	snprintf(dir, sizeof(dir), "%s/a", fx->dir);
	assert_int_equal(stat(dir, &sb), -1);

	/* once created, a read-only open works */
	open_rw(fx);
	begin_run(fx, D16, D17, false, D17);
	recon_state_close(fx->st);
	fx->st = NULL;
	recon_err_init(&fx->err);
	assert_int_equal(recon_state_open(&fx->st, fx->path, false, &fx->err), 0);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM runs"), 1);
}

/* A read-only open of some other SQLite file is refused. */
static void test_state_readonly_not_a_store(void **state)
{
	struct fixture *fx = *state;
	struct recon_state *st = NULL;
	char other[300];
	sqlite3 *db = NULL;

	snprintf(other, sizeof(other), "%s/other.db", fx->dir);
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(recon_state_open(&st, other, false, &fx->err), RECON_EIO);
	assert_null(st);
	assert_non_null(strstr(fx->err.msg, "not a recon state store"));
}

/* A store from a newer recon is refused, not downgraded. */
static void test_state_newer_schema_refused(void **state)
{
	struct fixture *fx = *state;
	struct recon_state *st = NULL;

	open_rw(fx);
	assert_int_equal(
	    sqlite3_exec(recon_state_db(fx->st), "PRAGMA user_version = 99", NULL, NULL, NULL),
	    SQLITE_OK);
	recon_state_close(fx->st);
	fx->st = NULL;
	assert_int_equal(recon_state_open(&st, fx->path, true, &fx->err), RECON_EIO);
	assert_null(st);
	assert_non_null(strstr(fx->err.msg, "newer than this recon"));
}

/* A folder that cannot be created is an I/O error naming it. */
static void test_state_open_bad_folder(void **state)
{
	struct fixture *fx = *state;
	struct recon_state *st = NULL;
	char file[300], path[400];
	FILE *f;

	snprintf(file, sizeof(file), "%s/plainfile", fx->dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sub/state.db", file);
	assert_int_equal(recon_state_open(&st, path, true, &fx->err), RECON_EIO);
	assert_null(st);
	assert_non_null(strstr(fx->err.msg, "cannot create"));
}

/* Writes len bytes of data to path (creating its folders a/b first). */
static void put_file(struct fixture *fx, const char *data, size_t len)
{
	char dir[300];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/a", fx->dir);
	mkdir(dir, 0750);
	snprintf(dir, sizeof(dir), "%s/a/b", fx->dir);
	mkdir(dir, 0750);
	f = fopen(fx->path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/*
 * Issue 12 #7: the store never starts over silently. A 0-byte file, a file
 * that is not SQLite, and another program's SQLite database are refused for
 * writing, naming the file, which is left as it was.
 */
static void test_state_open_refuses_to_start_over(void **state)
{
	struct fixture *fx = *state;
	struct recon_state *st = NULL;
	struct stat sb;
	sqlite3 *db = NULL;

	put_file(fx, "", 0);
	assert_int_equal(recon_state_open(&st, fx->path, true, &fx->err), RECON_EIO);
	assert_null(st);
	assert_non_null(strstr(fx->err.msg, fx->path));
	assert_non_null(strstr(fx->err.msg, "empty file (0 bytes)"));
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_size, 0);

	put_file(fx, "job,key\nx,y\n", 12);
	recon_err_init(&fx->err);
	assert_int_equal(recon_state_open(&st, fx->path, true, &fx->err), RECON_EIO);
	assert_non_null(strstr(fx->err.msg, fx->path));
	assert_non_null(strstr(fx->err.msg, "not a recon state store (not a SQLite database)"));
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_size, 12);

	unlink(fx->path);
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE orders (x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	recon_err_init(&fx->err);
	assert_int_equal(recon_state_open(&st, fx->path, true, &fx->err), RECON_EIO);
	assert_non_null(strstr(fx->err.where, fx->path));
	assert_non_null(strstr(fx->err.msg, "not a recon state store"));
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "SELECT * FROM runs", NULL, NULL, NULL), SQLITE_ERROR);
	sqlite3_close(db);
}

/* A new store is 0640 (its WAL files too) in folders of 0750, whatever the umask. */
static void test_state_new_store_modes(void **state)
{
	struct fixture *fx = *state;
	char path[320];
	struct stat sb;
	mode_t old = umask(0);
	DIR *d;
	struct dirent *e;

	open_rw(fx);
	umask(old);
	begin_run(fx, D16, D17, false, D17);
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0640);
	snprintf(path, sizeof(path), "%s-wal", fx->path);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0640);
	snprintf(path, sizeof(path), "%s/a", fx->dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0750);
	snprintf(path, sizeof(path), "%s/a/b", fx->dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0750);
	/* no temporary file left beside it */
	d = opendir(path);
	assert_non_null(d);
	while ((e = readdir(d)))
		assert_null(strstr(e->d_name, ".new-"));
	closedir(d);
}

/* run_begin records a running run; run_finish its outcome and counts. */
static void test_state_run_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct recon_run_result res = {0};
	char buf[128], sql[256];
	int64_t id;

	open_rw(fx);
	id = begin_run(fx, D16, D17, true, D17 + HOUR);
	snprintf(sql, sizeof(sql), "SELECT outcome FROM runs WHERE id = %lld", (long long)id);
	assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), "running");
	assert_int_equal(q_int(fx->st, "SELECT dry_run FROM runs"), 1);
	assert_int_equal(q_int(fx->st, "SELECT window_start_ms FROM runs"), D16);
	assert_int_equal(q_int(fx->st, "SELECT window_end_ms FROM runs"), D17);
	assert_int_equal(q_int(fx->st, "SELECT started_at_ms FROM runs"), D17 + HOUR);
	assert_int_equal(q_int(fx->st, "SELECT finished_at_ms FROM runs"), -1);
	assert_string_equal(q_text(fx->st, "SELECT business_date FROM runs", buf, sizeof(buf)),
			    "2024-01-16");
	assert_string_equal(q_text(fx->st, "SELECT config_sha256 FROM runs", buf, sizeof(buf)),
			    "abc123");

	res.outcome = "success";
	res.finished_at = D17 + HOUR + 1500;
	res.rows_upstream = 10;
	res.rows_local = 9;
	res.rows_rejected = 1;
	res.rows_skipped = 2;
	res.rows_other = 3;
	res.keys_compared = 8;
	res.matched = 5;
	res.in_flight = 1;
	res.resolved = 4;
	for (int c = 0; c < RECON_CLASS__COUNT; c++)
		res.classes[c] = (uint64_t)(c + 1) * 11;
	res.upstream_sha256 = "ffee";
	assert_int_equal(recon_state_run_finish(fx->st, id, &res, &fx->err), 0);
	assert_int_equal(fx->err.code, 0);
	assert_string_equal(q_text(fx->st, "SELECT outcome FROM runs", buf, sizeof(buf)),
			    "success");
	assert_int_equal(q_int(fx->st, "SELECT exit_code FROM runs"), 0);
	assert_int_equal(q_int(fx->st, "SELECT error FROM runs"), -1);
	assert_int_equal(q_int(fx->st, "SELECT finished_at_ms FROM runs"), D17 + HOUR + 1500);
	assert_int_equal(q_int(fx->st, "SELECT rows_upstream + 100 * rows_local FROM runs"), 910);
	assert_int_equal(q_int(fx->st, "SELECT rows_rejected FROM runs"), 1);
	assert_int_equal(q_int(fx->st, "SELECT rows_skipped FROM runs"), 2);
	assert_int_equal(q_int(fx->st, "SELECT rows_other FROM runs"), 3);
	assert_int_equal(q_int(fx->st, "SELECT keys_compared FROM runs"), 8);
	assert_int_equal(q_int(fx->st, "SELECT matched FROM runs"), 5);
	assert_int_equal(q_int(fx->st, "SELECT in_flight FROM runs"), 1);
	assert_int_equal(q_int(fx->st, "SELECT resolved FROM runs"), 4);
	assert_int_equal(q_int(fx->st, "SELECT n_missing FROM runs"), 11);
	assert_int_equal(q_int(fx->st, "SELECT n_extra FROM runs"), 22);
	assert_int_equal(q_int(fx->st, "SELECT n_stuck FROM runs"), 33);
	assert_int_equal(q_int(fx->st, "SELECT n_amount_mismatch FROM runs"), 44);
	assert_int_equal(q_int(fx->st, "SELECT n_status_mismatch FROM runs"), 55);
	assert_int_equal(q_int(fx->st, "SELECT n_duplicate FROM runs"), 66);
	assert_string_equal(q_text(fx->st, "SELECT upstream_sha256 FROM runs", buf, sizeof(buf)),
			    "ffee");
	assert_int_equal(q_int(fx->st, "SELECT local_sha256 FROM runs"), -1);

	/* a failed run keeps its exit code and message */
	id = begin_run(fx, D16, D17, false, D17 + 2 * HOUR);
	memset(&res, 0, sizeof(res));
	res.outcome = "failed";
	res.exit_code = 65;
	res.error = "2 rows rejected";
	res.finished_at = D17 + 2 * HOUR;
	assert_int_equal(recon_state_run_finish(fx->st, id, &res, &fx->err), 0);
	snprintf(sql, sizeof(sql), "SELECT error FROM runs WHERE id = %lld", (long long)id);
	assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), "2 rows rejected");
	snprintf(sql, sizeof(sql), "SELECT exit_code FROM runs WHERE id = %lld", (long long)id);
	assert_int_equal(q_int(fx->st, sql), 65);
}

/* Rejects are stored with their run, side, origin, field, reason and raw text. */
static void test_state_rejects(void **state)
{
	struct fixture *fx = *state;
	const struct recon_reject rj[] = {
	    {"upstream", "bill.csv:3", "amount", "junk", "a,b,c"},
	    {"local", "payment_flow", "status", "unknown status 'X'", NULL},
	};
	char buf[128];
	int64_t id;

	open_rw(fx);
	id = begin_run(fx, D16, D17, false, D17);
	assert_int_equal(recon_state_add_rejects(fx->st, id, rj, 2, &fx->err), 0);
	assert_int_equal(recon_state_add_rejects(fx->st, id, NULL, 0, &fx->err), 0);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM rejects"), 2);
	assert_string_equal(
	    q_text(fx->st,
		   "SELECT origin || '|' || field || '|' || reason || '|' || raw FROM "
		   "rejects WHERE side = 'upstream'",
		   buf, sizeof(buf)),
	    "bill.csv:3|amount|junk|a,b,c");
	assert_int_equal(q_int(fx->st, "SELECT raw FROM rejects WHERE side = 'local'"), -1);
	assert_int_equal(fx->err.code, 0);
}

/*
 * A run's differences are recorded several to a statement: counts around a
 * statement's rows (64) and beyond, each run's rows all there, each its own
 * key's line. Dry runs (no ledger) and real ones take the same way.
 */
static void test_state_run_differences_many(void **state)
{
	struct fixture *fx = *state;
	const size_t counts[] = {0, 1, 63, 64, 65, 133};
	char sql[160], buf[128], want[128];

	open_rw(fx);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		const bool ledger = c % 2;
		struct recon_window win;
		struct recon_compare *cmp;
		int64_t run = begin_run(fx, D16, D17, !ledger, D17 + HOUR + (int64_t)c);

		cmp = new_cmp(fx, 2024, 1, 16, &win);
		for (size_t i = 0; i < counts[c]; i++) {
			char key[32];
			snprintf(key, sizeof(key), "K%zu-%03zu", c, i);
			up_entry(cmp, key, RECON_ENTRY_PAYMENT, 100 + (int64_t)i, D16 + HOUR);
		}
		(void)record_items(fx, cmp, run, D17 + HOUR, ledger);
		recon_compare_free(cmp);
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM run_differences WHERE run_id = %lld",
			 (long long)run);
		assert_int_equal(q_int(fx->st, sql), (int64_t)counts[c]);
		for (size_t i = 0; i < counts[c]; i++) {
			snprintf(sql, sizeof(sql),
				 "SELECT json FROM run_differences WHERE run_id = %lld AND key = "
				 "'K%zu-%03zu'",
				 (long long)run, c, i);
			snprintf(want, sizeof(want),
				 "{\"run\":%lld,\"key\":\"K%zu-%03zu\",\"class\":\"missing\"}",
				 (long long)run, c, i);
			assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), want);
		}
	}
}

/*
 * A window's contributions reach the ledger in key order, its plain rows
 * several to a statement: 150 of them, shuffled, among them four keys
 * carried from the day before (their earlier rows then kept as long as the
 * new ones) and three assumed payments of that day, between runs of plain
 * rows longer and shorter than a statement's. Every row as each contribution
 * alone writes it.
 */
static void test_state_ledger_save_many(void **state)
{
	enum { N = 150, PREV = 4 };
	struct fixture *fx = *state;
	struct recon_contrib prev[PREV], c[N];
	char keys[N][16], pkeys[PREV][16], sql[256], buf[128], want[128];
	const int64_t D15 = D16 - RECON_MS_PER_DAY;
	struct recon_record rec = {.job = fx->job->name,
				   .mode = "t1",
				   .now = D17 + 2 * HOUR,
				   .window_start = D16,
				   .window_end = D17,
				   .settled_ms = 35 * RECON_MS_PER_DAY,
				   .retention_ms = 400 * RECON_MS_PER_DAY};
	struct recon_record rec0 = rec;
	struct recon_err err;

	open_rw(fx);
	recon_err_init(&err);
	/* the day before: C0..C3, open (kept until their items end) */
	rec0.run_id = begin_run(fx, D15, D16, false, D16 + HOUR);
	rec0.window_start = D15;
	rec0.window_end = D16;
	rec0.now = D16 + HOUR;
	for (int i = 0; i < PREV; i++) {
		snprintf(pkeys[i], sizeof(pkeys[i]), "C%d", i);
		prev[i] = (struct recon_contrib){.key = pkeys[i],
						 .key_len = (uint32_t)strlen(pkeys[i]),
						 .klass = RECON_CLASS_MISSING};
		prev[i].c.paid = 7;
		memcpy(prev[i].c.currency, "CNY", 4);
	}
	assert_int_equal(recon_state_ledger_save(fx->st, &rec0, prev, PREV, &err), 0);
	rec.run_id = begin_run(fx, D16, D17, false, D17 + 2 * HOUR);
	for (int i = 0; i < N; i++) {
		const int k = (i * 37) % N; /* every k once, shuffled */
		const bool carried = k % 40 == 5;
		if (carried)
			snprintf(keys[i], sizeof(keys[i]), "C%d", k / 40);
		else
			snprintf(keys[i], sizeof(keys[i]), "K%03d", k);
		c[i] = (struct recon_contrib){.key = keys[i],
					      .key_len = (uint32_t)strlen(keys[i]),
					      .klass =
						  k % 3 ? RECON_CLASS_MATCHED : RECON_CLASS_MISSING,
					      .partial = k % 2,
					      .carried = carried};
		c[i].c.paid = 100 * k;
		c[i].c.entries = (uint32_t)k;
		memcpy(c[i].c.currency, "CNY", 4);
		if (k % 50 == 4) { /* an assumed payment of the day before */
			c[i].window_start = D15;
			c[i].window_end = D16;
		}
	}
	assert_int_equal(recon_state_ledger_save(fx->st, &rec, c, N, &err), 0);
	for (int i = 0; i < N; i++) {
		const int k = (i * 37) % N;
		const int64_t until =
		    k % 3 ? rec.now + (k % 2 ? rec.retention_ms : rec.settled_ms) : INT64_MAX;
		snprintf(
		    sql, sizeof(sql),
		    "SELECT paid || '/' || entries || '/' || assumed || '/' || keep_until_ms FROM "
		    "ledger WHERE key = '%.15s' AND window_start_ms = %lld",
		    keys[i], (long long)(c[i].window_start ? D15 : D16));
		snprintf(want, sizeof(want), "%d/%d/%d/%lld", 100 * k, k, c[i].window_start ? 1 : 0,
			 (long long)until);
		assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), want);
		if (!c[i].carried)
			continue;
		/* the day before's row of a carried key: kept as long as the new one */
		snprintf(sql, sizeof(sql),
			 "SELECT paid || '/' || keep_until_ms FROM ledger WHERE key = '%.15s' AND "
			 "window_start_ms = %lld",
			 keys[i], (long long)D15);
		snprintf(want, sizeof(want), "7/%lld", (long long)until);
		assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), want);
	}
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM ledger WHERE window_start_ms = %lld",
		 (long long)D16);
	assert_int_equal(q_int(fx->st, sql), N - 3);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM ledger WHERE window_start_ms = %lld",
		 (long long)D15);
	assert_int_equal(q_int(fx->st, sql), PREV + 3);
}

/* Two runs finding the same difference: first_seen stays, last_seen moves. */
static void test_state_ledger_first_last_seen(void **state)
{
	struct fixture *fx = *state;
	struct recon_window win;
	struct recon_compare *cmp;
	int64_t r1, r2;
	char buf[256];

	open_rw(fx);
	r1 = begin_run(fx, D16, D17, false, D17 + HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	local(cmp, "E1", RECON_ST_SUCCESS, 700, D16 + HOUR);
	up_entry(cmp, "M1", RECON_ENTRY_PAYMENT, 1000, D16 + 2 * HOUR);
	assert_int_equal(record(fx, cmp, r1, D17 + HOUR, true), 0);
	recon_compare_free(cmp);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items"), 2);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM run_differences"), 2);

	r2 = begin_run(fx, D16, D17, false, D17 + 2 * HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	local(cmp, "E1", RECON_ST_SUCCESS, 700, D16 + HOUR);
	up_entry(cmp, "M1", RECON_ENTRY_PAYMENT, 1000, D16 + 2 * HOUR);
	assert_int_equal(record(fx, cmp, r2, D17 + 2 * HOUR, true), 0);
	recon_compare_free(cmp);

	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items"), 2);
	assert_int_equal(q_int(fx->st, "SELECT opened_run FROM items WHERE key = 'E1'"), r1);
	assert_int_equal(q_int(fx->st, "SELECT last_run FROM items WHERE key = 'E1'"), r2);
	assert_int_equal(q_int(fx->st, "SELECT opened_at_ms FROM items WHERE key = 'E1'"),
			 D17 + HOUR);
	assert_int_equal(q_int(fx->st, "SELECT last_at_ms FROM items WHERE key = 'E1'"),
			 D17 + 2 * HOUR);
	assert_int_equal(q_int(fx->st, "SELECT class = 'extra' FROM items WHERE key = 'E1'"), 1);
	assert_int_equal(q_int(fx->st, "SELECT amount_minor FROM items WHERE key = 'E1'"), 700);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items WHERE state <> 'open'"), 0);
	snprintf(buf, sizeof(buf), "{\"run\":%lld,\"key\":\"M1\",\"class\":\"missing\"}",
		 (long long)r2);
	{
		char got[256];
		assert_string_equal(
		    q_text(fx->st, "SELECT json FROM items WHERE key = 'M1'", got, sizeof(got)),
		    buf);
	}
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM run_differences"), 4);
}

/*
 * A difference of run 1 whose key run 2 evaluates and finds matched is
 * resolved by run 2; one whose key got another class is superseded (not
 * resolved); a key run 2 does not evaluate stays open.
 */
static void test_state_resolved_when_matched_later(void **state)
{
	struct fixture *fx = *state;
	struct recon_window win;
	struct recon_compare *cmp;
	struct recon_item_counts ic;
	int64_t r1, r2, r3;

	open_rw(fx);
	/* run 1, 2024-01-16: three keys missing, one extra */
	r1 = begin_run(fx, D16, D17, false, D17 + HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	up_entry(cmp, "K1", RECON_ENTRY_PAYMENT, 1000, D16 + 10 * HOUR);
	up_entry(cmp, "K2", RECON_ENTRY_PAYMENT, 500, D16 + 22 * HOUR);
	up_entry(cmp, "K4", RECON_ENTRY_PAYMENT, 1000, D16 + 11 * HOUR);
	local(cmp, "K3", RECON_ST_SUCCESS, 700, D16 + 12 * HOUR);
	assert_int_equal(record(fx, cmp, r1, D17 + HOUR, true), 0);
	recon_compare_free(cmp);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items WHERE state = 'open'"), 4);

	/* run 2, 2024-01-17: refunds of K1 (whole) and K4 (more than its local 900) */
	r2 = begin_run(fx, D17, D17 + RECON_MS_PER_DAY, false, D17 + 25 * HOUR);
	cmp = new_cmp(fx, 2024, 1, 17, &win);
	up_entry(cmp, "K1", RECON_ENTRY_REFUND, 1000, D17 + 9 * HOUR);
	local(cmp, "K1", RECON_ST_REFUNDED, 1000, D16 + 10 * HOUR);
	up_entry(cmp, "K4", RECON_ENTRY_REFUND, 1000, D17 + 9 * HOUR);
	local(cmp, "K4", RECON_ST_REFUNDED, 900, D16 + 11 * HOUR);
	/* K2's local row, read through the margin: not this window's */
	local(cmp, "K2", RECON_ST_SUCCESS, 500, D17 - 15 * MIN);
	ic = record_items(fx, cmp, r2, D17 + 25 * HOUR, true);
	assert_int_equal(recon_compare_key_class(cmp, "K1", 2), RECON_CLASS_MATCHED);
	assert_int_equal(recon_compare_key_class(cmp, "K2", 2), -1);
	assert_int_equal(recon_compare_key_class(cmp, "K4", 2), RECON_CLASS_AMOUNT_MISMATCH);
	recon_compare_free(cmp);

	assert_int_equal(ic.resolved, 1);
	assert_int_equal(ic.superseded, 1);
	assert_int_equal(q_int(fx->st, "SELECT ended_run FROM items WHERE key = 'K1'"), r2);
	assert_int_equal(q_int(fx->st, "SELECT ended_by = 'matched' FROM items WHERE key = 'K1'"),
			 1);
	assert_int_equal(q_int(fx->st, "SELECT ended_at_ms FROM items WHERE key = 'K1'"),
			 D17 + 25 * HOUR);
	assert_int_equal(q_int(fx->st, "SELECT state = 'open' FROM items WHERE key = 'K2'"), 1);
	assert_int_equal(q_int(fx->st, "SELECT state = 'open' FROM items WHERE key = 'K3'"), 1);
	assert_int_equal(q_int(fx->st, "SELECT state = 'superseded' AND ended_by = "
				       "'amount_mismatch' FROM items WHERE key = 'K4' AND class = "
				       "'missing'"),
			 1);
	assert_int_equal(q_int(fx->st, "SELECT opened_run FROM items WHERE key = 'K4' AND class = "
				       "'amount_mismatch' AND state = 'open'"),
			 r2);

	/* run 3, a rerun of 2024-01-16 that finds K1 missing again: a new item opens */
	r3 = begin_run(fx, D16, D17, false, D17 + 26 * HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	up_entry(cmp, "K1", RECON_ENTRY_PAYMENT, 1000, D16 + 10 * HOUR);
	up_entry(cmp, "K2", RECON_ENTRY_PAYMENT, 500, D16 + 22 * HOUR);
	local(cmp, "K2", RECON_ST_SUCCESS, 500, D17 - 15 * MIN);
	ic = record_items(fx, cmp, r3, D17 + 26 * HOUR, true);
	recon_compare_free(cmp);
	/* K2 now matched: resolved; K3 not evaluated by the rerun: open */
	assert_int_equal(ic.resolved, 1);
	assert_int_equal(q_int(fx->st, "SELECT opened_run FROM items WHERE key = 'K1' AND "
				       "state = 'open'"),
			 r3);
	assert_int_equal(q_int(fx->st, "SELECT ended_run FROM items WHERE key = 'K2'"), r3);
	assert_int_equal(q_int(fx->st, "SELECT state = 'open' FROM items WHERE key = 'K3'"), 1);
}

/* Many open differences resolved by one run: every one of them, exactly once. */
static void test_state_resolves_many(void **state)
{
	struct fixture *fx = *state;
	struct recon_window win;
	struct recon_compare *cmp;
	char key[16], sql[256];
	int64_t r1, r2;
	const int n = 500;

	open_rw(fx);
	r1 = begin_run(fx, D16, D17, false, D17 + HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "K%04d", i);
		up_entry(cmp, key, RECON_ENTRY_PAYMENT, 100, D16 + i * 1000);
	}
	assert_int_equal(record(fx, cmp, r1, D17 + HOUR, true), 0);
	recon_compare_free(cmp);

	r2 = begin_run(fx, D16, D17, false, D17 + 2 * HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "K%04d", i);
		up_entry(cmp, key, RECON_ENTRY_PAYMENT, 100, D16 + i * 1000);
		local(cmp, key, RECON_ST_SUCCESS, 100, D16 + i * 1000);
	}
	assert_int_equal(record(fx, cmp, r2, D17 + 2 * HOUR, true), n);
	recon_compare_free(cmp);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM items WHERE ended_run = %lld AND ended_at_ms = %lld AND "
		 "state = 'resolved'",
		 (long long)r2, (long long)(D17 + 2 * HOUR));
	assert_int_equal(q_int(fx->st, sql), n);
}

/* A dry run stores its differences per run, but leaves the open items alone. */
static void test_state_dry_run_leaves_ledger(void **state)
{
	struct fixture *fx = *state;
	struct recon_window win;
	struct recon_compare *cmp;
	int64_t r1, r2;
	char sql[128];

	open_rw(fx);
	r1 = begin_run(fx, D16, D17, false, D17 + HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	up_entry(cmp, "K1", RECON_ENTRY_PAYMENT, 1000, D16 + HOUR);
	assert_int_equal(record(fx, cmp, r1, D17 + HOUR, true), 0);
	recon_compare_free(cmp);

	/* dry run: K1 now matched, E1 a new extra */
	r2 = begin_run(fx, D16, D17, true, D17 + 2 * HOUR);
	cmp = new_cmp(fx, 2024, 1, 16, &win);
	up_entry(cmp, "K1", RECON_ENTRY_PAYMENT, 1000, D16 + HOUR);
	local(cmp, "K1", RECON_ST_SUCCESS, 1000, D16 + HOUR);
	local(cmp, "E1", RECON_ST_SUCCESS, 700, D16 + HOUR);
	assert_int_equal(record(fx, cmp, r2, D17 + 2 * HOUR, false), 0);
	recon_compare_free(cmp);

	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM items"), 1);
	assert_int_equal(q_int(fx->st, "SELECT state = 'open' FROM items WHERE key = 'K1'"), 1);
	assert_int_equal(q_int(fx->st, "SELECT last_run FROM items WHERE key = 'K1'"), r1);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM run_differences WHERE run_id = %lld AND key = 'E1' AND "
		 "class = 'extra'",
		 (long long)r2);
	assert_int_equal(q_int(fx->st, sql), 1);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM run_differences WHERE run_id = %lld",
		 (long long)r2);
	assert_int_equal(q_int(fx->st, sql), 1);
}

/* The watermark: none at first, then only forwards; per (job, mode). */
static void test_state_watermark_never_backwards(void **state)
{
	struct fixture *fx = *state;
	int64_t until = 12345, r1, r2, r3;

	open_rw(fx);
	assert_int_equal(recon_state_watermark_get(fx->st, "test_job", "t1", &until, &fx->err),
			 RECON_ENOTFOUND);
	assert_int_equal(until, 12345);

	r1 = begin_run(fx, D16, D17, false, D17 + HOUR);
	assert_int_equal(
	    recon_state_success(fx->st, "test_job", "t1", D17, r1, D17 + HOUR, 1500, &fx->err), 0);
	assert_int_equal(recon_state_watermark_get(fx->st, "test_job", "t1", &until, &fx->err), 0);
	assert_int_equal(until, D17);

	/* a rerun of an earlier day succeeds, but the watermark stays */
	r2 = begin_run(fx, D16 - RECON_MS_PER_DAY, D16, false, D17 + 2 * HOUR);
	assert_int_equal(
	    recon_state_success(fx->st, "test_job", "t1", D16, r2, D17 + 2 * HOUR, 900, &fx->err),
	    0);
	assert_int_equal(recon_state_watermark_get(fx->st, "test_job", "t1", &until, &fx->err), 0);
	assert_int_equal(until, D17);
	assert_int_equal(q_int(fx->st, "SELECT run_id FROM watermarks"), r1);
	/* the heartbeat still says when the last success was */
	assert_int_equal(q_int(fx->st, "SELECT last_success_ms FROM heartbeats"), D17 + 2 * HOUR);
	assert_int_equal(q_int(fx->st, "SELECT run_id FROM heartbeats"), r2);

	r3 = begin_run(fx, D17, D17 + RECON_MS_PER_DAY, false, D17 + 25 * HOUR);
	assert_int_equal(recon_state_success(fx->st, "test_job", "t1", D17 + RECON_MS_PER_DAY, r3,
					     D17 + 25 * HOUR, 900, &fx->err),
			 0);
	assert_int_equal(recon_state_watermark_get(fx->st, "test_job", "t1", &until, &fx->err), 0);
	assert_int_equal(until, D17 + RECON_MS_PER_DAY);
	assert_int_equal(q_int(fx->st, "SELECT run_id FROM watermarks"), r3);

	/* another mode, another job: their own watermarks */
	assert_int_equal(recon_state_watermark_get(fx->st, "test_job", "hot", &until, &fx->err),
			 RECON_ENOTFOUND);
	assert_int_equal(recon_state_watermark_get(fx->st, "other", "t1", &until, &fx->err),
			 RECON_ENOTFOUND);
	assert_int_equal(fx->err.code, 0);
}

/* Bytes of a file, 0 when it does not exist. */
static off_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : 0;
}

/*
 * A run that writes tens of megabytes: its WAL is checkpointed into the
 * database on the checkpointer's thread while the run goes on writing (the
 * database file grows before the store is closed), nothing is lost, and the
 * close leaves no WAL behind.
 */
static void test_state_checkpoints_beside_writes(void **state)
{
	struct fixture *fx = *state;
	struct recon_err err;
	char wal[300], key[32], *error = recon_xmalloc(4097);
	const int rows = 12000; /* 4 KiB each: 48 MB, three times the checkpointer's threshold */
	off_t before, after = 0;
	int64_t id;

	memset(error, 'e', 4096);
	error[4096] = '\0';
	open_rw(fx);
	id = begin_run(fx, D16, D17, true, D17 + HOUR);
	before = file_size(fx->path);
	recon_err_init(&err);
	for (int i = 0; i < rows; i += 500) {
		assert_int_equal(recon_state_batch_begin(fx->st, &err), 0);
		for (int k = i; k < i + 500; k++) {
			snprintf(key, sizeof(key), "K%06d", k);
			assert_int_equal(recon_state_action(fx->st, id, key, "extra", "ticket",
							    "would", 0, error, &err),
					 0);
		}
		assert_int_equal(recon_state_batch_end(fx->st, &err), 0);
	}
	/* the checkpointer runs on its own: waited for (a bound, not a timing) */
	for (int w = 0; w < 1200 && (after = file_size(fx->path)) < before + (16 << 20); w++)
		nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
	assert_true(after >= before + (16 << 20));
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM actions"), rows);
	recon_state_close(fx->st);
	fx->st = NULL;
	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	assert_int_equal(file_size(wal), 0);
	open_rw(fx);
	assert_int_equal(q_int(fx->st, "SELECT count(*) FROM actions"), rows);
	assert_int_equal(q_int(fx->st, "SELECT count(DISTINCT key) FROM actions"), rows);
	free(error);
}

/*
 * recon_state_actions() writes rows as recon_state_action() does each, in
 * order, whatever their number against its 32 a statement: 0, 1, 31, 32, 33
 * and 70 rows, an error text on some.
 */
/*
 * Files under dir this process holds open (SQLite unlinks its temporary
 * files as it opens them: the folder looks empty, the descriptor stays).
 */
static int open_files_under(const char *dir)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[PATH_MAX + 32], target[PATH_MAX];
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		ssize_t len;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		if ((len = readlink(link, target, sizeof(target) - 1)) <= 0)
			continue;
		target[len] = '\0';
		n += strncmp(target, dir, strlen(dir)) == 0;
	}
	closedir(d);
	return n;
}

static void test_state_actions_many_rows(void **state)
{
	struct fixture *fx = *state;
	enum { R = RECON_STATE_ACTION_ROWS, MAX = 2 * R + 6 };
	struct recon_state_action_row rows[MAX];
	char keys[MAX][48], errs[MAX][24], sql[200], buf[128], tmp[sizeof(fx->dir) + 8];
	const size_t counts[] = {0, 1, R - 1, R, R + 1, MAX};
	struct recon_err err;
	int64_t id, total = 0;

	/* SQLite's temporary files go here: a statement journal spilled would be one */
	snprintf(tmp, sizeof(tmp), "%s/tmp", fx->dir);
	assert_int_equal(mkdir(tmp, 0700), 0);
	sqlite3_temp_directory = sqlite3_mprintf("%s", tmp); /* SQLITE_TMPDIR: read at startup */
	open_rw(fx);
	id = begin_run(fx, D16, D17, true, D17 + HOUR);
	recon_err_init(&err);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (size_t i = 0; i < counts[c]; i++) {
			snprintf(keys[i], sizeof(keys[i]), "K%zu-%zu", c, i);
			snprintf(errs[i], sizeof(errs[i]), "E%zu", i);
			rows[i] =
			    (struct recon_state_action_row){keys[i],  "extra",
							    "ticket", i % 2 ? "would" : "failed",
							    (int)i,   i % 3 ? NULL : errs[i]};
		}
		assert_int_equal(recon_state_batch_begin(fx->st, &err), 0);
		assert_int_equal(recon_state_actions(fx->st, id, rows, counts[c], &err), 0);
		/* the statements' journals stayed in memory (recon_state_memory_setup) */
		assert_int_equal(open_files_under(tmp), 0);
		assert_int_equal(recon_state_batch_end(fx->st, &err), 0);
		total += (int64_t)counts[c];
		assert_int_equal(q_int(fx->st, "SELECT count(*) FROM actions"), total);
		for (size_t i = 0; i < counts[c]; i++) {
			/* the i-th row of this call: its values, and rows in call order */
			snprintf(
			    sql, sizeof(sql),
			    "SELECT key || '/' || outcome || '/' || attempts || '/' || "
			    "coalesce(error, '-') FROM actions ORDER BY rowid LIMIT 1 OFFSET %lld",
			    (long long)(total - (int64_t)counts[c] + (int64_t)i));
			char want[128];
			const int n =
			    snprintf(want, sizeof(want), "%s/%s/%zu/%s", keys[i],
				     i % 2 ? "would" : "failed", i, i % 3 ? "-" : errs[i]);
			assert_true(n > 0 && (size_t)n < sizeof(want));
			assert_string_equal(q_text(fx->st, sql, buf, sizeof(buf)), want);
		}
	}
	sqlite3_free(sqlite3_temp_directory);
	sqlite3_temp_directory = NULL;
}

/* Two locks of one job from two open files (one process) conflict; unlock frees it. */
static void test_state_lock_conflict(void **state)
{
	struct fixture *fx = *state;
	int fd1 = -1, fd2 = -1, fd3 = -1;
	char want[64];

	assert_int_equal(recon_state_lock(fx->path, "test_job", D17, 0, &fd1, &fx->err), 0);
	assert_true(fd1 >= 0);
	assert_int_equal(fx->err.code, 0);

	assert_int_equal(recon_state_lock(fx->path, "test_job", D17 + 1000, 0, &fd2, &fx->err),
			 RECON_ELOCKED);
	assert_int_equal(fd2, -1);
	assert_int_equal(fx->err.code, RECON_ELOCKED);
	assert_non_null(strstr(fx->err.msg, "job 'test_job' is already running (pid "));
	snprintf(want, sizeof(want), "(pid %lld, since 2024-01-16T16:00:00.000Z)",
		 (long long)getpid());
	if (!strstr(fx->err.msg, want))
		fail_msg("'%s' does not contain '%s'", fx->err.msg, want);

	/* another job's lock is independent */
	recon_err_init(&fx->err);
	assert_int_equal(recon_state_lock(fx->path, "other_job", D17, 0, &fd3, &fx->err), 0);
	recon_state_unlock(fd3);

	recon_state_unlock(fd1);
	recon_err_init(&fx->err);
	assert_int_equal(recon_state_lock(fx->path, "test_job", D17 + 2000, 0, &fd2, &fx->err), 0);
	assert_true(fd2 >= 0);
	recon_state_unlock(fd2);
	recon_state_unlock(-1); /* harmless */
}

/* A lock held by a process that is killed does not block the next run. */
static void test_state_lock_released_when_holder_dies(void **state)
{
	struct fixture *fx = *state;
	int pfd[2], fd = -1, status = 0;
	char c = 0, want[32];
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct recon_err err;
		int cfd = -1;

		close(pfd[0]);
		recon_err_init(&err);
		c = recon_state_lock(fx->path, "test_job", D17, 0, &cfd, &err) == 0 ? 'L' : 'F';
		if (write(pfd[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	if (c != 'L') {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the child could not take the lock");
	}
	assert_int_equal(recon_state_lock(fx->path, "test_job", D17, 0, &fd, &fx->err),
			 RECON_ELOCKED);
	snprintf(want, sizeof(want), "(pid %lld,", (long long)pid);
	if (!strstr(fx->err.msg, want))
		fail_msg("'%s' does not name the holder '%s'", fx->err.msg, want);

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));

	recon_err_init(&fx->err);
	assert_int_equal(recon_state_lock(fx->path, "test_job", D17 + 1000, 0, &fd, &fx->err), 0);
	assert_true(fd >= 0);
	recon_state_unlock(fd);
}

int main(void)
{
	recon_state_memory_setup(); /* as recon's main() does, before SQLite's first use */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_state_open_creates_and_migrates, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_reopen_idempotent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_upgrade_from_v3, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_readonly_missing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_readonly_not_a_store, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_newer_schema_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_open_bad_folder, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_open_refuses_to_start_over, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_new_store_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_run_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_rejects, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_ledger_first_last_seen, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_resolved_when_matched_later, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_state_resolves_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_dry_run_leaves_ledger, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_watermark_never_backwards, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_checkpoints_beside_writes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_actions_many_rows, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_run_differences_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_ledger_save_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_lock_conflict, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_lock_released_when_holder_dies, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
