/*
 * recon_source: the reader interface every source kind implements, and the
 * raw row they produce.
 *
 * A source is opened for one side of one window, yields raw rows with one
 * value per mapped column role, and is closed. Readers stream: a row is
 * borrowed until the next call, so memory does not grow with the input.
 * Adding a kind means a new ops table and an entry in recon_source_ops_for();
 * the compare engine never changes.
 */
#ifndef RECON_SOURCE_H
#define RECON_SOURCE_H

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

extern const struct recon_source_ops recon_source_csv;
extern const struct recon_source_ops recon_source_sqlite;
extern const struct recon_source_ops recon_source_postgres;
extern const struct recon_source_ops recon_source_mysql;

/* The ops for a kind, or NULL when this build lacks it. */
const struct recon_source_ops *recon_source_ops_for(enum recon_kind kind);

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
/* RECON_ENOTFOUND (no error recorded) when the kind has no lookup. */
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

/* ---- csv source: text kept for control-total checks (src/source_csv.c) ---- */

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
int recon_source_csv_sha256(const struct recon_source *src, char hex[65]);

#endif
