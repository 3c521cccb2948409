#include "recon_run.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recon_buf.h"
#include "recon_heartbeat.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_partition.h"
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

/* One side of the read phase. */
struct reader {
	const struct recon_window *win;
	struct recon_compare *cmp;
	struct recon_compare_feeder *feeder; /* NULL: rows go to the compare directly */
	const struct recon_side *side;
	int which; /* RECON_SIDE_* */
	struct recon_source *src;
	struct rejects rejects;
	struct recon_arena scratch; /* strings of the row being normalized */
	bool window_only;	    /* entries outside [start, end) belong to other windows */
	uint64_t rows_read, rows_rejected, rows_skipped, lookups, rows_other;
	uint64_t rows_partition;   /* another key-hash partition's rows: not read, not rejected */
	atomic_uint_fast64_t seen; /* rows_read, for the progress line of the other thread */
	atomic_bool *stop;	   /* a side failed: the other stops reading */
	struct recon_err err;
	int rc;
	/* the other side's reader: its rows for the progress line, its lane for pairing */
	const struct reader *peer;
	int64_t t0, shown;
	int64_t ms; /* wall time the side took to open and read */
	bool progress;
	/* the lane hashing its input (a plain file), once open: the other thread may help */
	_Atomic(struct recon_sha_lane *) lane;
	atomic_int lane_state; /* 0 not open yet, 1 lane set, 2 none (a database, a .zip, ...) */
	/* both sides read on two threads (paired set): whether this one's lane queues its
	   input for the peer's reader to hash beside its own (recon_sha_lane_pair) */
	bool queues;
	atomic_flag *paired;
};

static void reader_init(struct reader *rd, const struct recon_window *win,
			struct recon_compare *cmp, const struct recon_side *side, int which,
			atomic_bool *stop)
{
	memset(rd, 0, sizeof(*rd));
	rd->win = win;
	rd->cmp = cmp;
	rd->side = side;
	rd->which = which;
	rd->stop = stop;
	atomic_init(&rd->seen, 0);
	atomic_init(&rd->lane, NULL);
	atomic_init(&rd->lane_state, 0);
	recon_arena_init(&rd->rejects.arena);
	recon_arena_init(&rd->scratch);
	recon_err_init(&rd->err);
}

static void reader_release(struct reader *rd)
{
	free(rd->rejects.v);
	recon_arena_release(&rd->rejects.arena);
	recon_arena_release(&rd->scratch);
}

/* Adds a side's rejects (in order) and counts to the run's. */
static void reader_merge(struct reader *rd, struct rejects *to, struct recon_run_summary *sum)
{
	struct rejects *r = &rd->rejects;

	if (r->total && !to->total)
		memcpy(to->first, r->first, sizeof(to->first));
	for (size_t i = 0; i < r->n && to->n < REJECTS_KEPT; i++) {
		const struct recon_reject *x = &r->v[i];
		struct recon_reject *y;
		recon_grow((void **)&to->v, &to->alloc, to->n + 1, sizeof(*to->v));
		y = &to->v[to->n++];
		*y = *x;
		y->origin = recon_arena_strndup(&to->arena, x->origin, strlen(x->origin));
		y->field = recon_arena_strndup(&to->arena, x->field, strlen(x->field));
		y->reason = recon_arena_strndup(&to->arena, x->reason, strlen(x->reason));
		y->raw = x->raw ? recon_arena_strndup(&to->arena, x->raw, strlen(x->raw)) : NULL;
	}
	to->total += r->total;
	sum->rows_read[rd->which] += rd->rows_read;
	sum->rows_rejected[rd->which] += rd->rows_rejected;
	sum->rows_skipped += rd->rows_skipped;
	sum->lookups[rd->which] += rd->lookups;
	sum->rows_other[rd->which] += rd->rows_other;
	sum->rows_partition[rd->which] += rd->rows_partition;
	free(r->v);
	r->v = NULL;
	r->n = r->alloc = 0;
	r->total = 0;
	recon_arena_release(&r->arena);
	rd->rows_read = rd->rows_rejected = rd->rows_skipped = rd->lookups = rd->rows_other = 0;
	rd->rows_partition = 0;
}

#define PROGRESS_EVERY 65536 /* rows between progress checks */
#define PROGRESS_AFTER 2000  /* ms: quick runs show nothing */

/* A progress line on stderr, at most every 2 s (only on a terminal, not --quiet). */
static void progress(struct reader *rd)
{
	int64_t now = recon_monotonic_ms(), ms = now - rd->t0;
	uint64_t up, local;

	if (ms < PROGRESS_AFTER || now - rd->shown < PROGRESS_AFTER)
		return;
	rd->shown = now;
	up = rd->which == RECON_SIDE_UPSTREAM ? rd->rows_read : atomic_load(&rd->peer->seen);
	local = rd->which == RECON_SIDE_LOCAL ? rd->rows_read : atomic_load(&rd->peer->seen);
	recon_log(RECON_LOG_INFO, "reading: upstream %llu rows, local %llu rows, %llu rows/s",
		  (unsigned long long)up, (unsigned long long)local,
		  (unsigned long long)((up + local) * 1000 / (uint64_t)ms));
}

/* A key asked for by a lookup (joined form, as the compare holds it). */
struct asked_key {
	const char *key;
	uint32_t len;
};

static int asked_cmp(const void *a, const void *b)
{
	const struct asked_key *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * Rows a lookup brings back under another key were not asked for: an
 * integer column finds row 7 for "007", a case-insensitive collation "ABC"
 * for "abc". Folded in, they would count a row of the window twice (a false
 * duplicate) and leave the asked key missing anyway; they are dropped.
 */
static bool was_asked(const struct asked_key *asked, size_t n, const char *key, size_t len)
{
	struct asked_key k = {key, (uint32_t)len};

	return bsearch(&k, asked, n, sizeof(*asked), asked_cmp) != NULL;
}

/*
 * Reads rd's source to its end into the compare. lookup: the rows answer a
 * lookup of the n keys in asked (sorted by asked_cmp); others are dropped.
 */
static int drain(struct reader *rd, bool lookup, const struct asked_key *asked, size_t nasked,
		 struct recon_err *err)
{
	const struct recon_side *side = rd->side;
	const bool database = recon_source_has(side, RECON_SOURCE_TIME_PUSHDOWN);
	struct recon_source *src = rd->src;
	const struct recon_raw_row *raw;
	struct recon_row row;
	struct recon_err e;
	char origin[512];
	unsigned tick = 0;
	int rc;

	while ((rc = recon_source_next(src, &raw, err)) == RECON_ROW) {
		if (++tick == PROGRESS_EVERY) {
			tick = 0;
			atomic_store_explicit(&rd->seen, rd->rows_read, memory_order_relaxed);
			if (rd->stop && atomic_load(rd->stop))
				return 0; /* the other side failed: its error is the run's */
			if (rd->progress)
				progress(rd);
		}
		/* another partition's statement line: not worth normalizing */
		if (!lookup && recon_partition_row_skip(side, raw)) {
			rd->rows_partition++;
			continue;
		}
		/* the compare copies what it keeps: one scratch block serves every row */
		recon_arena_reset(&rd->scratch);
		recon_err_init(&e);
		rc = recon_normalize_row(side, raw, &rd->scratch, &row, &e);
		/* beyond the read range (the pushed-down bound was widened): not this
		   window's row, whether it reads cleanly or not */
		if ((rc == RECON_NORM_ROW || (rc < 0 && (row.flags & RECON_ROW_TIMED))) &&
		    database && !lookup &&
		    (row.time < rd->win->read_start || row.time >= rd->win->read_end))
			continue;
		if (lookup && row.key && !was_asked(asked, nasked, row.key, row.key_len))
			continue;
		if (!lookup && !recon_partition_row_ours(side, raw, rc, &row)) {
			rd->rows_partition++;
			continue;
		}
		rd->rows_read++;
		/* an upstream entry belongs to the window holding its time (DESIGN "Entries
		   belong to windows"): one read through the margins is another window's */
		if (rc == RECON_NORM_ROW && rd->window_only && !lookup &&
		    (row.time < rd->win->start || row.time >= rd->win->end)) {
			rd->rows_other++;
			continue;
		}
		if (rc == RECON_NORM_SKIPPED) {
			rd->rows_skipped++;
			continue;
		}
		if (rc < 0) {
			if (raw->line)
				snprintf(origin, sizeof(origin), "%s:%llu", src->name,
					 (unsigned long long)raw->line);
			else
				snprintf(origin, sizeof(origin), "%s", src->name);
			rd->rows_rejected++;
			if (row.key) {
				if (rd->feeder)
					recon_compare_feeder_add_rejected(rd->feeder, &row);
				else
					recon_compare_add_rejected(rd->cmp, rd->which, &row);
			}
			reject_add(&rd->rejects, side->role, origin, &e, raw->raw, raw->raw_len);
			continue;
		}
		if (lookup)
			row.flags |= RECON_ROW_LOOKED_UP;
		if (rd->feeder)
			recon_compare_feeder_add(rd->feeder, &row);
		else
			recon_compare_add(rd->cmp, rd->which, &row);
	}
	atomic_store_explicit(&rd->seen, rd->rows_read, memory_order_relaxed);
	return rc < 0 ? rc : 0;
}

/*
 * Both inputs plain files read at once: their lanes paired, the shorter
 * one's reader hashing its own bytes beside the longer one's (both
 * SHA-256 streams at once on one core; 1.4x the bytes per second). Each
 * reader calls it once its lane is known; whichever sees both lanes first
 * pairs them (each stores its own, then looks at the other's: one of them
 * sees both).
 */
static void pair_lanes(struct reader *rd)
{
	const struct reader *o = rd->peer, *reader, *queuer;

	if (!rd->paired || atomic_load(&rd->lane_state) != 1 || atomic_load(&o->lane_state) != 1 ||
	    atomic_flag_test_and_set(rd->paired))
		return;
	queuer = rd->queues ? rd : o;
	reader = rd->queues ? o : rd;
	(void)recon_sha_lane_pair(atomic_load(&reader->lane), atomic_load(&queuer->lane));
}

/* Opens and reads one side; ends its feeder whatever happened. */
static int read_side(struct reader *rd)
{
	int64_t t0 = recon_monotonic_ms();
	int rc;

	if ((rc = recon_source_open(&rd->src, rd->side, rd->win, &rd->err)) == 0) {
		struct recon_sha_lane *l = recon_source_csv_lane(rd->src);
		atomic_store(&rd->lane, l);
		atomic_store(&rd->lane_state, l ? 1 : 2);
		pair_lanes(rd);
		rc = drain(rd, false, NULL, 0, &rd->err);
	} else {
		atomic_store_explicit(&rd->lane_state, 2, memory_order_release);
	}
	rd->ms = recon_monotonic_ms() - t0;
	if (rc < 0 && rd->stop)
		atomic_store(rd->stop, true);
	recon_compare_feeder_free(rd->feeder); /* returns once the other side ended too */
	rd->feeder = NULL;
	rd->rc = rc;
	return rc;
}

/*
 * recon_compare_on_wait: the side that ended first hashes the other's input
 * as it is read (the SHA-256 is a fifth of reading a file). 1: it hashed
 * some; 0: nothing queued yet; -1: the other side has no lane (a database,
 * a .zip or .gz), nothing ever will be.
 */
static int help_other(void *arg, int side)
{
	struct reader *rds = arg;
	struct reader *o =
	    &rds[side == RECON_SIDE_UPSTREAM ? RECON_SIDE_LOCAL : RECON_SIDE_UPSTREAM];
	int state = atomic_load_explicit(&o->lane_state, memory_order_acquire);

	if (state != 1)
		return state == 2 ? -1 : 0;
	return recon_sha_lane_help(atomic_load_explicit(&o->lane, memory_order_acquire)) ? 1 : 0;
}

/* The upstream reader thread: waits at the gate until its feeder is set. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state; /* 0 wait, 1 go, -1 cancelled */
	struct reader *rd;
};

static void *read_side_thread(void *arg)
{
	struct gate *g = arg;
	int state;

	pthread_mutex_lock(&g->mu);
	while (!g->state)
		pthread_cond_wait(&g->cv, &g->mu);
	state = g->state;
	pthread_mutex_unlock(&g->mu);
	if (state > 0)
		read_side(g->rd);
	return NULL;
}

static void gate_open(struct gate *g, int state)
{
	pthread_mutex_lock(&g->mu);
	g->state = state;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/*
 * Reads both sides into the compare: the upstream on a second thread, the
 * local flow on this one, each feeding its half of the compare (the result is
 * the same as reading one after the other). On failure the first side's
 * error wins, as when the sides were read in turn; the sources stay open for
 * the lookups and are closed by the caller.
 */
static int read_both(const struct recon_ctx *ctx, struct reader rds[2], bool speculate,
		     struct recon_err *err)
{
	struct reader *up = &rds[RECON_SIDE_UPSTREAM], *local = &rds[RECON_SIDE_LOCAL];
	struct gate g = {.state = 0, .rd = up};
	atomic_flag paired = ATOMIC_FLAG_INIT;
	pthread_t th;
	bool threaded;

	up->t0 = local->t0 = recon_monotonic_ms();
	{
		uint64_t bu, bl;
		uint64_t nu = recon_source_estimate(up->side, up->win, &bu);
		uint64_t nl = recon_source_estimate(local->side, local->win, &bl);
		/*
		 * The speculation fails over to reading both inputs again: only when
		 * both can be (regular files, or a database queried anew), never a
		 * FIFO or a pipe.
		 */
		if (speculate && nu && recon_source_has(up->side, RECON_SOURCE_FILE) &&
		    (recon_source_has(local->side, RECON_SOURCE_REREADABLE) || nl))
			recon_compare_speculate_ids(up->cmp);
		/* a partition keeps about 1/N of the rows: sized for all, memory is not bounded */
		if (up->side->part.count > 1) {
			nu /= up->side->part.count;
			nl /= up->side->part.count;
		}
		recon_compare_reserve(up->cmp, nu > nl ? nu : nl, nu);
		/* the longer input queues for the shorter one's reader (pair_lanes) */
		up->queues = bu >= bl;
		local->queues = !up->queues;
	}
	local->progress = !ctx->quiet && isatty(STDERR_FILENO);
	local->peer = up;
	pthread_mutex_init(&g.mu, NULL);
	pthread_cond_init(&g.cv, NULL);
	threaded = pthread_create(&th, NULL, read_side_thread, &g) == 0;
	if (threaded) {
		up->peer = local;
		up->paired = local->paired = &paired;
		recon_compare_on_wait(up->cmp, help_other, rds);
		/* both feeders exist before either feeds */
		up->feeder = recon_compare_feeder_new(up->cmp, RECON_SIDE_UPSTREAM);
		local->feeder = recon_compare_feeder_new(local->cmp, RECON_SIDE_LOCAL);
		gate_open(&g, 1);
		read_side(local);
		pthread_join(th, NULL);
	} else {
		/* no second thread: one side after the other */
		up->stop = local->stop = NULL;
		if (read_side(up) == 0)
			read_side(local);
	}
	pthread_mutex_destroy(&g.mu);
	pthread_cond_destroy(&g.cv);
	/* no feeder waits any more: nobody helps; the lanes go with their sources */
	recon_compare_on_wait(up->cmp, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		recon_sha_lane_unpair(atomic_load(&rds[i].lane));
		atomic_store(&rds[i].lane, NULL);
		atomic_store(&rds[i].lane_state, 2);
		rds[i].paired = NULL;
	}
	if (up->rc < 0 || local->rc < 0) {
		*err = up->rc < 0 ? up->err : local->err;
		return up->rc < 0 ? up->rc : local->rc;
	}
	recon_log(RECON_LOG_DEBUG,
		  "read: upstream %llu rows in %lld.%03lld s, local %llu rows in %lld.%03lld s "
		  "(each side's own time, its share of the compare included)",
		  (unsigned long long)up->rows_read, (long long)(up->ms / 1000),
		  (long long)(up->ms % 1000), (unsigned long long)local->rows_read,
		  (long long)(local->ms / 1000), (long long)(local->ms % 1000));
	if (local->progress && recon_monotonic_ms() - local->t0 >= PROGRESS_AFTER) {
		int64_t ms = recon_monotonic_ms() - local->t0;
		recon_log(RECON_LOG_INFO,
			  "read: upstream %llu rows, local %llu rows in %lld.%01lld s",
			  (unsigned long long)up->rows_read, (unsigned long long)local->rows_read,
			  (long long)(ms / 1000), (long long)(ms % 1000 / 100));
	}
	return 0;
}

/* Looks up, on rd's side, the keys the compare cannot assert yet. */
static int lookups(struct reader *rd, struct recon_err *err)
{
	const char **keys;
	const uint32_t *lens;
	const struct recon_side *side = rd->side;
	struct recon_source *src = rd->src;
	size_t n;
	const char *parts[RECON_KEY_PARTS_MAX];
	size_t plens[RECON_KEY_PARTS_MAX];
	char *scratch = NULL;
	size_t scratch_len = 0;
	struct asked_key *asked = NULL;
	int rc = 0;

	if (!src->ops->lookup)
		return 0; /* files are read whole: nothing to look up */
	n = recon_compare_pending_lookups(rd->cmp, rd->which, &keys, &lens);
	if (!n)
		return 0;
	/* the compare's list is reused by later calls: take a copy, sorted for was_asked() */
	asked = recon_xmalloc(recon_st_mult(n, sizeof(*asked)));
	for (size_t i = 0; i < n; i++)
		asked[i] = (struct asked_key){keys[i], lens[i]};
	qsort(asked, n, sizeof(*asked), asked_cmp);
	for (size_t i = 0; i < n;) {
		/* a one-column key: many keys a query (the part is the whole key) */
		if (side->nkey == 1) {
			const size_t b = n - i < RECON_LOOKUP_BATCH ? n - i : RECON_LOOKUP_BATCH;
			const char *bkeys[RECON_LOOKUP_BATCH];
			size_t blens[RECON_LOOKUP_BATCH];
			for (size_t j = 0; j < b; j++) {
				bkeys[j] = asked[i + j].key;
				blens[j] = asked[i + j].len;
			}
			rc = recon_source_lookup_many(src, side, b, bkeys, blens, err);
			if (rc != RECON_ENOTFOUND) {
				if (rc < 0 || (rc = drain(rd, true, asked + i, b, err)) < 0)
					goto out;
				rd->lookups += b;
				i += b;
				continue;
			}
		}
		if (asked[i].len + 1 > scratch_len) {
			scratch_len = asked[i].len + 1;
			scratch = recon_xrealloc(scratch, scratch_len);
		}
		recon_key_split(asked[i].key, asked[i].len, side->nkey, scratch, parts, plens);
		if ((rc = recon_source_lookup(src, parts, plens, err)) < 0 ||
		    (rc = drain(rd, true, asked + i, 1, err)) < 0)
			goto out;
		rd->lookups++;
		i++;
	}
out:
	free(scratch);
	free(asked);
	return rc;
}

/*
 * The JSON lines of the differences (recon_report_diff_json), rendered by
 * whichever threads are free, a chunk of RENDER_TAKE lines at a time: a
 * second thread from the evaluation on, the run's own while it records them
 * (render_ready: the recorder takes each line as soon as it is there, and
 * renders chunks itself rather than wait). Each thread renders in a buffer of
 * its own and keeps its lines in an arena of its own, in huge pages: a
 * malloc() per line, 37 MB of them at 10M rows, faulted in 4 KiB at a time,
 * took a tenth of the evaluation and the recording.
 */
#define RENDER_TAKE 512
struct render {
	const struct recon_job *job;
	const struct recon_diff *diffs;
	char **json;
	size_t n, nchunks;
	const char *up_name, *local_name;
	atomic_size_t next; /* the next chunk to take */
	atomic_uchar *done; /* by chunk: its lines are there (release) */
	pthread_t th;
	bool threaded, joined;
	/* by thread: 0 the second one, 1 the run's (the pending list's lines too) */
	struct recon_buf buf[2];
	struct recon_arena lines[2];
};

/* Renders d's line with thread t's buffer, into its arena. */
static char *render_one(struct render *r, int t, const struct recon_diff *d)
{
	recon_report_diff_json_buf(&r->buf[t], r->job, d, r->up_name, r->local_name);
	return recon_arena_strndup(&r->lines[t], r->buf[t].s, r->buf[t].len);
}

/* Renders the next chunk nobody took (t: the thread); false when all were taken. */
static bool render_take(struct render *r, int t)
{
	size_t c = atomic_fetch_add(&r->next, 1);

	if (c >= r->nchunks)
		return false;
	for (size_t i = c * RENDER_TAKE, e = i + RENDER_TAKE < r->n ? i + RENDER_TAKE : r->n; i < e;
	     i++)
		r->json[i] = render_one(r, t, &r->diffs[i]);
	atomic_store_explicit(&r->done[c], 1, memory_order_release);
	return true;
}

static void render_share(struct render *r, int t)
{
	while (render_take(r, t))
		;
}

/* recon_record.ready: json[i] is there once this returns. */
static void render_ready(void *arg, size_t i)
{
	struct render *r = arg;
	const size_t c = i / RENDER_TAKE;

	while (!atomic_load_explicit(&r->done[c], memory_order_acquire))
		if (!render_take(r, 1))
			sched_yield(); /* the other thread renders that chunk */
}

/* Every line rendered and the second thread gone; idempotent. */
static void render_join(struct render *r)
{
	if (r->joined)
		return;
	r->joined = true;
	render_share(r, 1);
	if (r->threaded)
		pthread_join(r->th, NULL);
	free(r->done);
	r->done = NULL;
}

static void *render_thread(void *arg)
{
	render_share(arg, 0);
	return NULL;
}

/*
 * Wall time, CPU time and the process's peak memory so far per phase of a
 * run, logged at debug level (recon run --verbose).
 */
#define PHASES_MAX 12
struct phases {
	int64_t last, last_cpu;
	size_t n;
	const char *name[PHASES_MAX];
	int64_t ms[PHASES_MAX], cpu_ms[PHASES_MAX], peak_mib[PHASES_MAX];
};

/* CPU time of the process (every thread), user and system, in ms; its peak RSS in MiB. */
static int64_t cpu_ms(int64_t *peak_mib)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	if (peak_mib)
		*peak_mib = (int64_t)ru.ru_maxrss / 1024; /* KiB on Linux */
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static void phase_mark(struct phases *ph, const char *name)
{
	int64_t peak = 0, now = recon_monotonic_ms(), cpu = cpu_ms(&peak);

	if (ph->n < PHASES_MAX) {
		ph->name[ph->n] = name;
		ph->cpu_ms[ph->n] = cpu - ph->last_cpu;
		ph->peak_mib[ph->n] = peak;
		ph->ms[ph->n++] = now - ph->last;
	}
	ph->last = now;
	ph->last_cpu = cpu;
}

static void phase_log(const struct phases *ph)
{
	char line[768];
	size_t o = 0;

	if (recon_log_get_level() < RECON_LOG_DEBUG)
		return;
	for (size_t i = 0; i < ph->n && o < sizeof(line); i++)
		o += (size_t)snprintf(
		    line + o, sizeof(line) - o,
		    "%s%s %lld.%03lld s (cpu %lld.%03lld, peak %lld MiB)", i ? ", " : "",
		    ph->name[i], (long long)(ph->ms[i] / 1000), (long long)(ph->ms[i] % 1000),
		    (long long)(ph->cpu_ms[i] / 1000), (long long)(ph->cpu_ms[i] % 1000),
		    (long long)ph->peak_mib[i]);
	recon_log(RECON_LOG_DEBUG, "phases: %s", line);
}

/* Pulls a failed run's message into the summary (passwords never reach here). */
static void note_error(struct recon_run_summary *sum, const struct recon_err *err)
{
	recon_err_str(err, sum->error, sizeof(sum->error));
	sum->exit_code = recon_err_exit_code(err->code);
}

/* The ledger's rows and open items go into the compare (recon_state_ledger_load sink). */
static void carry_one(void *arg, const char *key, size_t len, const struct recon_carry *c)
{
	recon_compare_carry(arg, key, len, c);
}

static void item_one(void *arg, const char *key, size_t len, int klass, int64_t opened)
{
	recon_compare_item(arg, key, len, klass, opened);
}

/* The keys whose entries of this window the ledger keeps (borrowed from the compare). */
struct contribs {
	struct recon_contrib *v;
	size_t n, alloc;
};

static int contrib_cmp(const void *a, const void *b)
{
	const struct recon_contrib *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->key_len < y->key_len ? x->key_len : y->key_len);

	return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static void contrib_one(void *arg, const struct recon_contrib *c)
{
	struct contribs *cs = arg;

	recon_grow((void **)&cs->v, &cs->alloc, cs->n + 1, sizeof(*cs->v));
	cs->v[cs->n++] = *c;
}

/*
 * Reads the (job, mode) ledger into the compare and sets its bounds: the
 * job's first reconciled window (history) and the end of the latest
 * reconciled window once this one is (the settle horizon).
 */
static int ledger_in(const struct recon_ctx *ctx, struct recon_state *st,
		     const struct recon_window *win, struct recon_compare *cmp,
		     struct recon_err *err)
{
	const char *mode = recon_mode_name(ctx->mode);
	const struct recon_ledger_sink sink = {carry_one, item_one, cmp};
	int64_t history = win->start, wm = win->end;
	int rc;

	rc = recon_state_history_start(st, ctx->job->name, mode, &history, err);
	if (rc < 0 && rc != RECON_ENOTFOUND)
		return rc;
	if (history > win->start)
		history = win->start;
	rc = recon_state_watermark_get(st, ctx->job->name, mode, &wm, err);
	if (rc < 0 && rc != RECON_ENOTFOUND)
		return rc;
	recon_compare_horizon(cmp, history, wm > win->end ? wm : win->end);
	return recon_state_ledger_load(st, ctx->job->name, mode, win->start, &sink, err);
}

/*
 * The inputs' provenance (SHA-256 of the files read whole), then the readers
 * end: their snapshot (a READ ONLY transaction) and connections are not held
 * through the action phase. Idempotent.
 */
static void end_reads(struct recon_source **up, struct recon_source **local, char *up_sha,
		      char *local_sha, bool have_sha[2])
{
	if (*up) {
		have_sha[0] = recon_source_digest(*up, up_sha) == 0;
		recon_source_close(*up);
		*up = NULL;
	}
	if (*local) {
		have_sha[1] = recon_source_digest(*local, local_sha) == 0;
		recon_source_close(*local);
		*local = NULL;
	}
}

/* The JSON lines of a list of differences, rendered by the run's thread. */
static char **render_lines(struct render *r, const struct recon_diff *d, size_t n)
{
	char **json = recon_xcalloc(n ? n : 1, sizeof(*json));

	for (size_t i = 0; i < n; i++)
		json[i] = render_one(r, 1, &d[i]);
	return json;
}

/*
 * One window's run between its phases (recon_run_window): what each phase
 * hands to the next. run_release() frees it all, however far the run got.
 */
struct run {
	const struct recon_ctx *ctx;
	struct recon_state *st;
	const struct recon_window *win;
	struct recon_run_summary *sum;
	struct recon_err *err; /* the run's first error */
	int rc;		       /* the failing phase's error, else 0 */
	bool begun;	       /* the run has its row in the state store */
	int64_t t0;
	struct phases ph;
	/* read: the compare, and both readers (their sources stay open until act) */
	struct recon_compare *cmp;
	struct reader rds[2]; /* RECON_SIDE_* */
	bool readers_live;
	atomic_bool stop;
	struct rejects rejects; /* both sides', the upstream's first */
	bool rejects_stored;
	/* evaluate: differences and pending items (borrowed from cmp), their JSON lines */
	const struct recon_diff *diffs, *pend;
	char **json, **pjson;
	struct render rj; /* json: rendered while evaluated and recorded */
	size_t ndiffs, npend;
	struct contribs contribs;
	/* record, act, finish */
	struct recon_record rec;
	struct recon_run_result res;
	char up_sha[65], local_sha[65];
	bool have_sha[2];
};

static void run_init(struct run *r, const struct recon_ctx *ctx, struct recon_state *st,
		     const struct recon_window *win, struct recon_run_summary *sum,
		     struct recon_err *err)
{
	memset(r, 0, sizeof(*r));
	r->ctx = ctx;
	r->st = st;
	r->win = win;
	r->sum = sum;
	r->err = err;
	r->t0 = recon_monotonic_ms();
	r->ph = (struct phases){.last = r->t0, .last_cpu = cpu_ms(NULL)};
	recon_arena_init(&r->rejects.arena);
	for (int t = 0; t < 2; t++) {
		recon_buf_init(&r->rj.buf[t]);
		recon_arena_init_huge(&r->rj.lines[t]);
	}
	memset(sum, 0, sizeof(*sum));
	sum->win = *win;
}

/* begin: the run's row ("running"), and a first real run's watermark at its window's start. */
static int run_begin(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	const struct recon_job *job = ctx->job;
	const struct recon_window *win = r->win;
	struct recon_run_info info;
	char date[16], config_sha[65];
	int rc;

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
	if ((rc = recon_state_run_begin(r->st, &info, &r->sum->run_id, r->err)) < 0)
		return r->rc = rc;
	r->begun = true;
	if (!ctx->dry_run &&
	    (rc = recon_state_watermark_seed(r->st, job->name, recon_mode_name(ctx->mode),
					     win->start, ctx->now, r->err)) < 0)
		return r->rc = rc;
	return 0;
}

/*
 * read: both sides, the ledger and the lookups into the compare; nothing is
 * written. Then the rejects of both sides, in read order, into the run's.
 */
static int run_read(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	const struct recon_job *job = ctx->job;
	const struct recon_window *win = r->win;
	struct reader *rds = r->rds;
	bool statement;
	int rc;

	statement =
	    recon_source_has(&job->upstream, RECON_SOURCE_FILE) && ctx->mode == RECON_MODE_T1;

	/* a t1 statement file is its day's window; in hot windows entry times decide */
	for (int attempt = 0;; attempt++) {
		r->cmp = recon_compare_new(job, win, ctx->now, statement);
		atomic_init(&r->stop, false);
		reader_init(&rds[RECON_SIDE_UPSTREAM], win, r->cmp, &job->upstream,
			    RECON_SIDE_UPSTREAM, &r->stop);
		reader_init(&rds[RECON_SIDE_LOCAL], win, r->cmp, &job->local, RECON_SIDE_LOCAL,
			    &r->stop);
		rds[RECON_SIDE_UPSTREAM].window_only = !statement;
		r->readers_live = true;
		rc = read_both(ctx, rds, attempt == 0, r->err);
		phase_mark(&r->ph, "read");
		/* the keys' history and the open items: evaluated with this window's rows */
		if (rc == 0)
			rc = ledger_in(ctx, r->st, win, r->cmp, r->err);
		phase_mark(&r->ph, "ledger");
		/* certainty before assertion: look up by key, without a time bound */
		if (rc == 0 && (rc = lookups(&rds[RECON_SIDE_LOCAL], r->err)) == 0)
			rc = lookups(&rds[RECON_SIDE_UPSTREAM], r->err);
		phase_mark(&r->ph, "lookups");
		if (rc < 0 || recon_compare_ids_distinct(r->cmp))
			break;
		/*
		 * The statement was read speculating that it lists no entry twice,
		 * and two entries share a fingerprint: everything read is dropped
		 * and read again with every entry id checked as it comes.
		 */
		recon_log(RECON_LOG_INFO,
			  "%s: an entry id appears twice (or two share a fingerprint); reading "
			  "the inputs again with exact duplicate checks",
			  rds[RECON_SIDE_UPSTREAM].src->name);
		for (int i = 0; i < 2; i++) {
			recon_source_close(rds[i].src);
			rds[i].src = NULL;
			reader_release(&rds[i]);
		}
		recon_compare_free(r->cmp);
		r->cmp = NULL;
		r->readers_live = false;
	}
	/* rejects in read order: the upstream's, then the local flow's */
	reader_merge(&rds[RECON_SIDE_UPSTREAM], &r->rejects, r->sum);
	reader_merge(&rds[RECON_SIDE_LOCAL], &r->rejects, r->sum);
	return rc < 0 ? (r->rc = rc) : 0;
}

/* evaluate: the classification, the difference lines and the window's contributions. */
static int run_evaluate(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	const struct recon_job *job = ctx->job;
	const struct recon_source *up = r->rds[RECON_SIDE_UPSTREAM].src;
	const struct recon_source *local = r->rds[RECON_SIDE_LOCAL].src;
	struct recon_run_summary *sum = r->sum;
	struct render *rj = &r->rj;

	recon_compare_classify(r->cmp);
	sum->counts = *recon_compare_counts(r->cmp);
	for (int i = 0; i < 2; i++)
		sum->counts.rows_other[i] += sum->rows_other[i];
	phase_mark(&r->ph, "classify");
	/* the difference lines are built on a second thread while the contributions are gathered,
	   then also on this one as they are recorded (run_record) */
	r->diffs = recon_compare_diffs(r->cmp, &r->ndiffs);
	r->pend = recon_compare_pending(r->cmp, &r->npend);
	rj->job = job;
	rj->diffs = r->diffs;
	rj->n = r->ndiffs;
	rj->nchunks = (r->ndiffs + RENDER_TAKE - 1) / RENDER_TAKE;
	rj->up_name = up->name;
	rj->local_name = local->name;
	atomic_init(&rj->next, 0);
	rj->done = recon_xcalloc(rj->nchunks ? rj->nchunks : 1, sizeof(*rj->done));
	for (size_t c = 0; c < rj->nchunks; c++)
		atomic_init(&rj->done[c], 0);
	rj->json = r->json = recon_xcalloc(r->ndiffs ? r->ndiffs : 1, sizeof(*r->json));
	/* the lines go where the compare's build left memory unused (released before it) */
	for (int t = 0; t < 2; t++)
		recon_arena_use_donor(&rj->lines[t], recon_compare_donor(r->cmp));
	rj->threaded = pthread_create(&rj->th, NULL, render_thread, rj) == 0;
	r->pjson = render_lines(rj, r->pend, r->npend);
	/* in key order: the ledger's B-tree takes them as appends, not at random */
	if (!ctx->dry_run) {
		recon_compare_contributions(r->cmp, contrib_one, &r->contribs);
		if (r->contribs.n)
			qsort(r->contribs.v, r->contribs.n, sizeof(*r->contribs.v), contrib_cmp);
	}
	phase_mark(&r->ph, "report");
	return 0;
}

/*
 * record: the rejects (too many fail the run here), then the differences and
 * the ledger, each committed in its own transaction.
 */
static int run_record(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	const struct recon_job *job = ctx->job;
	const struct rejects *rejects = &r->rejects;
	struct recon_run_summary *sum = r->sum;
	struct recon_item_counts ic;
	int rc;

	r->rejects_stored = true;
	if (rejects->n &&
	    (rc = recon_state_add_rejects(r->st, sum->run_id, rejects->v, rejects->n, r->err)) < 0)
		r->rc = rc;
	else if ((int64_t)rejects->total > job->max_rejects)
		r->rc = recon_err_set(
		    r->err, RECON_EINPUT, NULL, "%llu row%s rejected (max_rejects %lld); first: %s",
		    (unsigned long long)rejects->total, rejects->total == 1 ? "" : "s",
		    (long long)job->max_rejects, rejects->first);
	if (r->rc < 0) {
		render_join(&r->rj); /* the lines the second thread is rendering */
		return r->rc;
	}
	r->rec = (struct recon_record){
	    .job = job->name,
	    .mode = recon_mode_name(ctx->mode),
	    .run_id = sum->run_id,
	    .now = ctx->now,
	    .window_start = r->win->start,
	    .window_end = r->win->end,
	    .diffs = r->diffs,
	    .json = r->json,
	    .ready = render_ready,
	    .ready_arg = &r->rj,
	    .n = r->ndiffs,
	    .pending = r->pend,
	    .pjson = r->pjson,
	    .npending = r->npend,
	    .cmp = r->cmp,
	    .ledger = !ctx->dry_run,
	    .settled_ms = job->ledger_settled_ms,
	    .retention_ms = job->ledger_retention_ms,
	};
	rc = ctx->dry_run ? recon_state_cache_small(r->st, true, r->err) : 0;
	if (rc == 0)
		rc = recon_state_record_diffs(r->st, &r->rec, &ic, r->err);
	/* every line is there from here on: the actions read them */
	render_join(&r->rj);
	r->rec.ready = NULL;
	if (rc < 0 || (!ctx->dry_run && (rc = recon_state_ledger_save(r->st, &r->rec, r->contribs.v,
								      r->contribs.n, r->err)) < 0))
		return r->rc = rc;
	sum->resolved = ic.resolved;
	sum->superseded = ic.superseded;
	sum->settled = ic.settled;
	phase_mark(&r->ph, "record");
	return 0;
}

/* act: the readers end, then the actions on the committed differences, each idempotent. */
static int run_act(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	int rc;

	end_reads(&r->rds[RECON_SIDE_UPSTREAM].src, &r->rds[RECON_SIDE_LOCAL].src, r->up_sha,
		  r->local_sha, r->have_sha);
	if ((rc = recon_actions_run(ctx->job, r->st, &r->rec, ctx->dry_run, &r->sum->actions,
				    r->err)) < 0 ||
	    (ctx->dry_run && (rc = recon_state_cache_small(r->st, false, r->err)) < 0))
		return r->rc = rc;
	phase_mark(&r->ph, "actions");
	return 0;
}

/*
 * finish: the run's row gets its outcome, counts and provenance (the inputs'
 * SHA-256 as read, files read whole only). A failed run keeps its rejects;
 * a success the store cannot record becomes a failure.
 */
static void run_finish(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	struct recon_run_summary *sum = r->sum;
	struct recon_run_result *res = &r->res;
	struct recon_err e;

	if (!r->begun) {
		note_error(sum, r->err); /* no row to finish */
		return;
	}
	sum->duration_ms = recon_monotonic_ms() - r->t0;
	*res = (struct recon_run_result){0};
	if (!r->rc) {
		sum->success = true;
		res->outcome = "success";
	} else {
		note_error(sum, r->err);
		recon_err_init(&e);
		/* a run stopped before classifying (control totals): its rejects are kept too */
		if (!r->rejects_stored && r->rejects.n &&
		    recon_state_add_rejects(r->st, sum->run_id, r->rejects.v, r->rejects.n, &e) < 0)
			recon_log(RECON_LOG_WARN, "cannot store the rejects: %s", e.msg);
		res->outcome = "failed";
		res->exit_code = sum->exit_code;
		res->error = sum->error;
	}
	res->finished_at = ctx->now + sum->duration_ms;
	end_reads(&r->rds[RECON_SIDE_UPSTREAM].src, &r->rds[RECON_SIDE_LOCAL].src, r->up_sha,
		  r->local_sha, r->have_sha);
	res->upstream_sha256 = r->have_sha[0] ? r->up_sha : NULL;
	res->local_sha256 = r->have_sha[1] ? r->local_sha : NULL;
	res->rows_upstream = sum->rows_read[0];
	res->rows_local = sum->rows_read[1];
	res->rows_rejected = sum->rows_rejected[0] + sum->rows_rejected[1];
	res->rows_skipped = sum->rows_skipped;
	res->rows_other = sum->counts.rows_other[0] + sum->counts.rows_other[1];
	res->keys_compared = sum->counts.keys_owned;
	res->matched = sum->counts.matched;
	res->in_flight = sum->counts.in_flight;
	res->resolved = sum->resolved;
	res->superseded = sum->superseded;
	res->awaiting = sum->counts.awaiting;
	memcpy(res->classes, sum->counts.classes, sizeof(res->classes));
	recon_err_init(&e);
	if (recon_state_run_finish(r->st, sum->run_id, res, &e) < 0 && sum->success) {
		*r->err = e;
		r->rc = e.code;
		sum->success = false;
		note_error(sum, r->err);
	}
}

/*
 * advance, a success's last step (not a dry run's): the watermark, then the
 * heartbeat that exports it. The watermark only moves over contiguous
 * windows: a day run ahead of an unreconciled gap leaves it where it is.
 */
static void run_advance(struct run *r)
{
	const struct recon_ctx *ctx = r->ctx;
	const struct recon_job *job = ctx->job;
	const struct recon_window *win = r->win;
	struct recon_run_summary *sum = r->sum;
	struct recon_err *err = r->err;
	int64_t wm = 0, until = win->end;
	int g, rc;

	if (!sum->success || ctx->dry_run)
		return;
	g = recon_state_watermark_get(r->st, job->name, recon_mode_name(ctx->mode), &wm, err);
	if (g < 0 && g != RECON_ENOTFOUND) {
		r->rc = g;
		sum->success = false;
		note_error(sum, err);
		return;
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
	if ((rc = recon_state_success(r->st, job->name, recon_mode_name(ctx->mode), until,
				      sum->run_id, ctx->now, sum->duration_ms, err)) < 0) {
		struct recon_err e3;
		r->rc = rc;
		sum->success = false;
		note_error(sum, err);
		/* the run row said success: it must not outlive this failure */
		r->res.outcome = "failed";
		r->res.exit_code = sum->exit_code;
		r->res.error = sum->error;
		recon_err_init(&e3);
		if (recon_state_run_finish(r->st, sum->run_id, &r->res, &e3) < 0)
			recon_log(RECON_LOG_ERROR, "cannot record the run's failure: %s", e3.msg);
	} else if (job->heartbeat_path &&
		   (rc = recon_heartbeat_write_partition(r->st, job->name, &job->upstream.part,
							 job->heartbeat_path, err)) < 0) {
		/*
		 * The window is reconciled and its watermark committed: the run
		 * stays recorded as the success it was. The invocation fails
		 * (exit 73) so cron and systemd see it, and the next invocation
		 * writes the heartbeat before anything else.
		 */
		r->rc = rc;
		sum->success = false;
		note_error(sum, err);
	}
}

/* Frees what the phases left; returns the run's result (recon_run_window). */
static int run_release(struct run *r)
{
	recon_state_checkpoint_soon(r->st); /* beside the frees below */
	phase_mark(&r->ph, "finish");
	phase_log(&r->ph);
	if (r->rj.done)
		render_join(&r->rj); /* a run that failed before it recorded its differences */
	free(r->json);		     /* the lines are in r->rj.lines */
	free(r->pjson);
	for (int t = 0; t < 2; t++) {
		recon_buf_release(&r->rj.buf[t]);
		recon_arena_release(&r->rj.lines[t]);
	}
	free(r->contribs.v);
	recon_source_close(r->rds[RECON_SIDE_UPSTREAM].src);
	recon_source_close(r->rds[RECON_SIDE_LOCAL].src);
	recon_compare_free(r->cmp);
	if (r->readers_live) {
		reader_release(&r->rds[RECON_SIDE_UPSTREAM]);
		reader_release(&r->rds[RECON_SIDE_LOCAL]);
	}
	free(r->rejects.v);
	recon_arena_release(&r->rejects.arena);
	return r->sum->success ? 0 : (r->rc < 0 ? r->rc : RECON_EINTERNAL);
}

/*
 * One window, in phases; each runs only when those before it succeeded, and
 * finish and advance look at how far the run got. Why a crash or a failure
 * at any point leaves a state a rerun completes (DESIGN "Repeatable and
 * idempotent", "Days, watermarks and locks"):
 *   begin     the run's row says "running" (the next invocation, holding the
 *             lock, marks it abandoned); a first run seeds the watermark at its
 *             window's start, so a later day cannot jump over this one.
 *   read      every source opened read-only, the ledger read: nothing written.
 *   evaluate  classification and difference lines, in memory only.
 *   record    rejects, differences, open items and the window's ledger
 *             contributions committed; a rerun keeps an item already open and
 *             replaces the contributions: a window recorded twice counts once.
 *   act       the readers end first (no snapshot or connection held through
 *             the actions), then the actions, each idempotent (a replay commits
 *             with its idempotency record; a ticket or event is unique on job,
 *             key and class): a rerun repeats none.
 *   finish    the row gets its outcome. A failed run stops here: nothing a
 *             later run reads as progress (a watermark, a success) is stored.
 *   advance   only a success, after its differences and actions committed:
 *             the watermark (one that cannot be written turns the row back to
 *             failed), then the heartbeat that exports it.
 */
int recon_run_window(const struct recon_ctx *ctx, struct recon_state *st,
		     const struct recon_window *win, struct recon_run_summary *sum,
		     struct recon_err *err)
{
	struct run r;

	run_init(&r, ctx, st, win, sum, err);
	if (run_begin(&r) == 0 && run_read(&r) == 0 && run_evaluate(&r) == 0 && run_record(&r) == 0)
		run_act(&r);
	run_finish(&r);
	run_advance(&r);
	return run_release(&r);
}
