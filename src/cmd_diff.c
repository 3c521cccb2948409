/*
 * recon diff: the differences one run found, or the job's open items, read
 * from the state store and printed as a table, JSON lines or CSV.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_cmd.h"
#include "recon_compare.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_report.h"
#include "recon_state.h"

static const char diff_usage[] =
    "usage: recon diff --job FILE [--run ID|latest | --date YYYY-MM-DD [--mode t1|hot] | "
    "--open]\n"
    "                  [--class C] [--format table|jsonl|csv] [--quiet]\n"
    "\n"
    "Prints the differences one run found, in key order (default: the latest run that\n"
    "completed; --date: the latest run of that business day). --open prints every open\n"
    "item of the job instead, whatever day found it, as last evaluated. Classes: missing,\n"
    "extra, stuck, amount_mismatch, status_mismatch, duplicate (with --open also awaiting\n"
    "and in_flight).\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

/* The lines to print, in order. */
struct lines {
	char **v;
	size_t n, alloc;
};

static int collect(void *arg, const char *json)
{
	struct lines *l = arg;

	recon_grow((void **)&l->v, &l->alloc, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = recon_xstrdup(json);
	return 0;
}

/* --run, --date and --open exclude each other; --mode goes with --date or --open. */
static int check_args(const char *run, const char *date, const char *mode, bool open_items,
		      const char *klass)
{
	int k = klass ? recon_class_from_name(klass) : 0;

	if ((run != NULL) + (date != NULL) + open_items > 1 || (mode && !date && !open_items) ||
	    (mode && strcmp(mode, "t1") && strcmp(mode, "hot"))) {
		fputs(diff_usage, stderr);
		return 64;
	}
	if (k < 0 || k == RECON_CLASS_MATCHED || (!open_items && k > RECON_CLASS_MATCHED)) {
		fprintf(stderr, "recon diff: unknown class '%s'\n", klass);
		return 64;
	}
	return 0;
}

static int warn_partial(void *arg, const struct recon_state_run *r)
{
	(void)arg;
	if (strcmp(r->outcome, "success"))
		recon_log(RECON_LOG_WARN,
			  "run %" PRId64 " did not complete (%s): its differences may be partial",
			  r->id, r->outcome);
	return 0;
}

/*
 * The run whose differences to print: *run_id as given (a warning when it
 * did not complete), else the latest completed one (of the date). 0, or the
 * exit code after saying why not.
 */
static int pick_run(struct recon_state *st, const struct recon_job *job, const char *date,
		    const char *mode, int64_t *run_id)
{
	struct recon_err err;
	int rc;

	recon_err_init(&err);
	if (*run_id)
		rc = recon_state_run_get(st, job->name, *run_id, warn_partial, NULL, &err);
	else
		rc = recon_state_latest_run(st, job->name, date, mode ? mode : "t1", run_id, &err);
	if (rc != RECON_ENOTFOUND)
		return rc < 0 ? recon_cmd_fail(&err) : 0;
	if (*run_id)
		recon_log(RECON_LOG_ERROR, "job '%s' has no run %" PRId64, job->name, *run_id);
	else if (date)
		recon_log(RECON_LOG_ERROR, "job '%s' has no completed %s run of %s", job->name,
			  mode ? mode : "t1", date);
	else
		recon_log(RECON_LOG_ERROR, "job '%s' has no completed run", job->name);
	return 1;
}

int recon_cmd_diff(int argc, char **argv)
{
	const char *job_path = NULL, *run = NULL, *klass = NULL, *format = "table", *date = NULL,
		   *mode = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false, open_items = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	   {"run", true, &run, NULL},
	    {"class", true, &klass, NULL},	   {"format", true, &format, NULL},
	    {"date", true, &date, NULL},	   {"mode", true, &mode, NULL},
	    {"open", false, NULL, &open_items},	   {"quiet", false, NULL, &quiet},
	    {"partition", true, &partition, NULL}, {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	struct lines lines = {NULL, 0, 0};
	int64_t run_id = 0;
	int fmt, code, rc;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, diff_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("diff", "--job FILE");
	if (recon_cmd_parse_format("diff", format, &fmt) ||
	    check_args(run, date, mode, open_items, klass) ||
	    recon_cmd_parse_run("diff", run, &run_id))
		return 64;
	if (recon_cmd_open(job_path, partition, &job, &st, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (open_items) /* every open item, as last evaluated (the same lines as a run's) */
		rc = recon_state_open_lines(st, job->name, mode, klass, collect, &lines, &err);
	else if ((code = pick_run(st, job, date, mode, &run_id)) != 0)
		goto out;
	else
		rc = recon_state_differences(st, run_id, klass, collect, &lines, &err);
	if (rc < 0 || recon_report_print(stdout, (enum recon_report_format)fmt, job, lines.v,
					 lines.n, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (fflush(stdout) != 0)
		code = 1;
out:
	for (size_t i = 0; i < lines.n; i++)
		free(lines.v[i]);
	free(lines.v);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
