/*
 * The commands' option parser: getopt_long (glibc's, beyond POSIX) over a
 * command's table, with the short options every command shares the meaning
 * of (-j --job, -d --date, -m --mode, -q --quiet, -v --verbose, -h --help);
 * and the start the read-only commands share (--format, --run, the job and
 * its store opened, an error said).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "recon_cmd.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_partition.h"
#include "recon_report.h"
#include "recon_state.h"

/* The short form of a long option, or 0. */
static int short_of(const char *name)
{
	static const struct {
		const char *name;
		char c;
	} shorts[] = {
	    {"job", 'j'}, {"date", 'd'}, {"mode", 'm'}, {"quiet", 'q'}, {"verbose", 'v'},
	};

	for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++)
		if (!strcmp(shorts[i].name, name))
			return shorts[i].c;
	return 0;
}

size_t recon_opt_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), *row, prev, ret;

	if (la > 64 || lb > 64)
		return (size_t)-1;
	row = recon_xcalloc(lb + 1, sizeof(*row));
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j], best = prev + (a[i - 1] != b[j - 1]);
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	ret = row[lb];
	free(row);
	return ret;
}

/* Says what was wrong in one line, the nearest option when one is close, and where help is. */
static void unknown(const char *cmd, const char *arg, const struct recon_opt *opts)
{
	const char *word = arg, *best = NULL;
	size_t best_d = 3; /* at most two edits away */
	char buf[65];

	while (*word == '-')
		word++;
	snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(word, "="), word);
	for (const struct recon_opt *o = opts; o->name; o++) {
		size_t d = recon_opt_distance(buf, o->name);
		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	if (best && strlen(buf) > 1)
		fprintf(stderr, "recon %s: unknown option '%s'; did you mean '--%s'?\n", cmd, arg,
			best);
	else
		fprintf(stderr, "recon %s: unknown option '%s'\n", cmd, arg);
	fprintf(stderr, "try 'recon %s --help'\n", cmd);
}

int recon_opt_parse(int argc, char **argv, const struct recon_opt *opts, bool *help)
{
	size_t n = 0, ns = 0;
	struct option *lo;
	char *shorts;
	int c, idx, rc = 0;

	while (opts[n].name)
		n++;
	lo = recon_xcalloc(n + 2, sizeof(*lo));
	shorts = recon_xcalloc(3 * n + 4, 1);
	shorts[ns++] = ':'; /* a missing value returns ':', not '?' */
	for (size_t i = 0; i < n; i++) {
		int s = short_of(opts[i].name);
		lo[i].name = opts[i].name;
		lo[i].has_arg = opts[i].takes_value ? required_argument : no_argument;
		lo[i].val = 256 + (int)i;
		if (s) {
			shorts[ns++] = (char)s;
			if (opts[i].takes_value)
				shorts[ns++] = ':';
		}
	}
	lo[n].name = "help";
	lo[n].val = 'h';
	shorts[ns++] = 'h';
	optind = 0; /* glibc: a full re-initialisation, one parse per command */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		const struct recon_opt *o = NULL;
		if (c == 'h') {
			*help = true;
			continue;
		}
		if (c == '?' || c == ':') {
			const char *arg = argv[optind - 1];
			if (c == ':')
				fprintf(stderr, "recon %s: option '%s' needs a value\n", argv[0],
					arg);
			else if (optopt >= 256)
				fprintf(stderr, "recon %s: option '--%s' takes no value\n", argv[0],
					opts[optopt - 256].name);
			else if (optopt) {
				char so[3] = {'-', (char)optopt, '\0'};
				unknown(argv[0], so, opts);
			} else {
				unknown(argv[0], arg, opts);
			}
			rc = -1;
			goto out;
		}
		if (c >= 256) {
			o = &opts[c - 256];
		} else {
			for (size_t i = 0; i < n && !o; i++)
				if (short_of(opts[i].name) == c)
					o = &opts[i];
		}
		if (o->takes_value)
			*o->value = optarg;
		else
			*o->flag = true;
	}
	if (optind < argc) {
		fprintf(stderr, "recon %s: unexpected argument '%s'\ntry 'recon %s --help'\n",
			argv[0], argv[optind], argv[0]);
		rc = -1;
	}
out:
	free(lo);
	free(shorts);
	return rc;
}

int recon_opt_start(int argc, char **argv, const struct recon_opt *opts, const char *usage)
{
	bool help = false;

	if (recon_opt_parse(argc, argv, opts, &help) < 0)
		return 64;
	if (help) {
		fputs(usage, stdout);
		return 0;
	}
	return -1;
}

int recon_opt_missing(const char *cmd, const char *what)
{
	fprintf(stderr, "recon %s: needs %s; try 'recon %s --help'\n", cmd, what, cmd);
	return 64;
}

/* ---- what the read-only commands share ---------------------------------------- */

int recon_cmd_fail(const struct recon_err *err)
{
	char buf[512];

	recon_log(RECON_LOG_ERROR, "%s", recon_err_str(err, buf, sizeof(buf)));
	return recon_err_exit_code(err->code);
}

void recon_listing_head(struct recon_listing *l)
{
	if (l->head)
		return;
	l->head = true;
	l->print_head(l->fmt);
}

void recon_cmd_json_line(json_t *o)
{
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);

	printf("%s\n", text ? text : "{}");
	free(text);
	json_decref(o);
}

int recon_cmd_parse_format(const char *cmd, const char *format, int *fmt)
{
	*fmt = recon_report_format_from_name(format);
	if (*fmt >= 0)
		return 0;
	fprintf(stderr, "recon %s: unknown format '%s' (table, jsonl or csv)\n", cmd, format);
	return 64;
}

int recon_cmd_parse_run(const char *cmd, const char *run, int64_t *run_id)
{
	char *end;

	*run_id = 0;
	if (!run || !strcmp(run, "latest"))
		return 0;
	*run_id = strtoll(run, &end, 10);
	if (!*end && *run_id > 0)
		return 0;
	fprintf(stderr, "recon %s: --run takes a run id or 'latest'\n", cmd);
	return 64;
}

int recon_cmd_open(const char *job_path, const char *partition, struct recon_job **job,
		   struct recon_state **st, struct recon_err *err)
{
	*job = NULL;
	*st = NULL;
	if (recon_job_load(job, job_path, err) < 0 ||
	    recon_partition_select(*job, partition, err) < 0)
		return err->code;
	return recon_state_open(st, (*job)->state_path, false, err);
}
