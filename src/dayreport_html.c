/*
 * The daily report as one self-contained HTML page: inline CSS and SVG
 * charts, no script, nothing fetched.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dayreport_int.h"
#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_time.h"

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
		recon_dayreport_money(v, c->exp, true, buf, size);
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
	recon_dayreport_add_text(b, c->title, false);
	recon_buf_addf(b,
		       "</figcaption><svg viewBox=\"0 0 %d %d\" role=\"img\" "
		       "aria-label=\"",
		       CHART_W, CHART_H);
	recon_dayreport_add_text(b, c->title, false);
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
	recon_dayreport_add_text(b, c->caption, false);
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
	recon_dayreport_local_time(r, r->now, now, sizeof(now));
	recon_dayreport_verdict(r, true, v, sizeof(v), &level);
	recon_buf_adds(b,
		       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       "<title>");
	recon_dayreport_add_text(b, r->job->name, false);
	recon_buf_addf(
	    b, ": reconciliation of %s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", date,
	    css);
	recon_buf_adds(b, "<h1>");
	recon_dayreport_add_text(b, r->job->name, false);
	recon_buf_addf(b,
		       ": reconciliation of %s</h1>\n<p class=\"meta\">mode %s, business days in ",
		       date, r->mode);
	recon_dayreport_add_text(b, r->job->tz_name, false);
	recon_buf_addf(b, ", times shown with their UTC offset; generated %s</p>\n", now);
	recon_buf_addf(b, "<p class=\"verdict v%d\" id=\"verdict\">", level);
	recon_dayreport_add_text(b, v, false);
	recon_buf_adds(b, "</p>\n");
}

static void html_card(struct recon_buf *b, const char *value, const char *label)
{
	recon_buf_adds(b, "<div class=\"card\"><span class=\"n\">");
	recon_dayreport_add_text(b, value, false);
	recon_buf_adds(b, "</span><span class=\"l\">");
	recon_dayreport_add_text(b, label, false);
	recon_buf_adds(b, "</span></div>\n");
}

static void html_cards(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = recon_dayreport_oldest(r);
	char v[512], l[512], a[32], m[64];

	recon_buf_adds(b, "<div class=\"cards\">\n");
	recon_dayreport_count((int64_t)r->ndiff, v);
	snprintf(l, sizeof(l), "open differences (%s with an open ticket)",
		 recon_dayreport_count(r->tickets_open, m));
	html_card(b, v, l);
	recon_dayreport_totals_text(r, true, v, sizeof(v));
	html_card(b, v[0] ? v : "0", "money at stake");
	html_card(b, recon_dayreport_count(r->days[r->ndays - 1].found, v),
		  "differences found that day");
	if (o) {
		recon_dayreport_age(r, o, a, sizeof(a));
		recon_dayreport_money(o->amount, o->exp, true, m, sizeof(m));
		snprintf(l, sizeof(l), "oldest open: %s, %s %s, open %s", o->klass, m, o->cur, a);
		html_card(b, o->key, l);
	} else {
		html_card(b, "none", "oldest open difference");
	}
	recon_buf_adds(b, "</div>\n");
}

/* The control totals line: verified, failed, or why they were not checked. */
static void html_day(struct recon_buf *b, const struct recon_dayreport *r)
{
	char t[512];

	recon_buf_adds(b, "<h2>The day</h2>\n");
	if (!r->main) {
		recon_buf_adds(b, "<p>No run of this day is recorded.</p>\n");
		return;
	}
	recon_dayreport_local_time(r, r->main->started, t, sizeof(t));
	recon_buf_addf(b,
		       "<div class=\"scroll\"><table id=\"day\" class=\"kv\"><tr><th>run %" PRId64
		       " (%s), started %s</th><th class=\"num\">count</th></tr>\n",
		       r->main->id, r->main->outcome, t);
	for (int i = 0; i < 10; i++)
		recon_buf_addf(b, "<tr><td>%s</td><td class=\"num\">%s</td></tr>\n",
			       recon_dayreport_run_labels[i],
			       recon_dayreport_count(r->main->n[i], t));
	recon_dayreport_totals_line(r, t, sizeof(t));
	recon_buf_adds(b, "<tr><td>control totals</td><td>");
	recon_dayreport_add_text(b, t, false);
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
			recon_dayreport_stake_text(s, true, m, sizeof(m));
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
			    recon_dayreport_count(s->count, n), m, s->cur);
		}
	if (!r->nstakes)
		recon_buf_adds(b, "<tr><td colspan=\"5\">nothing open</td></tr>\n");
	recon_buf_adds(b, "</table></div>\n");
}

static void html_age(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = recon_dayreport_oldest(r);
	char a[32], m[64], n[3][64];

	recon_buf_addf(b,
		       "<h2>Open differences by age</h2>\n<div class=\"scroll\"><table id=\"age\" "
		       "class=\"kv\">"
		       "<tr><th class=\"num\">opened that day</th><th class=\"num\">1-3 days</th>"
		       "<th class=\"num\">older</th></tr><tr><td class=\"num\">%s</td><td "
		       "class=\"num\">%s</td><td class=\"num\">%s</td></tr></table></div>\n",
		       recon_dayreport_count(r->age[0], n[0]),
		       recon_dayreport_count(r->age[1], n[1]),
		       recon_dayreport_count(r->age[2], n[2]));
	if (!o)
		return;
	recon_dayreport_age(r, o, a, sizeof(a));
	recon_dayreport_money(o->amount, o->exp, true, m, sizeof(m));
	recon_buf_adds(b, "<p id=\"oldest\">The oldest: <strong>");
	recon_dayreport_add_text(b, o->key, false);
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

		recon_dayreport_side(r, d, "upstream", &s[0]);
		recon_dayreport_side(r, d, "local", &s[1]);
		recon_dayreport_money(it->amount, it->exp, true, m, sizeof(m));
		recon_dayreport_age(r, it, a, sizeof(a));
		recon_buf_addf(b, "<tr%s><td>",
			       !strcmp(it->sev, "critical") ? " class=\"critical\"" : "");
		recon_dayreport_add_text(b, it->key, false);
		recon_buf_addf(b, "</td><td>%s</td><td class=\"num\">%s %s</td>", it->klass, m,
			       it->cur);
		for (int k = 0; k < 2; k++) {
			recon_buf_adds(b, "<td>");
			if (s[k].present) {
				recon_buf_addf(b, "%s, ", s[k].amount);
				recon_dayreport_add_text(b, s[k].status, false);
				recon_buf_addf(b, "<br><span class=\"muted\">%s</span>", s[k].time);
			} else {
				recon_buf_adds(b, "<span class=\"muted\">none</span>");
			}
			recon_buf_adds(b, "</td>");
		}
		recon_buf_addf(b, "<td>%s</td><td>%s</td><td>%s</td><td><code>", a,
			       it->ticket ? it->ticket : "-", recon_dayreport_next_step(it->klass));
		recon_dayreport_add_text(b, s[0].present ? s[0].origin : s[1].origin, false);
		if (s[0].present && s[1].present) {
			recon_buf_adds(b, "<br>");
			recon_dayreport_add_text(b, s[1].origin, false);
		}
		recon_buf_adds(b, "</code></td></tr>\n");
		json_decref(d);
		recon_dayreport_spill(w, false);
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
		recon_dayreport_add_ck(&rest_m[k].sum, it->amount, &rest_m[k].over);
	}
	if (rest) {
		char n[64];
		recon_buf_addf(b, "<p id=\"rest\">%s more open differences, not listed:",
			       recon_dayreport_count(rest, n));
		for (size_t k = 0; k < nrest; k++) {
			char m[64];
			recon_dayreport_stake_text(&rest_m[k], true, m, sizeof(m));
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
		recon_dayreport_add_text(b, x->side, false);
		recon_buf_adds(b, "</td><td><code>");
		recon_dayreport_add_text(b, slash ? slash + 1 : x->origin, false);
		recon_buf_adds(b, "</code></td><td>");
		recon_dayreport_add_text(b, x->field, false);
		recon_buf_adds(b, "</td><td>");
		recon_dayreport_add_text(b, x->reason, false);
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
		recon_dayreport_local_time(r, u->started, t, sizeof(t));
		if (u->finished >= u->started)
			recon_duration_format(u->finished - u->started, d, sizeof(d));
		recon_buf_addf(b,
			       "<tr><td class=\"num\">%" PRId64
			       "</td><td>%s</td><td>%s</td><td class=\"num\">%s</td><td>",
			       u->id, u->outcome, t, d);
		recon_dayreport_add_text(b, u->error ? u->error : "", false);
		recon_buf_adds(b, "</td></tr>\n");
	}
	if (!n)
		recon_buf_adds(b, "<tr><td colspan=\"5\">none</td></tr>\n");
	recon_buf_adds(b, "</table></div>\n");
}

void recon_dayreport_html(struct w *w, const struct recon_dayreport *r)
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
	recon_dayreport_spill(w, false);
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
