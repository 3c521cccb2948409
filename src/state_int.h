/*
 * The state store's family, internal: the store object and the statement
 * helpers its files share (recon_state.c: opening, migrations, the lock and
 * these helpers; state_runs.c: runs, rejects, actions, watermarks;
 * state_items.c: the open items and the ledger; state_tickets.c: tickets;
 * state_query.c: the read-only queries of the commands, the heartbeat and the
 * daily report). Only these files include it, and only they know the schema
 * (sql/sqlite/state).
 *
 * A statement is a static const `struct recon_state_sql`: its text and the
 * words its error starts with. The store prepares each once (compared by
 * address) and keeps it for its life, so a statement run once per difference
 * costs no prepare. Arguments travel as a STATE_ARGS(...) list of STATE_TEXT,
 * STATE_KEY, STATE_INT and STATE_NULL values, bound to ?1, ?2, ... in order.
 */
#ifndef RECON_STATE_INT_H
#define RECON_STATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "recon_err.h"
#include "recon_state.h"

/* How a statement's failure is reported. */
enum recon_state_errs {
	/* the run's own store: the path, exit 73 for a full disk, 75 for a busy store */
	RECON_STATE_ERR_STORE = 0,
	/* the read-only queries: RECON_EIO, "what: SQLite's message" */
	RECON_STATE_ERR_READ,
	/* as READ, naming the store: "what '<path>': SQLite's message" (`recon check`) */
	RECON_STATE_ERR_READ_PATH,
};

struct recon_state_sql {
	const char *text;
	const char *what; /* "cannot record the run": the error message's start */
	enum recon_state_errs errs;
};

struct recon_state_cached {
	const struct recon_state_sql *sql;
	sqlite3_stmt *q;
};

struct state_ckpt;

struct recon_state {
	sqlite3 *db;
	char *path;
	struct state_ckpt *ckpt; /* the checkpointer of a writable store; NULL until needed */
	struct recon_state_cached *cache; /* every statement prepared so far */
	size_t ncache, acache;
};

enum recon_state_argtype { RECON_STATE_ARG_END, RECON_STATE_ARG_TEXT, RECON_STATE_ARG_INT };

/* One bound value: text (NULL binds SQL NULL; len -1: NUL-terminated) or an integer. */
struct recon_state_arg {
	enum recon_state_argtype type;
	const char *s;
	int len;
	int64_t i;
};

#define STATE_TEXT(x)	((struct recon_state_arg){RECON_STATE_ARG_TEXT, (x), -1, 0})
#define STATE_KEY(p, n) ((struct recon_state_arg){RECON_STATE_ARG_TEXT, (p), (int)(n), 0})
#define STATE_INT(x)	((struct recon_state_arg){RECON_STATE_ARG_INT, NULL, 0, (int64_t)(x)})
#define STATE_NULL	((struct recon_state_arg){RECON_STATE_ARG_TEXT, NULL, -1, 0})
#define STATE_ARGS(...)                                                                            \
	((const struct recon_state_arg[]){__VA_ARGS__, {RECON_STATE_ARG_END, NULL, 0, 0}})

/* Reports the last SQLite error of st as sql->errs says, starting with sql->what. */
int recon_state_fail(struct recon_state *st, const struct recon_state_sql *sql,
		     struct recon_err *err);

/*
 * The statement sql, reset and bound to args (NULL: none); NULL after
 * reporting why it cannot be prepared. Owned by the store: the caller steps
 * it and lets go with recon_state_done(), never finalizes it. Not reentrant:
 * one use of a statement at a time.
 */
sqlite3_stmt *recon_state_stmt(struct recon_state *st, const struct recon_state_sql *sql,
			       const struct recon_state_arg *args, struct recon_err *err);
/* sqlite3_step: RECON_ROW, RECON_DONE, or < 0 after reporting the failure. */
int recon_state_step(struct recon_state *st, const struct recon_state_sql *sql, sqlite3_stmt *q,
		     struct recon_err *err);
/* Resets q and clears its bindings: its read ends, the caller's texts are let go. */
void recon_state_done(sqlite3_stmt *q);

/* Runs a statement that returns no row (a write). sqlite3_changes() tells what it did. */
RECON_MUSTCHECK int recon_state_run(struct recon_state *st, const struct recon_state_sql *sql,
				    const struct recon_state_arg *args, struct recon_err *err);

/* A multi-row INSERT's placeholders: the tuple t 2, 4 or 16 times. */
#define STATE_ROWS2(t)	t ", " t
#define STATE_ROWS4(t)	STATE_ROWS2(t) ", " STATE_ROWS2(t)
#define STATE_ROWS16(t) STATE_ROWS4(STATE_ROWS4(t))
/*
 * Writes n rows of ncols arguments each (row i's from args[ncols * i], with
 * room for one argument past the last row's), in order: each whole group of
 * per rows with `many` (its VALUES per tuples of one's), the rows left over
 * one at a time with `one`. A statement of many rows costs one step and one
 * reset instead of one a row (its journal stays in memory:
 * recon_state_memory_setup()).
 */
RECON_MUSTCHECK int recon_state_run_rows(struct recon_state *st, const struct recon_state_sql *one,
					 const struct recon_state_sql *many, size_t per,
					 size_t ncols, struct recon_state_arg *args, size_t n,
					 struct recon_err *err);
/*
 * Calls row(arg, q) for each result row (the columns are borrowed until it
 * returns); row returns < 0 to stop, which is then returned.
 */
RECON_MUSTCHECK int recon_state_each(struct recon_state *st, const struct recon_state_sql *sql,
				     const struct recon_state_arg *args,
				     int (*row)(void *arg, sqlite3_stmt *q), void *arg,
				     struct recon_err *err);
/* The first column of the first row: RECON_ENOTFOUND when there is no row or it is NULL. */
RECON_MUSTCHECK int recon_state_int(struct recon_state *st, const struct recon_state_sql *sql,
				    const struct recon_state_arg *args, int64_t *out,
				    struct recon_err *err);

/* sqlite3_exec of one statement of its own (BEGIN, COMMIT, a pragma, a migration). */
RECON_MUSTCHECK int recon_state_exec(struct recon_state *st, const char *sql,
				     struct recon_err *err);
/* Ends a transaction begun with BEGIN IMMEDIATE: commits when rc is 0, else rolls back. */
int recon_state_tx_end(struct recon_state *st, int rc, struct recon_err *err);

#endif
