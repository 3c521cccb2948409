/*
 * The daily report's rendering helpers: amounts, counts and times as text,
 * text made safe for HTML, Markdown and CSV, the verdict; and
 * recon_dayreport_write(), which hands the report to its format's renderer.
 * Rendering writes into one buffer that is spilled to the FILE every 64 KiB.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dayreport_int.h"
#include "recon_buf.h"
#include "recon_money.h"
#include "recon_report.h"
#include "recon_time.h"

void recon_dayreport_spill(struct w *w, bool all)
{
	if (w->b.len < (all ? 1 : 65536))
		return;
	if (fwrite(w->b.s, 1, w->b.len, w->f) != w->b.len)
		w->failed = true;
	recon_buf_reset(&w->b);
}

/* Minor units as decimal text; `group`: thousands separated by ','. */
void recon_dayreport_money(int64_t v, int exp, bool group, char *buf, size_t size)
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
char *recon_dayreport_count(int64_t v, char *buf)
{
	recon_dayreport_money(v, 0, true, buf, 64);
	return buf;
}

void recon_dayreport_stake_text(const struct stake *s, bool group, char *buf, size_t size)
{
	if (s->over)
		snprintf(buf, size, "beyond int64");
	else
		recon_dayreport_money(s->sum, s->exp, group, buf, size);
}

/* "2024-03-01 10:00:00+08:00": wall clock in the job's zone with its offset. */
void recon_dayreport_local_time(const struct recon_dayreport *r, int64_t ms, char *buf, size_t size)
{
	char t[40];
	int32_t off = recon_tz_offset(r->job->tz, ms);
	int32_t a = off < 0 ? -off : off;

	recon_time_format_local(r->job->tz, ms, t, sizeof(t));
	/* "YYYY-MM-DD HH:MM:SS" is 19 bytes; offsets are under 100 hours */
	snprintf(buf, size, "%.19s%c%02d:%02d", t, off < 0 ? '-' : '+', (int)(a / 3600 % 100),
		 (int)(a / 60 % 60));
}

void recon_dayreport_side(const struct recon_dayreport *r, json_t *d, const char *name,
			  struct side *s)
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
		recon_dayreport_money((int64_t)json_integer_value(a), exp < 0 ? 0 : exp, false,
				      s->decimal, sizeof(s->decimal));
		char g[64];
		recon_dayreport_money((int64_t)json_integer_value(a), exp < 0 ? 0 : exp, true, g,
				      sizeof(g));
		snprintf(s->amount, sizeof(s->amount), "%s %s", g, s->cur);
	}
	snprintf(s->status, sizeof(s->status), "%s",
		 json_is_string(st) ? json_string_value(st) : "");
	recon_err_init(&e);
	if (json_is_string(t) && recon_time_parse(json_string_value(t),
						  strlen(json_string_value(t)), NULL, &ms, &e) == 0)
		recon_dayreport_local_time(r, ms, s->time, sizeof(s->time));
	/* file rows name the file by its path: the name is enough to find it */
	snprintf(s->origin, sizeof(s->origin), "%s", slash ? slash + 1 : origin);
}

/*
 * Text made safe for the page: HTML (md false) escapes & < > " ', Markdown
 * escapes its table and emphasis characters; both turn control characters
 * into blanks and bytes that are not UTF-8 into U+FFFD.
 */
void recon_dayreport_add_text(struct recon_buf *b, const char *s, bool md)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	while (*p) {
		size_t l = recon_report_utf8_len(p, n);
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
void recon_dayreport_add_csv(struct recon_buf *b, const char *s)
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
void recon_dayreport_totals_text(const struct recon_dayreport *r, bool group, char *buf,
				 size_t size)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < r->nstakes && o < size; i++) {
		const struct stake *s = &r->stakes[i];
		char m[64];
		if (s->klass[0])
			continue;
		recon_dayreport_stake_text(s, group, m, sizeof(m));
		o += (size_t)snprintf(buf + o, size - o, "%s%s %s", o ? ", " : "", m, s->cur);
	}
}

/* The verdict in one line; *level 0 ok, 1 attention, 2 bad. */
void recon_dayreport_verdict(const struct recon_dayreport *r, bool group, char *buf, size_t size,
			     int *level)
{
	char date[16], money[512], n[3][64];
	int64_t critical = 0, found = r->days[r->ndays - 1].found;

	recon_date_format(r->to, date, sizeof(date));
	recon_dayreport_totals_text(r, group, money, sizeof(money));
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
		 date, recon_dayreport_count((int64_t)r->ndiff, n[0]), r->ndiff == 1 ? "" : "s",
		 money, recon_dayreport_count(critical, n[1]), recon_dayreport_count(found, n[2]));
}

/* "2024-03-01" of an item's opening and its age in days at the report's day. */
void recon_dayreport_age(const struct recon_dayreport *r, const struct item *it, char *buf,
			 size_t size)
{
	int64_t a = r->to - it->opened_day;

	if (a <= 0)
		snprintf(buf, size, "today");
	else
		snprintf(buf, size, "%" PRId64 " day%s", a, a == 1 ? "" : "s");
}

const struct item *recon_dayreport_oldest(const struct recon_dayreport *r)
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

void recon_dayreport_totals_line(const struct recon_dayreport *r, char *buf, size_t size)
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

const char *const recon_dayreport_run_labels[10] = {"upstream entries read",
						    "local rows read",
						    "rows rejected",
						    "keyless lines skipped",
						    "keys compared",
						    "keys matched",
						    "differences found",
						    "earlier differences resolved",
						    "in flight",
						    "awaiting"};

int recon_dayreport_write(FILE *out, const struct recon_dayreport *r,
			  enum recon_dayreport_format fmt, bool bom, struct recon_err *err)
{
	struct w w = {.f = out};

	recon_buf_init(&w.b);
	if (bom)
		recon_buf_adds(&w.b, "\xef\xbb\xbf");
	if (fmt == RECON_DAYREPORT_HTML)
		recon_dayreport_html(&w, r);
	else if (fmt == RECON_DAYREPORT_MD)
		recon_dayreport_md(&w, r);
	else
		recon_dayreport_csv(&w, r);
	recon_dayreport_spill(&w, true);
	recon_buf_release(&w.b);
	if (w.failed || fflush(out) != 0 || ferror(out))
		return recon_err_set(err, RECON_EIO, NULL, "cannot write the report");
	return 0;
}
