/*
 * recon_dayreport: the daily reconciliation report (`recon report`), read-only
 * over the state store: the day's verdict, rows read and matched, control
 * totals, money at stake per class and currency, open items by age (the oldest
 * named), per-day series over a range (differences found, money at stake, open
 * items, runs), the open items table sorted by money at stake, and the day's
 * rejects. Rendered as one self-contained HTML page (inline CSS and SVG, no
 * script, nothing fetched), as Markdown, or as finance's CSV (one row per open
 * item: decimal amounts, local times with their offset, one column per field).
 *
 * Invariants: money is summed as int64 minor units per currency and printed
 * with the currency's decimals (no floating point anywhere, charts included);
 * a sum beyond int64 is shown as such, never wrapped. Days are business days in
 * the job's zone; an item is open at the end of day d when the run that opened
 * it reconciled a day <= d and no run of a day <= d ended it.
 */
#ifndef RECON_DAYREPORT_H
#define RECON_DAYREPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "recon_err.h"
#include "recon_job.h"

struct recon_state;
struct recon_dayreport;

enum recon_dayreport_format {
	RECON_DAYREPORT_HTML,
	RECON_DAYREPORT_MD,
	RECON_DAYREPORT_CSV,
};

/* "html", "md", "csv" -> format; -1 when unknown. */
int recon_dayreport_format_from_name(const char *name);

/* The longest range a report covers, in days. */
#define RECON_DAYREPORT_MAX_DAYS 366
/* Open items listed one by one in HTML and Markdown; the rest are summarised. */
#define RECON_DAYREPORT_TOP 1000

/*
 * Reads what the report shows from st (opened read-only by the caller) for
 * the job's `mode` ("t1" or "hot") over business days [from_day, to_day]
 * (day numbers, see recon_time.h; to_day is the report's day). When
 * `*to_day_io` is INT64_MIN the day is the latest one a successful run of the
 * mode reconciled (today in the job's zone when none did) and from_day, when
 * INT64_MIN too, is 29 days before it; both are written back. `now` stamps the
 * page. Caller frees *out with recon_dayreport_free(). RECON_EIO when the
 * store cannot be read, RECON_EUSAGE when the range is empty or longer than
 * RECON_DAYREPORT_MAX_DAYS.
 */
RECON_MUSTCHECK int recon_dayreport_load(struct recon_dayreport **out, struct recon_state *st,
					 const struct recon_job *job, const char *mode,
					 int64_t *from_day_io, int64_t *to_day_io, int64_t now,
					 struct recon_err *err);
void recon_dayreport_free(struct recon_dayreport *r); /* NULL-safe */

/*
 * Writes the report to out (cmd_report.c passes stdout or a temporary file).
 * `bom`: a UTF-8 byte order mark first (CSV for spreadsheets). RECON_EIO when
 * a write fails.
 */
RECON_MUSTCHECK int recon_dayreport_write(FILE *out, const struct recon_dayreport *r,
					  enum recon_dayreport_format fmt, bool bom,
					  struct recon_err *err);

struct json_t;

/*
 * Money in the summaries: adds to obj the money at stake per class and
 * currency as decimal strings, {"amount_mismatch": {"CNY": "10.50"}, ...}, and
 * the differences' total per currency (awaiting and in-flight items are listed
 * by class but not totalled): for run_id > 0 the items that run evaluated last,
 * as "at_stake" and "at_stake_total"; for run_id 0 every open item of the job,
 * as "open_at_stake" and "open_at_stake_total". A store that cannot be read
 * gives empty objects (and a warning).
 */
void recon_dayreport_stake_json(struct recon_state *st, const char *job, int64_t run_id,
				struct json_t *obj);
/* The same as one line, "amount_mismatch 10.50 CNY, extra 8.00 CNY; total 18.50 CNY" ("" when
 * none). */
void recon_dayreport_stake_line(struct recon_state *st, const char *job, int64_t run_id, char *buf,
				size_t size);

/* What a person does next about an open item of class `klass` ("" when unknown). */
const char *recon_dayreport_next_step(const char *klass);

#endif
