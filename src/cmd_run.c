/*
 * recon run / recon rerun: plan the windows, run each, print a summary (or
 * one JSON object per window), and map the outcome to the exit code.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "recon_action.h"
#include "recon_cmd.h"
#include "recon_compare.h"
#include "recon_dayreport.h"
#include "recon_heartbeat.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_partition.h"
#include "recon_run.h"
#include "recon_state.h"
#include "recon_time.h"

static const char run_usage[] =
    "usage: recon run --job FILE [--mode t1|hot] [--date YYYY-MM-DD] [--upstream FILE|-] "
    "[--dry-run] [--json] [--quiet | --verbose]\n"
    "                 [--partition I/N | --partitions N --sequential]\n"
    "\n"
    "Reconciles one window: t1 (default) is a business day in the job's time zone,\n"
    "yesterday unless --date says otherwise. --dry-run compares and reports but takes\n"
    "no action and moves no watermark. --json prints one object per window.\n"
    "--upstream reads that day's statement from FILE ('-': standard input) instead.\n"
    "--verbose adds debug messages, among them each phase's wall time.\n"
    "Exit: 0 success (differences are results), 65 bad input, 69 source unavailable,\n"
    "75 another run holds the lock, 77 a grant is missing, 78 bad job file, 1 anything\n"
    "else.\n"
    "--partition I/N reconciles the keys whose hash falls in partition I of N, with\n"
    "its own state store, lock and heartbeat; --partitions N --sequential runs all N\n"
    "one after another (as does a job with \"partition\": {\"count\": N} without\n"
    "--partition), so memory holds one partition's rows.\n";

static const char rerun_usage[] =
    "usage: recon rerun --job FILE --from YYYY-MM-DD --to YYYY-MM-DD [--upstream FILE|-] "
    "[--dry-run] [--json] [--quiet | --verbose]\n"
    "                   [--partition I/N | --partitions N --sequential]\n"
    "\n"
    "Recomputes each business day from --from to --to (inclusive). Differences are\n"
    "upserted; the watermark never moves backwards.\n";

static void print_json(const struct recon_ctx *ctx, struct recon_state *st,
		       const struct recon_run_summary *s)
{
	json_t *o = json_object(), *w = json_object(), *rows = json_object(), *d = json_object();
	char start[40], end[40], date[16];
	char *text;

	recon_time_format_utc(s->win.start, start, sizeof(start));
	recon_time_format_utc(s->win.end, end, sizeof(end));
	recon_date_format(s->win.day, date, sizeof(date));
	json_object_set_new(o, "run_id", s->run_id ? json_integer(s->run_id) : json_null());
	json_object_set_new(o, "job", json_string(ctx->job->name));
	json_object_set_new(o, "mode", json_string(recon_mode_name(ctx->mode)));
	json_object_set_new(w, "start", json_string(start));
	json_object_set_new(w, "end", json_string(end));
	json_object_set_new(w, "date", json_string(date));
	json_object_set_new(o, "window", w);
	if (ctx->job->upstream.part.count)
		json_object_set_new(o, "partition",
				    json_pack("{s:i,s:i}", "index",
					      (int)ctx->job->upstream.part.index, "count",
					      (int)ctx->job->upstream.part.count));
	json_object_set_new(rows, "upstream", json_integer((json_int_t)s->rows_read[0]));
	json_object_set_new(rows, "local", json_integer((json_int_t)s->rows_read[1]));
	json_object_set_new(rows, "rejected",
			    json_integer((json_int_t)(s->rows_rejected[0] + s->rows_rejected[1])));
	json_object_set_new(rows, "skipped", json_integer((json_int_t)s->rows_skipped));
	json_object_set_new(
	    rows, "compared",
	    json_integer((json_int_t)(s->counts.rows_owned[0] + s->counts.rows_owned[1])));
	json_object_set_new(
	    rows, "other_window",
	    json_integer((json_int_t)(s->counts.rows_other[0] + s->counts.rows_other[1])));
	{
		/* keys looked up by key beyond the read range, per side */
		json_t *l = json_object();
		json_object_set_new(l, "upstream", json_integer((json_int_t)s->lookups[0]));
		json_object_set_new(l, "local", json_integer((json_int_t)s->lookups[1]));
		json_object_set_new(rows, "looked_up", l);
	}
	if (ctx->job->upstream.part.count) {
		/* rows of other partitions: neither compared nor rejected, not among "upstream" */
		json_t *p = json_object();
		json_object_set_new(p, "upstream", json_integer((json_int_t)s->rows_partition[0]));
		json_object_set_new(p, "local", json_integer((json_int_t)s->rows_partition[1]));
		json_object_set_new(rows, "other_partition", p);
	}
	json_object_set_new(o, "rows", rows);
	for (int c = 0; c < RECON_CLASS__COUNT; c++)
		json_object_set_new(d, recon_class_name((enum recon_class)c),
				    json_integer((json_int_t)s->counts.classes[c]));
	json_object_set_new(o, "differences", d);
	json_object_set_new(o, "matched", json_integer((json_int_t)s->counts.matched));
	json_object_set_new(o, "resolved", json_integer((json_int_t)s->resolved));
	json_object_set_new(o, "superseded", json_integer((json_int_t)s->superseded));
	json_object_set_new(o, "awaiting", json_integer((json_int_t)s->counts.awaiting));
	json_object_set_new(o, "in_flight", json_integer((json_int_t)s->counts.in_flight));
	if (s->run_id && !ctx->dry_run)
		recon_dayreport_stake_json(st, ctx->job->name, s->run_id, o);
	{
		char *aj = recon_action_counts_json(&s->actions);
		json_t *a = json_loads(aj, 0, NULL);
		json_object_set_new(o, "actions", a ? a : json_object());
		free(aj);
	}
	json_object_set_new(o, "dry_run", json_boolean(ctx->dry_run));
	json_object_set_new(o, "outcome", json_string(s->success ? "success" : "failed"));
	if (!s->success)
		json_object_set_new(o, "error", json_string(s->error));
	text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	if (text)
		printf("%s\n", text);
	free(text);
	json_decref(o);
}

static void print_side(const char *name, uint64_t read, uint64_t compared, uint64_t skipped,
		       uint64_t rejected, uint64_t other, uint64_t looked_up)
{
	printf("  %-8s %8" PRIu64 " read: %" PRIu64 " compared, %" PRIu64 " rejected", name, read,
	       compared, rejected);
	if (skipped)
		printf(", %" PRIu64 " keyless skipped", skipped);
	if (other)
		printf(", %" PRIu64 " owned by a neighbouring window", other);
	if (looked_up)
		printf(" (%" PRIu64 " keys looked up beyond the window)", looked_up);
	printf("\n");
}

/* "actions    replay 1 done, ticket 4 done (1 already), ..." */
static void print_actions(const struct recon_action_counts *c)
{
	bool any = false;

	for (int k = 0; k < RECON_ACT__COUNT; k++) {
		bool first = true;
		for (int o = 0; o < RECON_OUT__COUNT; o++) {
			if (!c->n[k][o])
				continue;
			if (first)
				printf("%s%s", any ? "; " : "actions    ",
				       recon_action_name((enum recon_action_kind)k));
			else
				printf(",");
			printf(" %" PRIu64 " %s", c->n[k][o],
			       recon_action_outcome_name((enum recon_action_outcome)o));
			first = false;
			any = true;
		}
	}
	if (any) {
		if (c->retries)
			printf("; %" PRIu64 " retries", c->retries);
		printf("\n");
	}
}

static void print_text(const struct recon_ctx *ctx, struct recon_state *st,
		       const struct recon_run_summary *s)
{
	char start[40], end[40], date[16];
	const struct recon_compare_counts *c = &s->counts;
	uint64_t total = 0;

	recon_time_format_utc(s->win.start, start, sizeof(start));
	recon_time_format_utc(s->win.end, end, sizeof(end));
	recon_date_format(s->win.day, date, sizeof(date));
	printf("recon %s: job '%s', %s window %s [%s, %s)%s\n", s->success ? "run" : "run FAILED",
	       ctx->job->name, recon_mode_name(ctx->mode), date, start, end,
	       ctx->dry_run ? ", dry run" : "");
	if (s->run_id)
		printf("  run id   %" PRId64 "\n", s->run_id);
	if (ctx->job->upstream.part.count)
		printf("  partition %u/%u (other partitions' rows: %" PRIu64 " upstream, %" PRIu64
		       " local, neither compared nor rejected)\n",
		       ctx->job->upstream.part.index, ctx->job->upstream.part.count,
		       s->rows_partition[0], s->rows_partition[1]);
	printf("rows\n");
	print_side("upstream", s->rows_read[0], c->rows_owned[0], s->rows_skipped,
		   s->rows_rejected[0], c->rows_other[0], s->lookups[0]);
	print_side("local", s->rows_read[1], c->rows_owned[1], 0, s->rows_rejected[1],
		   c->rows_other[1], s->lookups[1]);
	for (int k = 0; k < RECON_CLASS__COUNT; k++)
		total += c->classes[k];
	printf("keys       %" PRIu64 " compared: %" PRIu64 " matched", c->keys_owned, c->matched);
	if (c->in_flight || c->awaiting)
		printf(" (%" PRIu64 " in flight, %" PRIu64 " awaiting upstream)", c->in_flight,
		       c->awaiting);
	printf(", %" PRIu64 " different\n", total);
	printf("differences");
	for (int k = 0; k < RECON_CLASS__COUNT; k++)
		printf(" %s %" PRIu64 "%s", recon_class_name((enum recon_class)k), c->classes[k],
		       k + 1 < RECON_CLASS__COUNT ? "," : "\n");
	if (s->run_id && !ctx->dry_run) {
		char m[1024];
		recon_dayreport_stake_line(st, ctx->job->name, s->run_id, m, sizeof(m));
		if (m[0])
			printf("at stake   %s\n", m);
	}
	if (s->resolved)
		printf("resolved   %" PRIu64 " earlier difference%s now matched\n", s->resolved,
		       s->resolved == 1 ? "" : "s");
	if (s->superseded)
		printf("superseded %" PRIu64 " earlier difference%s now in another class\n",
		       s->superseded, s->superseded == 1 ? "" : "s");
	print_actions(&s->actions);
	if (s->success)
		printf("outcome    success%s\n",
		       ctx->dry_run ? " (dry run: no action taken, watermark not moved)" : "");
	else
		printf("outcome    failed: %s\n", s->error);
	fflush(stdout);
}

/* One window: lock already held. Returns the exit code. */
static int one_window(const struct recon_ctx *ctx, struct recon_state *st,
		      const struct recon_window *win, bool json)
{
	struct recon_run_summary sum;
	struct recon_err err;
	int rc;

	recon_err_init(&err);
	rc = recon_run_window(ctx, st, win, &sum, &err);
	if (json)
		print_json(ctx, st, &sum);
	else if (!ctx->quiet || rc < 0)
		print_text(ctx, st, &sum);
	if (rc < 0) {
		recon_log(RECON_LOG_ERROR, "%s", sum.error);
		return sum.exit_code ? sum.exit_code : 1;
	}
	return 0;
}

static int fail(const struct recon_err *err)
{
	char buf[512];

	recon_log(RECON_LOG_ERROR, "%s", recon_err_str(err, buf, sizeof(buf)));
	return recon_err_exit_code(err->code);
}

static void say(const struct recon_ctx *ctx, bool json, const char *fmt, ...) RECON_PRINTF(3, 4);
static void say(const struct recon_ctx *ctx, bool json, const char *fmt, ...)
{
	va_list ap;

	if (ctx->quiet || json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* A t1 day is due once its end plus t1.after (the provider's publish lag) has passed. */
static int64_t due_at(const struct recon_job *job, int64_t day)
{
	struct recon_window win;

	recon_run_day_window(job, day, &win);
	return win.end + job->t1_after_ms;
}

/* The latest due day (yesterday, or earlier while the provider's lag runs). */
static int64_t last_due_day(const struct recon_ctx *ctx)
{
	int64_t d = recon_tz_day_of(ctx->job->tz, ctx->now) - 1;

	while (due_at(ctx->job, d) > ctx->now)
		d--;
	return d;
}

/* exit 64 for a day not yet due, saying when it will be */
static int not_due(const struct recon_ctx *ctx, const char *cmd, int64_t day)
{
	char d[16], at[40];

	recon_date_format(day, d, sizeof(d));
	recon_time_format_local(ctx->job->tz, due_at(ctx->job, day), at, sizeof(at));
	fprintf(stderr,
		"recon %s: job '%s': %s is not due yet: it becomes due at %s (the day's end "
		"plus t1.after)\n",
		cmd, ctx->job->name, d, at);
	return 64;
}

/* t1: the days to run. Returns the exit code when there is nothing to run, else -1. */
static int plan_t1(const struct recon_ctx *ctx, struct recon_state *st, bool json, const char *date,
		   int64_t *first, int64_t *last, struct recon_err *err)
{
	const struct recon_job *job = ctx->job;
	int64_t due = last_due_day(ctx), wm = 0, d, run_id;
	bool have_wm;
	char a[40], b[16];
	int rc;

	rc = recon_state_watermark_get(st, job->name, "t1", &wm, err);
	if (rc < 0 && rc != RECON_ENOTFOUND)
		return fail(err);
	have_wm = rc == 0;
	if (date) {
		if (recon_date_parse(date, &d, err) < 0) {
			fail(err);
			return 64;
		}
		if (d > due)
			return not_due(ctx, "run", d);
		*first = *last = d;
		if (!ctx->dry_run) {
			/* "already reconciled" only of a day a run reconciled */
			struct recon_window win;
			recon_run_day_window(job, d, &win);
			rc = recon_state_window_reconciled(st, job->name, "t1", win.start, win.end,
							   &run_id, err);
			if (rc < 0 && rc != RECON_ENOTFOUND)
				return fail(err);
			if (rc == 0) {
				say(ctx, json,
				    "recon run: job '%s': %s is already reconciled (run %lld); use "
				    "'recon rerun --from %s --to %s' to recompute it\n",
				    job->name, date, (long long)run_id, date, date);
				return 0;
			}
		}
		return -1;
	}
	if (!have_wm) {
		*first = *last = due;
		return -1;
	}
	*first = recon_tz_day_of(job->tz, wm);
	*last = due;
	if (*first > *last) {
		recon_time_format_utc(wm, a, sizeof(a));
		recon_date_format(due, b, sizeof(b));
		say(ctx, json,
		    "recon run: job '%s': t1 is up to date (reconciled until %s, %s done)\n",
		    job->name, a, b);
		return 0;
	}
	if (*last - *first + 1 > job->t1_max_days) {
		recon_log(RECON_LOG_WARN,
			  "job '%s': %lld days behind; this run catches up %lld, the next runs the "
			  "rest",
			  job->name, (long long)(*last - *first + 1), (long long)job->t1_max_days);
		*last = *first + job->t1_max_days - 1;
	}
	return -1;
}

/* hot: catch up window by window from the watermark, bounded per invocation. */
static int run_hot(const struct recon_ctx *ctx, struct recon_state *st, bool json,
		   struct recon_err *err)
{
	const struct recon_job *job = ctx->job;
	int64_t wm, limit = ctx->now - job->hot_lag_ms, n = 0;
	struct recon_window win;
	char a[40], b[40];
	int rc, code = 0;

	rc = recon_state_watermark_get(st, job->name, "hot", &wm, err);
	if (rc == RECON_ENOTFOUND) {
		if (job->hot_start_set) {
			wm = job->hot_start;
		} else {
			int64_t end;
			recon_tz_day_bounds(job->tz, recon_tz_day_of(job->tz, ctx->now), &wm, &end);
		}
	} else if (rc < 0) {
		return fail(err);
	}
	while (n < job->hot_max_windows) {
		int64_t end = wm + job->hot_size_ms < limit ? wm + job->hot_size_ms : limit;
		if (end <= wm)
			break;
		recon_run_span_window(job, wm, end, &win);
		code = one_window(ctx, st, &win, json);
		n++;
		if (code || ctx->dry_run)
			return code; /* a dry run moves no watermark: one window */
		wm = end;
	}
	recon_time_format_utc(wm, a, sizeof(a));
	if (!n) {
		recon_time_format_utc(wm + job->hot_size_ms + job->hot_lag_ms, b, sizeof(b));
		say(ctx, json,
		    "recon run: job '%s': no hot window due (watermark %s; the next full window "
		    "is due at %s)\n",
		    job->name, a, b);
	} else if (limit - wm >= job->hot_size_ms) {
		recon_log(RECON_LOG_WARN,
			  "job '%s': hot is behind: reconciled until %s, about %lld more windows "
			  "to catch up on the next ticks",
			  job->name, a, (long long)((limit - wm) / job->hot_size_ms));
	}
	return 0;
}

/* What one invocation runs, besides the store: the days (t1, rerun) or the hot catch-up. */
struct plan {
	bool rerun, json;
	const char *date;
	int64_t first, last;
	const char *partition;	/* --partition I/N, or NULL */
	const char *partitions; /* --partitions N, or NULL */
	bool sequential;
};

/*
 * A heartbeat the last run could not write (a full disk after its watermark
 * moved) is written again by the next invocation, before anything else, so
 * monitoring never trusts a stale file for longer than one tick.
 */
static void refresh_heartbeat(const struct recon_ctx *ctx, struct recon_state *st)
{
	const struct recon_job *job = ctx->job;
	struct recon_err e;
	int64_t wm;

	recon_err_init(&e);
	if (!job->heartbeat_path || ctx->dry_run ||
	    recon_state_watermark_get(st, job->name, recon_mode_name(ctx->mode), &wm, &e) < 0)
		return; /* nothing reconciled yet: no heartbeat to stand for it */
	if (recon_heartbeat_write_partition(st, job->name, &job->upstream.part, job->heartbeat_path,
					    &e) < 0)
		recon_log(RECON_LOG_WARN, "cannot write the heartbeat '%s': %s",
			  job->heartbeat_path, e.msg);
}

/* Runs the plan against the job's state store (a partition's, when it is one). */
static int run_store(struct recon_ctx *ctx, const struct plan *plan)
{
	const struct recon_job *job = ctx->job;
	struct recon_state *st = NULL;
	struct recon_err err;
	struct recon_window win;
	int64_t day, first = plan->first, last = plan->last;
	const bool rerun = plan->rerun, json = plan->json;
	const char *date = plan->date;
	int lock = -1, code = 0;

	recon_err_init(&err);
	/* the lock first: a store is created and migrated by one process only */
	if (recon_state_lock(job->state_path, job->name, ctx->now, job->lock_wait_ms, &lock, &err) <
		0 ||
	    recon_state_open(&st, job->state_path, true, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	/* holding the lock, any run of this job still marked running died: say so */
	if (recon_state_abandon_running(st, job->name, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	refresh_heartbeat(ctx, st);
	if (ctx->mode == RECON_MODE_HOT) {
		code = run_hot(ctx, st, json, &err);
		goto out;
	}
	if (!rerun) {
		code = plan_t1(ctx, st, json, date, &first, &last, &err);
		if (code >= 0)
			goto out; /* nothing to run, or an error plan_t1 already reported */
		code = 0;
	}
	for (day = first; day <= last; day++) {
		recon_run_day_window(job, day, &win);
		if (win.end <= win.start) {
			/* a date the zone skipped (Pacific/Apia 2011-12-30): no hour of it exists
			 */
			char d[16];
			recon_date_format(day, d, sizeof(d));
			say(ctx, json, "recon run: job '%s': %s does not exist in %s (skipped)\n",
			    job->name, d, job->tz_name);
			continue;
		}
		code = one_window(ctx, st, &win, json);
		if (code)
			break; /* a failed day stops the range: later days wait for it */
	}
out:
	recon_state_unlock(lock);
	recon_state_close(st);
	return code;
}

/*
 * The partitions to run: --partition I/N, that one; --partitions N --sequential,
 * or a job with "partition": {"count": N} and neither option, each in turn in
 * this process (a grace-hash split: memory holds one partition's rows). They
 * are independent: one failing does not stop the next; the first failure's
 * exit code is returned. An unpartitioned job runs its one store.
 */
static int run_partitions(struct recon_ctx *ctx, struct recon_job *job, const char *job_path,
			  const struct plan *plan, struct recon_err *err)
{
	struct recon_partition one = {0, 0};
	int64_t n = job->partition_count;
	int code = 0;

	if (plan->partition && (plan->partitions || plan->sequential)) {
		fprintf(stderr, "recon run: --partition runs one partition; --partitions N "
				"--sequential runs them all\n");
		return 64;
	}
	if (plan->partitions) {
		struct recon_partition all;
		char text[32];
		if (!plan->sequential) {
			fprintf(stderr, "recon run: --partitions N needs --sequential (one process "
					"after another); in parallel, start one process per "
					"--partition I/N\n");
			return 64;
		}
		snprintf(text, sizeof(text), "0/%s", plan->partitions);
		if (recon_partition_parse(text, job->partition_count, &all, err) < 0)
			return fail(err);
		n = all.count;
	} else if (plan->sequential && !n) {
		fprintf(stderr,
			"recon run: --sequential needs --partitions N (or partition.count in "
			"the job)\n");
		return 64;
	}
	if (plan->partition) {
		if (recon_partition_parse(plan->partition, job->partition_count, &one, err) < 0)
			return fail(err);
		recon_partition_apply(job, &one);
		return run_store(ctx, plan);
	}
	if (!n)
		return run_store(ctx, plan);
	for (int64_t i = 0; i < n; i++) {
		struct recon_partition p = {(uint32_t)i, (uint32_t)n};
		struct recon_job *pj = NULL;
		struct recon_ctx pctx = *ctx;
		int c;
		/* each partition its own job: its paths are the partition's */
		if (recon_job_load(&pj, job_path, err) < 0)
			return fail(err);
		recon_partition_apply(pj, &p);
		pctx.job = pj;
		c = run_store(&pctx, plan);
		if (c && !code)
			code = c;
		recon_job_free(pj);
	}
	return code;
}

/* The options of run and rerun, as given. */
struct run_opts {
	bool rerun;
	const char *job_path, *mode, *date, *from, *to, *upstream;
	bool dry_run, json, quiet, verbose;
	const char *partition, *partitions;
	bool sequential;
};

/*
 * Parses the options, sets the log level, and refuses combinations that
 * cannot run. Returns the exit code when the command ends here, else -1.
 */
static int parse_opts(int argc, char **argv, struct run_opts *o)
{
	const char *cmd = argv[0];
	struct recon_opt opts[] = {
	    {"job", true, &o->job_path, NULL},
	    {"mode", true, &o->mode, NULL},
	    {"date", true, &o->date, NULL},
	    {"from", true, &o->from, NULL},
	    {"to", true, &o->to, NULL},
	    {"upstream", true, &o->upstream, NULL},
	    {"dry-run", false, NULL, &o->dry_run},
	    {"json", false, NULL, &o->json},
	    {"quiet", false, NULL, &o->quiet},
	    {"verbose", false, NULL, &o->verbose},
	    {"partition", true, &o->partition, NULL},
	    {"partitions", true, &o->partitions, NULL},
	    {"sequential", false, NULL, &o->sequential},
	    {NULL, false, NULL, NULL},
	};
	int code;

	if ((code = recon_opt_start(argc, argv, opts, o->rerun ? rerun_usage : run_usage)) >= 0)
		return code;
	if (o->quiet)
		recon_log_set_level(RECON_LOG_WARN);
	else if (o->verbose)
		recon_log_set_level(RECON_LOG_DEBUG);
	if (!o->job_path)
		return recon_opt_missing(cmd, "--job FILE");
	if (o->rerun && (!o->from || !o->to))
		return recon_opt_missing("rerun", "--from and --to");
	if ((o->rerun && (o->date || o->mode)) || (!o->rerun && (o->from || o->to))) {
		fprintf(stderr, "recon %s: %s; try 'recon %s --help'\n", cmd,
			o->rerun ? "rerun takes --from and --to, not --date or --mode"
				 : "run takes --date, not --from or --to (that is 'recon rerun')",
			cmd);
		return 64;
	}
	if (o->mode && strcmp(o->mode, "t1") && strcmp(o->mode, "hot")) {
		fprintf(stderr, "recon run: unknown mode '%s' (t1 or hot)\n", o->mode);
		return 64;
	}
	if (o->mode && !strcmp(o->mode, "hot") && o->date) {
		fprintf(stderr, "recon run: --date applies to t1 runs; hot windows follow the "
				"watermark\n");
		return 64;
	}
	return -1;
}

/*
 * Loads the job into *job (caller frees with recon_job_free), with the
 * statement of --upstream when given. Returns the exit code on failure, else -1.
 */
static int load_job(const char *cmd, const struct run_opts *o, enum recon_mode mode,
		    struct recon_job **job, struct recon_err *err)
{
	if (recon_job_load(job, o->job_path, err) < 0)
		return fail(err);
	/* --upstream FILE|-: one statement, so one window (a t1 day named by --date) */
	if (o->upstream && (mode == RECON_MODE_HOT || (!o->rerun && !o->date) ||
			    (o->rerun && strcmp(o->from, o->to) != 0))) {
		fprintf(stderr,
			"recon %s: --upstream is one statement: name its day with --date "
			"(t1), or --from D --to D\n",
			cmd);
		return 64;
	}
	if (o->upstream && recon_job_override_upstream(*job, o->upstream, err) < 0)
		return fail(err);
	return -1;
}

/*
 * rerun: the days from --from to --to, never one not yet due. Returns the
 * exit code when there is nothing to run, else -1.
 */
static int rerun_days(const struct recon_ctx *ctx, const struct run_opts *o, int64_t *first,
		      int64_t *last, struct recon_err *err)
{
	if (recon_date_parse(o->from, first, err) < 0 || recon_date_parse(o->to, last, err) < 0) {
		fail(err);
		return 64;
	}
	if (*last < *first) {
		fprintf(stderr, "recon rerun: --to %s is before --from %s\n", o->to, o->from);
		return 64;
	}
	/* a rerun never reaches a day not yet due */
	if (*first > last_due_day(ctx))
		return not_due(ctx, "rerun", *first);
	if (*last > last_due_day(ctx)) {
		char d[16];
		*last = last_due_day(ctx);
		recon_date_format(*last, d, sizeof(d));
		recon_log(RECON_LOG_WARN, "rerun stops at %s: the days after it are not due yet",
			  d);
	}
	return -1;
}

int recon_cmd_run(int argc, char **argv)
{
	struct run_opts o = {.rerun = !strcmp(argv[0], "rerun")};
	struct recon_job *job = NULL;
	struct recon_ctx ctx = {0};
	struct recon_err err;
	int64_t first = 0, last = -1;
	struct plan plan;
	int code;

	recon_err_init(&err);
	if ((code = parse_opts(argc, argv, &o)) >= 0)
		return code;
	ctx.mode = o.mode && !strcmp(o.mode, "hot") ? RECON_MODE_HOT : RECON_MODE_T1;
	if ((code = load_job(argv[0], &o, ctx.mode, &job, &err)) >= 0)
		goto out;
	ctx.job = job;
	ctx.dry_run = o.dry_run;
	ctx.quiet = o.quiet;
	if (recon_time_now(&ctx.now, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	if (o.rerun && (code = rerun_days(&ctx, &o, &first, &last, &err)) >= 0)
		goto out;
	plan = (struct plan){
	    .rerun = o.rerun,
	    .json = o.json,
	    .date = o.date,
	    .first = first,
	    .last = last,
	    .partition = o.partition,
	    .partitions = o.partitions,
	    .sequential = o.sequential,
	};
	code = run_partitions(&ctx, job, o.job_path, &plan, &err);
out:
	recon_job_free(job);
	return code;
}
