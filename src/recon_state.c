#include "recon_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_time.h"

/* Generated from the files in sql/sqlite/state at build time. */
extern const char *const recon_migrations[];
extern const size_t recon_migrations_count;

/* Statements run once per difference or action: prepared once per open store. */
#define CACHED_MAX 8
struct cached {
	const char *sql; /* the static text: compared by address */
	sqlite3_stmt *q;
};

struct recon_state {
	sqlite3 *db;
	char *path;
	struct cached cache[CACHED_MAX];
};

static int db_err(struct recon_state *st, struct recon_err *err, const char *what)
{
	return recon_err_set(err, RECON_EIO, st->path, "%s: %s", what, sqlite3_errmsg(st->db));
}

/*
 * A prepared statement for sql (a string literal), reset and unbound, from
 * the store's cache; NULL when it cannot be prepared. Not finalized by the
 * caller.
 */
static sqlite3_stmt *cached(struct recon_state *st, const char *sql)
{
	size_t i;
	sqlite3_stmt *q = NULL;

	for (i = 0; i < CACHED_MAX && st->cache[i].sql; i++) {
		if (st->cache[i].sql == sql) {
			sqlite3_reset(st->cache[i].q);
			sqlite3_clear_bindings(st->cache[i].q);
			return st->cache[i].q;
		}
	}
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &q, NULL) != SQLITE_OK)
		return NULL;
	if (i < CACHED_MAX) {
		st->cache[i].sql = sql;
		st->cache[i].q = q;
		return q;
	}
	/* more distinct statements than slots: a programming error, caught by the tests */
	sqlite3_finalize(q);
	return NULL;
}

static int exec(struct recon_state *st, const char *sql, struct recon_err *err)
{
	char *msg = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		recon_err_set(err, RECON_EIO, st->path, "%s", msg ? msg : "sqlite error");
		sqlite3_free(msg);
		return RECON_EIO;
	}
	return 0;
}

/* Ends a transaction begun with BEGIN IMMEDIATE: commits on success, else rolls back. */
static int tx_end(struct recon_state *st, int rc, struct recon_err *err)
{
	if (rc == 0)
		rc = exec(st, "COMMIT", err);
	if (rc < 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* mkdir -p for the folder holding path. */
static int make_parent(const char *path, struct recon_err *err)
{
	char *dir = recon_xstrdup(path);
	char *slash = strrchr(dir, '/');
	int rc = 0;

	if (!slash || slash == dir)
		goto out;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
			rc = recon_err_set(err, RECON_EIO, NULL, "cannot create '%s': %s", dir,
					   strerror(errno));
			goto out;
		}
		*p = '/';
	}
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		rc = recon_err_set(err, RECON_EIO, NULL, "cannot create '%s': %s", dir,
				   strerror(errno));
out:
	free(dir);
	return rc;
}

/*
 * A new store only where no file exists, created whole: an empty SQLite
 * database in WAL mode is built under a temporary name (mode 0640, which its
 * -wal and -shm files inherit) and linked into place, so a crash never leaves a
 * 0-byte file at path and a file that appeared meanwhile (another run) is kept.
 * Returns 0 when path exists afterwards.
 */
static int create_store(const char *path, struct recon_err *err)
{
	struct recon_buf tmp;
	sqlite3 *db = NULL;
	int rc = 0, fd;

	recon_buf_init(&tmp);
	recon_buf_addf(&tmp, "%s.new-%ld", path, (long)getpid());
	unlink(tmp.s); /* a leftover of a killed run of this pid */
	fd = open(tmp.s, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = recon_err_set(err, RECON_EIO, NULL, "cannot create the state store '%s': %s",
				   tmp.s, strerror(errno));
		goto out;
	}
	close(fd);
	if (sqlite3_open_v2(tmp.s, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
		SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA page_size = 65536; PRAGMA journal_mode = WAL", NULL, NULL,
			 NULL) != SQLITE_OK) {
		rc = recon_err_set(err, RECON_EIO, NULL, "cannot create the state store '%s': %s",
				   tmp.s, db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	sqlite3_close(db); /* checkpoints: the header, WAL mode included, is in the file */
	db = NULL;
	if (link(tmp.s, path) < 0 && errno != EEXIST) {
		/* a filesystem without hard links: rename, unless a store appeared meanwhile */
		int e = errno;
		bool nolink = e == EPERM || e == ENOTSUP || e == EOPNOTSUPP || e == ENOSYS;
		if (!nolink || (access(path, F_OK) < 0 && rename(tmp.s, path) < 0))
			rc = recon_err_set(err, RECON_EIO, NULL,
					   "cannot create the state store '%s': %s", path,
					   strerror(nolink ? errno : e));
	}
out:
	sqlite3_close(db);
	unlink(tmp.s);
	recon_buf_release(&tmp);
	return rc;
}

/*
 * What is at path before a read-write open: nothing (a new store is created),
 * or a file that may be a store. A 0-byte file, something else than a regular
 * file, or a file without SQLite's header is refused naming it: starting over
 * there would silently drop the watermark, history and tickets.
 */
static int check_existing(const char *path, struct recon_err *err)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	struct stat sb;
	ssize_t n;
	int fd;

	if (stat(path, &sb) < 0) {
		if (errno == ENOENT)
			return create_store(path, err);
		return recon_err_set(err, RECON_EIO, NULL, "cannot use the state store '%s': %s",
				     path, strerror(errno));
	}
	if (!S_ISREG(sb.st_mode))
		return recon_err_set(err, RECON_EIO, NULL,
				     "state store '%s' is not a regular file: refusing to use it",
				     path);
	if (sb.st_size == 0)
		return recon_err_set(err, RECON_EIO, NULL,
				     "state store '%s' is an empty file (0 bytes): its watermarks, "
				     "runs and tickets are gone; restore it from a backup, or "
				     "remove it to start afresh",
				     path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return recon_err_set(err, RECON_EIO, NULL, "cannot open the state store '%s': %s",
				     path, strerror(errno));
	n = read(fd, head, sizeof(head));
	close(fd);
	if (n != (ssize_t)sizeof(head) || memcmp(head, magic, sizeof(magic)))
		return recon_err_set(err, RECON_EIO, NULL,
				     "'%s' is not a recon state store (not a SQLite database): "
				     "refusing to write over it",
				     path);
	return 0;
}

/* Tables in the store besides recon's own: a store of version 0 must have none. */
static int check_foreign(struct recon_state *st, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int version = -1, objects = -1;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		version = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	q = NULL;
	if (sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		objects = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	if (version < 0 || objects < 0)
		return db_err(st, err, "cannot read the state store");
	if (version == 0 && objects > 0)
		return recon_err_set(err, RECON_EIO, st->path,
				     "not a recon state store (a SQLite database with %d other "
				     "objects and no recon schema): refusing to write into it",
				     objects);
	return 0;
}

static int migrate(struct recon_state *st, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int version = 0, rc = 0;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the schema version");
	if (sqlite3_step(q) == SQLITE_ROW)
		version = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	if (version > (int)recon_migrations_count)
		return recon_err_set(err, RECON_EIO, st->path,
				     "state store schema version %d is newer than this recon "
				     "(knows %zu): upgrade recon",
				     version, recon_migrations_count);
	for (size_t v = (size_t)version; v < recon_migrations_count; v++) {
		char pragma[64];
		if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
			return rc;
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %zu", v + 1);
		if ((rc = exec(st, recon_migrations[v], err)) < 0 ||
		    (rc = exec(st, pragma, err)) < 0 || (rc = exec(st, "COMMIT", err)) < 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return rc;
		}
	}
	return 0;
}

int recon_state_open(struct recon_state **out, const char *path, bool writable,
		     struct recon_err *err)
{
	struct recon_state *st = recon_xcalloc(1, sizeof(*st));
	int rc = 0, flags;

	*out = NULL;
	st->path = recon_xstrdup(path);
	if (writable) {
		if ((rc = make_parent(path, err)) < 0 || (rc = check_existing(path, err)) < 0)
			goto out;
		flags = SQLITE_OPEN_READWRITE;
	} else {
		if (access(path, F_OK) < 0) {
			rc = recon_err_set(err, RECON_ENOTFOUND, NULL,
					   "state store '%s' does not exist (no run yet?)", path);
			goto out;
		}
		flags = SQLITE_OPEN_READONLY;
	}
	if (sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = recon_err_set(err, RECON_EIO, path, "cannot open the state store: %s",
				   st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(st->db, 10000);
	if (writable) {
		/*
		 * 64 KiB pages (a new store only; an existing one keeps its size):
		 * a run writes its differences as a bulk of ~350-byte rows, and
		 * 140,000 of them took 0.59 s with 4 KiB pages, 0.24 s with these.
		 */
		if ((rc = exec(st, "PRAGMA page_size = 65536", err)) < 0 ||
		    (rc = exec(st, "PRAGMA journal_mode = WAL", err)) < 0 ||
		    /*
		     * NORMAL in WAL mode: a power loss may drop the last commits, but
		     * commits stay in order, so a watermark that survives never
		     * outruns the actions before it; it can only fall back, and the
		     * next run redoes the idempotent rest.
		     */
		    (rc = exec(st, "PRAGMA synchronous = NORMAL", err)) < 0 ||
		    (rc = exec(st, "PRAGMA foreign_keys = ON", err)) < 0 ||
		    (rc = check_foreign(st, err)) < 0 || (rc = migrate(st, err)) < 0)
			goto out;
	} else {
		sqlite3_stmt *q = NULL;
		int version = -1;
		if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW)
			version = sqlite3_column_int(q, 0);
		sqlite3_finalize(q);
		if (version < 0) {
			/* unreadable (a read-only folder without the -shm file, a lock, a
			   file that is not a database): say why, not "not a store" */
			rc = db_err(st, err, "cannot read the state store");
			goto out;
		}
		if (version < 1 || version > (int)recon_migrations_count) {
			rc = recon_err_set(err, RECON_EIO, path,
					   "not a recon state store (schema version %d)", version);
			goto out;
		}
	}
	*out = st;
	st = NULL;
out:
	recon_state_close(st);
	return rc;
}

void recon_state_close(struct recon_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < CACHED_MAX && st->cache[i].sql; i++)
		sqlite3_finalize(st->cache[i].q);
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

sqlite3 *recon_state_db(struct recon_state *st)
{
	return st->db;
}

/* ---- lock --------------------------------------------------------------- */

int recon_state_lock(const char *state_path, const char *job, int64_t now, int *fd,
		     struct recon_err *err)
{
	struct recon_buf path;
	char info[128], when[32];
	int rc = 0, f;
	ssize_t n;

	*fd = -1;
	recon_buf_init(&path);
	recon_buf_addf(&path, "%s.%s.lock", state_path, job);
	if ((rc = make_parent(path.s, err)) < 0)
		goto out;
	f = open(path.s, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (f < 0) {
		rc = recon_err_set(err, RECON_EIO, NULL, "cannot open lock '%s': %s", path.s,
				   strerror(errno));
		goto out;
	}
	if (flock(f, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK) {
			n = pread(f, info, sizeof(info) - 1, 0);
			info[n > 0 ? n : 0] = '\0';
			info[strcspn(info, "\n")] = '\0';
			long long pid = 0, since = 0;
			if (sscanf(info, "%lld %lld", &pid, &since) == 2)
				recon_time_format_utc(since, when, sizeof(when));
			else
				snprintf(when, sizeof(when), "unknown");
			rc = recon_err_set(err, RECON_ELOCKED, NULL,
					   "job '%s' is already running (pid %lld, since %s)", job,
					   pid, when);
		} else {
			rc = recon_err_set(err, RECON_EIO, NULL, "cannot lock '%s': %s", path.s,
					   strerror(errno));
		}
		close(f);
		goto out;
	}
	n = snprintf(info, sizeof(info), "%lld %lld\n", (long long)getpid(), (long long)now);
	if (ftruncate(f, 0) < 0 || pwrite(f, info, (size_t)n, 0) != n) {
		rc = recon_err_set(err, RECON_EIO, NULL, "cannot write lock '%s': %s", path.s,
				   strerror(errno));
		close(f);
		goto out;
	}
	*fd = f;
out:
	recon_buf_release(&path);
	return rc;
}

void recon_state_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock; the file stays for the next run */
}

/* ---- runs --------------------------------------------------------------- */

int recon_state_run_begin(struct recon_state *st, const struct recon_run_info *info,
			  int64_t *run_id, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO runs (job, mode, window_start_ms, window_end_ms, "
			       "business_date, dry_run, started_at_ms, config_sha256) "
			       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record the run");
		goto out;
	}
	sqlite3_bind_text(q, 1, info->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, info->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, info->window_start);
	sqlite3_bind_int64(q, 4, info->window_end);
	sqlite3_bind_text(q, 5, info->business_date, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 6, info->dry_run);
	sqlite3_bind_int64(q, 7, info->started_at);
	sqlite3_bind_text(q, 8, info->config_sha256, -1, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot record the run");
		goto out;
	}
	*run_id = sqlite3_last_insert_rowid(st->db);
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_state_run_finish(struct recon_state *st, int64_t run_id,
			   const struct recon_run_result *res, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, i = 1;

	if (sqlite3_prepare_v2(
		st->db,
		"UPDATE runs SET outcome = ?, exit_code = ?, error = ?, finished_at_ms = ?, "
		"rows_upstream = ?, rows_local = ?, rows_rejected = ?, rows_skipped = ?, "
		"rows_other = ?, keys_compared = ?, matched = ?, in_flight = ?, resolved = ?, "
		"n_missing = ?, n_extra = ?, n_stuck = ?, n_amount_mismatch = ?, "
		"n_status_mismatch = ?, n_duplicate = ?, upstream_sha256 = ?, local_sha256 = ? "
		"WHERE id = ?",
		-1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record the run's outcome");
		goto out;
	}
	sqlite3_bind_text(q, i++, res->outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, i++, res->exit_code);
	if (res->error)
		sqlite3_bind_text(q, i++, res->error, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i++);
	sqlite3_bind_int64(q, i++, res->finished_at);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->rows_upstream);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->rows_local);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->rows_rejected);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->rows_skipped);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->rows_other);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->keys_compared);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->matched);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->in_flight);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->resolved);
	for (int c = 0; c < RECON_CLASS__COUNT; c++)
		sqlite3_bind_int64(q, i++, (sqlite3_int64)res->classes[c]);
	if (res->upstream_sha256)
		sqlite3_bind_text(q, i++, res->upstream_sha256, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i++);
	if (res->local_sha256)
		sqlite3_bind_text(q, i++, res->local_sha256, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i++);
	sqlite3_bind_int64(q, i++, run_id);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot record the run's outcome");
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_state_add_rejects(struct recon_state *st, int64_t run_id,
			    const struct recon_reject *rejects, size_t n, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (!n)
		return 0;
	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO rejects (run_id, side, origin, field, reason, raw) "
			       "VALUES (?, ?, ?, ?, ?, ?)",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record rejects");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, run_id);
		sqlite3_bind_text(q, 2, rejects[i].side, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, rejects[i].origin, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 4, rejects[i].field, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 5, rejects[i].reason, -1, SQLITE_STATIC);
		if (rejects[i].raw)
			sqlite3_bind_text(q, 6, rejects[i].raw, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(q, 6);
		if (sqlite3_step(q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot record a reject");
			goto out;
		}
	}
out:
	sqlite3_finalize(q);
	return tx_end(st, rc, err);
}

/* Open ledger entries of the job whose key this window owns and no longer shows. */
static int resolve(struct recon_state *st, const char *job, int64_t run_id, int64_t now,
		   const struct recon_compare *cmp, uint64_t *resolved, struct recon_err *err)
{
	sqlite3_stmt *sel = NULL, *upd = NULL;
	int rc = 0, s;

	*resolved = 0;
	if (sqlite3_prepare_v2(st->db,
			       "SELECT key, class FROM differences WHERE job = ? AND "
			       "resolved_at_ms IS NULL AND last_seen_run <> ?",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "UPDATE differences SET resolved_run = ?, resolved_at_ms = ? "
			       "WHERE job = ? AND key = ? AND class = ?",
			       -1, &upd, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot resolve differences");
		goto out;
	}
	sqlite3_bind_text(sel, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_int64(sel, 2, run_id);
	while ((s = sqlite3_step(sel)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(sel, 0);
		const char *klass = (const char *)sqlite3_column_text(sel, 1);
		int now_class = recon_compare_key_class(cmp, key, strlen(key));
		if (now_class < 0 || now_class == recon_class_from_name(klass))
			continue; /* not this window's key, or still different */
		sqlite3_reset(upd);
		sqlite3_bind_int64(upd, 1, run_id);
		sqlite3_bind_int64(upd, 2, now);
		sqlite3_bind_text(upd, 3, job, -1, SQLITE_STATIC);
		sqlite3_bind_text(upd, 4, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(upd, 5, klass, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(upd) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot resolve a difference");
			goto out;
		}
		(*resolved)++;
	}
	if (s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read open differences");
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	return rc;
}

int recon_state_record_diffs(struct recon_state *st, const char *job, int64_t run_id, int64_t now,
			     const struct recon_diff *diffs, char *const *json, size_t n,
			     const struct recon_compare *cmp, bool ledger, uint64_t *resolved,
			     struct recon_err *err)
{
	sqlite3_stmt *run_q = NULL, *led_q = NULL;
	int rc = 0;

	*resolved = 0;
	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO run_differences (run_id, key, class, json) "
			       "VALUES (?, ?, ?, ?)",
			       -1, &run_q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		st->db,
		"INSERT INTO differences (job, key, class, first_seen_run, last_seen_run, "
		"first_seen_at_ms, last_seen_at_ms, json) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?5, ?6) "
		"ON CONFLICT (job, key, class) DO UPDATE SET last_seen_run = "
		"excluded.last_seen_run, "
		"last_seen_at_ms = excluded.last_seen_at_ms, json = excluded.json, "
		"resolved_run = NULL, resolved_at_ms = NULL",
		-1, &led_q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record differences");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const char *klass = recon_class_name(diffs[i].klass);
		sqlite3_reset(run_q);
		sqlite3_bind_int64(run_q, 1, run_id);
		sqlite3_bind_text(run_q, 2, diffs[i].key, (int)diffs[i].key_len, SQLITE_STATIC);
		sqlite3_bind_text(run_q, 3, klass, -1, SQLITE_STATIC);
		sqlite3_bind_text(run_q, 4, json[i], -1, SQLITE_STATIC);
		if (sqlite3_step(run_q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot record a difference");
			goto out;
		}
		if (!ledger)
			continue;
		sqlite3_reset(led_q);
		sqlite3_bind_text(led_q, 1, job, -1, SQLITE_STATIC);
		sqlite3_bind_text(led_q, 2, diffs[i].key, (int)diffs[i].key_len, SQLITE_STATIC);
		sqlite3_bind_text(led_q, 3, klass, -1, SQLITE_STATIC);
		sqlite3_bind_int64(led_q, 4, run_id);
		sqlite3_bind_int64(led_q, 5, now);
		sqlite3_bind_text(led_q, 6, json[i], -1, SQLITE_STATIC);
		if (sqlite3_step(led_q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot record a difference");
			goto out;
		}
	}
	if (ledger && (rc = resolve(st, job, run_id, now, cmp, resolved, err)) < 0)
		goto out;
out:
	sqlite3_finalize(run_q);
	sqlite3_finalize(led_q);
	return tx_end(st, rc, err);
}

int recon_state_watermark_get(struct recon_state *st, const char *job, const char *mode,
			      int64_t *until, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = RECON_ENOTFOUND, s;

	if (sqlite3_prepare_v2(
		st->db, "SELECT reconciled_until_ms FROM watermarks WHERE job = ? AND mode = ?", -1,
		&q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the watermark");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	s = sqlite3_step(q);
	if (s == SQLITE_ROW) {
		*until = sqlite3_column_int64(q, 0);
		rc = 0;
	} else if (s != SQLITE_DONE) {
		rc = db_err(st, err, "cannot read the watermark");
	}
	sqlite3_finalize(q);
	return rc;
}

/*
 * Windows reconciled ahead of a gap (a day run by --date before the days
 * before it) count once the gap is filled: the watermark moves over every
 * successful, non-dry window that starts where it stands.
 */
static int extend_watermark(struct recon_state *st, const char *job, const char *mode,
			    struct recon_err *err)
{
	static const char sql[] =
	    "UPDATE watermarks SET reconciled_until_ms = (SELECT max(r.window_end_ms) FROM runs r "
	    "WHERE r.job = ?1 AND r.mode = ?2 AND r.outcome = 'success' AND r.dry_run = 0 AND "
	    "r.window_start_ms <= reconciled_until_ms), "
	    "run_id = (SELECT r.id FROM runs r WHERE r.job = ?1 AND r.mode = ?2 AND "
	    "r.outcome = 'success' AND r.dry_run = 0 AND r.window_start_ms <= reconciled_until_ms "
	    "ORDER BY r.window_end_ms DESC, r.id DESC LIMIT 1) "
	    "WHERE job = ?1 AND mode = ?2 AND EXISTS (SELECT 1 FROM runs r WHERE r.job = ?1 AND "
	    "r.mode = ?2 AND r.outcome = 'success' AND r.dry_run = 0 AND "
	    "r.window_start_ms <= reconciled_until_ms AND r.window_end_ms > reconciled_until_ms)";
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot extend the watermark");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	/* each pass moves over one more contiguous window; stops when none starts there */
	for (;;) {
		sqlite3_reset(q);
		if (sqlite3_step(q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot extend the watermark");
			break;
		}
		if (sqlite3_changes(st->db) == 0)
			break;
	}
	sqlite3_finalize(q);
	return rc;
}

int recon_state_success(struct recon_state *st, const char *job, const char *mode, int64_t until,
			int64_t run_id, int64_t now, int64_t duration_ms, struct recon_err *err)
{
	sqlite3_stmt *wm = NULL, *hb = NULL;
	int rc = 0;

	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(
		st->db,
		"INSERT INTO watermarks (job, mode, reconciled_until_ms, run_id, updated_at_ms) "
		"VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job, mode) DO UPDATE SET "
		"reconciled_until_ms = max(reconciled_until_ms, excluded.reconciled_until_ms), "
		"run_id = CASE WHEN excluded.reconciled_until_ms > reconciled_until_ms "
		"THEN excluded.run_id ELSE run_id END, updated_at_ms = excluded.updated_at_ms",
		-1, &wm, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "INSERT INTO heartbeats (job, mode, last_success_ms, run_id, "
			       "duration_ms) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (job, mode) "
			       "DO UPDATE SET last_success_ms = excluded.last_success_ms, "
			       "run_id = excluded.run_id, duration_ms = excluded.duration_ms",
			       -1, &hb, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record the watermark");
		goto out;
	}
	sqlite3_bind_text(wm, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(wm, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(wm, 3, until);
	sqlite3_bind_int64(wm, 4, run_id);
	sqlite3_bind_int64(wm, 5, now);
	sqlite3_bind_text(hb, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(hb, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(hb, 3, now);
	sqlite3_bind_int64(hb, 4, run_id);
	sqlite3_bind_int64(hb, 5, duration_ms);
	if (sqlite3_step(wm) != SQLITE_DONE || sqlite3_step(hb) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot record the watermark");
		goto out;
	}
	if ((rc = extend_watermark(st, job, mode, err)) < 0)
		goto out;
out:
	sqlite3_finalize(wm);
	sqlite3_finalize(hb);
	return tx_end(st, rc, err);
}

/* ---- tickets and actions -------------------------------------------------- */

static const char ticket_ins_sql[] =
    "INSERT INTO tickets (job, key, class, severity, opened_run, opened_at_ms, last_seen_run, "
    "json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?7) ON CONFLICT (job, key, class) DO NOTHING";
static const char ticket_upd_sql[] = "UPDATE tickets SET last_seen_run = ?4 WHERE job = ?1 AND "
				     "key = ?2 AND class = ?3 AND last_seen_run < ?4";
static const char action_sql[] = "INSERT INTO actions (run_id, key, class, action, outcome, "
				 "attempts, error) VALUES (?, ?, ?, ?, ?, ?, ?)";

int recon_state_ticket(struct recon_state *st, const char *job, const char *key, const char *klass,
		       const char *severity, int64_t run_id, int64_t now, const char *json,
		       bool *opened, struct recon_err *err)
{
	sqlite3_stmt *ins, *upd;
	int rc = 0;

	*opened = false;
	if (!(ins = cached(st, ticket_ins_sql)) || !(upd = cached(st, ticket_upd_sql)))
		return db_err(st, err, "cannot record a ticket");
	sqlite3_bind_text(ins, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 3, klass, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 4, severity, -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 5, run_id);
	sqlite3_bind_int64(ins, 6, now);
	sqlite3_bind_text(ins, 7, json, -1, SQLITE_STATIC);
	if (sqlite3_step(ins) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot record a ticket");
		goto out;
	}
	if (sqlite3_changes(st->db) > 0) {
		*opened = true;
		goto out;
	}
	sqlite3_bind_text(upd, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(upd, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(upd, 3, klass, -1, SQLITE_STATIC);
	sqlite3_bind_int64(upd, 4, run_id);
	if (sqlite3_step(upd) != SQLITE_DONE)
		rc = db_err(st, err, "cannot record a ticket");
out:
	/* the bound texts are the caller's: let go of them now */
	sqlite3_reset(ins);
	sqlite3_clear_bindings(ins);
	sqlite3_reset(upd);
	sqlite3_clear_bindings(upd);
	return rc;
}

int recon_state_action(struct recon_state *st, int64_t run_id, const char *key, const char *klass,
		       const char *action, const char *outcome, int attempts, const char *error,
		       struct recon_err *err)
{
	sqlite3_stmt *q = cached(st, action_sql);
	int rc = 0;

	if (!q)
		return db_err(st, err, "cannot record an action");
	sqlite3_bind_int64(q, 1, run_id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, klass, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, action, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 5, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 6, attempts);
	if (error)
		sqlite3_bind_text(q, 7, error, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, 7);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot record an action");
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return rc;
}

int recon_state_run_actions(struct recon_state *st, int64_t run_id, const char *actions_json,
			    uint64_t retries, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db, "UPDATE runs SET actions_json = ?, retries = ? WHERE id = ?",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record the run's actions");
		goto out;
	}
	sqlite3_bind_text(q, 1, actions_json, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, (sqlite3_int64)retries);
	sqlite3_bind_int64(q, 3, run_id);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot record the run's actions");
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_state_abandon_running(struct recon_state *st, const char *job, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db,
			       "UPDATE runs SET outcome = 'abandoned', error = 'the process ended "
			       "before the run did (killed or crashed)' WHERE job = ? AND "
			       "outcome = 'running'",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot update abandoned runs");
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot update abandoned runs");
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_state_batch_begin(struct recon_state *st, struct recon_err *err)
{
	return exec(st, "BEGIN IMMEDIATE", err);
}

int recon_state_batch_end(struct recon_state *st, struct recon_err *err)
{
	return exec(st, "COMMIT", err);
}

int recon_state_boundary_load(struct recon_state *st, const char *job, const char *mode,
			      int64_t window_end,
			      void (*fn)(void *arg, const char *key, size_t len), void *arg,
			      struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, s;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT key FROM boundary_keys WHERE job = ? AND mode = ? AND "
			       "window_end_ms = ?",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot read boundary keys");
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, window_end);
	while ((s = sqlite3_step(q)) == SQLITE_ROW)
		fn(arg, (const char *)sqlite3_column_blob(q, 0),
		   (size_t)sqlite3_column_bytes(q, 0));
	if (s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read boundary keys");
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_state_boundary_save(struct recon_state *st, const char *job, const char *mode,
			      int64_t window_end, const char *const *keys, const size_t *lens,
			      size_t n, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (!n)
		return 0;
	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(
		st->db,
		"INSERT OR IGNORE INTO boundary_keys (job, mode, window_end_ms, key) "
		"VALUES (?, ?, ?, ?)",
		-1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot record boundary keys");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 3, window_end);
		sqlite3_bind_text(q, 4, keys[i], (int)lens[i], SQLITE_STATIC);
		if (sqlite3_step(q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot record boundary keys");
			goto out;
		}
	}
out:
	sqlite3_finalize(q);
	return tx_end(st, rc, err);
}

int recon_state_watermark_seed(struct recon_state *st, const char *job, const char *mode,
			       int64_t at, int64_t now, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(st->db,
			       "INSERT INTO watermarks (job, mode, reconciled_until_ms, run_id, "
			       "updated_at_ms) VALUES (?, ?, ?, 0, ?) ON CONFLICT (job, mode) "
			       "DO NOTHING",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot seed the watermark");
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, at);
	sqlite3_bind_int64(q, 4, now);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot seed the watermark");
out:
	sqlite3_finalize(q);
	return rc;
}
