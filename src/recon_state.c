/*
 * recon_state: opening the store (creating it whole, refusing what is not a
 * store, migrating its schema), the job's run lock, and the statement helpers
 * the state family shares (state_int.h). The rest of the module: state_runs.c,
 * state_items.c, state_tickets.c, state_query.c.
 */
#include "recon_state.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "recon_time.h"
#include "state_int.h"

/* Generated from the files in sql/sqlite/state at build time. */
extern const char *const recon_migrations[];
extern const size_t recon_migrations_count;

/* ---- statement helpers ---------------------------------------------------- */

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

int recon_state_fail(struct recon_state *st, const struct recon_state_sql *sql,
		     struct recon_err *err)
{
	switch (sql->errs) {
	case RECON_STATE_ERR_READ:
		return recon_err_set(err, RECON_EIO, NULL, "%s: %s", sql->what,
				     sqlite3_errmsg(st->db));
	case RECON_STATE_ERR_READ_PATH:
		return recon_err_set(err, RECON_EIO, NULL, "%s '%s': %s", sql->what, st->path,
				     sqlite3_errmsg(st->db));
	default:
		return db_err(st, err, sql->what);
	}
}

static int bind(sqlite3_stmt *q, const struct recon_state_arg *args)
{
	int rc = SQLITE_OK;

	for (int i = 0; args && args[i].type != RECON_STATE_ARG_END && rc == SQLITE_OK; i++) {
		if (args[i].type == RECON_STATE_ARG_INT)
			rc = sqlite3_bind_int64(q, i + 1, args[i].i);
		else if (args[i].s)
			rc = sqlite3_bind_text(q, i + 1, args[i].s, args[i].len, SQLITE_STATIC);
		else
			rc = sqlite3_bind_null(q, i + 1);
	}
	return rc;
}

sqlite3_stmt *recon_state_stmt(struct recon_state *st, const struct recon_state_sql *sql,
			       const struct recon_state_arg *args, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	size_t i;

	for (i = 0; i < st->ncache && st->cache[i].sql != sql; i++)
		;
	if (i < st->ncache) {
		q = st->cache[i].q;
		recon_state_done(q);
	} else if (sqlite3_prepare_v3(st->db, sql->text, -1, SQLITE_PREPARE_PERSISTENT, &q, NULL) ==
		   SQLITE_OK) {
		recon_grow((void **)&st->cache, &st->acache, st->ncache + 1, sizeof(*st->cache));
		st->cache[st->ncache].sql = sql;
		st->cache[st->ncache++].q = q;
	} else {
		recon_state_fail(st, sql, err);
		return NULL;
	}
	if (bind(q, args) != SQLITE_OK) {
		recon_state_fail(st, sql, err);
		recon_state_done(q);
		return NULL;
	}
	return q;
}

int recon_state_step(struct recon_state *st, const struct recon_state_sql *sql, sqlite3_stmt *q,
		     struct recon_err *err)
{
	int s = sqlite3_step(q);

	if (s == SQLITE_ROW)
		return RECON_ROW;
	if (s == SQLITE_DONE)
		return RECON_DONE;
	return recon_state_fail(st, sql, err);
}

void recon_state_done(sqlite3_stmt *q)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
}

int recon_state_run(struct recon_state *st, const struct recon_state_sql *sql,
		    const struct recon_state_arg *args, struct recon_err *err)
{
	sqlite3_stmt *q = recon_state_stmt(st, sql, args, err);
	int rc;

	if (!q)
		return err->code;
	rc = recon_state_step(st, sql, q, err);
	recon_state_done(q);
	return rc < 0 ? rc : 0;
}

/* Runs sql on the k rows of ncols arguments at a (the argument after them ends the list for it). */
static int run_group(struct recon_state *st, const struct recon_state_sql *sql,
		     struct recon_state_arg *a, size_t k, size_t ncols, struct recon_err *err)
{
	const struct recon_state_arg next = a[k * ncols];
	int rc;

	a[k * ncols] = (struct recon_state_arg){RECON_STATE_ARG_END, NULL, 0, 0};
	rc = recon_state_run(st, sql, a, err);
	a[k * ncols] = next;
	return rc;
}

int recon_state_run_rows(struct recon_state *st, const struct recon_state_sql *one,
			 const struct recon_state_sql *many, size_t per, size_t ncols,
			 struct recon_state_arg *args, size_t n, struct recon_err *err)
{
	size_t i = 0;
	int rc = 0;

	for (; n - i >= per && rc == 0; i += per)
		rc = run_group(st, many, args + ncols * i, per, ncols, err);
	for (; i < n && rc == 0; i++)
		rc = run_group(st, one, args + ncols * i, 1, ncols, err);
	return rc;
}

int recon_state_each(struct recon_state *st, const struct recon_state_sql *sql,
		     const struct recon_state_arg *args, int (*row)(void *arg, sqlite3_stmt *q),
		     void *arg, struct recon_err *err)
{
	sqlite3_stmt *q = recon_state_stmt(st, sql, args, err);
	int rc;

	if (!q)
		return err->code;
	while ((rc = recon_state_step(st, sql, q, err)) == RECON_ROW)
		if ((rc = row(arg, q)) < 0)
			break;
	recon_state_done(q);
	return rc < 0 ? rc : 0;
}

int recon_state_int(struct recon_state *st, const struct recon_state_sql *sql,
		    const struct recon_state_arg *args, int64_t *out, struct recon_err *err)
{
	sqlite3_stmt *q = recon_state_stmt(st, sql, args, err);
	int rc;

	if (!q)
		return err->code;
	rc = recon_state_step(st, sql, q, err);
	if (rc == RECON_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		*out = sqlite3_column_int64(q, 0);
		rc = 0;
	} else if (rc >= 0) {
		rc = RECON_ENOTFOUND;
	}
	recon_state_done(q);
	return rc;
}

int recon_state_exec(struct recon_state *st, const char *sql, struct recon_err *err)
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

int recon_state_tx_end(struct recon_state *st, int rc, struct recon_err *err)
{
	if (rc == 0)
		rc = recon_state_exec(st, "COMMIT", err);
	if (rc < 0)
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int recon_state_batch_begin(struct recon_state *st, struct recon_err *err)
{
	return recon_state_exec(st, "BEGIN IMMEDIATE", err);
}

int recon_state_batch_end(struct recon_state *st, struct recon_err *err)
{
	return recon_state_exec(st, "COMMIT", err);
}

/* ---- opening ---------------------------------------------------------------- */

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

/* A one-row, one-integer read (a pragma, a count): its value, or -1 when it cannot be read. */
static int int_of(struct recon_state *st, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int v = -1;

	if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	return v;
}

/*
 * The schema version of a store opened for writing, into *version; a store of
 * version 0 must have no tables besides recon's own.
 */
static int check_foreign(struct recon_state *st, int *version, struct recon_err *err)
{
	int objects = int_of(st, "SELECT count(*) FROM sqlite_master");

	*version = int_of(st, "PRAGMA user_version");
	if (*version < 0 || objects < 0)
		return db_err(st, err, "cannot read the state store");
	if (*version == 0 && objects > 0)
		return recon_err_set(err, RECON_EIO, st->path,
				     "not a recon state store (a SQLite database with %d other "
				     "objects and no recon schema): refusing to write into it",
				     objects);
	return 0;
}

/* Runs the migrations after `version`, each in a transaction with its version number. */
static int migrate(struct recon_state *st, int version, struct recon_err *err)
{
	int rc = 0;

	if (version > (int)recon_migrations_count)
		return recon_err_set(err, RECON_EIO, st->path,
				     "state store schema version %d is newer than this recon "
				     "(knows %zu): upgrade recon",
				     version, recon_migrations_count);
	for (size_t v = (size_t)version; v < recon_migrations_count; v++) {
		char pragma[64];
		if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
			return rc;
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %zu", v + 1);
		if ((rc = recon_state_exec(st, recon_migrations[v], err)) < 0 ||
		    (rc = recon_state_exec(st, pragma, err)) < 0)
			return recon_state_tx_end(st, rc, err);
		if ((rc = recon_state_tx_end(st, 0, err)) < 0)
			return rc;
	}
	return 0;
}

/* ---- checkpoints ---------------------------------------------------------- */

/*
 * A writable store's WAL is copied back into the database (a checkpoint) on
 * a thread of its own, through a connection of its own, while the run goes
 * on writing: a checkpoint copies tens of megabytes and waits for two syncs,
 * which SQLite's automatic checkpoint does inside the commit that crosses
 * its threshold, on the writer's path. A failed checkpoint loses nothing:
 * the frames stay in the WAL for the next one, and closing the store
 * checkpoints what is left, as before.
 */
#define CKPT_PAGES 256	/* WAL pages (16 MB at 64 KiB) more that wake the checkpointer */
#define CKPT_CAP   4096 /* WAL pages (256 MB) past which the writer checkpoints too */

struct state_ckpt {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool want, stop;
	char *path;
	int signalled; /* the WAL's pages when the checkpointer was last woken (writer's) */
	bool said;     /* a failed checkpoint was logged (checkpointer's) */
};

/*
 * The checkpointer's connection: open, and its WAL opened by a first read (a
 * connection that has read nothing checkpoints nothing, and says SQLITE_OK).
 * NULL when it cannot be had now: tried again at the next wake-up.
 */
static sqlite3 *ckpt_open(const char *path)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
		SQLITE_OK ||
	    (sqlite3_busy_timeout(db, 1000),
	     /* as the writer's: the WAL synced before a checkpoint, the database after */
	     sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL)) != SQLITE_OK ||
	    sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL) !=
		SQLITE_OK) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static void *ckpt_thread(void *arg)
{
	struct state_ckpt *c = arg;
	sqlite3 *db = NULL;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->want && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		c->want = false;
		pthread_mutex_unlock(&c->mu);
		if (!db)
			db = ckpt_open(c->path);
		if (db) {
			int rc = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE,
							   NULL, NULL);
			if (rc != SQLITE_OK && rc != SQLITE_BUSY && !c->said) {
				/* not fatal: the writer checkpoints past CKPT_CAP, the close the
				 * rest */
				recon_log(RECON_LOG_DEBUG, "state store: checkpoint: %s",
					  sqlite3_errmsg(db));
				c->said = true;
			}
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	sqlite3_close(db);
	return NULL;
}

/* Wakes the checkpointer: for a checkpoint, or (stop) to end. */
static void ckpt_wake(struct state_ckpt *c, bool stop)
{
	pthread_mutex_lock(&c->mu);
	if (stop)
		c->stop = true;
	else
		c->want = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/*
 * The checkpointer's thread, started; NULL when none can run (a library
 * built without threads, or no thread to be had): SQLite's own checkpoint,
 * in the commit, from then on.
 */
static struct state_ckpt *ckpt_start(struct recon_state *st)
{
	struct state_ckpt *c;

	if (sqlite3_threadsafe()) {
		c = recon_xcalloc(1, sizeof(*c));
		pthread_mutex_init(&c->mu, NULL);
		pthread_cond_init(&c->cv, NULL);
		c->path = st->path;
		if (pthread_create(&c->th, NULL, ckpt_thread, c) == 0)
			return st->ckpt = c;
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
		free(c);
	}
	sqlite3_wal_autocheckpoint(st->db, 1000);
	return NULL;
}

/* sqlite3_wal_hook: after each commit, the WAL's length in pages. */
static int ckpt_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct recon_state *st = arg;
	struct state_ckpt *c = st->ckpt;

	(void)name;
	if (c && pages < c->signalled)
		c->signalled = 0; /* the WAL started over */
	if (pages >= CKPT_CAP) {
		/*
		 * The checkpointer chases a WAL that grows with every commit: it
		 * never catches up with the end, so the WAL never starts over.
		 * Past the cap the writer checkpoints what is left (most of it
		 * is already copied back), and the WAL restarts with its next
		 * transaction: bounded, if four times what SQLite's own
		 * checkpoint lets it reach (a 10M-row day's run writes ~2,100
		 * pages). Busy (the checkpointer is at it): the next commit.
		 */
		(void)sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		return SQLITE_OK;
	}
	if (pages < CKPT_PAGES || (c && pages < c->signalled + CKPT_PAGES))
		return SQLITE_OK;
	if (!c && !(c = ckpt_start(st)))
		return SQLITE_OK;
	c->signalled = pages;
	ckpt_wake(c, false);
	return SQLITE_OK;
}

void recon_state_checkpoint_soon(struct recon_state *st)
{
	if (st && st->ckpt)
		ckpt_wake(st->ckpt, false);
}

static void ckpt_stop(struct recon_state *st)
{
	struct state_ckpt *c = st->ckpt;

	if (!c)
		return;
	ckpt_wake(c, true);
	pthread_join(c->th, NULL);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
	st->ckpt = NULL;
}

int recon_state_cache_small(struct recon_state *st, bool small, struct recon_err *err)
{
	/* 32 MB: a run's items and ledger rows stay cached while it records them */
	return recon_state_exec(
	    st, small ? "PRAGMA cache_size = -4096" : "PRAGMA cache_size = -32768", err);
}

/*
 * A store opened for writing: WAL, its pragmas, then the schema checked and
 * migrated.
 */
static int setup_writable(struct recon_state *st, struct recon_err *err)
{
	int rc, version = 0;

	/*
	 * 64 KiB pages (a new store only; an existing one keeps its size): a
	 * run writes its differences as a bulk of ~350-byte rows, which large
	 * pages store with fewer page splits and writes.
	 */
	if ((rc = recon_state_exec(st, "PRAGMA page_size = 65536", err)) < 0 ||
	    (rc = recon_state_exec(st, "PRAGMA journal_mode = WAL", err)) < 0 ||
	    /*
	     * NORMAL in WAL mode: a power loss may drop the last commits, but
	     * commits stay in order, so a watermark that survives never
	     * outruns the actions before it; it can only fall back, and the
	     * next run redoes the idempotent rest.
	     */
	    (rc = recon_state_exec(st, "PRAGMA synchronous = NORMAL", err)) < 0 ||
	    (rc = recon_state_cache_small(st, false, err)) < 0 ||
	    (rc = recon_state_exec(st, "PRAGMA foreign_keys = ON", err)) < 0 ||
	    (rc = check_foreign(st, &version, err)) < 0)
		return rc;
	/* checkpoints on the checkpointer's thread (replaces SQLite's automatic one) */
	sqlite3_wal_hook(st->db, ckpt_hook, st);
	return migrate(st, version, err);
}

/* A store opened read-only: its schema a version this build knows. */
static int check_readable(struct recon_state *st, struct recon_err *err)
{
	int version = int_of(st, "PRAGMA user_version");

	if (version < 0)
		/* unreadable (a read-only folder without the -shm file, a lock, a
		   file that is not a database): say why, not "not a store" */
		return db_err(st, err, "cannot read the state store");
	if (version < 1 || version > (int)recon_migrations_count)
		return recon_err_set(err, RECON_EIO, st->path,
				     "not a recon state store (schema version %d)", version);
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
	if ((rc = writable ? setup_writable(st, err) : check_readable(st, err)) < 0)
		goto out;
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
	ckpt_stop(st); /* before the close, which checkpoints what is left */
	for (size_t i = 0; i < st->ncache; i++)
		sqlite3_finalize(st->cache[i].q);
	free(st->cache);
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
