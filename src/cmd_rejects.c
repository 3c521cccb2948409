/*
 * recon rejects: the rows a run could not read, from the state store, as a
 * table, JSON lines or CSV.
 */
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "recon_cmd.h"
#include "recon_job.h"
#include "recon_report.h"
#include "recon_state.h"

static const char rejects_usage[] =
    "usage: recon rejects --job FILE [--run ID|latest] [--format table|jsonl|csv] [--quiet]\n"
    "\n"
    "Lists the rows a run could not read (default: the latest run that has any), with\n"
    "their origin (file:line or table), the field and the reason.\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

static void rejects_head(int fmt)
{
	if (fmt == RECON_REPORT_TABLE)
		printf("%5s %-8s %-32s %-16s %s\n", "RUN", "SIDE", "ORIGIN", "FIELD", "REASON");
	else if (fmt == RECON_REPORT_CSV)
		printf("run_id,side,origin,field,reason,raw\n");
}

/* One reject in the listing's format. */
static int reject_print(void *arg, int64_t run_id, const struct recon_reject *x)
{
	static const char *const names[] = {"side", "origin", "field", "reason", "raw"};
	const char *col[] = {x->side, x->origin, x->field, x->reason, x->raw};
	int fmt = ((struct recon_listing *)arg)->fmt;
	long long r = run_id;

	recon_listing_head(arg);
	for (int i = 0; i < 5; i++)
		col[i] = col[i] ? col[i] : "";
	if (fmt == RECON_REPORT_TABLE) {
		printf("%5lld %-8s %-32s %-16s %s\n", r, col[0], col[1], col[2], col[3]);
	} else if (fmt == RECON_REPORT_CSV) {
		printf("%lld", r);
		for (int i = 0; i < 5; i++) {
			printf(",");
			recon_report_csv_field(stdout, col[i]);
		}
		printf("\n");
	} else {
		json_t *o = json_object();
		json_object_set_new(o, "run_id", json_integer(r));
		for (int i = 0; i < 5; i++)
			json_object_set_new(o, names[i], json_string(col[i]));
		recon_cmd_json_line(o);
	}
	return 0;
}

int recon_cmd_rejects(int argc, char **argv)
{
	const char *job_path = NULL, *run = NULL, *format = "table";
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	   {"run", true, &run, NULL},
	    {"format", true, &format, NULL},	   {"quiet", false, NULL, &quiet},
	    {"partition", true, &partition, NULL}, {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	struct recon_listing out = {0, false, rejects_head};
	int64_t run_id = 0;
	int code = 0;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, rejects_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("rejects", "--job FILE");
	if (recon_cmd_parse_format("rejects", format, &out.fmt) ||
	    recon_cmd_parse_run("rejects", run, &run_id))
		return 64;
	if (recon_cmd_open(job_path, partition, &job, &st, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (recon_state_rejects(st, job->name, run_id, -1, reject_print, &out, &err) < 0)
		code = recon_cmd_fail(&err);
	else
		recon_listing_head(&out);
	if (fflush(stdout) != 0)
		code = 1;
out:
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
