/*
 * recon report: the daily reconciliation report (recon_dayreport), read-only
 * over the state store. --output writes a temporary file beside the target and
 * renames it, so a mailer or web server never picks up half a page.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_cmd.h"
#include "recon_dayreport.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_state.h"
#include "recon_time.h"

static const char report_usage[] =
    "usage: recon report --job FILE [--date YYYY-MM-DD | --from YYYY-MM-DD --to YYYY-MM-DD]\n"
    "                    [--mode t1|hot] [--format html|md|csv] [--output FILE] [--bom]\n"
    "                    [--quiet]\n"
    "\n"
    "The reconciliation report of one business day (default: the latest day a run\n"
    "reconciled), read from the state store only: the verdict, rows read and matched,\n"
    "control totals, money at stake per class and currency, open differences by age,\n"
    "charts per day over the range (default: the 30 days up to the day; --from/--to:\n"
    "that range, the report's day being --to), the open differences by money at stake\n"
    "and the day's rejects. html: one self-contained page (inline CSS and SVG, no\n"
    "script); md: the same facts in Markdown; csv: one row per open item, decimal\n"
    "amounts, local times with their offset (--bom: a UTF-8 byte order mark first).\n";

static int day_opt(const char *s, const char *name, int64_t *day)
{
	struct recon_err err;

	recon_err_init(&err);
	if (s && recon_date_parse(s, day, &err) < 0) {
		fprintf(stderr, "recon report: --%s takes a date YYYY-MM-DD, not '%s'\n", name, s);
		return -1;
	}
	return 0;
}

int recon_cmd_report(int argc, char **argv)
{
	const char *job_path = NULL, *date = NULL, *from_s = NULL, *to_s = NULL, *mode = "t1",
		   *format = "html", *output = NULL;
	bool quiet = false, bom = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},  {"date", true, &date, NULL},
	    {"from", true, &from_s, NULL},   {"to", true, &to_s, NULL},
	    {"mode", true, &mode, NULL},     {"format", true, &format, NULL},
	    {"output", true, &output, NULL}, {"bom", false, NULL, &bom},
	    {"quiet", false, NULL, &quiet},  {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_dayreport *r = NULL;
	struct recon_err err;
	int64_t from = INT64_MIN, to = INT64_MIN, now;
	char *tmp = NULL;
	FILE *f = NULL;
	int fmt, code = 0;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, report_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("report", "--job FILE");
	fmt = recon_dayreport_format_from_name(format);
	if (fmt < 0) {
		fprintf(stderr, "recon report: unknown format '%s' (html, md or csv)\n", format);
		return 64;
	}
	if ((date && (from_s || to_s)) || (strcmp(mode, "t1") && strcmp(mode, "hot"))) {
		fputs(report_usage, stderr);
		return 64;
	}
	if (day_opt(date, "date", &to) < 0 || day_opt(to_s, "to", &to) < 0 ||
	    day_opt(from_s, "from", &from) < 0)
		return 64;
	if (recon_job_load(&job, job_path, &err) < 0 || recon_time_now(&now, &err) < 0 ||
	    recon_state_open(&st, job->state_path, false, &err) < 0 ||
	    recon_dayreport_load(&r, st, job, mode, &from, &to, now, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (output) {
		size_t n = strlen(output) + 32;
		tmp = recon_xmalloc(n);
		snprintf(tmp, n, "%s.tmp.%ld", output, (long)getpid());
		f = fopen(tmp, "wb");
		if (!f) {
			recon_log(RECON_LOG_ERROR, "cannot create '%s': %s", tmp, strerror(errno));
			code = 73;
			goto out;
		}
	}
	if (recon_dayreport_write(f ? f : stdout, r, (enum recon_dayreport_format)fmt, bom, &err) <
	    0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (f) {
		int rc = fclose(f);
		f = NULL;
		if (rc != 0 || rename(tmp, output) != 0) {
			recon_log(RECON_LOG_ERROR, "cannot write '%s': %s", output,
				  strerror(errno));
			remove(tmp);
			code = 73;
			goto out;
		}
		if (!quiet)
			recon_log(RECON_LOG_INFO, "report written to '%s'", output);
	}
out:
	if (f) {
		fclose(f);
		remove(tmp);
	}
	free(tmp);
	recon_dayreport_free(r);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
