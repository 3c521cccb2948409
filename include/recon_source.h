/*
 * recon_source: the reader interface every source kind implements, and the
 * raw row they produce.
 *
 * A source is opened for one side of one window, yields raw rows with one
 * value per mapped column role, and is closed. Readers stream: a row is
 * borrowed until the next call, so memory does not grow with the input.
 *
 * A backend is a descriptor (struct recon_source_backend): its name (the job
 * file's "kind"), the capabilities the core asks about instead of testing a
 * kind, its own job keys and their validator, and its ops. Adding a source is
 * one file ending in its descriptor (declared below, beside the others), one
 * line in the registry of src/recon_source.c, and CMake lines only when it
 * needs a library; the job loader, the run and the compare engine never change.
 */
#ifndef RECON_SOURCE_H
#define RECON_SOURCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"
#include "recon_job.h"

/* The window a source is opened for. */
struct recon_window {
	int64_t start; /* [start, end): the keys this run owns (UTC ms) */
	int64_t end;
	int64_t read_start; /* [read_start, read_end): what databases are asked for (margins) */
	int64_t read_end;
	int64_t day; /* business day (job zone) that names files: {date} */
};

/*
 * One row as read. val[c] points at the text of the column mapped to role c
 * (not NUL-terminated; len[c] bytes), or is NULL when the role is not mapped
 * or the database value is NULL. Borrowed until the next call on the source.
 */
struct recon_raw_row {
	const char *val[RECON_COL__COUNT];
	size_t len[RECON_COL__COUNT];
	uint64_t line;	 /* files: 1-based line where the record starts; databases: 0 */
	const char *raw; /* files: the record's text when cheap to give (for rejects), or NULL */
	size_t raw_len;
	const char *reject; /* set by the reader when the record itself is malformed
			       (short row, bad encoding): the reason; the row is then a reject */
};

struct recon_source;

struct recon_source_ops {
	const char *kind; /* "csv", "sqlite", "postgres", "mysql" */
	/* Opens side for win. *out is freed with close(). */
	int (*open)(struct recon_source **out, const struct recon_side *side,
		    const struct recon_window *win, struct recon_err *err);
	/* RECON_ROW and *row borrowed until the next call, RECON_DONE, or < 0 */
	int (*next)(struct recon_source *src, const struct recon_raw_row **row,
		    struct recon_err *err);
	/*
	 * Optional (NULL for files, which are read whole): repositions the source
	 * on the rows whose key equals parts[0..nkey), with no time bound; the
	 * following next() calls return them, then RECON_DONE.
	 */
	int (*lookup)(struct recon_source *src, const char *const *parts, const size_t *lens,
		      struct recon_err *err);
	/*
	 * Optional: as lookup, for up to RECON_LOOKUP_BATCH keys of a one-column
	 * key at once (one query instead of n): the following next() calls
	 * return the rows of all of them, in no particular order.
	 */
	int (*lookup_many)(struct recon_source *src, size_t n, const char *const *keys,
			   const size_t *lens, struct recon_err *err);
	void (*close)(struct recon_source *src); /* NULL-safe */
};

struct recon_source {
	const struct recon_source_ops *ops;
	const char *name; /* for origins: the file path or the table; owned by the backend */
};

/* ---- backends: what a source is (STYLE 17b) ---- */

/*
 * Capabilities: what the core asks about a backend, never its kind.
 *   FILE           a statement file read whole: its path names a day ({date}), `run
 *                  --upstream` replaces it, a t1 run's statement is its day, and its raw
 *                  cells are the text keys are made of (a partition skips another's lines
 *                  before normalizing them)
 *   PATH           takes "path": a file, resolved against the job's folder
 *   TABLE          takes "table"; its column names are SQL identifiers
 *   DSN            takes "dsn_env", a server's connection string (and a local side's
 *                  writer may take its own, actions.writer_dsn_env)
 *   TIME_PUSHDOWN  asked for [read_start, read_end), a bound it may widen: the rows
 *                  beyond are dropped once normalized
 *   REREADABLE     opened again, it reads the same rows (a database queried anew); a
 *                  file is re-readable when estimate() finds it regular
 */
#define RECON_SOURCE_FILE	   (1u << 0)
#define RECON_SOURCE_PATH	   (1u << 1)
#define RECON_SOURCE_TABLE	   (1u << 2)
#define RECON_SOURCE_DSN	   (1u << 3)
#define RECON_SOURCE_TIME_PUSHDOWN (1u << 4)
#define RECON_SOURCE_REREADABLE	   (1u << 5)

struct recon_cfg;
struct json_t;

/* A job key only some backends take. */
struct recon_source_key {
	const char *name;
	const char *elsewhere; /* the error on a side of another kind; NULL: "applies to <backend>
				  sources only" */
};

/*
 * What a backend's preflight is asked and where it reports. Each line's code:
 * 0 passed, -1 a warning, else the exit code of the failure (69 connection,
 * 77 grant, 78 configuration).
 */
struct recon_probe {
	const char *env;	   /* the variable holding the DSN (set and non-empty) */
	bool writer;		   /* the writer's grants (SELECT, INSERT, sequences), else the
				      reader's (SELECT, and read-only) */
	const char *const *tables; /* writer: the merchant's tables besides s->table, NULL-ended */
	void (*say)(void *arg, int code, const char *fmt, va_list ap) RECON_PRINTF(3, 0);
	void *arg;
};

/* Reports one line of a preflight through p->say. */
void recon_probe_say(const struct recon_probe *p, int code, const char *fmt, ...)
    RECON_PRINTF(3, 4);

struct recon_source_backend {
	const char *name;      /* the job file's "kind": "csv", "sqlite", "postgres", "mysql" */
	unsigned caps;	       /* RECON_SOURCE_* */
	const char *path_what; /* RECON_SOURCE_PATH: "missing (the <path_what> file)" */
	const struct recon_source_key *keys; /* its own job keys, {NULL}-ended; NULL: none */
	/*
	 * Optional: reads its own keys of the side's object into s (s->csv, or
	 * s->backend_data it owns), before the keys every side takes (a profile it
	 * loads may supply those; the side's own override them). *profile: a JSON
	 * object pulled in besides the job file (the effective configuration
	 * records it), or untouched. 0 or RECON_ECONFIG through recon_cfg_err().
	 */
	int (*validate)(struct recon_cfg *L, struct json_t *obj, struct recon_side *s,
			struct json_t **profile);
	/* Optional: after the common keys, checks what needs the column mapping. */
	int (*check)(struct recon_cfg *L, struct json_t *obj, struct recon_side *s);
	/* Optional: frees what validate() made (NULL-safe on a zeroed side). */
	void (*release)(struct recon_side *s);
	const struct recon_source_ops *ops; /* NULL: this build lacks its library */
	/*
	 * Optional: the rows the side's input holds for win, estimated cheaply
	 * (0 when unknown or not a regular file), and its size in bytes.
	 */
	uint64_t (*estimate)(const struct recon_side *side, const struct recon_window *win,
			     uint64_t *bytes);
	/*
	 * Optional: the provenance of what src read, as hex SHA-256 into hex[65]:
	 * 0 once the whole input went through the reader, -1 before that.
	 */
	int (*digest)(const struct recon_source *src, char hex[65]);
	/*
	 * Optional (RECON_SOURCE_DSN): the preflight of recon validate: connects
	 * with the DSN in p->env and reports the grants on s->table (and, for the
	 * writer, on p->tables) through recon_probe_say(), one line a check.
	 * NULL: validate says this build lacks the driver.
	 */
	void (*probe)(const struct recon_job *job, const struct recon_side *s,
		      const struct recon_probe *p);
};

extern const struct recon_source_backend recon_source_csv;
extern const struct recon_source_backend recon_source_sqlite;
extern const struct recon_source_backend recon_source_postgres;
extern const struct recon_source_backend recon_source_mysql;

/*
 * The backend named `name` ("csv"), or NULL when there is none by that name.
 * One whose library this build lacks is found, with ops NULL.
 */
const struct recon_source_backend *recon_source_backend_find(const char *name);
/* The registry: every backend, NULL-terminated, in the order job errors list them. */
const struct recon_source_backend *const *recon_source_backends(void);
/*
 * Writes the names of the backends having every capability in caps (0: all)
 * into buf: "csv, sqlite, postgres or mysql" (last_sep " or ", or " and "); a
 * name that does not fit is left out with those after it.
 */
void recon_source_backend_names(unsigned caps, const char *last_sep, char *buf, size_t size);
/* True when side's backend has every capability in caps. */
bool recon_source_has(const struct recon_side *side, unsigned caps);

struct recon_buf;
/*
 * For database readers: appends `SELECT q c1 q, ... FROM q table q` for the
 * side's mapped columns (identifiers validated by the loader, quoted with q:
 * '"' or '`') and fills colidx[role] with each role's result column, -1 when
 * unmapped. Returns the number of columns selected.
 */
unsigned recon_source_sql_select(const struct recon_side *side, char q, struct recon_buf *sql,
				 int colidx[RECON_COL__COUNT]);

/*
 * Appends key part `part` as an SQL expression: its quoted column, or for a
 * {"first_of": [...]} key COALESCE(NULLIF(TRIM(CAST(c AS TEXT)), ''), ...)
 * (the first non-empty column, as the compare reads it), so that selects
 * and lookups by key agree.
 */
void recon_source_sql_key(const struct recon_side *side, char q, unsigned part,
			  struct recon_buf *sql);

/*
 * Keys an integer key column can hold; database readers turn other keys into
 * "no rows" instead of binding them. recon_source_int_text: decimal integer
 * text (optional sign, digits), any length (MySQL compares a non-number with
 * an integer column as 0 and a number of any size exactly). recon_source_int_in:
 * such text whose value lies in [lo, hi] (lo <= 0 <= hi), leading zeros
 * allowed (PostgreSQL fails the statement, and with it the snapshot's
 * transaction, on a value beyond the column's type).
 */
bool recon_source_int_text(const char *p, size_t n);
bool recon_source_int_in(const char *p, size_t n, int64_t lo, int64_t hi);

/* Thin wrappers. */
RECON_MUSTCHECK int recon_source_open(struct recon_source **out, const struct recon_side *side,
				      const struct recon_window *win, struct recon_err *err);
RECON_MUSTCHECK int recon_source_next(struct recon_source *src, const struct recon_raw_row **row,
				      struct recon_err *err);
/* RECON_ENOTFOUND (no error recorded) when the backend has no lookup. */
RECON_MUSTCHECK int recon_source_lookup(struct recon_source *src, const char *const *parts,
					const size_t *lens, struct recon_err *err);
/*
 * Keys looked up by one query (recon_source_lookup_many). A round trip per key
 * costs ~0.1 ms: a window with 50,000 keys to look up spent 5 s on them.
 */
#define RECON_LOOKUP_BATCH 512
/* RECON_ENOTFOUND (no error recorded) when the kind cannot, or the key has several columns. */
RECON_MUSTCHECK int recon_source_lookup_many(struct recon_source *src,
					     const struct recon_side *side, size_t n,
					     const char *const *keys, const size_t *lens,
					     struct recon_err *err);
void recon_source_close(struct recon_source *src);

/* The backend's estimate() for side (0, *bytes 0 when it has none). */
uint64_t recon_source_estimate(const struct recon_side *side, const struct recon_window *win,
			       uint64_t *bytes);
/* The backend's digest() of src (NULL-safe): -1 when it has none or src is not done. */
int recon_source_digest(const struct recon_source *src, char hex[65]);

/* ---- csv source: text kept for control-total checks (src/source_csv.c) ---- */

/* The csv reader's ops, for its descriptor (src/source_csv_job.c). */
extern const struct recon_source_ops recon_source_csv_ops;

/*
 * The trailer of a csv source: the first line starting with one of the side's
 * stop_prefixes and every line after it, as UTF-8 text, each line ending in
 * '\n' (CR dropped; at most 1 MiB). *first_line (may be NULL) is the stop
 * line's 1-based number. Complete once next() returned RECON_DONE. Returns
 * NULL (*len 0) when no stop line was seen or src is not a csv source.
 * Borrowed until recon_source_close().
 */
const char *recon_source_csv_trailer(const struct recon_source *src, size_t *len,
				     uint64_t *first_line);

/*
 * The footer of a csv source: the comment lines (side->comment_prefixes) met
 * after the header or first record, in the same form as the trailer; comment
 * lines before it (Alipay's '#' header block) are not kept. NULL (*len 0) when
 * there were none. Borrowed until recon_source_close().
 */
const char *recon_source_csv_footer(const struct recon_source *src, size_t *len);

/*
 * The SHA-256 of a csv source's file, as read (a .zip: the archive's bytes),
 * into hex[65]. Returns 0 once the whole file went through the reader (after
 * next() returned RECON_DONE or a totals error), -1 before that or when src
 * is not a csv source (NULL-safe).
 */
struct recon_sha_lane;
int recon_source_csv_sha256(const struct recon_source *src, char hex[65]);

/*
 * The lane that hashes a plain csv file as it is read (recon_sha256.h), for
 * another thread to help with; NULL for a .zip or .gz, or another source.
 * Borrowed until recon_source_close().
 */
struct recon_sha_lane *recon_source_csv_lane(const struct recon_source *src);

#endif
