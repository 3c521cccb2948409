/*
 * recon_dayreport: the daily report. Loading reads three small queries (the
 * range's runs, the items open at some point of the range, the day's rejects)
 * and folds the items into per-day series with difference arrays, so the cost
 * is one pass over the open items whatever the range. Rendering writes into
 * one buffer that is spilled to the FILE every 64 KiB.
 */
#include "recon_dayreport.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "recon_buf.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_normalize.h"
#include "recon_state.h"
#include "recon_time.h"

#define NO_DAY INT64_MAX

struct item {
	int64_t id;
	char *key;
	char klass[24];
	char sev[12];
	int64_t amount; /* money at stake, minor units of cur */
	char cur[4];
	int exp;
	int64_t opened_day, opened_ms;
	char *ticket; /* the ticket's status, NULL when none */
	char *json;   /* the difference as last evaluated */
	bool info;    /* awaiting / in flight: not a difference yet */
};

/* Money at stake of one class (klass "" = every difference) in one currency. */
struct stake {
	char klass[24];
	char cur[4];
	int exp;
	bool info;
	int64_t count;
	int64_t sum;
	bool over; /* beyond int64: shown as such */
};

struct day {
	int64_t found;	   /* differences opened by the day's runs */
	int64_t open;	   /* differences open at the end of the day */
	int64_t open_info; /* awaiting / in flight open at the end of the day */
	int64_t stake;	   /* money at stake at the end of the day, chart currency */
	bool stake_over;
	int64_t runs, failed;
	int64_t max_ms; /* longest run's duration */
};

struct run {
	int64_t id, day, started, finished, exit_code;
	int64_t n[10]; /* rows_upstream .. resolved, see run_sql */
	char outcome[12];
	char *error;
};

struct reject {
	int64_t run;
	char *side, *origin, *field, *reason;
};

struct recon_dayreport {
	const struct recon_job *job;
	char mode[4];
	int64_t from, to, now;
	struct day *days; /* to - from + 1 */
	size_t ndays;
	struct run *runs; /* the range's runs, by id */
	size_t nruns;
	const struct run *main; /* the day's latest successful run, else its latest; NULL: none */
	const struct run *last; /* the day's latest run */
	struct item *items;	/* open at the end of the day: differences by stake, then info */
	size_t nitems, ndiff;
	struct stake *stakes;
	size_t nstakes;
	int64_t age[3]; /* differences opened today, 1-3 days ago, earlier */
	int64_t tickets_open;
	char cur[4]; /* the charts' currency: the job's */
	int exp;
	bool other_cur; /* some differences are in other currencies */
	struct reject *rejects;
	size_t nrejects;
	int64_t rejects_total;
};

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

static int db_err(sqlite3 *db, struct recon_err *err, const char *what)
{
	return recon_err_set(err, RECON_EIO, NULL, "%s: %s", what, sqlite3_errmsg(db));
}

static char *col_dup(sqlite3_stmt *q, int i)
{
	if (sqlite3_column_type(q, i) == SQLITE_NULL)
		return NULL;
	return recon_xstrdup((const char *)sqlite3_column_text(q, i));
}

static void col_copy(sqlite3_stmt *q, int i, char *buf, size_t size)
{
	const char *s = (const char *)sqlite3_column_text(q, i);
	snprintf(buf, size, "%s", s ? s : "");
}

/*
 * A key column in its display form (recon_key_display: a composite key's parts
 * joined by '|', as tickets and `recon diff` show it). Caller frees.
 */
static char *display_key(sqlite3_stmt *q, int i)
{
	const char *k = (const char *)sqlite3_column_text(q, i);
	size_t len = (size_t)sqlite3_column_bytes(q, i);
	size_t size = recon_st_add(recon_st_mult(len, 2), 1);

	return recon_key_display(k ? k : "", k ? len : 0, recon_xmalloc(size), size);
}

/* A business date column as a day number; `dflt` when NULL or not a date. */
static int64_t col_day(sqlite3_stmt *q, int i, int64_t dflt)
{
	struct recon_err e;
	int64_t d;
	const char *s = (const char *)sqlite3_column_text(q, i);

	recon_err_init(&e);
	if (!s || recon_date_parse(s, &d, &e) < 0)
		return dflt;
	return d;
}

static void add_ck(int64_t *acc, int64_t v, bool *over)
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

static const char run_sql[] =
    "SELECT id, business_date, outcome, started_at_ms, finished_at_ms, error, exit_code, "
    "rows_upstream, rows_local, rows_rejected, rows_skipped, keys_compared, matched, "
    "n_missing + n_extra + n_stuck + n_amount_mismatch + n_status_mismatch + n_duplicate, "
    "resolved, in_flight, awaiting FROM runs WHERE job = ?1 AND mode = ?2 AND dry_run = 0 AND "
    "business_date BETWEEN ?3 AND ?4 ORDER BY id";

static int load_runs(struct recon_dayreport *r, sqlite3 *db, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	char d0[16], d1[16];
	size_t alloc = 0;
	int rc = 0, s;

	recon_date_format(r->from, d0, sizeof(d0));
	recon_date_format(r->to, d1, sizeof(d1));
	if (sqlite3_prepare_v2(db, run_sql, -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(db, err, "cannot read runs");
		goto out;
	}
	sqlite3_bind_text(q, 1, r->job->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, r->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, d0, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, d1, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		struct run *u;
		struct day *d;

		recon_grow((void **)&r->runs, &alloc, r->nruns + 1, sizeof(*r->runs));
		u = &r->runs[r->nruns++];
		memset(u, 0, sizeof(*u));
		u->id = sqlite3_column_int64(q, 0);
		u->day = col_day(q, 1, r->to);
		col_copy(q, 2, u->outcome, sizeof(u->outcome));
		u->started = sqlite3_column_int64(q, 3);
		u->finished =
		    sqlite3_column_type(q, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 4);
		u->error = col_dup(q, 5);
		u->exit_code =
		    sqlite3_column_type(q, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, 6);
		for (int i = 0; i < 10; i++)
			u->n[i] = sqlite3_column_int64(q, 7 + i);
		if (u->day < r->from || u->day > r->to)
			continue;
		d = &r->days[u->day - r->from];
		d->runs++;
		if (!strcmp(u->outcome, "failed"))
			d->failed++;
		if (u->finished >= u->started && u->finished - u->started > d->max_ms)
			d->max_ms = u->finished - u->started;
	}
	if (s != SQLITE_DONE)
		rc = db_err(db, err, "cannot read runs");
	for (size_t i = 0; i < r->nruns; i++) {
		const struct run *u = &r->runs[i];
		if (u->day != r->to)
			continue;
		r->last = u;
		if (!strcmp(u->outcome, "success") || !r->main ||
		    strcmp(r->main->outcome, "success"))
			r->main = u;
	}
out:
	sqlite3_finalize(q);
	return rc;
}

/*
 * The items open at some point of the range: open now, or ended by a run at
 * or after the range's first day began (a run of day d finishes after d
 * began, so this is a superset). The same key's ticket comes along.
 */
/* The ticket join below spells RECON_KEY_SEP as char(31). */
_Static_assert(RECON_KEY_SEP == '\x1f', "item_sql's char(31) is RECON_KEY_SEP");

static const char item_sql[] =
    "SELECT i.id, i.key, i.class, i.severity, i.amount_minor, i.currency, i.opened_at_ms, "
    "ro.business_date, re.business_date, i.json, t.status, i.state, i.ended_at_ms "
    "FROM items i LEFT JOIN runs ro ON ro.id = i.opened_run "
    "LEFT JOIN runs re ON re.id = i.ended_run "
    "LEFT JOIN tickets t ON t.job = i.job AND t.class = i.class AND t.key = CASE WHEN "
    "instr(i.key, char(31)) THEN replace(replace(replace(i.key, '\\', '\\\\'), '|', '\\|'), "
    "char(31), '|') ELSE i.key END "
    "WHERE i.job = ?1 AND i.mode = ?2 AND (i.state = 'open' OR i.ended_at_ms >= ?3)";

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
		add_ck(&d_stake[a - r->from], it->amount, over);
		add_ck(&d_stake[b - r->from], -it->amount, over);
	}
}

static int load_items(struct recon_dayreport *r, sqlite3 *db, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	size_t alloc = 0, n = r->ndays + 1;
	int64_t start, end, *d_open = recon_xcalloc(n, sizeof(int64_t));
	int64_t *d_info = recon_xcalloc(n, sizeof(int64_t)), *d_stake = recon_xcalloc(n, 8);
	int64_t open = 0, info = 0, stake = 0;
	bool over = false, stake_over = false;
	int rc = 0, s;

	recon_tz_day_bounds(r->job->tz, r->from, &start, &end);
	if (sqlite3_prepare_v2(db, item_sql, -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(db, err, "cannot read open items");
		goto out;
	}
	sqlite3_bind_text(q, 1, r->job->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, r->mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, start);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		struct item it;
		int64_t ended;

		memset(&it, 0, sizeof(it));
		it.id = sqlite3_column_int64(q, 0);
		col_copy(q, 2, it.klass, sizeof(it.klass));
		col_copy(q, 3, it.sev, sizeof(it.sev));
		it.info = !strcmp(it.sev, "info");
		it.amount = sqlite3_column_int64(q, 4);
		col_copy(q, 5, it.cur, sizeof(it.cur));
		if (!it.cur[0])
			memcpy(it.cur, r->job->currency, 4);
		it.exp = recon_money_exponent(it.cur);
		if (it.exp < 0)
			it.exp = 0;
		it.opened_ms = sqlite3_column_int64(q, 6);
		it.opened_day = col_day(q, 7, recon_tz_day_of(r->job->tz, it.opened_ms));
		ended = col_day(q, 8, NO_DAY);
		/* closed by a person (no run): from the day it was closed on */
		if (ended == NO_DAY && strcmp((const char *)sqlite3_column_text(q, 11), "open") &&
		    sqlite3_column_type(q, 12) != SQLITE_NULL)
			ended = recon_tz_day_of(r->job->tz, sqlite3_column_int64(q, 12));
		series_add(r, &it, ended, d_open, d_info, d_stake, &stake_over);
		if (it.opened_day > r->to || ended <= r->to)
			continue; /* not open at the end of the report's day */
		it.key = display_key(q, 1);
		it.json = col_dup(q, 9);
		it.ticket = col_dup(q, 10);
		recon_grow((void **)&r->items, &alloc, r->nitems + 1, sizeof(*r->items));
		r->items[r->nitems++] = it;
	}
	if (s != SQLITE_DONE) {
		rc = db_err(db, err, "cannot read open items");
		goto out;
	}
	for (size_t i = 0; i < r->ndays; i++) {
		open += d_open[i];
		info += d_info[i];
		add_ck(&stake, d_stake[i], &over);
		r->days[i].open = open;
		r->days[i].open_info = info;
		r->days[i].stake = stake;
		r->days[i].stake_over = over || stake_over;
	}
out:
	sqlite3_finalize(q);
	free(d_open);
	free(d_info);
	free(d_stake);
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
		add_ck(&s->sum, it->amount, &s->over);
		if (it->info)
			continue;
		r->ndiff++;
		s = stake_get(&r->stakes, &r->nstakes, &alloc, "", it->cur);
		s->count++;
		add_ck(&s->sum, it->amount, &s->over);
		r->age[age <= 0 ? 0 : age <= 3 ? 1 : 2]++;
		if (strcmp(it->cur, r->cur))
			r->other_cur = true;
		if (it->ticket && !strcmp(it->ticket, "open"))
			r->tickets_open++;
	}
}

/* The first RECON_DAYREPORT_TOP rejects of the day's latest run, and how many it has. */
static int load_rejects(struct recon_dayreport *r, sqlite3 *db, struct recon_err *err)
{
	sqlite3_stmt *q = NULL, *c = NULL;
	size_t alloc = 0;
	int rc = 0, s;

	if (!r->last)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT side, origin, field, reason FROM rejects WHERE run_id = ?1 "
			       "ORDER BY rowid LIMIT ?2",
			       -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM rejects WHERE run_id = ?1", -1, &c,
			       NULL) != SQLITE_OK) {
		rc = db_err(db, err, "cannot read rejects");
		goto out;
	}
	sqlite3_bind_int64(q, 1, r->last->id);
	sqlite3_bind_int(q, 2, RECON_DAYREPORT_TOP);
	sqlite3_bind_int64(c, 1, r->last->id);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		struct reject *x;
		recon_grow((void **)&r->rejects, &alloc, r->nrejects + 1, sizeof(*r->rejects));
		x = &r->rejects[r->nrejects++];
		x->run = r->last->id;
		x->side = col_dup(q, 0);
		x->origin = col_dup(q, 1);
		x->field = col_dup(q, 2);
		x->reason = col_dup(q, 3);
	}
	if (s != SQLITE_DONE || sqlite3_step(c) != SQLITE_ROW) {
		rc = db_err(db, err, "cannot read rejects");
		goto out;
	}
	r->rejects_total = sqlite3_column_int64(c, 0);
out:
	sqlite3_finalize(q);
	sqlite3_finalize(c);
	return rc;
}

/* The latest day a successful run of the mode reconciled; `dflt` when none did. */
static int latest_day(sqlite3 *db, const struct recon_job *job, const char *mode, int64_t dflt,
		      int64_t *day, struct recon_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = 0;

	*day = dflt;
	if (sqlite3_prepare_v2(db,
			       "SELECT max(business_date) FROM runs WHERE job = ?1 AND mode = ?2 "
			       "AND outcome = 'success' AND dry_run = 0",
			       -1, &q, NULL) != SQLITE_OK) {
		rc = db_err(db, err, "cannot read runs");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		*day = col_day(q, 0, dflt);
out:
	sqlite3_finalize(q);
	return rc;
}

int recon_dayreport_load(struct recon_dayreport **out, struct recon_state *st,
			 const struct recon_job *job, const char *mode, int64_t *from_day_io,
			 int64_t *to_day_io, int64_t now, struct recon_err *err)
{
	struct recon_dayreport *r = recon_xcalloc(1, sizeof(*r));
	sqlite3 *db = recon_state_db(st);
	int rc = 0;

	*out = NULL;
	r->job = job;
	r->now = now;
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
	memcpy(r->cur, job->currency, 4);
	r->exp = job->exponent;
	if (*to_day_io == INT64_MIN &&
	    (rc = latest_day(db, job, mode, recon_tz_day_of(job->tz, now), to_day_io, err)) < 0)
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
	if ((rc = load_runs(r, db, err)) < 0 || (rc = load_items(r, db, err)) < 0 ||
	    (rc = load_rejects(r, db, err)) < 0)
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

/* ---- rendering helpers ------------------------------------------------------ */

struct w {
	FILE *f;
	struct recon_buf b;
	bool failed;
};

static void spill(struct w *w, bool all)
{
	if (w->b.len < (all ? 1 : 65536))
		return;
	if (fwrite(w->b.s, 1, w->b.len, w->f) != w->b.len)
		w->failed = true;
	recon_buf_reset(&w->b);
}

/* Minor units as decimal text; `group`: thousands separated by ','. */
static void money_text(int64_t v, int exp, bool group, char *buf, size_t size)
{
	char m[48];
	size_t len = recon_money_format(v, exp, m, sizeof(m)), digits, o = 0;
	const char *p = m;

	if (!group || size < 64) {
		snprintf(buf, size, "%s", m);
		return;
	}
	if (*p == '-')
		buf[o++] = *p++;
	digits = (size_t)(strchr(p, '.') ? strchr(p, '.') - p : (ptrdiff_t)(m + len - p));
	for (size_t i = 0; i < digits; i++) {
		if (i && (digits - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = p[i];
	}
	snprintf(buf + o, size - o, "%s", p + digits);
}

/* A count with thousands separated by ','; buf holds 64 bytes. Returns buf. */
static char *count_text(int64_t v, char *buf)
{
	money_text(v, 0, true, buf, 64);
	return buf;
}

static void stake_text(const struct stake *s, bool group, char *buf, size_t size)
{
	if (s->over)
		snprintf(buf, size, "beyond int64");
	else
		money_text(s->sum, s->exp, group, buf, size);
}

/* "2024-03-01 10:00:00+08:00": wall clock in the job's zone with its offset. */
static void local_time(const struct recon_dayreport *r, int64_t ms, char *buf, size_t size)
{
	char t[40];
	int32_t off = recon_tz_offset(r->job->tz, ms);
	int32_t a = off < 0 ? -off : off;

	recon_time_format_local(r->job->tz, ms, t, sizeof(t));
	/* "YYYY-MM-DD HH:MM:SS" is 19 bytes; offsets are under 100 hours */
	snprintf(buf, size, "%.19s%c%02d:%02d", t, off < 0 ? '-' : '+', (int)(a / 3600 % 100),
		 (int)(a / 60 % 60));
}

/* One side of a difference, as text ready to show. */
struct side {
	bool present;
	char amount[80]; /* "100.00 CNY" */
	char decimal[48];
	char cur[4];
	char status[24];
	char time[40]; /* local, with offset */
	char origin[256];
};

static void side_get(const struct recon_dayreport *r, json_t *d, const char *name, struct side *s)
{
	json_t *o = json_object_get(d, name);
	json_t *a = json_object_get(o, "amount_minor"), *c = json_object_get(o, "currency");
	json_t *t = json_object_get(o, "time"), *st = json_object_get(o, "status");
	json_t *org = json_object_get(o, "origin");
	const char *origin = json_is_string(org) ? json_string_value(org) : "";
	const char *slash = strrchr(origin, '/');
	struct recon_err e;
	int64_t ms;
	int exp;

	memset(s, 0, sizeof(*s));
	if (!json_is_object(o))
		return;
	s->present = true;
	snprintf(s->cur, sizeof(s->cur), "%s", json_is_string(c) ? json_string_value(c) : "");
	exp = recon_money_exponent(s->cur);
	if (json_is_integer(a)) {
		money_text((int64_t)json_integer_value(a), exp < 0 ? 0 : exp, false, s->decimal,
			   sizeof(s->decimal));
		char g[64];
		money_text((int64_t)json_integer_value(a), exp < 0 ? 0 : exp, true, g, sizeof(g));
		snprintf(s->amount, sizeof(s->amount), "%s %s", g, s->cur);
	}
	snprintf(s->status, sizeof(s->status), "%s",
		 json_is_string(st) ? json_string_value(st) : "");
	recon_err_init(&e);
	if (json_is_string(t) && recon_time_parse(json_string_value(t),
						  strlen(json_string_value(t)), NULL, &ms, &e) == 0)
		local_time(r, ms, s->time, sizeof(s->time));
	/* file rows name the file by its path: the name is enough to find it */
	snprintf(s->origin, sizeof(s->origin), "%s", slash ? slash + 1 : origin);
}

/* Length of the UTF-8 sequence at p (1-4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0], cp;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Text made safe for the page: HTML (md false) escapes & < > " ', Markdown
 * escapes its table and emphasis characters; both turn control characters
 * into blanks and bytes that are not UTF-8 into U+FFFD.
 */
static void add_text(struct recon_buf *b, const char *s, bool md)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	while (*p) {
		size_t l = utf8_len(p, n);
		if (!l) {
			recon_buf_adds(b, "\xef\xbf\xbd");
			l = 1;
		} else if (*p < 0x20 || *p == 0x7f) {
			recon_buf_addc(b, ' ');
		} else if (!md && *p == '&') {
			recon_buf_adds(b, "&amp;");
		} else if (!md && *p == '<') {
			recon_buf_adds(b, "&lt;");
		} else if (!md && *p == '>') {
			recon_buf_adds(b, "&gt;");
		} else if (!md && *p == '"') {
			recon_buf_adds(b, "&quot;");
		} else if (!md && *p == '\'') {
			recon_buf_adds(b, "&#39;");
		} else if (md && strchr("\\`*_|<>[]#", *p)) {
			recon_buf_addc(b, '\\');
			recon_buf_addc(b, (char)*p);
		} else {
			recon_buf_add(b, p, l);
		}
		p += l;
		n -= l;
	}
}

/* A CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF. */
static void add_csv(struct recon_buf *b, const char *s)
{
	s = s ? s : "";
	if (!strpbrk(s, ",\"\r\n")) {
		recon_buf_adds(b, s);
		return;
	}
	recon_buf_addc(b, '"');
	for (; *s; s++) {
		if (*s == '"')
			recon_buf_addc(b, '"');
		recon_buf_addc(b, *s);
	}
	recon_buf_addc(b, '"');
}

/* "190.00 CNY, 5.00 USD": every currency's total of open differences ("" when none). */
static void totals_text(const struct recon_dayreport *r, bool group, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < r->nstakes && o < size; i++) {
		const struct stake *s = &r->stakes[i];
		char m[64];
		if (s->klass[0])
			continue;
		stake_text(s, group, m, sizeof(m));
		o += (size_t)snprintf(buf + o, size - o, "%s%s %s", o ? ", " : "", m, s->cur);
	}
}

/* The verdict in one line; *level 0 ok, 1 attention, 2 bad. */
static void verdict(const struct recon_dayreport *r, bool group, char *buf, size_t size, int *level)
{
	char date[16], money[512], n[3][64];
	int64_t critical = 0, found = r->days[r->ndays - 1].found;

	recon_date_format(r->to, date, sizeof(date));
	totals_text(r, group, money, sizeof(money));
	for (size_t i = 0; i < r->nitems; i++)
		critical += !strcmp(r->items[i].sev, "critical");
	if (!r->main) {
		*level = 2;
		snprintf(buf, size, "%s is not reconciled: no %s run of that day is recorded", date,
			 r->mode);
		return;
	}
	if (strcmp(r->main->outcome, "success")) {
		*level = 2;
		snprintf(buf, size,
			 "%s is not reconciled: run %" PRId64 " %s (exit %" PRId64 "): %s", date,
			 r->main->id, r->main->outcome, r->main->exit_code,
			 r->main->error ? r->main->error : "no error recorded");
		return;
	}
	if (!r->ndiff) {
		*level = 0;
		snprintf(buf, size, "%s reconciled: every key matched, no open difference", date);
		return;
	}
	*level = critical ? 2 : 1;
	snprintf(buf, size,
		 "%s reconciled: %s open difference%s, %s at stake; %s critical, %s found that day",
		 date, count_text((int64_t)r->ndiff, n[0]), r->ndiff == 1 ? "" : "s", money,
		 count_text(critical, n[1]), count_text(found, n[2]));
}

/* "2024-03-01" of an item's opening and its age in days at the report's day. */
static void age_text(const struct recon_dayreport *r, const struct item *it, char *buf, size_t size)
{
	int64_t a = r->to - it->opened_day;

	if (a <= 0)
		snprintf(buf, size, "today");
	else
		snprintf(buf, size, "%" PRId64 " day%s", a, a == 1 ? "" : "s");
}

static const struct item *oldest(const struct recon_dayreport *r)
{
	const struct item *o = NULL;

	for (size_t i = 0; i < r->nitems; i++) {
		const struct item *it = &r->items[i];
		if (it->info)
			continue;
		if (!o || it->opened_day < o->opened_day ||
		    (it->opened_day == o->opened_day && it->opened_ms < o->opened_ms) ||
		    (it->opened_day == o->opened_day && it->opened_ms == o->opened_ms &&
		     it->id < o->id))
			o = it;
	}
	return o;
}

/* ---- charts ------------------------------------------------------------------ */

#define CHART_W	 720
#define CHART_H	 210
#define CHART_X0 72  /* left of the plot: the value labels */
#define CHART_Y0 12  /* top of the plot */
#define CHART_PH 160 /* plot height */

enum chart_kind { CHART_COUNT, CHART_MONEY, CHART_DURATION };

struct chart {
	const char *id, *title, *caption;
	enum chart_kind kind;
	bool line;
	int exp;
	const char *cur;
	int64_t v[RECON_DAYREPORT_MAX_DAYS];
	const char *cls[RECON_DAYREPORT_MAX_DAYS]; /* the mark's class: its colour */
};

static void value_text(const struct chart *c, int64_t v, char *buf, size_t size)
{
	if (c->kind == CHART_MONEY)
		money_text(v, c->exp, true, buf, size);
	else if (c->kind == CHART_DURATION)
		recon_duration_format(v, buf, size);
	else
		snprintf(buf, size, "%" PRId64, v);
}

/*
 * A grid line's label, short enough for the margin: a whole amount of major
 * units drops its decimals and, when exact, takes k, M or B ("40M" for
 * 40,000,000.00); tooltips keep the exact amounts.
 */
static void axis_text(const struct chart *c, int64_t v, char *buf, size_t size)
{
	static const struct {
		int64_t div;
		const char *suffix;
	} units[] = {{1000000000, "B"}, {1000000, "M"}, {1000, "k"}};
	int64_t unit = 1;

	for (int i = 0; c->kind == CHART_MONEY && i < c->exp; i++)
		unit *= 10;
	if (c->kind == CHART_DURATION || v == 0 || v % unit) {
		value_text(c, v, buf, size);
		return;
	}
	v /= unit;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (v % units[i].div == 0) {
			snprintf(buf, size, "%" PRId64 "%s", v / units[i].div, units[i].suffix);
			return;
		}
	snprintf(buf, size, "%" PRId64, v);
}

/*
 * The smallest 2, 4, 6, 8 or 10 times a power of ten at or above v: even, so the
 * half-way grid line is exact (v itself near INT64_MAX).
 */
static int64_t nice_max(int64_t v)
{
	for (int64_t p = 1; p <= INT64_MAX / 10; p *= 10)
		for (int m = 2; m <= 10; m += 2)
			if (m * p >= v)
				return m * p;
	return v;
}

/* Height in pixels of v on a plot whose top is max, without overflow. */
static int64_t px(int64_t v, int64_t max)
{
	if (v <= 0 || max <= 0)
		return 0;
	if (max <= INT64_MAX / CHART_PH && v <= max)
		return v * CHART_PH / max;
	return v / (max / CHART_PH + 1);
}

static void chart_svg(struct recon_buf *b, const struct recon_dayreport *r, const struct chart *c)
{
	int64_t max = 0, n = (int64_t)r->ndays, pw = CHART_W - CHART_X0 - 8;
	int64_t step = n <= 10 ? 1 : n <= 62 ? 7 : 30, base = CHART_Y0 + CHART_PH;
	char t[64], d[16];

	for (int64_t i = 0; i < n; i++)
		if (c->v[i] > max)
			max = c->v[i];
	max = nice_max(max < 1 ? 1 : max);
	recon_buf_addf(b, "<figure class=\"chart\" id=\"%s\"><figcaption>", c->id);
	add_text(b, c->title, false);
	recon_buf_addf(b,
		       "</figcaption><svg viewBox=\"0 0 %d %d\" role=\"img\" "
		       "aria-label=\"",
		       CHART_W, CHART_H);
	add_text(b, c->title, false);
	recon_buf_adds(b, "\">");
	/* grid and value labels: 0, half, top */
	for (int k = 0; k <= 2; k++) {
		int64_t y = base - (int64_t)CHART_PH * k / 2;
		axis_text(c, max / 2 * k, t, sizeof(t));
		recon_buf_addf(b,
			       "<line class=\"grid\" x1=\"%d\" y1=\"%" PRId64
			       "\" x2=\"%d\" y2=\"%" PRId64
			       "\"/><text class=\"ylabel\" x=\"%d\" y=\"%" PRId64 "\">%s</text>",
			       CHART_X0, y, CHART_W - 8, y, CHART_X0 - 6, y + 4, t);
	}
	if (c->line)
		recon_buf_adds(b, "<polyline class=\"mark line\" points=\"");
	for (int64_t i = 0; c->line && i < n; i++)
		recon_buf_addf(b, "%s%" PRId64 ",%" PRId64, i ? " " : "",
			       CHART_X0 + i * pw / n + pw / n / 2, base - px(c->v[i], max));
	if (c->line)
		recon_buf_adds(b, "\"/>");
	for (int64_t i = 0; i < n; i++) {
		int64_t x = CHART_X0 + i * pw / n, w = pw / n > 4 ? pw / n - 2 : 1;
		int64_t h = px(c->v[i], max);
		recon_date_format(r->from + i, d, sizeof(d));
		value_text(c, c->v[i], t, sizeof(t));
		if (c->line)
			recon_buf_addf(b,
				       "<circle class=\"mark dot\" cx=\"%" PRId64 "\" cy=\"%" PRId64
				       "\" r=\"3\"><title>%s: %s</title></circle>",
				       x + pw / n / 2, base - h, d, t);
		else if (h > 0 || c->cls[i])
			recon_buf_addf(b,
				       "<rect class=\"mark %s\" x=\"%" PRId64 "\" y=\"%" PRId64
				       "\" width=\"%" PRId64 "\" height=\"%" PRId64
				       "\"><title>%s: %s%s%s</title></rect>",
				       c->cls[i] ? c->cls[i] : "bar", x, base - (h > 0 ? h : 3), w,
				       h > 0 ? h : 3, d, t, c->cur ? " " : "",
				       c->cur ? c->cur : "");
		if ((n - 1 - i) % step == 0)
			recon_buf_addf(
			    b, "<text class=\"xlabel\" x=\"%" PRId64 "\" y=\"%d\">%s</text>",
			    x + pw / n / 2, CHART_H - 14, d + 5);
	}
	recon_buf_adds(b, "</svg><p class=\"caption\">");
	add_text(b, c->caption, false);
	recon_buf_adds(b, "</p></figure>\n");
}

static void html_charts(struct recon_buf *b, const struct recon_dayreport *r)
{
	struct chart *c = recon_xcalloc(1, sizeof(*c));
	char cap[256];

	c->id = "chart-differences";
	c->title = "Differences found per day";
	c->caption = "New differences the day's runs opened (awaiting and in-flight items are not "
		     "differences yet).";
	for (size_t i = 0; i < r->ndays; i++)
		c->v[i] = r->days[i].found;
	chart_svg(b, r, c);

	memset(c, 0, sizeof(*c));
	snprintf(cap, sizeof(cap),
		 "Money at stake in the open differences at the end of each day, in %s%s.", r->cur,
		 r->other_cur ? " (differences in other currencies are in the tables)" : "");
	c->id = "chart-money";
	c->title = "Money at stake per day";
	c->caption = cap;
	c->kind = CHART_MONEY;
	c->exp = r->exp;
	c->cur = r->cur;
	for (size_t i = 0; i < r->ndays; i++)
		c->v[i] = r->days[i].stake_over ? INT64_MAX : r->days[i].stake;
	chart_svg(b, r, c);

	memset(c, 0, sizeof(*c));
	c->id = "chart-open";
	c->title = "Open differences over time";
	c->caption = "Open differences at the end of each day.";
	c->line = true;
	for (size_t i = 0; i < r->ndays; i++)
		c->v[i] = r->days[i].open;
	chart_svg(b, r, c);

	memset(c, 0, sizeof(*c));
	c->id = "chart-runs";
	c->title = "Runs: duration and outcome";
	c->caption = "The longest run of each day; red: a run of that day failed; grey: no run.";
	c->kind = CHART_DURATION;
	for (size_t i = 0; i < r->ndays; i++) {
		c->v[i] = r->days[i].max_ms;
		c->cls[i] = !r->days[i].runs ? "none" : r->days[i].failed ? "failed" : "ok";
	}
	chart_svg(b, r, c);
	free(c);
}

/* ---- HTML -------------------------------------------------------------------- */

static const char css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2430;"
    "background:#f4f6f9;margin:0}"
    "main{max-width:1100px;margin:0 auto;padding:16px}"
    "h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:28px 0 8px}"
    ".meta{color:#5a6475;margin:0 0 12px}"
    ".verdict{font-size:17px;font-weight:600;padding:12px 16px;border-radius:6px;"
    "border-left:6px solid}"
    ".v0{background:#e7f6ec;border-color:#1f9d55}.v1{background:#fff4de;border-color:#d98e04}"
    ".v2{background:#fde8e8;border-color:#c81e1e}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(200px,1fr));gap:12px;"
    "margin:16px 0}"
    ".card{background:#fff;border-radius:6px;padding:12px 14px;box-shadow:0 1px 2px #0002}"
    ".card .n{font-size:22px;font-weight:700;display:block;overflow-wrap:anywhere}"
    ".card .l{color:#5a6475;font-size:13px}"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;width:100%;font-size:13px;background:#fff;"
    "box-shadow:0 1px 2px #0002}table.kv{width:auto;min-width:60%}table.kv th{white-space:normal}"
    "th,td{padding:5px 8px;border-bottom:1px solid #e3e7ee;text-align:left;vertical-align:top}"
    "th{background:#eef1f6;font-weight:600;white-space:nowrap}"
    "td.num,th.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "tr.critical td:first-child{border-left:4px solid #c81e1e}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}"
    "@media "
    "(max-width:600px){.charts{grid-template-columns:1fr}main{padding:8px}.step{display:none}}"
    ".chart{background:#fff;border-radius:6px;padding:10px;margin:0;box-shadow:0 1px 2px #0002}"
    ".chart figcaption{font-weight:600}.caption{color:#5a6475;font-size:12px;margin:4px 0 0}"
    "svg{width:100%;height:auto;display:block}"
    ".grid{stroke:#e3e7ee}.ylabel{font-size:14px;fill:#5a6475;text-anchor:end}"
    ".xlabel{font-size:14px;fill:#5a6475;text-anchor:middle}"
    ".bar{fill:#3867d6}.ok{fill:#1f9d55}.failed{fill:#c81e1e}.none{fill:#c3c9d4}"
    ".line{fill:none;stroke:#d98e04;stroke-width:2}.dot{fill:#d98e04}"
    ".muted{color:#5a6475}code{font-size:12px}"
    "footer{color:#5a6475;font-size:12px;margin:28px 0}";

static void html_head(struct recon_buf *b, const struct recon_dayreport *r)
{
	char date[16], now[48], v[1024];
	int level;

	recon_date_format(r->to, date, sizeof(date));
	local_time(r, r->now, now, sizeof(now));
	verdict(r, true, v, sizeof(v), &level);
	recon_buf_adds(b,
		       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       "<title>");
	add_text(b, r->job->name, false);
	recon_buf_addf(
	    b, ": reconciliation of %s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", date,
	    css);
	recon_buf_adds(b, "<h1>");
	add_text(b, r->job->name, false);
	recon_buf_addf(b,
		       ": reconciliation of %s</h1>\n<p class=\"meta\">mode %s, business days in ",
		       date, r->mode);
	add_text(b, r->job->tz_name, false);
	recon_buf_addf(b, ", times shown with their UTC offset; generated %s</p>\n", now);
	recon_buf_addf(b, "<p class=\"verdict v%d\" id=\"verdict\">", level);
	add_text(b, v, false);
	recon_buf_adds(b, "</p>\n");
}

static void html_card(struct recon_buf *b, const char *value, const char *label)
{
	recon_buf_adds(b, "<div class=\"card\"><span class=\"n\">");
	add_text(b, value, false);
	recon_buf_adds(b, "</span><span class=\"l\">");
	add_text(b, label, false);
	recon_buf_adds(b, "</span></div>\n");
}

static void html_cards(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = oldest(r);
	char v[512], l[512], a[32], m[64];

	recon_buf_adds(b, "<div class=\"cards\">\n");
	count_text((int64_t)r->ndiff, v);
	snprintf(l, sizeof(l), "open differences (%s with an open ticket)",
		 count_text(r->tickets_open, m));
	html_card(b, v, l);
	totals_text(r, true, v, sizeof(v));
	html_card(b, v[0] ? v : "0", "money at stake");
	html_card(b, count_text(r->days[r->ndays - 1].found, v), "differences found that day");
	if (o) {
		age_text(r, o, a, sizeof(a));
		money_text(o->amount, o->exp, true, m, sizeof(m));
		snprintf(l, sizeof(l), "oldest open: %s, %s %s, open %s", o->klass, m, o->cur, a);
		html_card(b, o->key, l);
	} else {
		html_card(b, "none", "oldest open difference");
	}
	recon_buf_adds(b, "</div>\n");
}

/* The control totals line: verified, failed, or why they were not checked. */
static void totals_line(const struct recon_dayreport *r, char *buf, size_t size)
{
	const struct recon_totals_rule *t = &r->job->upstream.csv.totals;

	if (!r->main)
		snprintf(buf, size, "not checked: no run of the day");
	else if (r->main->exit_code == 65 && r->main->error && strstr(r->main->error, "total"))
		snprintf(buf, size, "FAILED: %s", r->main->error);
	else if (t->in == RECON_TOTALS_NONE)
		snprintf(buf, size, "not checked: the statement format carries no control totals");
	else if (strcmp(r->main->outcome, "success"))
		snprintf(buf, size, "not verified: the run did not complete");
	else
		snprintf(buf, size,
			 t->required
			     ? "verified: the statement's control totals match the entries read"
			     : "verified where the statement carries them (they are optional "
			       "in this format)");
}

static const char *const run_labels[10] = {"upstream entries read",
					   "local rows read",
					   "rows rejected",
					   "keyless lines skipped",
					   "keys compared",
					   "keys matched",
					   "differences found",
					   "earlier differences resolved",
					   "in flight",
					   "awaiting"};

static void html_day(struct recon_buf *b, const struct recon_dayreport *r)
{
	char t[512];

	recon_buf_adds(b, "<h2>The day</h2>\n");
	if (!r->main) {
		recon_buf_adds(b, "<p>No run of this day is recorded.</p>\n");
		return;
	}
	local_time(r, r->main->started, t, sizeof(t));
	recon_buf_addf(b,
		       "<div class=\"scroll\"><table id=\"day\" class=\"kv\"><tr><th>run %" PRId64
		       " (%s), started %s</th><th class=\"num\">count</th></tr>\n",
		       r->main->id, r->main->outcome, t);
	for (int i = 0; i < 10; i++)
		recon_buf_addf(b, "<tr><td>%s</td><td class=\"num\">%s</td></tr>\n", run_labels[i],
			       count_text(r->main->n[i], t));
	totals_line(r, t, sizeof(t));
	recon_buf_adds(b, "<tr><td>control totals</td><td>");
	add_text(b, t, false);
	recon_buf_adds(b, "</td></tr></table></div>\n");
}

static void html_money(struct recon_buf *b, const struct recon_dayreport *r)
{
	char m[64], n[64];

	recon_buf_adds(
	    b,
	    "<h2>Money at stake</h2>\n<div class=\"scroll\"><table id=\"money\">"
	    "<tr><th>class</th><th class=\"step\">next step</th><th class=\"num\">open items</th>"
	    "<th class=\"num\">at stake</th><th>currency</th></tr>\n");
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < r->nstakes; i++) {
			const struct stake *s = &r->stakes[i];
			int kind = !s->klass[0] ? 1 : s->info ? 2 : 0;
			if (kind != pass)
				continue;
			stake_text(s, true, m, sizeof(m));
			recon_buf_addf(
			    b, "<tr%s><td>%s%s%s</td><td class=\"step\">%s</td>",
			    !strcmp(s->klass, "amount_mismatch") ? " class=\"critical\"" : "",
			    pass == 1 ? "<strong>" : "", s->klass[0] ? s->klass : "all differences",
			    pass == 1 ? "</strong>" : "",
			    pass == 1	? ""
			    : pass == 2 ? "not a difference yet"
					: recon_dayreport_next_step(s->klass));
			recon_buf_addf(
			    b,
			    "<td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			    count_text(s->count, n), m, s->cur);
		}
	if (!r->nstakes)
		recon_buf_adds(b, "<tr><td colspan=\"5\">nothing open</td></tr>\n");
	recon_buf_adds(b, "</table></div>\n");
}

static void html_age(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = oldest(r);
	char a[32], m[64], n[3][64];

	recon_buf_addf(b,
		       "<h2>Open differences by age</h2>\n<div class=\"scroll\"><table id=\"age\" "
		       "class=\"kv\">"
		       "<tr><th class=\"num\">opened that day</th><th class=\"num\">1-3 days</th>"
		       "<th class=\"num\">older</th></tr><tr><td class=\"num\">%s</td><td "
		       "class=\"num\">%s</td><td class=\"num\">%s</td></tr></table></div>\n",
		       count_text(r->age[0], n[0]), count_text(r->age[1], n[1]),
		       count_text(r->age[2], n[2]));
	if (!o)
		return;
	age_text(r, o, a, sizeof(a));
	money_text(o->amount, o->exp, true, m, sizeof(m));
	recon_buf_adds(b, "<p id=\"oldest\">The oldest: <strong>");
	add_text(b, o->key, false);
	recon_buf_addf(b, "</strong>, %s, %s %s at stake, open %s. Next step: %s.</p>\n", o->klass,
		       m, o->cur, a, recon_dayreport_next_step(o->klass));
}

static void html_items(struct recon_buf *b, const struct recon_dayreport *r, struct w *w)
{
	size_t shown = r->ndiff < RECON_DAYREPORT_TOP ? r->ndiff : RECON_DAYREPORT_TOP;
	int64_t rest = 0;
	struct stake rest_m[8];
	size_t nrest = 0;
	bool rest_over = false;

	recon_buf_addf(b, "<h2>Open differences, by money at stake</h2>\n<div class=\"scroll\">"
			  "<table id=\"items\"><tr><th>key</th><th>class</th><th class=\"num\">at "
			  "stake</th><th>upstream</th><th>local</th><th>age</th><th>ticket</th>"
			  "<th>next step</th><th>origin</th></tr>\n");
	for (size_t i = 0; i < shown; i++) {
		const struct item *it = &r->items[i];
		json_t *d = json_loads(it->json ? it->json : "{}", 0, NULL);
		struct side s[2];
		char m[64], a[32];

		side_get(r, d, "upstream", &s[0]);
		side_get(r, d, "local", &s[1]);
		money_text(it->amount, it->exp, true, m, sizeof(m));
		age_text(r, it, a, sizeof(a));
		recon_buf_addf(b, "<tr%s><td>",
			       !strcmp(it->sev, "critical") ? " class=\"critical\"" : "");
		add_text(b, it->key, false);
		recon_buf_addf(b, "</td><td>%s</td><td class=\"num\">%s %s</td>", it->klass, m,
			       it->cur);
		for (int k = 0; k < 2; k++) {
			recon_buf_adds(b, "<td>");
			if (s[k].present) {
				recon_buf_addf(b, "%s, ", s[k].amount);
				add_text(b, s[k].status, false);
				recon_buf_addf(b, "<br><span class=\"muted\">%s</span>", s[k].time);
			} else {
				recon_buf_adds(b, "<span class=\"muted\">none</span>");
			}
			recon_buf_adds(b, "</td>");
		}
		recon_buf_addf(b, "<td>%s</td><td>%s</td><td>%s</td><td><code>", a,
			       it->ticket ? it->ticket : "-", recon_dayreport_next_step(it->klass));
		add_text(b, s[0].present ? s[0].origin : s[1].origin, false);
		if (s[0].present && s[1].present) {
			recon_buf_adds(b, "<br>");
			add_text(b, s[1].origin, false);
		}
		recon_buf_adds(b, "</code></td></tr>\n");
		json_decref(d);
		spill(w, false);
	}
	if (!r->ndiff)
		recon_buf_adds(b, "<tr><td colspan=\"9\">no open difference</td></tr>\n");
	recon_buf_adds(b, "</table></div>\n");
	for (size_t i = shown; i < r->nitems; i++) {
		const struct item *it = &r->items[i];
		size_t k;
		if (it->info)
			continue;
		rest++;
		for (k = 0; k < nrest && strcmp(rest_m[k].cur, it->cur); k++)
			;
		if (k == nrest) {
			if (nrest == 8) {
				rest_over = true; /* more currencies than the line names */
				continue;
			}
			memset(&rest_m[k], 0, sizeof(rest_m[k]));
			memcpy(rest_m[k].cur, it->cur, 4);
			rest_m[k].exp = it->exp;
			nrest++;
		}
		rest_m[k].count++;
		add_ck(&rest_m[k].sum, it->amount, &rest_m[k].over);
	}
	if (rest) {
		char n[64];
		recon_buf_addf(
		    b, "<p id=\"rest\">%s more open differences, not listed:", count_text(rest, n));
		for (size_t k = 0; k < nrest; k++) {
			char m[64];
			stake_text(&rest_m[k], true, m, sizeof(m));
			recon_buf_addf(b, "%s %s %s", k ? "," : "", m, rest_m[k].cur);
		}
		recon_buf_addf(b,
			       "%s at stake. The full list: <code>recon report --format csv</code>."
			       "</p>\n",
			       rest_over ? " and more currencies" : "");
	}
}

static void html_rejects(struct recon_buf *b, const struct recon_dayreport *r)
{
	recon_buf_adds(b, "<h2>Rejects</h2>\n");
	if (!r->rejects_total) {
		recon_buf_adds(
		    b, "<p id=\"rejects\">No row of the day's latest run was rejected.</p>\n");
		return;
	}
	recon_buf_addf(b,
		       "<p>%" PRId64 " row%s of run %" PRId64
		       " could not be read:</p>\n<div class=\"scroll\"><table id=\"rejects\"><tr>"
		       "<th>side</th><th>origin</th><th>field</th><th>reason</th></tr>\n",
		       r->rejects_total, r->rejects_total == 1 ? "" : "s", r->last->id);
	for (size_t i = 0; i < r->nrejects; i++) {
		const struct reject *x = &r->rejects[i];
		const char *slash = x->origin ? strrchr(x->origin, '/') : NULL;
		recon_buf_adds(b, "<tr><td>");
		add_text(b, x->side, false);
		recon_buf_adds(b, "</td><td><code>");
		add_text(b, slash ? slash + 1 : x->origin, false);
		recon_buf_adds(b, "</code></td><td>");
		add_text(b, x->field, false);
		recon_buf_adds(b, "</td><td>");
		add_text(b, x->reason, false);
		recon_buf_adds(b, "</td></tr>\n");
	}
	recon_buf_adds(b, "</table></div>\n");
	if ((int64_t)r->nrejects < r->rejects_total)
		recon_buf_addf(
		    b, "<p>The first %zu are listed: <code>recon rejects</code> has all.</p>\n",
		    r->nrejects);
}

static void html_runs(struct recon_buf *b, const struct recon_dayreport *r)
{
	size_t n = 0, first;

	for (size_t i = 0; i < r->nruns; i++)
		n += r->runs[i].day == r->to;
	recon_buf_addf(b, "<h2>Runs of the day</h2>\n<div class=\"scroll\"><table id=\"runs\"><tr>"
			  "<th class=\"num\">run</th><th>outcome</th><th>started</th>"
			  "<th class=\"num\">duration</th><th>error</th></tr>\n");
	/* hot mode runs every 5 minutes: the latest 24 are enough here */
	first = n > 24 ? n - 24 : 0;
	for (size_t i = 0, k = 0; i < r->nruns; i++) {
		const struct run *u = &r->runs[i];
		char t[48], d[32] = "-";
		if (u->day != r->to || k++ < first)
			continue;
		local_time(r, u->started, t, sizeof(t));
		if (u->finished >= u->started)
			recon_duration_format(u->finished - u->started, d, sizeof(d));
		recon_buf_addf(b,
			       "<tr><td class=\"num\">%" PRId64
			       "</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td>",
			       u->id, u->outcome, t, d);
		add_text(b, u->error ? u->error : "", false);
		recon_buf_adds(b, "</td></tr>\n");
	}
	if (!n)
		recon_buf_adds(b, "<tr><td colspan=\"5\">none</td></tr>\n");
	recon_buf_adds(b, "</table></div>\n");
}

static void html_write(struct w *w, const struct recon_dayreport *r)
{
	struct recon_buf *b = &w->b;
	char d0[16], d1[16];

	recon_date_format(r->from, d0, sizeof(d0));
	recon_date_format(r->to, d1, sizeof(d1));
	html_head(b, r);
	html_cards(b, r);
	html_day(b, r);
	html_money(b, r);
	html_age(b, r);
	recon_buf_addf(b, "<h2>%s to %s</h2>\n<div class=\"charts\">\n", d0, d1);
	html_charts(b, r);
	recon_buf_adds(b, "</div>\n");
	spill(w, false);
	html_items(b, r, w);
	html_rejects(b, r);
	html_runs(b, r);
	recon_buf_addf(b,
		       "<footer>recon %s. Amounts are exact decimals in each currency; money at "
		       "stake is what a difference puts in doubt (the gap of an amount mismatch, "
		       "the whole order otherwise). Read-only over the state store.</footer>\n"
		       "</main>\n</body>\n</html>\n",
		       RECON_VERSION);
}

/* ---- Markdown ---------------------------------------------------------------- */

/* The verdict, the day, money at stake and the ages. */
static void md_summary(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = oldest(r);
	char date[16], t[1024], m[64], a[32];
	int level;

	recon_date_format(r->to, date, sizeof(date));
	verdict(r, true, t, sizeof(t), &level);
	recon_buf_adds(b, "# ");
	add_text(b, r->job->name, true);
	recon_buf_addf(b, ": reconciliation of %s\n\n**%s** ", date,
		       level == 0   ? "OK"
		       : level == 1 ? "ATTENTION"
				    : "ACTION NEEDED");
	add_text(b, t, true);
	recon_buf_addf(b, "\n\nMode %s, business days in ", r->mode);
	add_text(b, r->job->tz_name, true);
	local_time(r, r->now, t, sizeof(t));
	recon_buf_addf(b, "; generated %s.\n\n## The day\n\n", t);
	if (r->main) {
		recon_buf_addf(b, "| run %" PRId64 " (%s) | count |\n| --- | ---: |\n", r->main->id,
			       r->main->outcome);
		for (int i = 0; i < 10; i++)
			recon_buf_addf(b, "| %s | %" PRId64 " |\n", run_labels[i], r->main->n[i]);
		totals_line(r, t, sizeof(t));
		recon_buf_adds(b, "\nControl totals: ");
		add_text(b, t, true);
		recon_buf_adds(b, "\n");
	} else {
		recon_buf_adds(b, "No run of this day is recorded.\n");
	}
	recon_buf_adds(b, "\n## Money at stake\n\n| class | open items | at stake | currency |\n"
			  "| --- | ---: | ---: | --- |\n");
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < r->nstakes; i++) {
			const struct stake *s = &r->stakes[i];
			int kind = !s->klass[0] ? 1 : s->info ? 2 : 0;
			if (kind != pass)
				continue;
			stake_text(s, true, m, sizeof(m));
			recon_buf_addf(b, "| %s%s%s | %" PRId64 " | %s | %s |\n",
				       pass == 1 ? "**" : "",
				       s->klass[0] ? s->klass : "all differences",
				       pass == 1   ? "**"
				       : pass == 2 ? " (not a difference yet)"
						   : "",
				       s->count, m, s->cur);
		}
	recon_buf_addf(b,
		       "\n## Open differences by age\n\n| opened that day | 1-3 days | older |\n"
		       "| ---: | ---: | ---: |\n| %" PRId64 " | %" PRId64 " | %" PRId64 " |\n",
		       r->age[0], r->age[1], r->age[2]);
	if (o) {
		age_text(r, o, a, sizeof(a));
		money_text(o->amount, o->exp, true, m, sizeof(m));
		recon_buf_adds(b, "\nThe oldest: **");
		add_text(b, o->key, true);
		recon_buf_addf(b, "**, %s, %s %s at stake, open %s.\n", o->klass, m, o->cur, a);
	}
}

/* One line per day of the range. */
static void md_days(struct recon_buf *b, const struct recon_dayreport *r)
{
	char date[16], m[64];

	recon_buf_addf(
	    b,
	    "\n## Per day\n\n| day | differences found | open at end | at stake (%s) | "
	    "runs | failed | longest run |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
	    r->cur);
	for (size_t i = 0; i < r->ndays; i++) {
		const struct day *d = &r->days[i];
		char dur[32];
		recon_date_format(r->from + (int64_t)i, date, sizeof(date));
		if (d->stake_over)
			snprintf(m, sizeof(m), "beyond int64");
		else
			money_text(d->stake, r->exp, true, m, sizeof(m));
		recon_duration_format(d->max_ms, dur, sizeof(dur));
		recon_buf_addf(
		    b, "| %s | %" PRId64 " | %" PRId64 " | %s | %" PRId64 " | %" PRId64 " | %s |\n",
		    date, d->found, d->open, m, d->runs, d->failed, d->runs ? dur : "-");
	}
}

/* The open differences by money at stake, and the day's rejects. */
static void md_items(struct w *w, const struct recon_dayreport *r)
{
	struct recon_buf *b = &w->b;
	size_t shown = r->ndiff < RECON_DAYREPORT_TOP ? r->ndiff : RECON_DAYREPORT_TOP;
	char m[64], a[32];

	recon_buf_adds(b, "\n## Open differences, by money at stake\n\n| key | class | at stake | "
			  "upstream | local | age | ticket | next step |\n"
			  "| --- | --- | ---: | --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < shown; i++) {
		const struct item *it = &r->items[i];
		json_t *d = json_loads(it->json ? it->json : "{}", 0, NULL);
		struct side s[2];

		side_get(r, d, "upstream", &s[0]);
		side_get(r, d, "local", &s[1]);
		money_text(it->amount, it->exp, true, m, sizeof(m));
		age_text(r, it, a, sizeof(a));
		recon_buf_adds(b, "| ");
		add_text(b, it->key, true);
		recon_buf_addf(b, " | %s | %s %s |", it->klass, m, it->cur);
		for (int k = 0; k < 2; k++) {
			if (!s[k].present) {
				recon_buf_adds(b, " none |");
				continue;
			}
			recon_buf_addf(b, " %s ", s[k].amount);
			add_text(b, s[k].status, true);
			recon_buf_addf(b, " %s (", s[k].time);
			add_text(b, s[k].origin, true);
			recon_buf_adds(b, ") |");
		}
		recon_buf_addf(b, " %s | %s | %s |\n", a, it->ticket ? it->ticket : "-",
			       recon_dayreport_next_step(it->klass));
		json_decref(d);
		spill(w, false);
	}
	if (r->ndiff > shown)
		recon_buf_addf(b,
			       "\n%zu more open differences are not listed: `recon report --format "
			       "csv` has them all.\n",
			       r->ndiff - shown);
	recon_buf_adds(b, "\n## Rejects\n\n");
	if (!r->rejects_total)
		recon_buf_adds(b, "No row of the day's latest run was rejected.\n");
	else
		recon_buf_addf(b, "%" PRId64 " row(s) of run %" PRId64 " could not be read:\n\n",
			       r->rejects_total, r->last->id);
	for (size_t i = 0; i < r->nrejects; i++) {
		const struct reject *x = &r->rejects[i];
		const char *slash = x->origin ? strrchr(x->origin, '/') : NULL;
		recon_buf_adds(b, "- ");
		add_text(b, slash ? slash + 1 : x->origin, true);
		recon_buf_adds(b, " (");
		add_text(b, x->side, true);
		recon_buf_adds(b, ", ");
		add_text(b, x->field, true);
		recon_buf_adds(b, "): ");
		add_text(b, x->reason, true);
		recon_buf_adds(b, "\n");
	}
}

static void md_write(struct w *w, const struct recon_dayreport *r)
{
	md_summary(&w->b, r);
	md_days(&w->b, r);
	md_items(w, r);
}

/* ---- CSV --------------------------------------------------------------------- */

static void csv_write(struct w *w, const struct recon_dayreport *r)
{
	struct recon_buf *b = &w->b;
	char date[16], m[64], opened[48], day[16];

	recon_date_format(r->to, date, sizeof(date));
	recon_buf_adds(b, "report_date,mode,key,class,severity,at_stake,currency,upstream_amount,"
			  "upstream_currency,upstream_status,upstream_time,upstream_origin,"
			  "local_amount,local_currency,local_status,local_time,local_origin,"
			  "opened_date,opened_at,age_days,ticket,next_step\r\n");
	for (size_t i = 0; i < r->nitems; i++) {
		const struct item *it = &r->items[i];
		json_t *d = json_loads(it->json ? it->json : "{}", 0, NULL);
		struct side s[2];

		side_get(r, d, "upstream", &s[0]);
		side_get(r, d, "local", &s[1]);
		money_text(it->amount, it->exp, false, m, sizeof(m));
		local_time(r, it->opened_ms, opened, sizeof(opened));
		recon_date_format(it->opened_day, day, sizeof(day));
		recon_buf_addf(b, "%s,%s,", date, r->mode);
		add_csv(b, it->key);
		recon_buf_addf(b, ",%s,%s,%s,%s", it->klass, it->sev, m, it->cur);
		for (int k = 0; k < 2; k++) {
			recon_buf_addf(b, ",%s,%s,", s[k].decimal, s[k].cur);
			add_csv(b, s[k].status);
			recon_buf_addf(b, ",%s,", s[k].time);
			add_csv(b, s[k].origin);
		}
		recon_buf_addf(b, ",%s,%s,%" PRId64 ",%s,", day, opened, r->to - it->opened_day,
			       it->ticket ? it->ticket : "");
		add_csv(b, recon_dayreport_next_step(it->klass));
		recon_buf_adds(b, "\r\n");
		json_decref(d);
		spill(w, false);
	}
}

int recon_dayreport_write(FILE *out, const struct recon_dayreport *r,
			  enum recon_dayreport_format fmt, bool bom, struct recon_err *err)
{
	struct w w = {.f = out};

	recon_buf_init(&w.b);
	if (bom)
		recon_buf_adds(&w.b, "\xef\xbb\xbf");
	if (fmt == RECON_DAYREPORT_HTML)
		html_write(&w, r);
	else if (fmt == RECON_DAYREPORT_MD)
		md_write(&w, r);
	else
		csv_write(&w, r);
	spill(&w, true);
	recon_buf_release(&w.b);
	if (w.failed || fflush(out) != 0 || ferror(out))
		return recon_err_set(err, RECON_EIO, NULL, "cannot write the report");
	return 0;
}

/* ---- money in the summaries (run, status) ------------------------------------- */

/*
 * Money at stake per class and currency (klass "" = the differences' total) of
 * the job's open items, or of those run run_id evaluated last. Caller frees
 * *out with free(); on a read error it is empty and a warning is logged.
 */
static size_t stakes_read(struct recon_state *st, const char *job, int64_t run_id,
			  struct stake **out)
{
	sqlite3 *db = recon_state_db(st);
	sqlite3_stmt *q = NULL;
	size_t n = 0, alloc = 0;
	int s;

	*out = NULL;
	if (sqlite3_prepare_v2(
		db,
		/* differences only: awaiting and in-flight items are not money at stake yet */
		"SELECT class, severity, amount_minor, currency FROM items WHERE "
		"job = ?1 AND state = 'open' AND severity <> 'info' AND (?2 = 0 OR last_run = ?2) "
		"ORDER BY class, currency",
		-1, &q, NULL) != SQLITE_OK) {
		recon_log(RECON_LOG_WARN, "cannot read the money at stake: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(q, 1, job, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, run_id);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		char klass[24], sev[12], cur[4];
		int64_t a = sqlite3_column_int64(q, 2);
		struct stake *x;

		col_copy(q, 0, klass, sizeof(klass));
		col_copy(q, 1, sev, sizeof(sev));
		col_copy(q, 3, cur, sizeof(cur));
		x = stake_get(out, &n, &alloc, klass, cur);
		x->count++;
		x->info = !strcmp(sev, "info");
		add_ck(&x->sum, a, &x->over);
		if (x->info)
			continue;
		x = stake_get(out, &n, &alloc, "", cur);
		x->count++;
		add_ck(&x->sum, a, &x->over);
	}
	if (s != SQLITE_DONE)
		recon_log(RECON_LOG_WARN, "cannot read the money at stake: %s", sqlite3_errmsg(db));
out:
	sqlite3_finalize(q);
	return n;
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
		stake_text(&v[i], false, m, sizeof(m));
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
			stake_text(&v[i], false, m, sizeof(m));
			label = v[i].klass[0] ? v[i].klass : first ? "total" : NULL;
			o += (size_t)snprintf(buf + o, size - o, "%s%s%s%s %s",
					      first ? (o ? "; " : "") : ", ", label ? label : "",
					      label ? " " : "", m, v[i].cur);
			first = false;
		}
	}
	free(v);
}
