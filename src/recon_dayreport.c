/*
 * recon_dayreport: the daily report. Loading gathers the day's facts from the
 * state module (the range's runs, the items open at some point of the range,
 * the day's rejects) and folds the items into per-day series with difference
 * arrays, so the cost is one pass over the open items whatever the range.
 * The renderers are dayreport_html.c, dayreport_md.c and dayreport_csv.c.
 */
#include "recon_dayreport.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dayreport_int.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_normalize.h"
#include "recon_state.h"
#include "recon_time.h"

int recon_dayreport_format_from_name(const char *name)
{
	if (!strcmp(name, "html"))
		return RECON_DAYREPORT_HTML;
	if (!strcmp(name, "md"))
		return RECON_DAYREPORT_MD;
	if (!strcmp(name, "csv"))
		return RECON_DAYREPORT_CSV;
	return -1;
}

const char *recon_dayreport_next_step(const char *klass)
{
	static const struct {
		const char *klass, *step;
	} steps[] = {
	    {"missing", "refund without its payment: find the order, replay it by hand"},
	    {"extra", "ask the provider; reverse the local order only once it confirms"},
	    {"amount_mismatch", "compare with the provider's record; correct the side in error"},
	    {"status_mismatch", "align the local status with the provider's (refund, revocation)"},
	    {"duplicate",
	     "ask the provider about the repeated entry, or remove the extra local row"},
	    {"stuck", "re-push the payment event; check the app's callback"},
	    {"awaiting", "nothing yet: the next runs look for the provider's entry"},
	    {"in_flight", "nothing yet: the payment callback is still expected"},
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (!strcmp(klass, steps[i].klass))
			return steps[i].step;
	return "";
}

/* ---- loading ---------------------------------------------------------------- */

void recon_dayreport_add_ck(int64_t *acc, int64_t v, bool *over)
{
	if ((v > 0 && *acc > INT64_MAX - v) || (v < 0 && *acc < INT64_MIN - v))
		*over = true;
	else
		*acc += v;
}

static struct stake *stake_get(struct stake **v, size_t *n, size_t *alloc, const char *klass,
			       const char *cur)
{
	struct stake *s;

	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].klass, klass) && !strcmp((*v)[i].cur, cur))
			return &(*v)[i];
	recon_grow((void **)v, alloc, *n + 1, sizeof(**v));
	s = &(*v)[(*n)++];
	memset(s, 0, sizeof(*s));
	snprintf(s->klass, sizeof(s->klass), "%s", klass);
	snprintf(s->cur, sizeof(s->cur), "%s", cur);
	s->exp = recon_money_exponent(cur);
	if (s->exp < 0)
		s->exp = 0;
	return s;
}

/* Adds an item open over days [a, b) to the series (difference arrays in found/open). */
static void series_add(struct recon_dayreport *r, const struct item *it, int64_t ended_day,
		       int64_t *d_open, int64_t *d_info, int64_t *d_stake, bool *over)
{
	int64_t a = it->opened_day < r->from ? r->from : it->opened_day;
	int64_t b = ended_day > r->to + 1 ? r->to + 1 : ended_day;
	bool money = !it->info && !strcmp(it->cur, r->cur);

	if (!it->info && it->opened_day >= r->from && it->opened_day <= r->to)
		r->days[it->opened_day - r->from].found++;
	if (a >= b)
		return;
	if (it->info) {
		d_info[a - r->from]++;
		d_info[b - r->from]--;
		return;
	}
	d_open[a - r->from]++;
	d_open[b - r->from]--;
	if (money) {
		recon_dayreport_add_ck(&d_stake[a - r->from], it->amount, over);
		recon_dayreport_add_ck(&d_stake[b - r->from], -it->amount, over);
	}
}

/* A business date as a day number; `dflt` when NULL or not a date. */
static int64_t day_of(const char *s, int64_t dflt)
{
	struct recon_err e;
	int64_t d;

	recon_err_init(&e);
	if (!s || recon_date_parse(s, &d, &e) < 0)
		return dflt;
	return d;
}

static char *dup_or_null(const char *s)
{
	return s ? recon_xstrdup(s) : NULL;
}

static void copy(char *buf, size_t size, const char *s)
{
	snprintf(buf, size, "%s", s ? s : "");
}

/* The report being loaded, and the per-day difference arrays of its series. */
struct loading {
	struct recon_dayreport *r;
	size_t alloc;
	int64_t *d_open, *d_info, *d_stake; /* r->ndays + 1 each */
	bool stake_over;
};

static int add_run(void *arg, const struct recon_state_run *x)
{
	struct loading *l = arg;
	struct recon_dayreport *r = l->r;
	const int64_t n[10] = {x->rows_upstream, x->rows_local, x->rows_rejected, x->rows_skipped,
			       x->keys_compared, x->matched,	x->differences,	  x->resolved,
			       x->in_flight,	 x->awaiting};
	struct run *u;
	struct day *d;

	recon_grow((void **)&r->runs, &l->alloc, r->nruns + 1, sizeof(*r->runs));
	u = &r->runs[r->nruns++];
	memset(u, 0, sizeof(*u));
	u->id = x->id;
	u->day = day_of(x->business_date, r->to);
	copy(u->outcome, sizeof(u->outcome), x->outcome);
	u->started = x->started_at;
	u->finished = x->finished_at;
	u->error = dup_or_null(x->error);
	u->exit_code = x->exit_code;
	memcpy(u->n, n, sizeof(u->n));
	if (u->day < r->from || u->day > r->to)
		return 0;
	d = &r->days[u->day - r->from];
	d->runs++;
	if (!strcmp(u->outcome, "failed"))
		d->failed++;
	if (u->finished >= u->started && u->finished - u->started > d->max_ms)
		d->max_ms = u->finished - u->started;
	return 0;
}

/* The range's runs, and the day's main and last run among them. */
static int load_runs(struct recon_dayreport *r, struct recon_state *st, struct recon_err *err)
{
	struct loading l = {.r = r};
	char d0[16], d1[16];
	int rc;

	recon_date_format(r->from, d0, sizeof(d0));
	recon_date_format(r->to, d1, sizeof(d1));
	rc = recon_state_runs_between(st, r->job->name, r->mode, d0, d1, add_run, &l, err);
	for (size_t i = 0; i < r->nruns; i++) {
		const struct run *u = &r->runs[i];
		if (u->day != r->to)
			continue;
		r->last = u;
		if (!strcmp(u->outcome, "success") || !r->main ||
		    strcmp(r->main->outcome, "success"))
			r->main = u;
	}
	return rc;
}

/* A key in its display form (recon_key_display: as tickets and `recon diff` show it). */
static char *display_key(const char *k, size_t len)
{
	size_t size = recon_st_add(recon_st_mult(len, 2), 1);

	return recon_key_display(k ? k : "", k ? len : 0, recon_xmalloc(size), size);
}

static int add_item(void *arg, const struct recon_item_row *row)
{
	struct loading *l = arg;
	struct recon_dayreport *r = l->r;
	struct item it;
	int64_t ended;

	memset(&it, 0, sizeof(it));
	it.id = row->id;
	copy(it.klass, sizeof(it.klass), row->klass);
	copy(it.sev, sizeof(it.sev), row->severity);
	it.info = !strcmp(it.sev, "info");
	it.amount = row->amount;
	copy(it.cur, sizeof(it.cur), row->currency);
	if (!it.cur[0])
		memcpy(it.cur, r->job->currency, 4);
	it.exp = recon_money_exponent(it.cur);
	if (it.exp < 0)
		it.exp = 0;
	it.opened_ms = row->opened_at;
	it.opened_day = day_of(row->opened_date, recon_tz_day_of(r->job->tz, it.opened_ms));
	ended = day_of(row->ended_date, NO_DAY);
	/* closed by a person (no run): from the day it was closed on */
	if (ended == NO_DAY && strcmp(row->state, "open") && row->ended)
		ended = recon_tz_day_of(r->job->tz, row->ended_at);
	series_add(r, &it, ended, l->d_open, l->d_info, l->d_stake, &l->stake_over);
	if (it.opened_day > r->to || ended <= r->to)
		return 0; /* not open at the end of the report's day */
	it.key = display_key(row->key, row->key_len);
	it.json = dup_or_null(row->json);
	it.ticket = dup_or_null(row->ticket);
	recon_grow((void **)&r->items, &l->alloc, r->nitems + 1, sizeof(*r->items));
	r->items[r->nitems++] = it;
	return 0;
}

/*
 * The items open at some point of the range: open now, or ended by a run at
 * or after the range's first day began (a run of day d finishes after d
 * began, so this is a superset), folded into the per-day series.
 */
static int load_items(struct recon_dayreport *r, struct recon_state *st, struct recon_err *err)
{
	size_t n = r->ndays + 1;
	struct loading l = {.r = r,
			    .d_open = recon_xcalloc(n, sizeof(int64_t)),
			    .d_info = recon_xcalloc(n, sizeof(int64_t)),
			    .d_stake = recon_xcalloc(n, sizeof(int64_t))};
	int64_t start, end, open = 0, info = 0, stake = 0;
	bool over = false;
	int rc;

	recon_tz_day_bounds(r->job->tz, r->from, &start, &end);
	rc = recon_state_items_since(st, r->job->name, r->mode, start, add_item, &l, err);
	for (size_t i = 0; rc == 0 && i < r->ndays; i++) {
		open += l.d_open[i];
		info += l.d_info[i];
		recon_dayreport_add_ck(&stake, l.d_stake[i], &over);
		r->days[i].open = open;
		r->days[i].open_info = info;
		r->days[i].stake = stake;
		r->days[i].stake_over = over || l.stake_over;
	}
	free(l.d_open);
	free(l.d_info);
	free(l.d_stake);
	return rc;
}

/* Larger money at stake first (compared in major units across currencies), then older, then key. */
static int item_cmp(const void *pa, const void *pb)
{
	static const int64_t p10[] = {1, 10, 100, 1000, 10000};
	const struct item *a = pa, *b = pb;
	int ea = a->exp > 4 ? 4 : a->exp, eb = b->exp > 4 ? 4 : b->exp;
	int64_t ia = a->amount / p10[ea], ib = b->amount / p10[eb];
	int64_t fa = a->amount % p10[ea] * p10[4 - ea], fb = b->amount % p10[eb] * p10[4 - eb];

	if (a->info != b->info)
		return a->info ? 1 : -1;
	if (ia != ib)
		return ia > ib ? -1 : 1;
	if (fa != fb)
		return fa > fb ? -1 : 1;
	if (a->opened_day != b->opened_day)
		return a->opened_day < b->opened_day ? -1 : 1;
	return strcmp(a->key ? a->key : "", b->key ? b->key : "");
}

static void summarise(struct recon_dayreport *r)
{
	size_t alloc = 0;

	if (r->nitems) /* qsort() takes no NULL, even for 0 elements */
		qsort(r->items, r->nitems, sizeof(*r->items), item_cmp);
	for (size_t i = 0; i < r->nitems; i++) {
		const struct item *it = &r->items[i];
		struct stake *s = stake_get(&r->stakes, &r->nstakes, &alloc, it->klass, it->cur);
		int64_t age = r->to - it->opened_day;

		s->info = it->info;
		s->count++;
		recon_dayreport_add_ck(&s->sum, it->amount, &s->over);
		if (it->info)
			continue;
		r->ndiff++;
		s = stake_get(&r->stakes, &r->nstakes, &alloc, "", it->cur);
		s->count++;
		recon_dayreport_add_ck(&s->sum, it->amount, &s->over);
		r->age[age <= 0 ? 0 : age <= 3 ? 1 : 2]++;
		if (strcmp(it->cur, r->cur))
			r->other_cur = true;
		if (it->ticket && !strcmp(it->ticket, "open"))
			r->tickets_open++;
	}
}

static int add_reject(void *arg, int64_t run_id, const struct recon_reject *x)
{
	struct loading *l = arg;
	struct recon_dayreport *r = l->r;
	struct reject *v;

	recon_grow((void **)&r->rejects, &l->alloc, r->nrejects + 1, sizeof(*r->rejects));
	v = &r->rejects[r->nrejects++];
	v->run = run_id;
	v->side = dup_or_null(x->side);
	v->origin = dup_or_null(x->origin);
	v->field = dup_or_null(x->field);
	v->reason = dup_or_null(x->reason);
	return 0;
}

/* The first RECON_DAYREPORT_TOP rejects of the day's latest run, and how many it has. */
static int load_rejects(struct recon_dayreport *r, struct recon_state *st, struct recon_err *err)
{
	struct loading l = {.r = r};
	int rc;

	if (!r->last)
		return 0;
	if ((rc = recon_state_rejects(st, r->job->name, r->last->id, RECON_DAYREPORT_TOP,
				      add_reject, &l, err)) < 0)
		return rc;
	return recon_state_rejects_count(st, r->last->id, &r->rejects_total, err);
}

/* The latest day a successful run of the mode reconciled; `dflt` when none did. */
static int latest_day(struct recon_state *st, const struct recon_job *job, const char *mode,
		      int64_t dflt, int64_t *day, struct recon_err *err)
{
	char date[16];
	int rc = recon_state_latest_date(st, job->name, mode, date, err);

	*day = rc == 0 ? day_of(date, dflt) : dflt;
	return rc == RECON_ENOTFOUND ? 0 : rc;
}

int recon_dayreport_load(struct recon_dayreport **out, struct recon_state *st,
			 const struct recon_job *job, const char *mode, int64_t *from_day_io,
			 int64_t *to_day_io, int64_t now, struct recon_err *err)
{
	struct recon_dayreport *r = recon_xcalloc(1, sizeof(*r));
	int rc = 0;

	*out = NULL;
	r->job = job;
	r->now = now;
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
	memcpy(r->cur, job->currency, 4);
	r->exp = job->exponent;
	if (*to_day_io == INT64_MIN &&
	    (rc = latest_day(st, job, mode, recon_tz_day_of(job->tz, now), to_day_io, err)) < 0)
		goto out;
	if (*from_day_io == INT64_MIN)
		*from_day_io = *to_day_io - 29;
	r->from = *from_day_io;
	r->to = *to_day_io;
	if (r->to < r->from || r->to - r->from >= RECON_DAYREPORT_MAX_DAYS) {
		rc = recon_err_set(err, RECON_EUSAGE, NULL,
				   "a report covers 1 to %d days; --from and --to span %" PRId64,
				   RECON_DAYREPORT_MAX_DAYS, r->to - r->from + 1);
		goto out;
	}
	r->ndays = (size_t)(r->to - r->from + 1);
	r->days = recon_xcalloc(r->ndays, sizeof(*r->days));
	if ((rc = load_runs(r, st, err)) < 0 || (rc = load_items(r, st, err)) < 0 ||
	    (rc = load_rejects(r, st, err)) < 0)
		goto out;
	summarise(r);
	*out = r;
	r = NULL;
out:
	recon_dayreport_free(r);
	return rc;
}

void recon_dayreport_free(struct recon_dayreport *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nitems; i++) {
		free(r->items[i].key);
		free(r->items[i].json);
		free(r->items[i].ticket);
	}
	for (size_t i = 0; i < r->nruns; i++)
		free(r->runs[i].error);
	for (size_t i = 0; i < r->nrejects; i++) {
		free(r->rejects[i].side);
		free(r->rejects[i].origin);
		free(r->rejects[i].field);
		free(r->rejects[i].reason);
	}
	free(r->items);
	free(r->runs);
	free(r->rejects);
	free(r->stakes);
	free(r->days);
	free(r);
}

/* ---- money in the summaries (run, status) ------------------------------------- */

/*
 * Money at stake per class and currency (klass "" = the differences' total) of
 * the job's open items, or of those run run_id evaluated last. Caller frees
 * *out with free(); on a read error it is empty and a warning is logged.
 */
/* The stakes being summed: *v[0..n). */
struct stakes {
	struct stake *v;
	size_t n, alloc;
};

static int add_stake(void *arg, const char *klass, const char *sev, int64_t amount, const char *cur)
{
	struct stakes *s = arg;
	char k[24], c[4];
	struct stake *x;

	copy(k, sizeof(k), klass);
	copy(c, sizeof(c), cur);
	x = stake_get(&s->v, &s->n, &s->alloc, k, c);
	x->count++;
	x->info = sev && !strcmp(sev, "info");
	recon_dayreport_add_ck(&x->sum, amount, &x->over);
	if (x->info)
		return 0;
	x = stake_get(&s->v, &s->n, &s->alloc, "", c);
	x->count++;
	recon_dayreport_add_ck(&x->sum, amount, &x->over);
	return 0;
}

static size_t stakes_read(struct recon_state *st, const char *job, int64_t run_id,
			  struct stake **out)
{
	struct stakes s = {NULL, 0, 0};
	struct recon_err err;

	recon_err_init(&err);
	if (recon_state_open_stakes(st, job, run_id, add_stake, &s, &err) < 0)
		recon_log(RECON_LOG_WARN, "%s", err.msg);
	*out = s.v;
	return s.n;
}

void recon_dayreport_stake_json(struct recon_state *st, const char *job, int64_t run_id,
				struct json_t *obj)
{
	struct stake *v;
	size_t n = stakes_read(st, job, run_id, &v);
	json_t *by = json_object(), *total = json_object();

	for (size_t i = 0; i < n; i++) {
		json_t *o = v[i].klass[0] ? json_object_get(by, v[i].klass) : total;
		char m[64];
		if (!o) {
			o = json_object();
			json_object_set_new(by, v[i].klass, o);
		}
		recon_dayreport_stake_text(&v[i], false, m, sizeof(m));
		json_object_set_new(o, v[i].cur, json_string(m));
	}
	json_object_set_new(obj, run_id ? "at_stake" : "open_at_stake", by);
	json_object_set_new(obj, run_id ? "at_stake_total" : "open_at_stake_total", total);
	free(v);
}

void recon_dayreport_stake_line(struct recon_state *st, const char *job, int64_t run_id, char *buf,
				size_t size)
{
	struct stake *v;
	size_t n = stakes_read(st, job, run_id, &v), o = 0;

	buf[0] = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool first = true;
		for (size_t i = 0; i < n && o < size; i++) {
			const char *label;
			char m[64];
			if ((pass == 0) != (v[i].klass[0] != 0))
				continue;
			recon_dayreport_stake_text(&v[i], false, m, sizeof(m));
			label = v[i].klass[0] ? v[i].klass : first ? "total" : NULL;
			o += (size_t)snprintf(buf + o, size - o, "%s%s%s%s %s",
					      first ? (o ? "; " : "") : ", ", label ? label : "",
					      label ? " " : "", m, v[i].cur);
			first = false;
		}
	}
	free(v);
}
