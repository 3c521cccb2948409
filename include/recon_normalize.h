/*
 * recon_normalize: raw row -> canonical row, or a reject with its reason.
 *
 * The canonical row (DESIGN "Canonical row"): key trimmed of blanks and guard
 * characters (composite keys joined with RECON_KEY_SEP), amount in exact
 * minor units of the row's currency, canonical status, UTC time, entry kind,
 * and the entry identity used to find duplicate statement lines. Strings of a
 * normalized row live in the arena passed in: the raw row can be reused.
 */
#ifndef RECON_NORMALIZE_H
#define RECON_NORMALIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_source.h"

#define RECON_KEY_SEP '\x1f' /* joins composite key parts; shown as '|' */

/* Bits of recon_row.flags. */
#define RECON_ROW_HAS_STATUS 0x1u /* status came from a status column (plain rows) */
#define RECON_ROW_LOOKED_UP  0x2u /* found by a key lookup outside the read window */
#define RECON_ROW_TIMED	     0x4u /* time parsed (also set on a row rejected later) */

struct recon_row {
	const char *key; /* arena, NUL-terminated */
	uint32_t key_len;
	uint8_t status; /* enum recon_status (meaningful with RECON_ROW_HAS_STATUS) */
	uint8_t entry;	/* enum recon_entry */
	uint8_t flags;
	char currency[4];
	int64_t amount;	      /* minor units; refunds positive */
	int64_t time;	      /* UTC ms */
	const char *entry_id; /* txn id / refund id (arena) or NULL */
	uint32_t entry_id_len;
	uint64_t line; /* origin line in files, 0 for databases */
};

/* Outcome of recon_normalize_row() besides errors. */
#define RECON_NORM_ROW	   1 /* *out is a canonical row */
#define RECON_NORM_SKIPPED 0 /* a keyless or ignored entry (fee, payout): counted, not compared */

/*
 * Normalizes raw for `side`. Returns RECON_NORM_ROW, RECON_NORM_SKIPPED, or
 * RECON_EVALUE with err->where = the role ("amount") and err->msg the reason:
 * the caller records it as a reject with the row's origin. Strings go to arena.
 */
RECON_MUSTCHECK int recon_normalize_row(const struct recon_side *side,
					const struct recon_raw_row *raw, struct recon_arena *arena,
					struct recon_row *out, struct recon_err *err);

/*
 * Splits a joined key into its nkey parts: copies key[0..len) into scratch
 * (len + 1 bytes), ends each part with a NUL there, and points parts[i] /
 * lens[i] at them (missing trailing parts are empty).
 */
void recon_key_split(const char *key, size_t len, unsigned nkey, char *scratch, const char **parts,
		     size_t *lens);

/* Writes the display form of a key ('|' between parts) into buf; returns buf. */
char *recon_key_display(const char *key, size_t len, char *buf, size_t size);

#endif
