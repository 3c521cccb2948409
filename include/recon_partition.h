/*
 * recon_partition: key-hash partitions, so that one job's key space splits
 * into N pieces that run as independent processes (DESIGN "Scale").
 *
 * The hash is documented and stable: the first four bytes of the MD5 digest
 * of the normalized key (the bytes the compare uses: parts trimmed of blanks
 * and guard characters, joined with RECON_KEY_SEP), read as a big-endian
 * unsigned 32-bit number; partition = hash % N. PostgreSQL and MySQL/MariaDB
 * compute the same number in SQL from md5() of the key text, so a database
 * source reads only its partition's rows; SQLite and CSV rows are filtered
 * in C after normalizing.
 *
 * Which partition owns a row (every row read goes to exactly one place):
 * - a row whose key normalizes: the key's partition;
 * - a rejected row whose key does not normalize (a control character): the
 *   partition of its key text as read (parts joined with RECON_KEY_SEP);
 * - a rejected row without key text (an empty or NULL key): every partition
 *   (fail closed: it could be any order);
 * - a keyless statement line (fee, payout): partition 0 counts it as skipped.
 * Rows of other partitions are neither compared nor rejected: a run counts
 * them apart (rows "other_partition"), not among the rows read.
 *
 * Invariants: count 0 means "not partitioned" (every key); otherwise
 * 1 <= count <= RECON_PARTITION_MAX and index < count. Each partition has its
 * own state store, lock, ledger, watermark and heartbeat file: the job's
 * paths with ".pI-of-N" before their extension (recon_partition_path).
 */
#ifndef RECON_PARTITION_H
#define RECON_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

#define RECON_PARTITION_MAX 1024

struct recon_partition {
	uint32_t index; /* 0 .. count - 1 */
	uint32_t count; /* 0: not partitioned */
};

/* The stable hash of a normalized key (see above). */
uint32_t recon_partition_hash(const char *key, size_t len);

/* True when p is unpartitioned or key (normalized) hashes to p->index. */
bool recon_partition_owns(const struct recon_partition *p, const char *key, size_t len);

/*
 * Parses "I/N" (or "I" when job_count, the job's "partition.count", gives N)
 * into *out. RECON_EUSAGE naming the option when it is malformed, out of
 * range, or N disagrees with job_count (0: the job names none).
 */
RECON_MUSTCHECK int recon_partition_parse(const char *text, int64_t job_count,
					  struct recon_partition *out, struct recon_err *err);

/*
 * The path of p's own copy of a job file path: ".pI-of-N" inserted before the
 * last extension of the file name ("state/recon.db" -> "state/recon.p2-of-4.db",
 * "recon.prom" -> "recon.p2-of-4.prom": node_exporter reads *.prom only), or
 * appended when it has none. Unpartitioned: a copy of path. Caller frees.
 */
char *recon_partition_path(const char *path, const struct recon_partition *p);

/*
 * Prometheus labels of p for the heartbeat, `partition="I",partitions="N"`,
 * into buf (at least 48 bytes); "" when unpartitioned. Returns buf.
 */
const char *recon_partition_labels(const struct recon_partition *p, char *buf, size_t size);

struct recon_job;
/*
 * Makes job p's: both sides read p's rows only, and the state store and
 * heartbeat paths become p's (recon_partition_path of the job's). Call once
 * per loaded job (a second call would suffix the paths again).
 */
void recon_partition_apply(struct recon_job *job, const struct recon_partition *p);

/*
 * For the commands that read one partition's store (diff, status, tickets,
 * rejects, check): applies --partition `text` (may be NULL) to job.
 * RECON_EUSAGE when the job is partitioned and text is NULL, or text is bad.
 */
RECON_MUSTCHECK int recon_partition_select(struct recon_job *job, const char *text,
					   struct recon_err *err);

struct recon_side;
struct recon_raw_row;
struct recon_row;
/*
 * Whether a row just read for side belongs to the side's partition; rc is
 * recon_normalize_row()'s result for it, row its output (see the rules above).
 */
bool recon_partition_row_ours(const struct recon_side *side, const struct recon_raw_row *raw,
			      int rc, const struct recon_row *row);

/*
 * Before normalizing a statement row (files only; databases filter in SQL):
 * true when its key, trimmed as recon_normalize_row() trims it, is a valid
 * key of another partition and the row is no keyless line, so normalizing it
 * would only find it another partition's. False when unsure (a malformed
 * record, an unreadable key or entry type): the row is then normalized and
 * recon_partition_row_ours() decides. A full parse per partition costs more
 * than the compare it feeds; this skips the money, time and status parsing.
 */
bool recon_partition_row_skip(const struct recon_side *side, const struct recon_raw_row *raw);

enum recon_partition_dialect {
	RECON_PARTITION_SQL_POSTGRES,
	RECON_PARTITION_SQL_MYSQL,
};

struct recon_buf;
/*
 * Appends ` AND (...)`, the side's partition as a predicate, to a scan's
 * WHERE clause; nothing when unpartitioned. It keeps a superset of the
 * partition's rows (keys with surrounding blanks, empty or NULL keys pass:
 * their normalized form is decided in C), which the reader filters again.
 */
void recon_partition_sql(const struct recon_side *side, enum recon_partition_dialect dialect,
			 struct recon_buf *sql);

#endif
