/*
 * recon status: the job's watermarks, last runs, open differences and recent
 * runs, from the state store, as text or one JSON object.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "recon_cmd.h"
#include "recon_compare.h"
#include "recon_dayreport.h"
#include "recon_job.h"
#include "recon_state.h"
#include "recon_time.h"

static const char status_usage[] =
    "usage: recon status --job FILE [--json] [--quiet]\n"
    "\n"
    "Shows the job's watermarks, last runs, and open differences.\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

static const char *const hash_names[] = {"upstream_sha256", "local_sha256", "config_sha256"};

static json_t *time_or_null(bool has, int64_t ms)
{
	char t[40];

	if (!has)
		return json_null();
	recon_time_format_utc(ms, t, sizeof(t));
	return json_string(t);
}

static json_t *text_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The hashes of what run r read: identical inputs show as equal. */
static void add_hashes(json_t *o, const struct recon_state_run *r)
{
	const char *h[] = {r->upstream_sha256, r->local_sha256, r->config_sha256};

	for (int i = 0; i < 3; i++)
		json_object_set_new(o, hash_names[i], text_or_null(h[i]));
}

/* modes.<mode>: watermark, last success, last run. */
static int add_mode(void *arg, const struct recon_state_mode *m)
{
	const struct recon_state_run *r = &m->last;
	json_t *o = json_object(), *last = json_object();

	json_object_set_new(o, "watermark", time_or_null(m->has_watermark, m->watermark));
	json_object_set_new(o, "last_success", time_or_null(m->has_success, m->last_success));
	json_object_set_new(last, "run_id", json_integer(r->id));
	json_object_set_new(last, "outcome", json_string(r->outcome));
	json_object_set_new(last, "date", json_string(r->business_date));
	json_object_set_new(last, "window_start", time_or_null(true, r->window_start));
	json_object_set_new(last, "window_end", time_or_null(true, r->window_end));
	json_object_set_new(last, "dry_run", json_boolean(r->dry_run));
	json_object_set_new(last, "error", text_or_null(r->error));
	json_object_set_new(last, "rows_upstream", json_integer(r->rows_upstream));
	json_object_set_new(last, "rows_local", json_integer(r->rows_local));
	json_object_set_new(last, "rows_rejected", json_integer(r->rows_rejected));
	json_object_set_new(last, "rows_skipped", json_integer(r->rows_skipped));
	json_object_set_new(last, "differences", json_integer(r->differences));
	add_hashes(last, r);
	json_object_set_new(o, "last_run", last);
	json_object_set_new(arg, m->mode, o);
	return 0;
}

static int add_open(void *arg, const char *klass, int64_t n)
{
	json_object_set_new(arg, klass, json_integer(n));
	return 0;
}

static int add_recent(void *arg, const struct recon_state_run *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "run_id", json_integer(r->id));
	json_object_set_new(o, "mode", json_string(r->mode));
	json_object_set_new(o, "date", json_string(r->business_date));
	json_object_set_new(o, "outcome", json_string(r->outcome));
	json_object_set_new(o, "dry_run", json_boolean(r->dry_run));
	add_hashes(o, r);
	json_array_append_new(arg, o);
	return 0;
}

/* Everything status shows, as the --json object. */
static int status_json(struct recon_state *st, const struct recon_job *job, json_t *out,
		       struct recon_err *err)
{
	json_t *modes = json_object(), *open = json_object(), *recent;
	int rc;

	json_object_set_new(out, "job", json_string(job->name));
	json_object_set_new(out, "state", json_string(job->state_path));
	json_object_set_new(out, "modes", modes);
	json_object_set_new(out, "open_differences", open);
	for (int c = 0; c <= RECON_CLASS_IN_FLIGHT; c++)
		if (c != RECON_CLASS_MATCHED)
			json_object_set_new(open, recon_class_name((enum recon_class)c),
					    json_integer(0));
	if ((rc = recon_state_modes(st, job->name, add_mode, modes, err)) < 0 ||
	    (rc = recon_state_open_counts(st, job->name, add_open, open, err)) < 0)
		return rc;
	recon_dayreport_stake_json(st, job->name, 0, out);
	recent = json_array();
	json_object_set_new(out, "recent_runs", recent);
	return recon_state_recent_runs(st, job->name, 10, add_recent, recent, err);
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long long num(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static void print_mode(const char *mode, json_t *m)
{
	json_t *last = json_object_get(m, "last_run"), *wm = json_object_get(m, "watermark");
	json_t *ls = json_object_get(m, "last_success"), *e = json_object_get(last, "error");

	printf("%-4s       watermark %s, last success %s\n", mode,
	       json_is_string(wm) ? json_string_value(wm) : "none",
	       json_is_string(ls) ? json_string_value(ls) : "never");
	printf("           last run %lld (%s%s) for %s: %lld upstream, %lld local, %lld rejected, "
	       "%lld differences\n",
	       num(last, "run_id"), str(last, "outcome"),
	       json_is_true(json_object_get(last, "dry_run")) ? ", dry run" : "", str(last, "date"),
	       num(last, "rows_upstream"), num(last, "rows_local"), num(last, "rows_rejected"),
	       num(last, "differences"));
	if (json_is_string(e))
		printf("           error: %s\n", json_string_value(e));
	for (int i = 0; i < 3; i++) {
		json_t *h = json_object_get(last, hash_names[i]);
		if (json_is_string(h))
			printf("           %-15s %s\n", hash_names[i], json_string_value(h));
	}
}

static void print_recent(json_t *recent)
{
	printf("recent runs (input SHA-256, first 12 hex digits)\n");
	printf("  %6s %-4s %-10s %-9s %-12s %-12s %-12s\n", "RUN", "MODE", "DATE", "OUTCOME",
	       "UPSTREAM", "LOCAL", "CONFIG");
	for (size_t i = 0; i < json_array_size(recent); i++) {
		json_t *r = json_array_get(recent, i);
		char h[3][13];
		for (int k = 0; k < 3; k++) {
			json_t *v = json_object_get(r, hash_names[k]);
			snprintf(h[k], sizeof(h[k]), "%.12s",
				 json_is_string(v) ? json_string_value(v) : "-");
		}
		printf("  %6lld %-4s %-10s %-9s %-12s %-12s %-12s%s\n", num(r, "run_id"),
		       str(r, "mode"), str(r, "date"), str(r, "outcome"), h[0], h[1], h[2],
		       json_is_true(json_object_get(r, "dry_run")) ? " (dry run)" : "");
	}
}

static void print_text(struct recon_state *st, const struct recon_job *job, json_t *out)
{
	json_t *open = json_object_get(out, "open_differences"),
	       *modes = json_object_get(out, "modes");
	json_t *m;
	const char *mode;
	char stake[1024];

	printf("job        %s\nstate      %s\n", job->name, job->state_path);
	json_object_foreach(modes, mode, m)
	{
		print_mode(mode, m);
	}
	printf("open       ");
	for (int c = 0; c < RECON_CLASS__COUNT; c++)
		printf("%s %lld%s", recon_class_name((enum recon_class)c),
		       num(open, recon_class_name((enum recon_class)c)),
		       c + 1 < RECON_CLASS__COUNT ? ", " : "\n");
	recon_dayreport_stake_line(st, job->name, 0, stake, sizeof(stake));
	if (stake[0])
		printf("at stake   %s\n", stake);
	print_recent(json_object_get(out, "recent_runs"));
}

int recon_cmd_status(int argc, char **argv)
{
	const char *job_path = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool json = false, quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL}, {"json", false, NULL, &json},
	    {"quiet", false, NULL, &quiet}, {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	json_t *out = NULL;
	int code;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, status_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("status", "--job FILE");
	if (recon_cmd_open(job_path, partition, &job, &st, &err) < 0) {
		/* a job that never ran is a state, not an error */
		if (!job || err.code != RECON_ENOTFOUND) {
			code = recon_cmd_fail(&err);
			goto out;
		}
		printf(json ? "{\"job\":\"%s\",\"never_run\":true}\n"
			    : "job '%s' has never run (no state store yet)\n",
		       job->name);
		goto out;
	}
	out = json_object();
	if (status_json(st, job, out, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (json) {
		char *text = json_dumps(out, JSON_PRESERVE_ORDER | JSON_COMPACT);
		printf("%s\n", text ? text : "{}");
		free(text);
	} else {
		print_text(st, job, out);
	}
	if (fflush(stdout) != 0)
		code = 1;
out:
	json_decref(out);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
