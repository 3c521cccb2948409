/*
 * recon_writer: the read-write connection the compensations go through (one
 * per run, apart from the readers), and the SQL dialect they are written in.
 *
 * A writer is a descriptor, struct recon_writer_backend, one per file named
 * for what it is (src/writer_sqlite.c, writer_postgres.c, writer_mysql.c),
 * listed in the NULL-terminated registry of recon_writer.c and found by the
 * name of the local source's backend (recon_writer_find()). The descriptor
 * carries what the action SQL needs to know of the engine: its placeholders
 * ($1 or ?), its identifier quote (" or `), its "insert unless the unique key
 * exists" form, and which of its failures are worth retrying. Nothing outside
 * this module and the writer files asks which engine a writer is.
 *
 * Transaction bookkeeping lives here, once, for every writer:
 *   - recon_writer_begin() refuses a nested begin (RECON_EINTERNAL);
 *   - a failure inside a transaction poisons it: later recon_writer_exec()
 *     calls and recon_writer_commit() return that failure, so a partial
 *     transaction never commits (MySQL and SQLite would keep the rest of it
 *     open and commit it);
 *   - recon_writer_commit() that fails, for whatever reason (a poisoned
 *     transaction, a deferred constraint, a lost connection), rolls back:
 *     afterwards no transaction is open, on every engine;
 *   - recon_writer_rollback() is a no-op outside a transaction.
 * The backends' begin/commit/rollback only run the engine's statements.
 *
 * Callers use the recon_writer_*() wrappers, never the function pointers.
 */
#ifndef RECON_WRITER_H
#define RECON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_buf.h"
#include "recon_err.h"
#include "recon_job.h"

/* Returned by writers for failures worth retrying (lost connection, deadlock, busy). */
#define RECON_ERETRY (-10)

/* Capability flags of a writer backend. */
#define RECON_WRITER_DSN (1u << 0) /* a server reached through a DSN: actions.writer_dsn_env */

/* How a statement writes its parameters. */
enum recon_writer_ph {
	RECON_WRITER_PH_DOLLAR = 0, /* $1, $2, ... (PostgreSQL) */
	RECON_WRITER_PH_QMARK,	    /* ?, ?, ... (SQLite, MySQL) */
};

/* The "insert unless the unique key exists" clause. */
enum recon_writer_upsert {
	RECON_WRITER_UPSERT_CONFLICT = 0, /* ON CONFLICT (k, ...) DO NOTHING */
	/*
	 * ON DUPLICATE KEY UPDATE k = k (affected 0: already there; not INSERT
	 * IGNORE, which hides every other error). It gives way to a clash on
	 * *any* unique index, so "0 rows" needs confirming (action_replay.c).
	 */
	RECON_WRITER_UPSERT_DUPLICATE_KEY,
};

struct recon_writer;

struct recon_writer_backend {
	const char *name; /* the local source's backend name: "sqlite", "postgres", "mysql" */
	unsigned flags;	  /* RECON_WRITER_* */
	/* the dialect */
	enum recon_writer_ph placeholder;
	char quote; /* identifier quote: '"' or '`' */
	enum recon_writer_upsert upsert;
	/*
	 * The transient-error test: true when a failure with native error
	 * `code` (SQLite's extended result code, MySQL's error number; 0 for
	 * PostgreSQL) or SQLSTATE `state` (PostgreSQL; NULL elsewhere) is worth
	 * retrying: a lock, deadlock or serialization failure, a busy file, a
	 * lost connection. exec() returns RECON_ERETRY exactly for those.
	 */
	bool (*transient)(long code, const char *state);

	/* Opens the job's writer database (job->actions): RECON_EUNAVAIL when down. */
	int (*open)(struct recon_writer **out, const struct recon_job *job, struct recon_err *err);
	/* The engine's BEGIN / COMMIT / ROLLBACK; the bookkeeping is recon_writer.c's. */
	int (*begin)(struct recon_writer *w, struct recon_err *err);
	int (*commit)(struct recon_writer *w, struct recon_err *err);
	void (*rollback)(struct recon_writer *w);
	/*
	 * Runs sql with text parameters (NULL = SQL NULL) written with the
	 * dialect's placeholders; *affected = rows changed (or returned).
	 * RECON_ERETRY for transient failures (the connection is re-established
	 * on the next call outside a transaction when it was lost); otherwise
	 * RECON_EPERM (a grant is missing), RECON_ECONFIG (a table the job cannot
	 * fill: NOT NULL, CHECK, foreign key, unknown column or table),
	 * RECON_EUNAVAIL (server gone for good) or RECON_EINPUT (data refused).
	 */
	int (*exec)(struct recon_writer *w, const char *sql, const char *const *params, int n,
		    int64_t *affected, struct recon_err *err);
	/*
	 * The parameter text for the local time column holding instant utc_ms,
	 * and the SQL expression wrapping its placeholder ("%s" or "%s::timestamptz").
	 */
	int (*time_param)(struct recon_writer *w, int64_t utc_ms, char *buf, size_t size,
			  const char **wrap, struct recon_err *err);
	void (*close)(struct recon_writer *w); /* NULL-safe */
};

/* The base every writer embeds first (STYLE 17). */
struct recon_writer {
	const struct recon_writer_backend *backend;
	const struct recon_job *job;
	int64_t now;	 /* the run's clock and id, for replay templates ({now}, {run_id}); */
	int64_t run_id;	 /* set by the caller after open() */
	char where[160]; /* what errors name: "postgres host/db", the SQLite file */
	/* transaction bookkeeping: written by recon_writer.c only, read by the backends */
	bool in_tx;	  /* between begin and commit/rollback */
	int tx_failed;	  /* the first failure inside the transaction, or 0 */
	char tx_msg[256]; /* its message, repeated by later calls */
};

extern const struct recon_writer_backend recon_writer_sqlite;
extern const struct recon_writer_backend recon_writer_postgres;
extern const struct recon_writer_backend recon_writer_mysql;

/*
 * The writer backend named `name` (a local source's backend name), or NULL:
 * no such writer, or one this build leaves out (csv: nothing to write to).
 * The descriptor is static.
 */
const struct recon_writer_backend *recon_writer_find(const char *name);

/* Opens a writer of backend be; *out: caller frees with recon_writer_close(). */
RECON_MUSTCHECK int recon_writer_open(struct recon_writer **out,
				      const struct recon_writer_backend *be,
				      const struct recon_job *job, struct recon_err *err);
/* NULL-safe; an open transaction rolls back with the session. */
void recon_writer_close(struct recon_writer *w);

/* Transactions (the rules are in the comment at the top). */
RECON_MUSTCHECK int recon_writer_begin(struct recon_writer *w, struct recon_err *err);
RECON_MUSTCHECK int recon_writer_commit(struct recon_writer *w, struct recon_err *err);
void recon_writer_rollback(struct recon_writer *w);

/* backend->exec() inside the bookkeeping: a poisoned transaction runs nothing. */
RECON_MUSTCHECK int recon_writer_exec(struct recon_writer *w, const char *sql,
				      const char *const *params, int n, int64_t *affected,
				      struct recon_err *err);
/* backend->time_param(). */
RECON_MUSTCHECK int recon_writer_time_param(struct recon_writer *w, int64_t utc_ms, char *buf,
					    size_t size, const char **wrap, struct recon_err *err);

/* Placeholder number i (1-based) in the writer's dialect, written into buf: "$3" or "?". */
const char *recon_writer_ph(const struct recon_writer *w, int i, char *buf, size_t size);
/* Identifier quote character of the dialect: '"' or '`'. */
char recon_writer_quote(const struct recon_writer *w);
/*
 * Appends the dialect's "insert unless the unique key exists" clause for the
 * unique key unique[0..n): " ON CONFLICT ("a", "b") DO NOTHING" or
 * " ON DUPLICATE KEY UPDATE `a` = `a`".
 */
void recon_writer_add_upsert(const struct recon_writer *w, struct recon_buf *sql,
			     const char *const *unique, unsigned n);
/*
 * Appends INSERT INTO "table" ("c1", ...) VALUES ($1, ...) for cols[0..ncols),
 * then the upsert clause for unique[0..nunique) (none when nunique is 0).
 */
void recon_writer_add_insert(const struct recon_writer *w, struct recon_buf *sql, const char *table,
			     const char *const *cols, unsigned ncols, const char *const *unique,
			     unsigned nunique);

#endif
