#include "recon_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_time.h"

/* Generated from the files in sql/sqlite/state at build time. */
extern const char *const recon_migrations[];
extern const size_t recon_migrations_count;

/* Statements run once per difference or action: prepared once per open store. */
#define CACHED_MAX 32
struct cached {
	const char *sql; /* the static text: compared by address */
	sqlite3_stmt *q;
};

struct recon_state {
	sqlite3 *db;
	char *path;
	struct cached cache[CACHED_MAX];
};

/* A full disk or a read-only store is exit 73 (DESIGN: cannot write the state store). */
static int db_err(struct recon_state *st, struct recon_err *err, const char *what)
{
	int e = sqlite3_errcode(st->db);
	bool cannot_write =
	    e == SQLITE_FULL || e == SQLITE_IOERR || e == SQLITE_READONLY || e == SQLITE_CANTOPEN;

	if (e == SQLITE_BUSY || e == SQLITE_LOCKED)
		/* another job sharing the store held it past the busy timeout: a retry's turn */
		return recon_err_set(err, RECON_ELOCKED, st->path,
				     "%s: the state store is busy (another job sharing it held it "
				     "for over 10 s); the next run retries",
				     what);
	return recon_err_set(err, cannot_write ? RECON_EWRITE : RECON_EIO, st->path, "%s: %s%s",
			     what, sqlite3_errmsg(st->db),
			     e == SQLITE_FULL || (e == SQLITE_IOERR && errno == ENOSPC)
				 ? " (the disk is full)"
				 : "");
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
		/* the statement's own words when short (BEGIN, COMMIT, a pragma) */
		int rc = db_err(st, err, strlen(sql) < 40 ? sql : "a schema change");
		sqlite3_free(msg);
		return rc;
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
		    /* 2 MB (31 of these pages) thrashed on a run's items and ledger rows; 32 MB do
		       not */
		    (rc = exec(st, "PRAGMA cache_size = -32768", err)) < 0 ||
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

/* flock(LOCK_EX) waited for up to wait_ms, polling: 0, or -1 with errno. */
static int lock_waiting(int f, int64_t wait_ms)
{
	const struct timespec step = {0, 100 * 1000 * 1000};
	int64_t waited = 0;
	bool said = false;

	while (flock(f, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || waited >= wait_ms)
			return -1;
		if (!said && waited >= 1000) {
			recon_log(RECON_LOG_INFO,
				  "waiting for the job's lock (another run holds it; up to %lld s)",
				  (long long)(wait_ms / 1000));
			said = true;
		}
		nanosleep(&step, NULL);
		waited += 100;
	}
	return 0;
}

int recon_state_lock(const char *state_path, const char *job, int64_t now, int64_t wait_ms, int *fd,
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
	if (lock_waiting(f, wait_ms) < 0) {
		if (errno == EWOULDBLOCK) {
			n = pread(f, info, sizeof(info) - 1, 0);
			info[n > 0 ? n : 0] = '\0';
			info[strcspn(info, "\n")] = '\0';
			long long pid = 0, since = 0;
			if (sscanf(info, "%lld %lld", &pid, &since) == 2)
				recon_time_format_utc(since, when, sizeof(when));
			else
				snprintf(when, sizeof(when), "unknown");
			rc = recon_err_set(
			    err, RECON_ELOCKED, NULL,
			    "job '%s' is already running (pid %lld, since %s); waited "
			    "%lld s (lock_wait)",
			    job, pid, when, (long long)(wait_ms / 1000));
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
		"superseded = ?, awaiting = ?, n_missing = ?, n_extra = ?, n_stuck = ?, "
		"n_amount_mismatch = ?, "
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
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->superseded);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)res->awaiting);
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
/* an ended ticket whose difference is back opens again, as of this run */
static const char ticket_upd_sql[] =
    "UPDATE tickets SET last_seen_run = ?4, opened_run = CASE WHEN status = 'open' THEN "
    "opened_run ELSE ?4 END, opened_at_ms = CASE WHEN status = 'open' THEN opened_at_ms ELSE "
    "?5 END, json = CASE WHEN status = 'open' THEN json ELSE ?6 END, resolved_run = NULL, "
    "resolved_at_ms = NULL, synced = 1, status = 'open' WHERE job = ?1 AND key = ?2 AND "
    "class = ?3 AND status <> 'closed' RETURNING opened_run, opened_run = ?4 AND "
    "opened_at_ms = ?5";
static const char action_sql[] = "INSERT INTO actions (run_id, key, class, action, outcome, "
				 "attempts, error) VALUES (?, ?, ?, ?, ?, ?, ?)";

int recon_state_ticket(struct recon_state *st, const char *job, const char *key, const char *klass,
		       const char *severity, int64_t run_id, int64_t now, const char *json,
		       bool *opened, int64_t *opened_run, struct recon_err *err)
{
	sqlite3_stmt *ins, *upd;
	int rc = 0;

	*opened = false;
	*opened_run = run_id;
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
	sqlite3_bind_int64(upd, 5, now);
	sqlite3_bind_text(upd, 6, json, -1, SQLITE_STATIC);
	/* no row: a person closed it, and their word stands */
	switch (sqlite3_step(upd)) {
	case SQLITE_ROW:
		*opened_run = sqlite3_column_int64(upd, 0);
		*opened = sqlite3_column_int(upd, 1) != 0;
		if (sqlite3_step(upd) != SQLITE_DONE)
			rc = db_err(st, err, "cannot record a ticket");
		break;
	case SQLITE_DONE:
		*opened_run = 0;
		break;
	default:
		rc = db_err(st, err, "cannot record a ticket");
	}
out:
	/* the bound texts are the caller's: let go of them now */
	sqlite3_reset(ins);
	sqlite3_clear_bindings(ins);
	sqlite3_reset(upd);
	sqlite3_clear_bindings(upd);
	return rc;
}

int recon_state_tickets_unsynced(struct recon_state *st, const char *job,
				 int (*fn)(void *arg, const struct recon_ticket_end *t), void *arg,
				 struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0, s;

	if (sqlite3_prepare_v2(
		st->db,
		"SELECT key, class, status, note, coalesce(resolved_run, 0), "
		"coalesce(resolved_at_ms, 0) FROM tickets WHERE job = ? AND synced = 0 "
		"AND status <> 'open' ORDER BY key, class",
		-1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the tickets");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		struct recon_ticket_end t = {
		    (const char *)sqlite3_column_text(q, 0),
		    (const char *)sqlite3_column_text(q, 1),
		    (const char *)sqlite3_column_text(q, 2),
		    (const char *)sqlite3_column_text(q, 3),
		    sqlite3_column_int64(q, 4),
		    sqlite3_column_int64(q, 5),
		};
		if ((rc = fn(arg, &t)) < 0)
			break;
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read the tickets");
	sqlite3_finalize(q);
	return rc;
}

int recon_state_ticket_synced(struct recon_state *st, const char *job, const char *key,
			      const char *klass, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(
		st->db, "UPDATE tickets SET synced = 1 WHERE job = ? AND key = ? AND class = ?", -1,
		&q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot update a ticket");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, klass, -1, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot update a ticket");
	sqlite3_finalize(q);
	return rc;
}

int recon_state_ticket_close(struct recon_state *st, const char *job, const char *key,
			     const char *klass, const char *note, int64_t now,
			     struct recon_err *err)
{
	sqlite3_stmt *t = NULL, *sel = NULL, *end = NULL;
	char shown[RECON_KEY_PARTS_MAX * 1025 + 8];
	int rc, s;

	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(st->db,
			       "UPDATE tickets SET status = 'closed', resolved_run = NULL, "
			       "resolved_at_ms = ?4, note = ?5, synced = 0 WHERE job = ?1 AND "
			       "key = ?2 AND class = ?3 AND status = 'open'",
			       -1, &t, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "SELECT id, key FROM items WHERE job = ? AND class = ? AND "
			       "state = 'open'",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(st->db,
			       "UPDATE items SET state = 'closed', ended_at_ms = ?2, ended_by = "
			       "'person', note = ?3 WHERE id = ?1",
			       -1, &end, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot close the ticket");
		goto out;
	}
	sqlite3_bind_text(t, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(t, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(t, 3, klass, -1, SQLITE_STATIC);
	sqlite3_bind_int64(t, 4, now);
	sqlite3_bind_text(t, 5, note, -1, SQLITE_STATIC);
	if (sqlite3_step(t) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot close the ticket");
		goto out;
	}
	if (sqlite3_changes(st->db) == 0) {
		rc = recon_err_set(err, RECON_ENOTFOUND, NULL,
				   "no open ticket of job '%s' for key '%s' and class '%s'", job,
				   key, klass);
		goto out;
	}
	/* the items behind it (any mode): found by their key as tickets show it */
	sqlite3_bind_text(sel, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(sel, 2, klass, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(sel)) == SQLITE_ROW) {
		recon_key_display((const char *)sqlite3_column_text(sel, 1),
				  (size_t)sqlite3_column_bytes(sel, 1), shown, sizeof(shown));
		if (strcmp(shown, key))
			continue;
		sqlite3_reset(end);
		sqlite3_bind_int64(end, 1, sqlite3_column_int64(sel, 0));
		sqlite3_bind_int64(end, 2, now);
		sqlite3_bind_text(end, 3, note, -1, SQLITE_STATIC);
		if (sqlite3_step(end) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot close the item");
			goto out;
		}
	}
	if (s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read the items");
out:
	sqlite3_finalize(t);
	sqlite3_finalize(sel);
	sqlite3_finalize(end);
	return tx_end(st, rc, err);
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

/* ---- the open-items ledger ------------------------------------------------ */

static int64_t add_sat(int64_t a, int64_t b, bool *overflow)
{
	if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
		*overflow = true;
		return b > 0 ? INT64_MAX : INT64_MIN;
	}
	return a + b;
}

/* One int64 result column, NULL as ENOTFOUND. */
static int one_int(struct recon_state *st, sqlite3_stmt *q, int64_t *out, struct recon_err *err)
{
	int s = sqlite3_step(q), rc = 0;

	if (s == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(q, 0);
	else if (s == SQLITE_ROW || s == SQLITE_DONE)
		rc = RECON_ENOTFOUND;
	else
		rc = db_err(st, err, "cannot read the runs");
	return rc;
}

int recon_state_history_start(struct recon_state *st, const char *job, const char *mode,
			      int64_t *start, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(
		st->db,
		"SELECT min(window_start_ms) FROM runs WHERE job = ? AND mode = ? AND "
		"outcome = 'success' AND dry_run = 0",
		-1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the runs");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	rc = one_int(st, q, start, err);
	sqlite3_finalize(q);
	return rc;
}

int recon_state_window_reconciled(struct recon_state *st, const char *job, const char *mode,
				  int64_t start, int64_t end, int64_t *run_id,
				  struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT max(id) FROM runs WHERE job = ? AND mode = ? AND outcome = "
			       "'success' AND dry_run = 0 AND window_start_ms = ? AND "
			       "window_end_ms = ?",
			       -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the runs");
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, start);
	sqlite3_bind_int64(q, 4, end);
	rc = one_int(st, q, run_id, err);
	sqlite3_finalize(q);
	return rc;
}

/* Sums one ledger row into c (this window's own rows only mark c->mine). */
static void carry_add(struct recon_carry *c, sqlite3_stmt *q, int64_t window_start)
{
	bool over = false;
	const char *cur = (const char *)sqlite3_column_text(q, 10);

	if (sqlite3_column_int64(q, 1) == window_start) {
		c->mine = true;
		return;
	}
	if (sqlite3_column_int(q, 14)) {
		/* an assumed payment: kept aside, it stands only where no real one is known */
		c->assumed = true;
		c->assumed_paid = sqlite3_column_int64(q, 2);
		if (!c->entries) {
			snprintf(c->currency, sizeof(c->currency), "%s", cur ? cur : "");
			c->first = sqlite3_column_int64(q, 11);
			c->last = sqlite3_column_int64(q, 12);
		}
		return;
	}
	/* plain order rows are snapshots: a later window's replaces an earlier one's */
	if (sqlite3_column_int(q, 13) && c->plain) {
		bool mine = c->mine;
		memset(c, 0, sizeof(*c));
		c->mine = mine;
	}
	c->plain = sqlite3_column_int(q, 13) != 0;
	c->window = sqlite3_column_int64(q, 1);
	if (c->entries && cur && strncmp(c->currency, cur, 3))
		c->conflict = true;
	if (!c->entries) {
		snprintf(c->currency, sizeof(c->currency), "%s", cur ? cur : "");
		c->first = sqlite3_column_int64(q, 11);
		c->last = sqlite3_column_int64(q, 12);
	}
	if (sqlite3_column_int64(q, 11) < c->first)
		c->first = sqlite3_column_int64(q, 11);
	if (sqlite3_column_int64(q, 12) > c->last)
		c->last = sqlite3_column_int64(q, 12);
	c->paid = add_sat(c->paid, sqlite3_column_int64(q, 2), &over);
	c->refunded = add_sat(c->refunded, sqlite3_column_int64(q, 3), &over);
	c->payments += (uint32_t)sqlite3_column_int64(q, 4);
	c->entries += (uint32_t)sqlite3_column_int64(q, 5);
	c->revoked = c->revoked || sqlite3_column_int(q, 6);
	c->pending = c->pending || sqlite3_column_int(q, 7);
	c->conflict = c->conflict || sqlite3_column_int(q, 8) || over;
	c->duplicate = c->duplicate || sqlite3_column_int(q, 9);
}

int recon_state_ledger_load(struct recon_state *st, const char *job, const char *mode,
			    int64_t window_start, const struct recon_ledger_sink *sink,
			    struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	struct recon_buf key;
	struct recon_carry c;
	bool have = false;
	int rc = 0, s;

	recon_buf_init(&key);
	/* the open items first: their keys then take their carried history too */
	if (sqlite3_prepare_v2(
		st->db,
		"SELECT key, class, opened_at_ms FROM items WHERE job = ? AND mode = ? AND "
		"state = 'open'",
		-1, &q, NULL) != SQLITE_OK) {
		rc = db_err(st, err, "cannot read the open items");
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(q)) == SQLITE_ROW)
		sink->item(sink->arg, (const char *)sqlite3_column_text(q, 0),
			   (size_t)sqlite3_column_bytes(q, 0),
			   recon_class_from_name((const char *)sqlite3_column_text(q, 1)),
			   sqlite3_column_int64(q, 2));
	if (s != SQLITE_DONE) {
		rc = db_err(st, err, "cannot read the open items");
		goto out;
	}
	sqlite3_finalize(q);
	/* the primary key's order: every key's rows together */
	if (sqlite3_prepare_v2(
		st->db,
		"SELECT key, window_start_ms, paid, refunded, payments, entries, "
		"revoked, pending, conflict, duplicate, currency, first_ms, last_ms, plain, "
		"assumed FROM ledger WHERE job = ? AND mode = ? ORDER BY key, window_start_ms",
		-1, &q, NULL) != SQLITE_OK) {
		q = NULL;
		rc = db_err(st, err, "cannot read the ledger");
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(q, 0);
		size_t len = (size_t)sqlite3_column_bytes(q, 0);
		if (have && (len != key.len || memcmp(k, key.s, len))) {
			sink->carry(sink->arg, key.s, key.len, &c);
			have = false;
		}
		if (!have) {
			recon_buf_reset(&key);
			recon_buf_add(&key, k, len);
			memset(&c, 0, sizeof(c));
			have = true;
		}
		carry_add(&c, q, window_start);
	}
	if (s != SQLITE_DONE) {
		rc = db_err(st, err, "cannot read the ledger");
		goto out;
	}
	if (have)
		sink->carry(sink->arg, key.s, key.len, &c);
out:
	sqlite3_finalize(q);
	recon_buf_release(&key);
	return rc;
}

static const char ledger_del_sql[] =
    "DELETE FROM ledger WHERE job = ?1 AND mode = ?2 AND window_start_ms = ?3";
static const char ledger_ins_sql[] =
    "INSERT INTO ledger (job, mode, key, window_start_ms, window_end_ms, paid, refunded, "
    "payments, entries, revoked, pending, conflict, duplicate, currency, first_ms, last_ms, "
    "run_id, keep_until_ms, plain) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
    "?13, ?14, ?15, ?16, ?17, ?18, ?19)";
/* an assumed payment of an earlier day: that day's own rows, if any, stand */
static const char ledger_assume_sql[] =
    "INSERT INTO ledger (job, mode, key, window_start_ms, window_end_ms, paid, refunded, "
    "payments, entries, revoked, pending, conflict, duplicate, currency, first_ms, last_ms, "
    "run_id, keep_until_ms, plain, assumed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
    "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, 1) ON CONFLICT (job, mode, key, "
    "window_start_ms) DO NOTHING";
static const char ledger_keep_sql[] =
    "UPDATE ledger SET keep_until_ms = ?4 WHERE job = ?1 AND mode = ?2 AND key = ?3";
static const char ledger_purge_sql[] =
    "DELETE FROM ledger WHERE job = ?1 AND mode = ?2 AND keep_until_ms < ?3";

/* How long a key's ledger rows stay: open items for good, partial refunds for the retention. */
static int64_t keep_until(const struct recon_record *rec, int klass, bool partial)
{
	bool over = false;

	if (klass != RECON_CLASS_MATCHED)
		return INT64_MAX; /* until its item ends (item_end sets it then) */
	return add_sat(rec->now, partial ? rec->retention_ms : rec->settled_ms, &over);
}

int recon_state_ledger_save(struct recon_state *st, const struct recon_record *rec,
			    const struct recon_contrib *c, size_t n, struct recon_err *err)
{
	sqlite3_stmt *del = NULL, *ins = NULL, *assume = NULL, *keep = NULL, *purge = NULL;
	int rc = 0;

	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (!(del = cached(st, ledger_del_sql)) || !(ins = cached(st, ledger_ins_sql)) ||
	    !(assume = cached(st, ledger_assume_sql)) || !(keep = cached(st, ledger_keep_sql)) ||
	    !(purge = cached(st, ledger_purge_sql))) {
		rc = db_err(st, err, "cannot write the ledger");
		goto out;
	}
	/* a rerun replaces its window's contributions */
	sqlite3_bind_text(del, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(del, 2, rec->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(del, 3, rec->window_start);
	if (sqlite3_step(del) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot write the ledger");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct recon_carry *x = &c[i].c;
		int64_t until = keep_until(rec, c[i].klass, c[i].partial);
		/* this window's rows, or an assumed payment of an earlier day */
		sqlite3_stmt *q = c[i].window_start ? assume : ins;
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, rec->job, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, rec->mode, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, c[i].key, (int)c[i].key_len, SQLITE_STATIC);
		sqlite3_bind_int64(q, 4, c[i].window_start ? c[i].window_start : rec->window_start);
		sqlite3_bind_int64(q, 5, c[i].window_start ? c[i].window_end : rec->window_end);
		sqlite3_bind_int64(q, 6, x->paid);
		sqlite3_bind_int64(q, 7, x->refunded);
		sqlite3_bind_int64(q, 8, x->payments);
		sqlite3_bind_int64(q, 9, x->entries);
		sqlite3_bind_int(q, 10, x->revoked);
		sqlite3_bind_int(q, 11, x->pending);
		sqlite3_bind_int(q, 12, x->conflict);
		sqlite3_bind_int(q, 13, x->duplicate);
		sqlite3_bind_text(q, 14, x->currency, -1, SQLITE_STATIC);
		sqlite3_bind_int64(q, 15, x->first);
		sqlite3_bind_int64(q, 16, x->last);
		sqlite3_bind_int64(q, 17, rec->run_id);
		sqlite3_bind_int64(q, 18, until);
		sqlite3_bind_int(q, 19, x->plain);
		if (sqlite3_step(q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot write the ledger");
			goto out;
		}
		if (!c[i].carried)
			continue; /* its only row: nothing else to keep along */
		sqlite3_reset(keep);
		sqlite3_bind_text(keep, 1, rec->job, -1, SQLITE_STATIC);
		sqlite3_bind_text(keep, 2, rec->mode, -1, SQLITE_STATIC);
		sqlite3_bind_text(keep, 3, c[i].key, (int)c[i].key_len, SQLITE_STATIC);
		sqlite3_bind_int64(keep, 4, until);
		if (sqlite3_step(keep) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot write the ledger");
			goto out;
		}
	}
	sqlite3_bind_text(purge, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(purge, 2, rec->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(purge, 3, rec->now);
	if (sqlite3_step(purge) != SQLITE_DONE)
		rc = db_err(st, err, "cannot purge the ledger");
out:
	if (ins) {
		sqlite3_reset(ins);
		sqlite3_clear_bindings(ins);
	}
	if (assume) {
		sqlite3_reset(assume);
		sqlite3_clear_bindings(assume);
	}
	if (keep) {
		sqlite3_reset(keep);
		sqlite3_clear_bindings(keep);
	}
	return tx_end(st, rc, err);
}

/* ---- items ---------------------------------------------------------------- */

static const char item_last_sql[] = "SELECT id, class, state FROM items WHERE job = ?1 AND "
				    "mode = ?2 AND key = ?3 ORDER BY id DESC LIMIT 1";
static const char item_ins_sql[] =
    "INSERT INTO items (job, mode, key, class, severity, opened_run, opened_at_ms, last_run, "
    "last_at_ms, due_ms, amount_minor, currency, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?6, "
    "?7, ?8, ?9, ?10, ?11)";
static const char item_seen_sql[] =
    "UPDATE items SET last_run = ?2, last_at_ms = ?3, due_ms = coalesce(due_ms, ?4), "
    "amount_minor = ?5, currency = ?6, json = ?7 WHERE id = ?1";
static const char item_end_sql[] =
    "UPDATE items SET state = ?2, ended_run = ?3, ended_at_ms = ?4, ended_by = ?5 "
    "WHERE id = ?1 AND state = 'open'";
static const char item_keep_sql[] = "UPDATE ledger SET keep_until_ms = ?4 WHERE job = ?1 AND "
				    "mode = ?2 AND key = ?3 AND keep_until_ms > ?4";
static const char ticket_end_sql[] =
    "UPDATE tickets SET status = 'resolved', resolved_run = ?4, resolved_at_ms = ?5, "
    "note = ?6, synced = 0 WHERE job = ?1 AND key = ?2 AND class = ?3 AND status = 'open' "
    "AND NOT EXISTS (SELECT 1 FROM items i WHERE i.job = ?1 AND i.mode IN ('t1', 'hot') AND "
    "i.key = ?7 AND i.class = ?3 AND i.state = 'open')";

const char *recon_state_severity(int klass)
{
	if (klass == RECON_CLASS_AMOUNT_MISMATCH)
		return "critical";
	return klass > RECON_CLASS_MATCHED ? "info" : "normal";
}

/* The ticket of (key, class) follows its item: resolved, naming the run, unless another mode's item
 * keeps it open. */
static int ticket_end(struct recon_state *st, const char *job, const char *key, size_t len,
		      const char *klass, int64_t run_id, int64_t now, const char *why,
		      struct recon_err *err)
{
	sqlite3_stmt *q = cached(st, ticket_end_sql);
	char shown[RECON_KEY_PARTS_MAX * 1025 + 8];
	int rc = 0;

	if (!q)
		return db_err(st, err, "cannot resolve a ticket");
	recon_key_display(key, len, shown, sizeof(shown));
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, shown, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, klass, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, run_id);
	sqlite3_bind_int64(q, 5, now);
	sqlite3_bind_text(q, 6, why, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 7, key, (int)len, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE)
		rc = db_err(st, err, "cannot resolve a ticket");
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return rc;
}

/*
 * Ends item `id` (state resolved | superseded | closed, by: matched, replayed,
 * the new class), resolves its ticket, and lets the key's ledger rows expire
 * after the retention once no item holds them.
 */
static int item_end(struct recon_state *st, const struct recon_record *rec, const char *mode,
		    int64_t id, const char *key, size_t len, const char *klass, const char *state,
		    const char *by, struct recon_err *err)
{
	sqlite3_stmt *q = cached(st, item_end_sql), *k = cached(st, item_keep_sql);
	char why[96];
	bool over = false;
	int rc = 0;

	if (!q || !k)
		return db_err(st, err, "cannot end an item");
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_text(q, 2, state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, rec->run_id);
	sqlite3_bind_int64(q, 4, rec->now);
	sqlite3_bind_text(q, 5, by, -1, SQLITE_STATIC);
	sqlite3_bind_text(k, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(k, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(k, 3, key, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(k, 4, add_sat(rec->now, rec->retention_ms, &over));
	if (sqlite3_step(q) != SQLITE_DONE || sqlite3_step(k) != SQLITE_DONE) {
		rc = db_err(st, err, "cannot end an item");
		goto out;
	}
	snprintf(why, sizeof(why), "%s by run %lld (%s)", state, (long long)rec->run_id, by);
	rc = ticket_end(st, rec->job, key, len, klass, rec->run_id, rec->now, why, err);
out:
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_reset(k);
	sqlite3_clear_bindings(k);
	return rc;
}

/* Money at stake in a difference (minor units) and its currency. */
static int64_t at_stake(const struct recon_diff *d, const char **cur)
{
	const struct recon_side_view *u = &d->up, *l = &d->local;

	*cur = u->present ? u->currency : l->currency;
	switch (d->klass) {
	case RECON_CLASS_MISSING:
		return u->amount ? u->amount : u->refunded;
	case RECON_CLASS_AMOUNT_MISMATCH:
		if (u->present && l->present && !strcmp(u->currency, l->currency) && !u->conflict) {
			int64_t a = u->amount > l->amount ? u->amount : l->amount;
			int64_t b = u->amount > l->amount ? l->amount : u->amount;
			if (b >= 0 || a <= INT64_MAX + b) {
				int64_t x = a - b;
				if (u->refunded > u->amount)
					x = u->refunded -
					    u->amount; /* refunded beyond the payment */
				return x;
			}
		}
		return l->present ? l->amount : u->amount;
	case RECON_CLASS_STUCK:
		return u->amount;
	default:
		if (l->present) {
			*cur = l->currency;
			return l->amount;
		}
		return u->amount;
	}
}

/* Records the evaluation of one key that is not matched: its item opens, stays or is superseded. */
static int item_upsert(struct recon_state *st, const struct recon_record *rec,
		       const struct recon_diff *d, const char *json, struct recon_item_counts *ic,
		       struct recon_err *err)
{
	sqlite3_stmt *last = cached(st, item_last_sql), *ins = cached(st, item_ins_sql),
		     *seen = cached(st, item_seen_sql);
	const char *klass = recon_class_name(d->klass), *cur = NULL;
	int64_t stake = at_stake(d, &cur), id = 0;
	const char *old_class = NULL, *old_state = NULL;
	int rc = 0, s;

	if (!last || !ins || !seen)
		return db_err(st, err, "cannot record an item");
	sqlite3_bind_text(last, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(last, 2, rec->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(last, 3, d->key, (int)d->key_len, SQLITE_STATIC);
	s = sqlite3_step(last);
	if (s == SQLITE_ROW) {
		id = sqlite3_column_int64(last, 0);
		old_class = (const char *)sqlite3_column_text(last, 1);
		old_state = (const char *)sqlite3_column_text(last, 2);
	} else if (s != SQLITE_DONE) {
		rc = db_err(st, err, "cannot read an item");
		goto out;
	}
	/*
	 * The same class as the open item (or as the item a person closed: the
	 * person's word stands while nothing changes): a new evaluation of it.
	 */
	if (old_class && !strcmp(old_class, klass) &&
	    (!strcmp(old_state, "open") || !strcmp(old_state, "closed"))) {
		sqlite3_bind_int64(seen, 1, id);
		sqlite3_bind_int64(seen, 2, rec->run_id);
		sqlite3_bind_int64(seen, 3, rec->now);
		if (d->due)
			sqlite3_bind_int64(seen, 4, d->due);
		sqlite3_bind_int64(seen, 5, stake);
		sqlite3_bind_text(seen, 6, cur, -1, SQLITE_STATIC);
		sqlite3_bind_text(seen, 7, json, -1, SQLITE_STATIC);
		if (sqlite3_step(seen) != SQLITE_DONE)
			rc = db_err(st, err, "cannot record an item");
		goto out;
	}
	if (old_state && !strcmp(old_state, "open")) {
		char oc[32];
		snprintf(oc, sizeof(oc), "%s", old_class);
		sqlite3_reset(last); /* its texts are gone now */
		if ((rc = item_end(st, rec, rec->mode, id, d->key, d->key_len, oc, "superseded",
				   klass, err)) < 0)
			goto out;
		if (recon_class_from_name(oc) < RECON_CLASS__COUNT)
			ic->superseded++;
	}
	sqlite3_bind_text(ins, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 2, rec->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 3, d->key, (int)d->key_len, SQLITE_STATIC);
	sqlite3_bind_text(ins, 4, klass, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 5, recon_state_severity(d->klass), -1, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 6, rec->run_id);
	sqlite3_bind_int64(ins, 7, rec->now);
	if (d->due)
		sqlite3_bind_int64(ins, 8, d->due);
	sqlite3_bind_int64(ins, 9, stake);
	sqlite3_bind_text(ins, 10, cur, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins, 11, json, -1, SQLITE_STATIC);
	if (sqlite3_step(ins) != SQLITE_DONE)
		rc = db_err(st, err, "cannot record an item");
	else if (d->klass < RECON_CLASS__COUNT)
		ic->opened++;
out:
	sqlite3_reset(last);
	sqlite3_clear_bindings(last);
	sqlite3_reset(ins);
	sqlite3_clear_bindings(ins);
	sqlite3_reset(seen);
	sqlite3_clear_bindings(seen);
	return rc;
}

/*
 * Open items of `mode` the run evaluated and found matched are resolved (a
 * t1 run also resolves the hot items of keys it found matched).
 */
static int items_resolve(struct recon_state *st, const struct recon_record *rec, const char *mode,
			 struct recon_item_counts *ic, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	struct {
		int64_t id;
		char *key, *klass;
		size_t len;
	} *end = NULL;
	size_t n = 0, alloc = 0;
	int rc = 0, s;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT id, key, class FROM items WHERE job = ? AND mode = ? AND "
			       "state = 'open' AND last_run <> ?",
			       -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read the open items");
	sqlite3_bind_text(q, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, rec->run_id);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(q, 1);
		size_t len = (size_t)sqlite3_column_bytes(q, 1);
		if (recon_compare_key_class(rec->cmp, key, len) != RECON_CLASS_MATCHED)
			continue; /* not evaluated (a row was rejected), or another mode's class */
		recon_grow((void **)&end, &alloc, n + 1, sizeof(*end));
		end[n].id = sqlite3_column_int64(q, 0);
		end[n].key = recon_xstrndup(key, len);
		end[n].len = len;
		end[n].klass = recon_xstrdup((const char *)sqlite3_column_text(q, 2));
		n++;
	}
	if (s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read the open items");
	sqlite3_finalize(q);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = item_end(st, rec, mode, end[i].id, end[i].key, end[i].len,
				      end[i].klass, "resolved", "matched", err);
		if (rc == 0) {
			if (recon_class_from_name(end[i].klass) < RECON_CLASS__COUNT)
				ic->resolved++;
			else
				ic->settled++;
		}
		free(end[i].key);
		free(end[i].klass);
	}
	free(end);
	return rc;
}

static const char run_diff_sql[] =
    "INSERT INTO run_differences (run_id, key, class, json) VALUES (?, ?, ?, ?)";

int recon_state_record_diffs(struct recon_state *st, const struct recon_record *rec,
			     struct recon_item_counts *ic, struct recon_err *err)
{
	sqlite3_stmt *run_q;
	int rc = 0;

	memset(ic, 0, sizeof(*ic));
	if ((rc = exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	if (!(run_q = cached(st, run_diff_sql))) {
		rc = db_err(st, err, "cannot record differences");
		goto out;
	}
	for (size_t i = 0; i < rec->n; i++) {
		const char *klass = recon_class_name(rec->diffs[i].klass);
		sqlite3_reset(run_q);
		sqlite3_bind_int64(run_q, 1, rec->run_id);
		sqlite3_bind_text(run_q, 2, rec->diffs[i].key, (int)rec->diffs[i].key_len,
				  SQLITE_STATIC);
		sqlite3_bind_text(run_q, 3, klass, -1, SQLITE_STATIC);
		sqlite3_bind_text(run_q, 4, rec->json[i], -1, SQLITE_STATIC);
		if (sqlite3_step(run_q) != SQLITE_DONE) {
			rc = db_err(st, err, "cannot record a difference");
			goto out;
		}
	}
	sqlite3_reset(run_q);
	sqlite3_clear_bindings(run_q);
	if (!rec->ledger)
		goto out; /* a dry run writes nothing a later run reads */
	for (size_t i = 0; i < rec->n && rc == 0; i++)
		rc = item_upsert(st, rec, &rec->diffs[i], rec->json[i], ic, err);
	for (size_t i = 0; i < rec->npending && rc == 0; i++)
		rc = item_upsert(st, rec, &rec->pending[i], rec->pjson[i], ic, err);
	if (rc == 0)
		rc = items_resolve(st, rec, rec->mode, ic, err);
	if (rc == 0 && !strcmp(rec->mode, "t1"))
		rc = items_resolve(st, rec, "hot", ic, err);
out:
	return tx_end(st, rc, err);
}

int recon_state_item_replayed(struct recon_state *st, const struct recon_record *rec,
			      const char *key, size_t len, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int64_t id = 0;
	int rc = 0, s;

	if (sqlite3_prepare_v2(st->db,
			       "SELECT id FROM items WHERE job = ? AND mode = ? AND key = ? AND "
			       "class = 'missing' AND state = 'open'",
			       -1, &q, NULL) != SQLITE_OK)
		return db_err(st, err, "cannot read an item");
	sqlite3_bind_text(q, 1, rec->job, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, rec->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, key, (int)len, SQLITE_STATIC);
	s = sqlite3_step(q);
	if (s == SQLITE_ROW)
		id = sqlite3_column_int64(q, 0);
	else if (s != SQLITE_DONE)
		rc = db_err(st, err, "cannot read an item");
	sqlite3_finalize(q);
	if (rc == 0 && id)
		rc = item_end(st, rec, rec->mode, id, key, len, "missing", "resolved", "replayed",
			      err);
	return rc;
}
