/*
 * recon_totals: a statement's control totals (DESIGN "Entries fold into
 * orders") checked against the records actually read.
 *
 * A statement that states its own row count and sums (the WeChat Pay summary
 * trailer, the Alipay "#交易合计" footer) is checked before anything is
 * compared: a truncated or edited file fails the run (RECON_EINPUT, exit 65)
 * instead of turning into false differences.
 *
 * The accumulator sees every record of the file, rejects included: counts
 * are of records, sums are of the detail columns the rule names, taken by
 * header name (so any layout variant that has the column works). Sums are
 * exact: every cell is parsed as decimal text with at most 6 decimals into
 * int64 millionths (WeChat's fee column has 5), never through double. A cell
 * that does not parse, or a malformed record, makes the totals unverifiable:
 * that is an error naming the record's line, not a silent pass.
 */
#ifndef RECON_TOTALS_H
#define RECON_TOTALS_H

#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"
#include "recon_job.h"

/* One cell of a record, as split (guard characters not yet stripped). */
struct recon_totals_cell {
	const char *p;
	size_t len;
};

struct recon_totals;

/*
 * An accumulator for side->totals (RECON_TOTALS_NONE: returns NULL, nothing
 * to check). The side is borrowed and must outlive it. Caller frees with
 * recon_totals_free().
 */
struct recon_totals *recon_totals_new(const struct recon_side *side);
void recon_totals_free(struct recon_totals *t);

/*
 * Binds the summed columns to the header's cells (n of them). `entry_col` is
 * the entry-type column's index, or SIZE_MAX. A summed column absent from the
 * header is only an error if the statement states its total.
 */
void recon_totals_bind(struct recon_totals *t, const struct recon_totals_cell *header, size_t n,
		       size_t entry_col);

/*
 * Adds one record starting at 1-based `line`. `malformed`: the reader's reason
 * when the record itself is broken (its cells cannot be trusted), else NULL.
 */
void recon_totals_add(struct recon_totals *t, const struct recon_totals_cell *cells, size_t n,
		      uint64_t line, const char *malformed);

/*
 * Checks the stated totals. `text` holds the trailer or footer lines (each
 * ending in '\n'), `lines[i]` the 1-based line number of its i-th line (nlines
 * of them); text NULL when the file had none. `path` names the file in
 * messages. `last_line` is the file's last line (for "truncated" messages).
 * Returns 0, or RECON_EINPUT with "path:line" and the disagreeing total.
 */
RECON_MUSTCHECK int recon_totals_check(const struct recon_totals *t, const char *text, size_t len,
				       const uint64_t *lines, size_t nlines, const char *path,
				       uint64_t last_line, struct recon_err *err);

/*
 * Parses decimal text (blanks and the side's guard characters around it
 * stripped by the caller) into millionths: "0.00600" -> 6000, "-0.04" ->
 * -40000. Returns 0 or RECON_EVALUE.
 */
RECON_MUSTCHECK int recon_totals_parse_amount(const char *s, size_t len, int64_t *out);

#endif
