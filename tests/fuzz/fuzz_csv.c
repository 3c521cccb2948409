/*
 * fuzz_csv: the CSV statement reader (src/source_csv.c) under every job in
 * a small list, followed by normalization of each row it yields.
 *
 * The input is a statement file, as downloaded: the harness writes it to a
 * scratch file and reads it once per job. The jobs are:
 *   - the entries of `jobs[]` below: generic inline CSV configurations (plain
 *     header CSV; positional GB18030 with comments, trailer, guards and
 *     thousands; TSV in minor units; a WeChat-like layout with trailer totals;
 *     an Alipay-like GBK layout with footer totals and zip member choice) and
 *     one job per profile (wechatpay-trade-bill, generic-csv, alipay-trade-bill,
 *     stripe-itemized);
 *   - one bare job ({"format": NAME}) for every other rules/formats/NAME.json,
 *     so a profile added later is fuzzed without editing this file.
 * A profile job whose profile does not exist yet is skipped with a note on
 * stderr; so is a job that does not load (the note gives the loader's error),
 * except that a profile job whose extra keys are refused is retried bare.
 *
 * Parameters (environment):
 *   RECON_FUZZ_CSV_JOB=name[,name...]  run only these jobs (default: all that load)
 *   RECON_FORMATS_DIR                  profile folder (default: the source tree's
 *                                      rules/formats, compiled in)
 *   RECON_FUZZ_VERBOSE=1               print, per job, the rows read, rejected, normalized
 *                                      and skipped, and the reader's error (to check seeds:
 *                                      `RECON_FUZZ_VERBOSE=1 fuzz_csv corpus/csv/NAME`)
 * The jobs that load are listed on stderr at start-up.
 *
 * Checked beyond the sanitizers: the reader ends (RECON_DONE) after at most
 * one row per input line, reports only RECON_DONE/RECON_ROW or a set error,
 * never repeats or goes back in line numbers, keeps raw text under its cap,
 * and normalization only ever accepts, skips or rejects with RECON_EVALUE;
 * and each job reads the input twice, with the AVX-512 line reader and
 * splitter (where the CPU has them) and recon_dbcs's conversion of GBK and
 * GB18030, and with RECON_NO_AVX512=1 and RECON_NO_DBCS=1 (SSE2, iconv for
 * every line): the rows, in order, and the outcome are the same.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_source.h"
#include "recon_time.h"

#ifndef RECON_FUZZ_FORMATS_DIR
#define RECON_FUZZ_FORMATS_DIR "rules/formats"
#endif

#define MAX_JOBS 32

struct fuzz_job {
	const char *name;     /* what RECON_FUZZ_CSV_JOB selects */
	const char *profile;  /* rules/formats/<profile>.json, or NULL (inline configuration) */
	const char *upstream; /* members of the upstream side besides kind and path */
};

/* The local side is never read; it only has to make the job valid. */
static const char job_template[] =
    "{\n"
    "  \"job\": \"fuzz_%s\",\n"
    "  \"timezone\": \"Asia/Shanghai\",\n"
    "  \"currency\": \"CNY\",\n"
    "  \"upstream\": { \"kind\": \"csv\", \"path\": \"statement.csv\"%s%s },\n"
    "  \"local\": { \"kind\": \"sqlite\", \"path\": \"flow.db\", \"table\": \"payment_flow\",\n"
    "    \"columns\": { \"key\": \"out_trade_no\", \"amount_minor\": \"amount_cents\",\n"
    "                 \"status\": \"status\", \"time\": \"created_at\" } },\n"
    "  \"status_map\": { \"local\": { \"PAID\": \"success\" } }\n"
    "}\n";

static const struct fuzz_job jobs[] = {
    /* DESIGN's plain CSV: header, RFC 4180 quotes, entry types */
    {"generic", NULL,
     "\"columns\": { \"key\": \"out_trade_no\", \"txn_id\": \"transaction_id\","
     " \"refund_id\": \"refund_id\", \"entry_type\": \"entry_type\", \"amount\": \"amount\","
     " \"currency\": \"currency\", \"time\": \"trade_time\" },"
     " \"entry_types\": { \"PAYMENT\": \"payment\", \"REFUND\": \"refund\","
     " \"REVOKED\": \"revoke\", \"FEE\": \"keyless\", \"INFO\": \"ignore\" }"},
    /* every layout knob at once: no header, positions, GB18030, ';', no quoting,
       guard characters, '#' comments (footer), a trailer, skipped lines, status map,
       a composite key, thousands separators */
    {"generic-gbk-positional", NULL,
     "\"header\": false, \"delimiter\": \";\", \"quote\": \"\", \"encoding\": \"GB18030\","
     " \"skip_lines\": 1, \"strip\": \"`\\t\", \"comment_prefixes\": [\"#\", \"//\"],"
     " \"stop_prefixes\": [\"TOTAL\", \"\xE6\x80\xBB\"], \"thousands\": true,"
     " \"timezone\": \"America/New_York\", \"currency\": \"usd\","
     " \"columns\": { \"key\": [\"1\", \"2\"], \"amount\": \"3\", \"status\": \"4\","
     " \"time\": \"5\", \"currency\": \"6\", \"txn_id\": \"7\" },"
     " \"status_map\": { \"SUCCESS\": \"success\", \"REFUND\": \"refunded\","
     " \"CLOSED\": \"closed\", \"NOTPAY\": \"pending\" }"},
    /* tab-separated, quoted with ', integer minor units */
    {"generic-tsv-minor", NULL,
     "\"delimiter\": \"\\t\", \"quote\": \"'\", \"currency\": \"JPY\","
     " \"columns\": { \"key\": \"id\", \"amount_minor\": \"cents\", \"status\": \"state\","
     " \"time\": \"at\" },"
     " \"status_map\": { \"ok\": \"success\", \"refunded\": \"refunded\" }"},
    /* WeChat-like, inline: guards, ",`" splitting, header variants, trailer totals */
    {"generic-trailer-totals", NULL,
     "\"quote\": \"\", \"strip\": \"`\", \"delimiter_guard\": \"`\","
     " \"stop_prefixes\": [\"\xE6\x80\xBB\xE4\xBA\xA4\xE6\x98\x93\xE5\x8D\x95\xE6\x95\xB0\"],"
     " \"columns\": { \"key\": \"out_trade_no\", \"amount\": \"amount\","
     " \"refund_amount\": \"refund\", \"time\": \"trade_time\", \"txn_id\": \"txn\","
     " \"refund_id\": \"refund_no\", \"entry_type\": \"state\" },"
     " \"alt_columns\": { \"amount\": [\"total\", \"order_amount\"] },"
     " \"entry_types\": { \"SUCCESS\": \"payment\", \"REFUND\": \"refund\","
     " \"REVOKED\": \"revoke\" },"
     " \"totals\": { \"in\": \"trailer\", \"required\": true, \"groups\": [ {"
     " \"count\": \"\xE6\x80\xBB\xE4\xBA\xA4\xE6\x98\x93\xE5\x8D\x95\xE6\x95\xB0\","
     " \"sums\": { \"amount_total\": \"amount\", \"refund_total\": \"refund\" } } ] }"},
    /* Alipay-like, inline: GBK, '#' header and footer, trailing TABs, zip member choice,
       footer totals per entry type */
    {"generic-footer-totals-zip", NULL,
     "\"encoding\": \"GBK\", \"quote\": \"\", \"strip\": \"\\t\", \"comment_prefixes\": [\"#\"],"
     " \"zip_entry\": \"detail\", \"zip_exclude\": \"summary\", \"reject_empty\": true,"
     " \"columns\": { \"key\": \"out_trade_no\", \"amount\": \"amount\","
     " \"time\": \"done_time\", \"txn_id\": \"txn\", \"refund_id\": \"batch_no\","
     " \"entry_type\": \"type\" },"
     " \"entry_types\": { \"PAY\": \"payment\", \"REFUND\": \"refund\", \"FEE\": \"keyless\" },"
     " \"totals\": { \"in\": \"footer\", \"groups\": ["
     " { \"count\": \"#PAY:\", \"entry_type\": \"PAY\", \"sums\": { \"net\": \"amount\" } },"
     " { \"count\": \"#REFUND:\", \"entry_type\": \"REFUND\","
     " \"sums\": { \"net\": \"amount\" } } ] }"},
    {"wechatpay-trade-bill", "wechatpay-trade-bill", ""},
    /* the profile for plain CSVs: the job maps the columns */
    {"generic-csv", "generic-csv",
     "\"columns\": { \"key\": \"out_trade_no\", \"txn_id\": \"transaction_id\","
     " \"refund_id\": \"refund_id\", \"entry_type\": \"entry_type\", \"amount\": \"amount\","
     " \"currency\": \"currency\", \"time\": \"trade_time\" },"
     " \"entry_types\": { \"PAYMENT\": \"payment\", \"REFUND\": \"refund\","
     " \"REVOKED\": \"revoke\", \"FEE\": \"keyless\" }"},
    {"alipay-trade-bill", "alipay-trade-bill", ""},
    /* the job names the metadata column that holds the merchant's order number */
    {"stripe-itemized", "stripe-itemized",
     "\"columns\": { \"key\": \"payment_metadata[order_id]\" }"},
};

struct loaded {
	char name[80];
	struct recon_job *job;
};

static struct loaded loaded[MAX_JOBS];
static size_t nloaded;
static char *input_path;

static bool selected(const char *name)
{
	const char *sel = getenv("RECON_FUZZ_CSV_JOB");
	size_t n = strlen(name);

	if (!sel || !sel[0])
		return true;
	for (const char *p = sel; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && !memcmp(p, name, n))
			return true;
		p += k;
		p += *p == ',';
	}
	return false;
}

static bool profile_exists(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	f = fopen(path, "r");
	if (f)
		fclose(f);
	return f != NULL;
}

/* Writes the job file for one entry and loads it; false (with a note) when it does not load. */
static bool add_job(const char *name, const char *profile, const char *upstream)
{
	char text[8192], file[160], extra[1024];
	struct recon_err err;
	struct recon_job *job = NULL;
	char *path;
	bool ok;

	snprintf(extra, sizeof(extra), "%s%s%s%s", profile ? ", \"format\": \"" : "",
		 profile ? profile : "", profile ? "\"" : "", upstream[0] ? ", " : "");
	snprintf(text, sizeof(text), job_template, name, extra, upstream);
	snprintf(file, sizeof(file), "job-%s.json", name);
	path = fuzz_scratch_path(file);
	fuzz_write_file(path, text, strlen(text));
	recon_err_init(&err);
	ok = recon_job_load(&job, path, &err) == 0;
	if (!ok) {
		char msg[512];

		fprintf(stderr, "fuzz_csv: job '%s' does not load: %s\n", name,
			recon_err_str(&err, msg, sizeof(msg)));
	} else if (nloaded < MAX_JOBS) {
		snprintf(loaded[nloaded].name, sizeof(loaded[nloaded].name), "%s", name);
		loaded[nloaded++].job = job;
	} else {
		recon_job_free(job);
	}
	free(path);
	return ok;
}

static bool listed(const char *profile)
{
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		if (jobs[i].profile && !strcmp(jobs[i].profile, profile))
			return true;
	return false;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Profiles in dir not named in jobs[]: one bare job each, in name order. */
static void add_other_profiles(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *names[MAX_JOBS];
	size_t n = 0;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL && n < MAX_JOBS) {
		size_t len = strlen(de->d_name);

		if (len <= 5 || de->d_name[0] == '.' || strcmp(de->d_name + len - 5, ".json"))
			continue;
		names[n] = fuzz_strndup((const uint8_t *)de->d_name, len - 5);
		if (listed(names[n]))
			free(names[n]);
		else
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (selected(names[i]))
			(void)add_job(names[i], names[i], "");
		free(names[i]);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("RECON_FORMATS_DIR");
	const char *sel = getenv("RECON_FUZZ_CSV_JOB");

	(void)argc;
	(void)argv;
	if (!dir || !dir[0]) {
		dir = RECON_FUZZ_FORMATS_DIR;
		setenv("RECON_FORMATS_DIR", dir, 1);
	}
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		const struct fuzz_job *j = &jobs[i];

		if (!selected(j->name))
			continue;
		if (j->profile && !profile_exists(dir, j->profile)) {
			fprintf(stderr, "fuzz_csv: job '%s' skipped: no profile %s/%s.json yet\n",
				j->name, dir, j->profile);
			continue;
		}
		/* a profile may want other job keys than guessed here: then fuzz it bare */
		if (!add_job(j->name, j->profile, j->upstream) && j->profile && j->upstream[0] &&
		    add_job(j->name, j->profile, ""))
			fprintf(stderr, "fuzz_csv: job '%s' runs without its job keys\n", j->name);
	}
	add_other_profiles(dir);
	if (!nloaded) {
		fprintf(stderr, "fuzz_csv: no job to run (RECON_FUZZ_CSV_JOB='%s')\n",
			sel ? sel : "");
		abort();
	}
	fprintf(stderr, "fuzz_csv: %zu jobs:", nloaded);
	for (size_t i = 0; i < nloaded; i++)
		fprintf(stderr, " %s", loaded[i].name);
	fprintf(stderr, "\n");
	input_path = fuzz_scratch_path("statement.csv");
	return 0;
}

/* Reads every byte of p[0..n), so ASan sees a stale or short pointer. */
static void touch(const char *p, size_t n)
{
	volatile unsigned char sink = 0;

	for (size_t i = 0; i < n; i++)
		sink ^= (unsigned char)p[i];
	(void)sink;
}

static void check(bool ok, const char *job, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_csv: job '%s': %s\n", job, what);
	abort();
}

/* FNV-1a over n bytes at p into *h: what a reading yields, to compare two readings. */
static void mix(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ULL;
}

/* A row as the reader gave it, into *h. */
static void mix_row(uint64_t *h, const struct recon_raw_row *row)
{
	mix(h, &row->line, sizeof(row->line));
	if (row->reject)
		mix(h, row->reject, strlen(row->reject) + 1);
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		const unsigned char present = row->val[c] != NULL;
		mix(h, &present, 1);
		if (present) {
			mix(h, &row->len[c], sizeof(row->len[c]));
			mix(h, row->val[c], row->len[c]);
		}
	}
	mix(h, &row->raw_len, sizeof(row->raw_len));
	if (row->raw)
		mix(h, row->raw, row->raw_len);
}

/*
 * Reads the statement with one job; every row is normalized. Returns a digest
 * of the rows, their order and the reading's outcome.
 */
static uint64_t run_job(const struct loaded *l, size_t nlines)
{
	uint64_t digest = 0xcbf29ce484222325ULL;
	const struct recon_side *side = &l->job->upstream;
	struct recon_window win = {0};
	struct recon_source *src = NULL;
	const struct recon_raw_row *row;
	struct recon_arena arena;
	struct recon_err err;
	uint64_t last_line = 0;
	size_t nrows = 0, nreject = 0, nnorm = 0, nskip = 0, len;
	uint64_t first;
	const char *text;
	int rc;

	/* {date} plays no part: the path has none */
	win.start = win.read_start = 0;
	win.end = win.read_end = RECON_MS_PER_DAY;
	recon_arena_init(&arena);
	recon_err_init(&err);
	rc = recon_source_csv.ops->open(&src, side, &win, &err);
	if (rc < 0) {
		/* a bad header is an input error; nothing else may fail on a readable file */
		check(rc == RECON_EINPUT && err.code == rc && err.msg[0], l->name,
		      "open failed with an unexpected error");
		check(src == NULL, l->name, "failed open left a source");
		goto out;
	}
	while ((rc = recon_source_csv.ops->next(src, &row, &err)) == RECON_ROW) {
		struct recon_row nrow;
		struct recon_err nerr;
		int nrc;

		check(++nrows <= nlines, l->name, "more rows than lines");
		check(row->line > last_line, l->name, "line numbers do not increase");
		check(row->line <= nlines, l->name, "line number past the end");
		last_line = row->line;
		check(row->raw_len <= 1024, l->name, "raw text over its cap");
		mix_row(&digest, row);
		if (row->raw)
			touch(row->raw, row->raw_len);
		if (row->reject)
			check(strlen(row->reject) < 160, l->name, "reject reason too long");
		for (int c = 0; c < RECON_COL__COUNT; c++)
			if (row->val[c])
				touch(row->val[c], row->len[c]);
		recon_err_init(&nerr);
		nrc = recon_normalize_row(side, row, &arena, &nrow, &nerr);
		nreject += nrc == RECON_EVALUE;
		nnorm += nrc == RECON_NORM_ROW;
		nskip += nrc == RECON_NORM_SKIPPED;
		if (getenv("RECON_FUZZ_VERBOSE") && nrc == RECON_EVALUE)
			fprintf(stderr, "fuzz_csv: %s: line %llu: %s: %s\n", l->name,
				(unsigned long long)row->line, nerr.where, nerr.msg);
		if (nrc == RECON_NORM_ROW) {
			check(nrow.key && nrow.key_len && strlen(nrow.key) == nrow.key_len, l->name,
			      "normalized key length mismatch");
			check(nrow.entry != RECON_ENTRY_REFUND || nrow.amount >= 0, l->name,
			      "negative refund amount");
		} else {
			check(nrc == RECON_NORM_SKIPPED ||
				  (nrc == RECON_EVALUE && nerr.code == nrc),
			      l->name, "normalize failed with an unexpected error");
			check(!row->reject || nrc == RECON_EVALUE, l->name,
			      "a rejected record was not rejected");
		}
	}
	check(rc == RECON_DONE || (rc < 0 && err.code == rc), l->name,
	      "next() returned an unexpected value");
	mix(&digest, &rc, sizeof(rc));
	if (rc == RECON_DONE)
		check(recon_source_csv.ops->next(src, &row, &err) == RECON_DONE, l->name,
		      "next() after RECON_DONE");
	text = recon_source_csv_trailer(src, &len, &first);
	if (text) {
		check(first >= 1 && first <= nlines && len && text[len - 1] == '\n', l->name,
		      "malformed trailer");
		touch(text, len);
	}
	text = recon_source_csv_footer(src, &len);
	if (text) {
		check(len && text[len - 1] == '\n', l->name, "malformed footer");
		touch(text, len);
	}
out:
	if (getenv("RECON_FUZZ_VERBOSE")) {
		char msg[512];

		fprintf(stderr,
			"fuzz_csv: %s: %zu rows: %zu normalized, %zu skipped, %zu rejected%s%s\n",
			l->name, nrows, nnorm, nskip, nreject, err.code ? "; error: " : "",
			err.code ? recon_err_str(&err, msg, sizeof(msg)) : "");
	}
	recon_source_csv.ops->close(src);
	recon_arena_release(&arena);
	return digest;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nlines = 1;

	for (size_t i = 0; i < size; i++)
		nlines += data[i] == '\n';
	/* a zip's (or a gzip's) lines are those it inflates: no bound from here */
	if ((size >= 4 && !memcmp(data, "PK\3\4", 4)) ||
	    (size >= 2 && !memcmp(data, "\x1f\x8b", 2)))
		nlines = SIZE_MAX;
	fuzz_write_file(input_path, data, size);
	for (size_t i = 0; i < nloaded; i++) {
		/* the AVX-512 reader (where the CPU has it) and the SSE2 one read alike */
		const uint64_t fast = run_job(&loaded[i], nlines);
		setenv("RECON_NO_AVX512", "1", 1);
		setenv("RECON_NO_DBCS", "1", 1);
		const uint64_t plain = run_job(&loaded[i], nlines);
		unsetenv("RECON_NO_AVX512");
		unsetenv("RECON_NO_DBCS");
		check(fast == plain, loaded[i].name,
		      "the AVX-512 and SSE2 readers (and recon_dbcs and iconv) disagree");
	}
	return 0;
}
