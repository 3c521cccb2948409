/*
 * recon_report: the difference output. One JSON object per difference (the
 * DESIGN `recon diff --format jsonl` contract), rendered once when a run
 * records its differences and stored verbatim, so every later `recon diff`
 * prints byte-identical lines; the table and CSV layouts are derived from
 * those objects.
 */
#ifndef RECON_REPORT_H
#define RECON_REPORT_H

#include <stdio.h>

#include "recon_buf.h"
#include "recon_compare.h"
#include "recon_err.h"
#include "recon_job.h"

enum recon_report_format {
	RECON_REPORT_TABLE,
	RECON_REPORT_JSONL,
	RECON_REPORT_CSV,
};

/* "table", "jsonl", "csv" -> format; -1 when unknown. */
int recon_report_format_from_name(const char *name);

/*
 * The JSON line (no newline) for d: {"key","class","upstream":{...}|null,"local":{...}|null}.
 * Origins are "<up_name>:<line>" for file rows and "<name>:<key>" for database
 * rows. Caller frees with free().
 */
char *recon_report_diff_json(const struct recon_job *job, const struct recon_diff *d,
			     const char *up_name, const char *local_name);

/* The same line, in b (reset first): a buffer reused for many lines. */
void recon_report_diff_json_buf(struct recon_buf *b, const struct recon_job *job,
				const struct recon_diff *d, const char *up_name,
				const char *local_name);

/*
 * Prints stored JSON lines in `fmt` to out (cmd_*.c pass stdout). A line
 * that is not a valid difference object is RECON_EIO.
 */
RECON_MUSTCHECK int recon_report_print(FILE *out, enum recon_report_format fmt,
				       const struct recon_job *job, char *const *json, size_t n,
				       struct recon_err *err);

/*
 * Writes s as one RFC 4180 CSV field (quoted when needed). A field starting
 * with '=', '+', '-', '@', a tab or a CR gets a leading apostrophe inside its
 * quotes, so a spreadsheet shows it as text instead of running a formula.
 */
void recon_report_csv_field(FILE *out, const char *s);

/*
 * Length of the UTF-8 sequence at p (1-4; n bytes left), 0 when it is not one
 * (overlong forms, surrogates, beyond U+10FFFF, cut short).
 */
size_t recon_report_utf8_len(const unsigned char *p, size_t n);

/*
 * Writes s, a name from input, for a terminal or a log: control characters
 * (C0, DEL, C1) as \xNN and '\' as "\\", so no escape sequence reaches the
 * terminal and no line break fakes a log line.
 */
void recon_report_text_field(FILE *out, const char *s);

#endif
