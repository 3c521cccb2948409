#include "recon_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recon_buf.h"
#include "recon_heartbeat.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_report.h"
#include "recon_sha256.h"
#include "recon_state.h"
#include "recon_time.h"

/* Rejects stored per run; beyond this they are counted, and the run says so. */
#define REJECTS_KEPT 10000

const char *recon_mode_name(enum recon_mode mode)
{
	return mode == RECON_MODE_HOT ? "hot" : "t1";
}

void recon_run_day_window(const struct recon_job *job, int64_t day, struct recon_window *win)
{
	recon_tz_day_bounds(job->tz, day, &win->start, &win->end);
	win->read_start = win->start - job->margin_ms;
	win->read_end = win->end + job->margin_ms;
	win->day = day;
}

void recon_run_span_window(const struct recon_job *job, int64_t start, int64_t end,
			   struct recon_window *win)
{
	win->start = start;
	win->end = end;
	win->read_start = start - job->margin_ms;
	win->read_end = end + job->margin_ms;
	win->day = recon_tz_day_of(job->tz, start);
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Rejects collected during a run; strings in their own arena. */
struct rejects {
	struct recon_reject *v;
	size_t n, alloc;
	uint64_t total;
	struct recon_arena arena;
	char first[1024];
};

static void reject_add(struct rejects *r, const char *side, const char *origin,
		       const struct recon_err *e, const char *raw, size_t raw_len)
{
	struct recon_reject *x;

	if (!r->total)
		snprintf(r->first, sizeof(r->first), "%s: '%s': %s", origin, e->where, e->msg);
	r->total++;
	if (r->n >= REJECTS_KEPT)
		return;
	recon_grow((void **)&r->v, &r->alloc, r->n + 1, sizeof(*r->v));
	x = &r->v[r->n++];
	x->side = side;
	x->origin = recon_arena_strndup(&r->arena, origin, strlen(origin));
	x->field = recon_arena_strndup(&r->arena, e->where, strlen(e->where));
	x->reason = recon_arena_strndup(&r->arena, e->msg, strlen(e->msg));
	x->raw = raw ? recon_arena_strndup(&r->arena, raw, raw_len > 1024 ? 1024 : raw_len) : NULL;
}

/* Splits a joined key into its parts (pointers into a scratch copy). */
static void split_key(const char *key, size_t len, unsigned nkey, char *scratch, const char **parts,
		      size_t *lens)
{
	unsigned i = 0;
	size_t start = 0;

	memcpy(scratch, key, len);
	for (size_t j = 0; j <= len && i < nkey; j++) {
		if (j == len || key[j] == RECON_KEY_SEP) {
			parts[i] = scratch + start;
			lens[i] = j - start;
			i++;
			start = j + 1;
		}
	}
	for (; i < nkey; i++) {
		parts[i] = scratch + len;
		lens[i] = 0;
	}
}

struct reader {
	const struct recon_ctx *ctx;
	const struct recon_window *win;
	struct recon_compare *cmp;
	struct rejects *rejects;
	struct recon_run_summary *sum;
};

/*
 * Reads rows from src into the compare until RECON_DONE. `lookup`: rows come
 * from a key lookup (no time filter, marked looked-up, not counted as read
 * twice).
 */
static int drain(struct reader *rd, const struct recon_side *side, int which,
		 struct recon_source *src, bool lookup, struct recon_err *err)
{
	const bool database = side->kind != RECON_KIND_CSV;
	const struct recon_raw_row *raw;
	struct recon_row row;
	struct recon_err e;
	char origin[512];
	int rc;

	while ((rc = recon_source_next(src, &raw, err)) == RECON_ROW) {
		recon_err_init(&e);
		rc = recon_normalize_row(side, raw, recon_compare_arena(rd->cmp), &row, &e);
		if (rc == RECON_NORM_ROW && database && !lookup &&
		    (row.time < rd->win->read_start || row.time >= rd->win->read_end))
			continue; /* beyond the read range: the pushed-down bound was widened */
		rd->sum->rows_read[which]++;
		if (rc == RECON_NORM_SKIPPED) {
			rd->sum->rows_skipped++;
			continue;
		}
		if (rc < 0) {
			if (raw->line)
				snprintf(origin, sizeof(origin), "%s:%llu", src->name,
					 (unsigned long long)raw->line);
			else
				snprintf(origin, sizeof(origin), "%s", src->name);
			rd->sum->rows_rejected[which]++;
			if (row.key)
				recon_compare_add_rejected(rd->cmp, which, &row);
			reject_add(rd->rejects, side->role, origin, &e, raw->raw, raw->raw_len);
			continue;
		}
		if (lookup)
			row.flags |= RECON_ROW_LOOKED_UP;
		recon_compare_add(rd->cmp, which, &row);
	}
	return rc < 0 ? rc : 0;
}

/* Looks up, on `which` side, the keys the compare cannot assert yet. */
static int lookups(struct reader *rd, const struct recon_side *side, int which,
		   struct recon_source *src, struct recon_err *err)
{
	const char **keys;
	const uint32_t *lens;
	size_t n = recon_compare_pending_lookups(rd->cmp, which, &keys, &lens);
	const char *parts[RECON_KEY_PARTS_MAX];
	size_t plens[RECON_KEY_PARTS_MAX];
	char *scratch = NULL;
	size_t scratch_len = 0;
	const char **copy = NULL;
	uint32_t *copy_lens = NULL;
	int rc = 0;

	if (!n || !src->ops->lookup)
		return 0;
	/* the compare's list is reused by later calls: take a copy first */
	copy = recon_xmalloc(recon_st_mult(n, sizeof(*copy)));
	copy_lens = recon_xmalloc(recon_st_mult(n, sizeof(*copy_lens)));
	memcpy(copy, keys, n * sizeof(*copy));
	memcpy(copy_lens, lens, n * sizeof(*copy_lens));
	for (size_t i = 0; i < n; i++) {
		if (copy_lens[i] + 1 > scratch_len) {
			scratch_len = copy_lens[i] + 1;
			scratch = recon_xrealloc(scratch, scratch_len);
		}
		split_key(copy[i], copy_lens[i], side->nkey, scratch, parts, plens);
		if ((rc = recon_source_lookup(src, parts, plens, err)) < 0 ||
		    (rc = drain(rd, side, which, src, true, err)) < 0)
			goto out;
		rd->sum->lookups[which]++;
	}
out:
	free(scratch);
	free(copy);
	free(copy_lens);
	return rc;
}

/* Pulls a failed run's message into the summary (passwords never reach here). */
static void note_error(struct recon_run_summary *sum, const struct recon_err *err)
{
	recon_err_str(err, sum->error, sizeof(sum->error));
	sum->exit_code = recon_err_exit_code(err->code);
}

int recon_run_window(const struct recon_ctx *ctx, struct recon_state *st,
		     const struct recon_window *win, struct recon_run_summary *sum,
		     struct recon_err *err)
{
	const struct recon_job *job = ctx->job;
	struct recon_run_info info;
	struct recon_run_result res;
	struct recon_source *up = NULL, *local = NULL;
	struct recon_compare *cmp = NULL;
	struct rejects rejects;
	struct reader rd;
	char date[16], config_sha[65];
	const struct recon_diff *diffs;
	char **json = NULL;
	size_t ndiffs = 0;
	int64_t t0 = monotonic_ms();
	int rc = 0;

	memset(sum, 0, sizeof(*sum));
	memset(&rejects, 0, sizeof(rejects));
	recon_arena_init(&rejects.arena);
	sum->win = *win;
	recon_date_format(win->day, date, sizeof(date));
	recon_sha256_hex(job->config_text, strlen(job->config_text), config_sha);
	info = (struct recon_run_info){
	    .job = job->name,
	    .mode = recon_mode_name(ctx->mode),
	    .window_start = win->start,
	    .window_end = win->end,
	    .business_date = date,
	    .dry_run = ctx->dry_run,
	    .started_at = ctx->now,
	    .config_sha256 = config_sha,
	};
	if ((rc = recon_state_run_begin(st, &info, &sum->run_id, err)) < 0)
		goto fail_unrecorded;

	/* a t1 statement file is its day's window; in hot windows entry times decide */
	cmp = recon_compare_new(job, win, ctx->now,
				job->upstream.kind == RECON_KIND_CSV && ctx->mode == RECON_MODE_T1);
	rd = (struct reader){ctx, win, cmp, &rejects, sum};
	if ((rc = recon_source_open(&up, &job->upstream, win, err)) < 0 ||
	    (rc = drain(&rd, &job->upstream, RECON_SIDE_UPSTREAM, up, false, err)) < 0 ||
	    (rc = recon_source_open(&local, &job->local, win, err)) < 0 ||
	    (rc = drain(&rd, &job->local, RECON_SIDE_LOCAL, local, false, err)) < 0)
		goto fail;
	/* certainty before assertion: look up by key, without a time bound */
	if ((rc = lookups(&rd, &job->local, RECON_SIDE_LOCAL, local, err)) < 0 ||
	    (rc = lookups(&rd, &job->upstream, RECON_SIDE_UPSTREAM, up, err)) < 0)
		goto fail;
	recon_compare_classify(cmp);
	sum->counts = *recon_compare_counts(cmp);

	if (rejects.n &&
	    (rc = recon_state_add_rejects(st, sum->run_id, rejects.v, rejects.n, err)) < 0)
		goto fail;
	if ((int64_t)rejects.total > job->max_rejects) {
		rc = recon_err_set(err, RECON_EINPUT, NULL,
				   "%llu row%s rejected (max_rejects %lld); first: %s",
				   (unsigned long long)rejects.total, rejects.total == 1 ? "" : "s",
				   (long long)job->max_rejects, rejects.first);
		goto fail;
	}

	diffs = recon_compare_diffs(cmp, &ndiffs);
	json = recon_xcalloc(ndiffs ? ndiffs : 1, sizeof(*json));
	for (size_t i = 0; i < ndiffs; i++)
		json[i] = recon_report_diff_json(job, &diffs[i], up->name, local->name);
	if ((rc = recon_state_record_diffs(st, job->name, sum->run_id, ctx->now, diffs, json,
					   ndiffs, cmp, !ctx->dry_run, &sum->resolved, err)) < 0)
		goto fail;
	/* differences are committed: now act on them, each action idempotent */
	if ((rc = recon_actions_run(job, st, sum->run_id, ctx->now, ctx->dry_run, diffs, json,
				    ndiffs, &sum->actions, err)) < 0)
		goto fail;

	sum->duration_ms = monotonic_ms() - t0;
	sum->success = true;
	res = (struct recon_run_result){0};
	res.outcome = "success";
	res.finished_at = ctx->now + sum->duration_ms;
	goto record;

fail:
	sum->duration_ms = monotonic_ms() - t0;
	note_error(sum, err);
	res = (struct recon_run_result){0};
	res.outcome = "failed";
	res.exit_code = sum->exit_code;
	res.error = sum->error;
	res.finished_at = ctx->now + sum->duration_ms;
record:
	res.rows_upstream = sum->rows_read[0];
	res.rows_local = sum->rows_read[1];
	res.rows_rejected = sum->rows_rejected[0] + sum->rows_rejected[1];
	res.rows_skipped = sum->rows_skipped;
	res.rows_other = sum->counts.rows_other[0] + sum->counts.rows_other[1];
	res.keys_compared = sum->counts.keys_owned;
	res.matched = sum->counts.matched;
	res.in_flight = sum->counts.in_flight;
	res.resolved = sum->resolved;
	memcpy(res.classes, sum->counts.classes, sizeof(res.classes));
	{
		struct recon_err e2;
		recon_err_init(&e2);
		if (recon_state_run_finish(st, sum->run_id, &res, &e2) < 0 && sum->success) {
			*err = e2;
			rc = e2.code;
			sum->success = false;
			note_error(sum, err);
		}
	}
	if (sum->success && !ctx->dry_run) {
		/*
		 * Last: the watermark, then the heartbeat that exports it. The
		 * watermark only moves over contiguous windows: a day run ahead of
		 * an unreconciled gap leaves it where it is.
		 */
		int64_t wm = 0, until = win->end;
		int g =
		    recon_state_watermark_get(st, job->name, recon_mode_name(ctx->mode), &wm, err);
		if (g < 0 && g != RECON_ENOTFOUND) {
			rc = g;
			sum->success = false;
			note_error(sum, err);
			goto out;
		}
		if (g == 0 && win->start > wm) {
			char a[40];
			recon_time_format_utc(wm, a, sizeof(a));
			recon_log(RECON_LOG_WARN,
				  "watermark stays at %s: the windows before this one are not "
				  "reconciled yet",
				  a);
			until = wm;
		}
		if ((rc = recon_state_success(st, job->name, recon_mode_name(ctx->mode), until,
					      sum->run_id, ctx->now, sum->duration_ms, err)) < 0 ||
		    (job->heartbeat_path &&
		     (rc = recon_heartbeat_write(st, job->name, job->heartbeat_path, err)) < 0)) {
			sum->success = false;
			note_error(sum, err);
		}
	}
	goto out;

fail_unrecorded:
	note_error(sum, err);
out:
	if (json)
		for (size_t i = 0; i < ndiffs; i++)
			free(json[i]);
	free(json);
	recon_source_close(up);
	recon_source_close(local);
	recon_compare_free(cmp);
	free(rejects.v);
	recon_arena_release(&rejects.arena);
	return sum->success ? 0 : (rc < 0 ? rc : RECON_EINTERNAL);
}
