/*
 * recon check: a monitoring plugin (Nagios / Icinga conventions): one line
 * and exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, from the watermark's lag
 * and the last success's age in the state store.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "recon_cmd.h"
#include "recon_job.h"
#include "recon_partition.h"
#include "recon_state.h"
#include "recon_time.h"

static const char check_usage[] =
    "usage: recon check --job FILE [--mode t1|hot] [--max-lag DURATION] [--max-age DURATION]\n"
    "\n"
    "Monitoring-plugin check: one line, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n"
    "WARNING when the watermark lags more than --max-lag or the last success is older\n"
    "than --max-age (or the last run failed); CRITICAL beyond twice those. Defaults come\n"
    "from the job's \"check\" section (t1: 36h lag, 26h age; hot: 15m, 15m).\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

#define CHECK_OK       0
#define CHECK_WARNING  1
#define CHECK_CRITICAL 2
#define CHECK_UNKNOWN  3

static int check_unknown(const char *fmt, ...) RECON_PRINTF(1, 2);
static int check_unknown(const char *fmt, ...)
{
	va_list ap;

	printf("RECON UNKNOWN - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return CHECK_UNKNOWN;
}

static int check_err(const struct recon_err *err)
{
	char buf[512];

	return check_unknown("%s", recon_err_str(err, buf, sizeof(buf)));
}

static int level(int64_t value, int64_t max)
{
	if (value > max && max <= INT64_MAX / 2 && value > 2 * max)
		return CHECK_CRITICAL;
	return value > max ? CHECK_WARNING : CHECK_OK;
}

/* The plugin's line for h at now against the limits; returns the exit code. */
static int verdict(const char *mode, const struct recon_state_health *h, int64_t now,
		   int64_t max_lag, int64_t max_age)
{
	static const char *const names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
	int64_t lag = now - h->watermark, age = now - h->last_success;
	int code =
	    level(lag, max_lag) > level(age, max_age) ? level(lag, max_lag) : level(age, max_age);
	char lagb[32], ageb[32], maxl[32], maxa[32];

	if (h->failed && code < CHECK_WARNING)
		code = CHECK_WARNING;
	/*
	 * A watermark ahead of now (beyond clock skew) means a day was taken for
	 * reconciled before it was over: never "0 s behind", always critical.
	 */
	if (h->watermark > now + 5 * RECON_MS_PER_MIN) {
		char t[40];
		recon_time_format_utc(h->watermark, t, sizeof(t));
		printf("RECON CRITICAL - %s watermark %s is in the future: a window was reconciled "
		       "before it was over; rerun it once it is due\n",
		       mode, t);
		return CHECK_CRITICAL;
	}
	/* whole seconds are enough for people and perfdata; clocks may disagree: clamp at 0 */
	lag = lag < 0 ? 0 : lag / 1000 * 1000;
	age = age < 0 ? 0 : age / 1000 * 1000;
	recon_duration_format(lag, lagb, sizeof(lagb));
	recon_duration_format(age, ageb, sizeof(ageb));
	recon_duration_format(max_lag, maxl, sizeof(maxl));
	recon_duration_format(max_age, maxa, sizeof(maxa));
	printf("RECON %s - %s watermark %s behind (max %s), last success %s ago (max %s)",
	       names[code], mode, lagb, maxl, ageb, maxa);
	if (h->failed)
		printf("; last run %lld failed: %s", (long long)h->last_run, h->error);
	printf(" | lag=%llds;%lld;%lld age=%llds;%lld;%lld\n", (long long)(lag / 1000),
	       (long long)(max_lag / 1000), (long long)(2 * max_lag / 1000),
	       (long long)(age / 1000), (long long)(max_age / 1000),
	       (long long)(2 * max_age / 1000));
	fflush(stdout);
	return code;
}

int recon_cmd_check(int argc, char **argv)
{
	const char *job_path = NULL, *mode = "t1", *max_lag_s = NULL, *max_age_s = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	 {"mode", true, &mode, NULL},
	    {"max-lag", true, &max_lag_s, NULL}, {"max-age", true, &max_age_s, NULL},
	    {"quiet", false, NULL, &quiet},	 {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_state_health h;
	struct recon_err err;
	int64_t now, max_lag, max_age;
	int code, m, rc = 0;

	recon_err_init(&err);
	/* a plugin's errors are UNKNOWN (3), whatever went wrong */
	if ((code = recon_opt_start(argc, argv, opts, check_usage)) >= 0)
		return code ? CHECK_UNKNOWN : 0;
	if (!job_path) {
		recon_opt_missing("check", "--job FILE");
		return CHECK_UNKNOWN;
	}
	if (strcmp(mode, "t1") && strcmp(mode, "hot"))
		return check_unknown("unknown mode '%s' (t1 or hot)", mode);
	m = !strcmp(mode, "hot");
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0) {
		code = check_err(&err);
		goto out;
	}
	max_lag = job->check_max_lag_ms[m];
	max_age = job->check_max_age_ms[m];
	if ((max_lag_s && recon_duration_parse(max_lag_s, &max_lag, &err) < 0) ||
	    (max_age_s && recon_duration_parse(max_age_s, &max_age, &err) < 0) ||
	    recon_time_now(&now, &err) < 0 ||
	    recon_state_open(&st, job->state_path, false, &err) < 0 ||
	    ((rc = recon_state_health(st, job->name, mode, &h, &err)) < 0 &&
	     rc != RECON_ENOTFOUND)) {
		code = check_err(&err);
		goto out;
	}
	if (rc == RECON_ENOTFOUND)
		code = check_unknown("job '%s' has no successful %s run in '%s'", job->name, mode,
				     job->state_path);
	else
		code = verdict(mode, &h, now, max_lag, max_age);
out:
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
