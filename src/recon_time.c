/*
 * recon_time: instants, time zones, durations and dates.
 *
 * Time zones are read from TZif files (RFC 8536, by recon_tzif), never
 * through TZ/tzset()/mktime()/localtime(): those are process-global state,
 * and slow. A loaded zone is immutable, so one `struct recon_tz` may be
 * shared by any number of readers.
 *
 * A zone is the file's sorted table of transitions (instant in seconds, UTC
 * offset in force from then on), the offset in force before the first one,
 * and the POSIX TZ rule from the file's footer, which this module evaluates
 * for every instant after the last transition; or one fixed offset.
 */
#include "recon_time.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "recon_mem.h"
#include "recon_tzif.h"

/* Every solution of local = utc + offset lies within this of local (recon_tzif.h). */
#define TZ_WINDOW RECON_TZIF_OFFSET_LIMIT
/* Segments examined by recon_tz_to_utc() before giving up on a crafted file. */
#define TZ_MAX_SEGMENTS 64

#define SEC_PER_DAY 86400LL

struct recon_tz {
	char *name;
	struct recon_tzif z; /* the zone file's transitions and rule; empty when fixed */
	bool fixed;	     /* one offset for all instants: fixed_off */
	int32_t fixed_off;
};

/* A DST start or end in a given year, for evaluating a rule. */
struct tz_event {
	int64_t t; /* instant, seconds */
	bool dst;  /* DST in force from t on */
};

/* Years of events computed around an instant: the one before it is always among them. */
#define TZ_EVENT_YEARS 5

/* ---- small helpers ---- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : mdays[m - 1];
}

/* Input quoted in messages: escaped, cut to RECON_QUOTE_MAX bytes (recon_err_quote). */
static const char *quote(char dst[RECON_QUOTE_BUF], const char *s, size_t len)
{
	return recon_err_quote(dst, s, len, RECON_QUOTE_ASCII);
}

/* "invalid <what> '<input>': <reason>", as RECON_EVALUE. */
RECON_PRINTF(5, 6)
static int reject(struct recon_err *err, const char *what, const char *s, size_t len,
		  const char *fmt, ...)
{
	char q[RECON_QUOTE_BUF];
	char reason[128];
	va_list ap;

	/* First error wins: skip the formatting on reject-heavy inputs. */
	if (!err || err->code)
		return RECON_EVALUE;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return recon_err_set(err, RECON_EVALUE, NULL, "invalid %s '%s': %s", what, quote(q, s, len),
			     reason);
}

/* Two decimal digits at p, or -1. */
static int d2(const char *p)
{
	if (!is_digit(p[0]) || !is_digit(p[1]))
		return -1;
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/*
 * Parses a UTC offset "+hh:mm", "+hhmm" or "+hh" (hh 00..23, mm 00..59) at
 * p[0..end). On success stores seconds east of UTC and returns the end of the
 * offset; returns NULL if p does not hold one.
 */
static const char *parse_utc_offset(const char *p, const char *end, int32_t *off)
{
	int sign, hh, mm = 0;

	if (end - p < 3 || (p[0] != '+' && p[0] != '-'))
		return NULL;
	sign = p[0] == '-' ? -1 : 1;
	hh = d2(p + 1);
	if (hh < 0 || hh > 23)
		return NULL;
	p += 3;
	if (p < end && p[0] == ':') {
		if (end - p < 3)
			return NULL;
		mm = d2(p + 1);
		p += 3;
	} else if (p < end && is_digit(p[0])) {
		if (end - p < 2)
			return NULL;
		mm = d2(p);
		p += 2;
	}
	if (mm < 0 || mm > 59)
		return NULL;
	*off = sign * (hh * 3600 + mm * 60);
	return p;
}

/* ---- calendar ---- */

/* Howard Hinnant's days_from_civil, on int64 so that any instant's year works. */
static int64_t days_from_civil64(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days64(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t z = days + 719468;
	int64_t era = floor_div(z, 146097);
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;

	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int64_t recon_days_from_civil(int y, unsigned m, unsigned d)
{
	return days_from_civil64(y, m, d);
}

void recon_civil_from_days(int64_t days, int *y, unsigned *m, unsigned *d)
{
	int64_t yy;

	civil_from_days64(days, &yy, m, d);
	*y = (int)yy;
}

/* 0 = Sunday. 1970-01-01 was a Thursday. */
static int weekday(int64_t days)
{
	int64_t r = (days + 4) % 7;

	return (int)(r < 0 ? r + 7 : r);
}

/* ---- POSIX TZ rules (TZif footers) ---- */

/* Local midnight-based seconds of a rule date in year y (as if UTC). */
static int64_t rule_local(const struct recon_tzif_rule_date *rd, int64_t y)
{
	int64_t day = days_from_civil64(y, 1, 1);

	if (rd->kind == 'J') {
		day += rd->n - 1;
		if (is_leap(y) && rd->n >= 60)
			day++;
	} else if (rd->kind == 'D') {
		day += rd->n;
	} else {
		int64_t first = days_from_civil64(y, (unsigned)rd->mon, 1);
		int md = (int)days_in_month(y, (unsigned)rd->mon);
		int dom = (rd->wday - weekday(first) + 7) % 7 + 7 * (rd->week - 1);

		if (dom >= md)
			dom -= 7;
		day = first + dom;
	}
	return day * SEC_PER_DAY + rd->time;
}

/*
 * The DST starts and ends of the years around instant t (seconds), sorted
 * by time. The sort is stable, so when an end and the next start coincide
 * (all-year DST written as "0/0,J365/25") the start, generated later, wins.
 */
static void rule_events(const struct recon_tzif_rule *r, int64_t t,
			struct tz_event ev[2 * TZ_EVENT_YEARS])
{
	int64_t y0, y;
	unsigned m, d;
	size_t i, j, n = 0;

	civil_from_days64(floor_div(t, SEC_PER_DAY), &y0, &m, &d);
	for (y = y0 - TZ_EVENT_YEARS / 2; y <= y0 + TZ_EVENT_YEARS / 2; y++) {
		ev[n].t = rule_local(&r->start, y) - r->std_off;
		ev[n++].dst = true;
		ev[n].t = rule_local(&r->end, y) - r->dst_off;
		ev[n++].dst = false;
	}
	for (i = 1; i < n; i++) {
		struct tz_event e = ev[i];

		for (j = i; j > 0 && ev[j - 1].t > e.t; j--)
			ev[j] = ev[j - 1];
		ev[j] = e;
	}
}

static int32_t rule_offset(const struct recon_tzif_rule *r, int64_t t)
{
	struct tz_event ev[2 * TZ_EVENT_YEARS];
	bool dst = false;
	size_t i;

	if (!r->has_dst)
		return r->std_off;
	rule_events(r, t, ev);
	for (i = 0; i < 2 * TZ_EVENT_YEARS && ev[i].t <= t; i++)
		dst = ev[i].dst;
	return dst ? r->dst_off : r->std_off;
}

/* ---- offsets ---- */

/* Offset in force at instant t (seconds). */
static int32_t tz_offset_sec(const struct recon_tz *tz, int64_t t)
{
	size_t lo, hi;

	if (tz->fixed)
		return tz->fixed_off;
	if (tz->z.ntrans == 0 || t >= tz->z.trans[tz->z.ntrans - 1]) {
		if (tz->z.has_rule)
			return rule_offset(&tz->z.rule, t);
		return tz->z.ntrans ? tz->z.trans_off[tz->z.ntrans - 1] : tz->z.first_off;
	}
	if (t < tz->z.trans[0])
		return tz->z.first_off;
	/* Largest i with trans[i] <= t: trans[lo] <= t < trans[hi]. */
	lo = 0;
	hi = tz->z.ntrans - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (tz->z.trans[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return tz->z.trans_off[lo];
}

/* The first instant after t (seconds) at which the offset may change. */
static bool tz_next_change(const struct recon_tz *tz, int64_t t, int64_t *next)
{
	if (tz->fixed)
		return false;
	if (tz->z.ntrans > 0 && t < tz->z.trans[tz->z.ntrans - 1]) {
		size_t lo = 0, hi = tz->z.ntrans - 1;

		/* Smallest i with trans[i] > t. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (tz->z.trans[mid] > t)
				hi = mid;
			else
				lo = mid + 1;
		}
		*next = tz->z.trans[lo];
		return true;
	}
	if (tz->z.has_rule && tz->z.rule.has_dst) {
		struct tz_event ev[2 * TZ_EVENT_YEARS];
		size_t i;

		rule_events(&tz->z.rule, t, ev);
		for (i = 0; i < 2 * TZ_EVENT_YEARS; i++) {
			if (ev[i].t > t) {
				*next = ev[i].t;
				return true;
			}
		}
	}
	return false;
}

int32_t recon_tz_offset(const struct recon_tz *tz, int64_t utc_ms)
{
	if (!tz)
		return 0;
	return tz_offset_sec(tz, floor_div(utc_ms, RECON_MS_PER_SEC));
}

int64_t recon_tz_to_local(const struct recon_tz *tz, int64_t utc_ms)
{
	return sat_add(utc_ms, (int64_t)recon_tz_offset(tz, utc_ms) * RECON_MS_PER_SEC);
}

/* Whether local_ms - off (seconds) lies in the segment [from, to) (seconds). */
static bool in_segment(int64_t local_ms, int32_t off, int64_t from, int64_t to, bool bounded)
{
	int64_t t =
	    floor_div(sat_add(local_ms, -(int64_t)off * RECON_MS_PER_SEC), RECON_MS_PER_SEC);

	return t >= from && (!bounded || t < to);
}

/*
 * Every instant u with u + offset(u) == local lies within TZ_WINDOW of
 * local, so walk the segments of constant offset that cover
 * [local - TZ_WINDOW, local + TZ_WINDOW]. The first segment whose offset
 * maps local into itself holds the earliest solution (overlap rule). If no
 * segment does, local is in a gap: read it with the offset before the gap.
 */
int64_t recon_tz_to_utc(const struct recon_tz *tz, int64_t local_ms)
{
	int64_t lsec, from, to = 0, wend;
	int32_t off, next_off;
	bool bounded;
	int64_t gap_ms = 0;
	bool have_gap = false;
	int i;

	if (!tz)
		return local_ms;
	if (tz->fixed)
		return sat_add(local_ms, -(int64_t)tz->fixed_off * RECON_MS_PER_SEC);
	lsec = floor_div(local_ms, RECON_MS_PER_SEC);
	from = lsec - TZ_WINDOW;
	wend = lsec + TZ_WINDOW;
	off = tz_offset_sec(tz, from);
	for (i = 0; i < TZ_MAX_SEGMENTS; i++) {
		bounded = tz_next_change(tz, from, &to);
		if (in_segment(local_ms, off, from, to, bounded))
			return sat_add(local_ms, -(int64_t)off * RECON_MS_PER_SEC);
		if (!bounded || to > wend)
			break;
		next_off = tz_offset_sec(tz, to);
		/* Local times [to + off, to + next_off) do not exist. */
		if (!have_gap && next_off > off && lsec >= to + off && lsec < to + next_off) {
			gap_ms = sat_add(local_ms, -(int64_t)off * RECON_MS_PER_SEC);
			have_gap = true;
		}
		from = to;
		off = next_off;
	}
	if (have_gap)
		return gap_ms;
	/* Unreachable for sane zones; a crafted file gets a plausible answer. */
	return sat_add(local_ms, -(int64_t)tz_offset_sec(tz, lsec) * RECON_MS_PER_SEC);
}

/* ---- loading ---- */

const char *recon_tz_name(const struct recon_tz *tz)
{
	return tz ? tz->name : "UTC";
}

void recon_tz_free(struct recon_tz *tz)
{
	if (!tz)
		return;
	free(tz->name);
	recon_tzif_release(&tz->z);
	free(tz);
}

static struct recon_tz *tz_new(const char *name)
{
	struct recon_tz *tz = recon_xcalloc(1, sizeof(*tz));

	tz->name = recon_xstrdup(name);
	return tz;
}

static struct recon_tz *tz_new_fixed(const char *name, int32_t off)
{
	struct recon_tz *tz = tz_new(name);

	tz->fixed = true;
	tz->fixed_off = off;
	tz->z.first_off = off;
	return tz;
}

int recon_tz_load(struct recon_tz **out, const char *name, struct recon_err *err)
{
	char q[RECON_QUOTE_BUF];
	struct recon_tz *tz;
	int32_t off;

	*out = NULL;
	if (!name)
		name = "";
	/* Work without tzdata installed. */
	if (!strcmp(name, "UTC") || !strcmp(name, "Z") || !strcmp(name, "Etc/UTC")) {
		*out = tz_new_fixed(name, 0);
		return 0;
	}
	if (name[0] == '+' || name[0] == '-') {
		const char *end = name + strlen(name);

		if (parse_utc_offset(name, end, &off) != end)
			return recon_err_set(err, RECON_ECONFIG, NULL,
					     "invalid time zone offset '%s'",
					     quote(q, name, strlen(name)));
		*out = tz_new_fixed(name, off);
		return 0;
	}
	tz = tz_new(name);
	if (recon_tzif_load(&tz->z, name, err) < 0) {
		recon_tz_free(tz);
		return RECON_ECONFIG;
	}
	/* no transition and no DST: one offset for every instant */
	if (tz->z.ntrans == 0 && !(tz->z.has_rule && tz->z.rule.has_dst)) {
		tz->fixed = true;
		tz->fixed_off = tz->z.has_rule ? tz->z.rule.std_off : tz->z.first_off;
	}
	*out = tz;
	return 0;
}

/* ---- parsing and formatting ---- */

/*
 * "YYYY-MM-DD" (sep '-') or also "YYYY/MM/DD" (slash_ok) at p, which holds at
 * least 10 bytes. Returns 0 and the day number, or rejects.
 */
static int parse_ymd(const char *p, bool slash_ok, int64_t *day, struct recon_err *err,
		     const char *what, const char *s, size_t len)
{
	int y1 = d2(p), y2 = d2(p + 2), m = d2(p + 5), d = d2(p + 8);
	char sep = p[4];
	int y;

	if (y1 < 0 || y2 < 0 || m < 0 || d < 0 || p[7] != sep ||
	    !(sep == '-' || (slash_ok && sep == '/')))
		return reject(err, what, s, len, "expected 'YYYY-MM-DD'");
	y = y1 * 100 + y2;
	if (y == 0)
		return reject(err, what, s, len, "year 0");
	if (m < 1 || m > 12)
		return reject(err, what, s, len, "month %d", m);
	if (d < 1 || (unsigned)d > days_in_month(y, (unsigned)m))
		return reject(err, what, s, len, "day %d out of range for %04d-%02d", d, y, m);
	*day = days_from_civil64(y, (unsigned)m, (unsigned)d);
	return 0;
}

/*
 * The common form, exactly "YYYY-MM-DD HH:MM:SS" (or a 'T' between), nothing
 * around it: its local time in ms, or false for anything else (which the full
 * parser then reads, rejects included). A file's rows nearly all share a day:
 * the date's day number is kept per thread, the 10 bytes compared instead of
 * parsed and checked again.
 */
static bool parse_plain(const char *s, size_t len, int64_t *local)
{
	static _Thread_local char last_date[10];
	static _Thread_local int64_t last_day;
	static _Thread_local bool have_date;
	int hh, mi, ss;

	if (len != 19 || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' ||
	    (hh = d2(s + 11)) < 0 || (mi = d2(s + 14)) < 0 || (ss = d2(s + 17)) < 0 || hh > 23 ||
	    mi > 59 || ss > 59)
		return false;
	if (!have_date || memcmp(s, last_date, 10) != 0) {
		int y1 = d2(s), y2 = d2(s + 2), m = d2(s + 5), d = d2(s + 8), y;

		if (y1 < 0 || y2 < 0 || m < 0 || d < 0 || s[4] != '-' || s[7] != '-')
			return false;
		y = y1 * 100 + y2;
		if (y == 0 || m < 1 || m > 12 || d < 1 ||
		    (unsigned)d > days_in_month(y, (unsigned)m))
			return false;
		last_day = days_from_civil64(y, (unsigned)m, (unsigned)d);
		memcpy(last_date, s, 10);
		have_date = true;
	}
	*local = last_day * RECON_MS_PER_DAY + hh * RECON_MS_PER_HOUR + mi * RECON_MS_PER_MIN +
		 ss * RECON_MS_PER_SEC;
	return true;
}

int recon_time_parse(const char *s, size_t len, const struct recon_tz *tz, int64_t *utc_ms,
		     struct recon_err *err)
{
	static const char what[] = "timestamp";
	const char *p = s, *end = s + len;
	int64_t day, local;
	int hh, mi, ss, ms = 0, nfrac = 0;
	int32_t off = 0;
	bool has_off = false;

	if (!s)
		return reject(err, what, "", 0, "empty");
	if (parse_plain(s, len, &local)) {
		*utc_ms = recon_tz_to_utc(tz, local);
		return 0;
	}
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return reject(err, what, s, len, "empty");
	if (end - p < 10)
		return reject(err, what, s, len, "expected 'YYYY-MM-DD'");
	if (parse_ymd(p, true, &day, err, what, s, len) < 0)
		return RECON_EVALUE;
	p += 10;
	if (p == end) {
		local = day * RECON_MS_PER_DAY;
		goto convert;
	}
	if (*p != 'T' && *p != ' ')
		return reject(err, what, s, len, "expected 'T' or ' ' after the date");
	p++;
	if (end - p < 8 || (hh = d2(p)) < 0 || p[2] != ':' || (mi = d2(p + 3)) < 0 || p[5] != ':' ||
	    (ss = d2(p + 6)) < 0)
		return reject(err, what, s, len, "expected 'HH:MM:SS'");
	if (hh > 23)
		return reject(err, what, s, len, "hour %d", hh);
	if (mi > 59)
		return reject(err, what, s, len, "minute %d", mi);
	/* Leap seconds do not occur in payment data; 60 is a typo. */
	if (ss > 59)
		return reject(err, what, s, len, "second %d", ss);
	p += 8;
	if (p < end && *p == '.') {
		p++;
		while (p < end && is_digit(*p)) {
			/* Digits past milliseconds are truncated, not rounded. */
			if (nfrac < 3)
				ms = ms * 10 + (*p - '0');
			nfrac++;
			p++;
		}
		if (nfrac == 0)
			return reject(err, what, s, len, "expected digits after '.'");
		if (nfrac > 9)
			return reject(err, what, s, len, "more than 9 fraction digits");
		for (; nfrac < 3; nfrac++)
			ms *= 10;
	}
	if (p < end && *p == 'Z') {
		has_off = true;
		p++;
	} else if (p < end && (*p == '+' || *p == '-')) {
		const char *q = parse_utc_offset(p, end, &off);

		if (!q || (q < end && is_digit(*q)))
			return reject(err, what, s, len, "invalid utc offset");
		has_off = true;
		p = q;
	}
	if (p != end) {
		char c[RECON_QUOTE_BUF];

		recon_err_quote(c, p, 1, RECON_QUOTE_ASCII);
		return reject(err, what, s, len, "unexpected '%s'", c);
	}
	local = day * RECON_MS_PER_DAY + hh * RECON_MS_PER_HOUR + mi * RECON_MS_PER_MIN +
		ss * RECON_MS_PER_SEC + ms;
convert:
	if (has_off)
		*utc_ms = local - (int64_t)off * RECON_MS_PER_SEC;
	else
		*utc_ms = recon_tz_to_utc(tz, local);
	return 0;
}

/* Fields a time_format fills; -1: not given. */
struct tfields {
	int64_t year, epoch;
	int mon, day, hour, min, sec, ms, pm;
	bool has_epoch, has_off, has_hour12;
	int32_t off;
};

/* Up to `max` (at least `min`) decimal digits at *p into *v. */
static bool take_digits(const char **p, const char *end, int min, int max, int64_t *v)
{
	int n = 0;

	*v = 0;
	while (*p < end && n < max && is_digit(**p)) {
		*v = *v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n >= min;
}

/* A fraction's digits at *p (1 to 9, truncated to ms) into *ms. */
static bool take_fraction(const char **p, const char *end, int *ms)
{
	int n = 0;

	*ms = 0;
	while (*p < end && is_digit(**p)) {
		if (n < 3)
			*ms = *ms * 10 + (**p - '0');
		n++;
		(*p)++;
	}
	for (int i = n; i < 3; i++)
		*ms *= 10;
	return n >= 1 && n <= 9;
}

/* After %S or %s: an optional ".f" fraction, unless the format itself goes on with '.'. */
static const char *take_opt_fraction(char fmt_next, const char **p, const char *end, int *ms)
{
	if (fmt_next != '.' && *p < end && **p == '.') {
		(*p)++;
		if (!take_fraction(p, end, ms))
			return "expected 1 to 9 digits after '.'";
	}
	return NULL;
}

/* %s: epoch seconds, perhaps negative, perhaps with a fraction. */
static const char *take_epoch(char fmt_next, const char **p, const char *end, struct tfields *f)
{
	bool neg = *p < end && **p == '-';
	int64_t v;

	if (neg)
		(*p)++;
	/* 11 digits reach year 5138: beyond, a value is ms or junk, not seconds */
	if (!take_digits(p, end, 1, 11, &v) || (*p < end && is_digit(**p)))
		return "expected epoch seconds";
	f->epoch = neg ? -v : v;
	f->has_epoch = true;
	return take_opt_fraction(fmt_next, p, end, &f->ms);
}

/* %b: an English month abbreviation, any case. */
static const char *take_month_name(const char **p, const char *end, struct tfields *f)
{
	static const char *const month_abbr[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
						   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

	for (int i = 0; i < 12; i++) {
		if (end - *p >= 3 && !strncasecmp(*p, month_abbr[i], 3)) {
			f->mon = i + 1;
			*p += 3;
			return NULL;
		}
	}
	return "expected a month name (Jan-Dec)";
}

/*
 * One directive c of a time_format at *p. Returns NULL on success, else the
 * reason. fmt_next is the format's next character (for %S's optional fraction).
 * One short case per directive, read side by side.
 */
static const char *directive(char c, char fmt_next, const char **p, const char *end,
			     struct tfields *f)
{
	int64_t v;

	switch (c) {
	case 'Y':
		if (!take_digits(p, end, 4, 4, &v) || v < 1)
			return "expected a 4-digit year";
		f->year = v;
		return NULL;
	case 'm':
		if (!take_digits(p, end, 1, 2, &v) || v < 1 || v > 12)
			return "expected a month 1-12";
		f->mon = (int)v;
		return NULL;
	case 'd':
	case 'e':
		if (c == 'e' && *p < end && **p == ' ')
			(*p)++;
		if (!take_digits(p, end, 1, 2, &v) || v < 1 || v > 31)
			return "expected a day 1-31";
		f->day = (int)v;
		return NULL;
	case 'H':
		if (!take_digits(p, end, 1, 2, &v) || v > 23)
			return "expected an hour 0-23";
		f->hour = (int)v;
		return NULL;
	case 'I':
		if (!take_digits(p, end, 1, 2, &v) || v < 1 || v > 12)
			return "expected an hour 1-12";
		f->hour = (int)v;
		f->has_hour12 = true;
		return NULL;
	case 'p':
		if (end - *p >= 2 && ((*p)[1] == 'M' || (*p)[1] == 'm') &&
		    ((*p)[0] == 'A' || (*p)[0] == 'a' || (*p)[0] == 'P' || (*p)[0] == 'p')) {
			f->pm = (*p)[0] == 'P' || (*p)[0] == 'p';
			*p += 2;
			return NULL;
		}
		return "expected AM or PM";
	case 'M':
		if (!take_digits(p, end, 1, 2, &v) || v > 59)
			return "expected a minute 0-59";
		f->min = (int)v;
		return NULL;
	case 'S':
		/* 60 is a typo: payment data has no leap seconds */
		if (!take_digits(p, end, 1, 2, &v) || v > 59)
			return "expected a second 0-59";
		f->sec = (int)v;
		return take_opt_fraction(fmt_next, p, end, &f->ms);
	case 'f':
		if (!take_fraction(p, end, &f->ms))
			return "expected 1 to 9 fraction digits";
		return NULL;
	case 's':
		return take_epoch(fmt_next, p, end, f);
	case 'b':
		return take_month_name(p, end, f);
	case 'z':
		if (*p < end && **p == 'Z') {
			(*p)++;
			f->off = 0;
		} else {
			const char *q = *p < end ? parse_utc_offset(*p, end, &f->off) : NULL;
			if (!q)
				return "expected a utc offset (+hh:mm, +hhmm, Z)";
			*p = q;
		}
		f->has_off = true;
		return NULL;
	case '%':
		if (*p < end && **p == '%') {
			(*p)++;
			return NULL;
		}
		return "expected '%'";
	default:
		return "unknown directive";
	}
}

int recon_time_format_check(const char *fmt, struct recon_err *err)
{
	bool y = false, m = false, d = false, s = false, i = false, p = false;

	if (!fmt || !*fmt || strlen(fmt) > 64)
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "a time_format is 1 to 64 characters");
	for (const char *c = fmt; *c; c++) {
		if (*c != '%')
			continue;
		c++;
		switch (*c) {
		case 'Y':
			y = true;
			break;
		case 'm':
		case 'b':
			m = true;
			break;
		case 'd':
		case 'e':
			d = true;
			break;
		case 's':
			s = true;
			break;
		case 'I':
			i = true;
			break;
		case 'p':
			p = true;
			break;
		case 'H':
		case 'M':
		case 'S':
		case 'f':
		case 'z':
		case '%':
			break;
		default:
			return recon_err_set(
			    err, RECON_ECONFIG, NULL,
			    "unknown directive '%%%.1s' in time_format '%s' (known: "
			    "%%Y %%m %%d %%e %%b %%H %%I %%p %%M %%S %%f %%s %%z %%%%)",
			    c, fmt);
		}
		if (!*c)
			break;
	}
	if (!s && !(y && m && d))
		return recon_err_set(
		    err, RECON_ECONFIG, NULL,
		    "time_format '%s' names no date: it needs %%Y, %%m (or %%b) and "
		    "%%d, or %%s",
		    fmt);
	if (i != p)
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "time_format '%s': %%I (12-hour clock) goes with %%p (AM/PM)",
				     fmt);
	return 0;
}

int recon_time_parse_format(const char *s, size_t len, const char *fmt, const struct recon_tz *tz,
			    int64_t *utc_ms, struct recon_err *err)
{
	static const char what[] = "timestamp";
	const char *p = s, *end = s + len, *why;
	struct tfields f = {.mon = 1, .day = 1, .pm = -1};
	int64_t local;

	if (!fmt)
		return recon_time_parse(s, len, tz, utc_ms, err);
	if (!s)
		return reject(err, what, "", 0, "empty");
	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return reject(err, what, s, len, "empty");
	for (const char *c = fmt; *c; c++) {
		if (*c == '%' && c[1]) {
			c++;
			if ((why = directive(*c, c[1], &p, end, &f)) != NULL)
				return reject(err, what, s, len, "%s for '%%%c' of '%s'", why, *c,
					      fmt);
		} else if (*c == ' ') {
			/* a blank in the format matches one or more blanks */
			if (p == end || !is_blank(*p))
				return reject(err, what, s, len, "expected a blank (format '%s')",
					      fmt);
			while (p < end && is_blank(*p))
				p++;
		} else if (p < end && *p == *c) {
			p++;
		} else {
			return reject(err, what, s, len, "expected '%c' (format '%s')", *c, fmt);
		}
	}
	if (p != end) {
		char c[RECON_QUOTE_BUF];
		recon_err_quote(c, p, 1, RECON_QUOTE_ASCII);
		return reject(err, what, s, len, "unexpected '%s' (format '%s')", c, fmt);
	}
	if (f.has_epoch) {
		/* an instant: the zone plays no part */
		if (f.epoch > INT64_MAX / RECON_MS_PER_SEC - 1 ||
		    f.epoch < INT64_MIN / RECON_MS_PER_SEC + 1)
			return reject(err, what, s, len, "out of range");
		*utc_ms = f.epoch * RECON_MS_PER_SEC + (f.epoch < 0 ? -f.ms : f.ms);
		return 0;
	}
	if (f.year < 1 || f.year > 9999)
		return reject(err, what, s, len, "year out of range");
	if ((unsigned)f.day > days_in_month(f.year, (unsigned)f.mon))
		return reject(err, what, s, len, "day %d", f.day);
	if (f.pm >= 0)
		f.hour = f.hour % 12 + (f.pm ? 12 : 0);
	local = recon_days_from_civil((int)f.year, (unsigned)f.mon, (unsigned)f.day) *
		    RECON_MS_PER_DAY +
		f.hour * RECON_MS_PER_HOUR + f.min * RECON_MS_PER_MIN + f.sec * RECON_MS_PER_SEC +
		f.ms;
	if (f.has_off)
		*utc_ms = local - (int64_t)f.off * RECON_MS_PER_SEC;
	else
		*utc_ms = recon_tz_to_utc(tz, local);
	return 0;
}

int recon_date_parse(const char *s, int64_t *day, struct recon_err *err)
{
	size_t len = s ? strlen(s) : 0;

	if (len == 0)
		return reject(err, "date", "", 0, "empty");
	if (len != 10)
		return reject(err, "date", s, len, "expected 'YYYY-MM-DD'");
	return parse_ymd(s, false, day, err, "date", s, len);
}

void recon_date_format(int64_t day, char *buf, size_t size)
{
	int64_t y;
	unsigned m, d;

	civil_from_days64(day, &y, &m, &d);
	snprintf(buf, size, "%04lld-%02u-%02u", (long long)y, m, d);
}

/* Duration units, in the order they must appear. */
static const struct {
	const char *name;
	int64_t ms;
} duration_units[] = {
    {"d", RECON_MS_PER_DAY},
    {"h", RECON_MS_PER_HOUR},
    {"m", RECON_MS_PER_MIN},
    {"s", RECON_MS_PER_SEC},
    {"ms", 1},
};

#define NUNITS (sizeof(duration_units) / sizeof(duration_units[0]))

int recon_duration_parse(const char *s, int64_t *ms, struct recon_err *err)
{
	static const char what[] = "duration";
	size_t len = s ? strlen(s) : 0;
	const char *p = s;
	int64_t total = 0;
	size_t next_unit = 0; /* units before this one are used up */
	char c[RECON_QUOTE_BUF];

	if (len == 0)
		return reject(err, what, "", 0, "empty");
	if (!strcmp(s, "0")) {
		*ms = 0;
		return 0;
	}
	while (*p) {
		int64_t v = 0;
		size_t u;

		if (!is_digit(*p)) {
			recon_err_quote(c, p, 1, RECON_QUOTE_ASCII);
			return reject(err, what, s, len, "expected a number at '%s'", c);
		}
		for (; is_digit(*p); p++) {
			int dig = *p - '0';

			if (v > (INT64_MAX - dig) / 10)
				return reject(err, what, s, len, "too large");
			v = v * 10 + dig;
		}
		if (!*p)
			return reject(err, what, s, len, "missing unit (d, h, m, s or ms)");
		if (p[0] == 'm' && p[1] == 's')
			u = 4;
		else if (p[0] == 'm')
			u = 2;
		else if (p[0] == 'd')
			u = 0;
		else if (p[0] == 'h')
			u = 1;
		else if (p[0] == 's')
			u = 3;
		else {
			recon_err_quote(c, p, 1, RECON_QUOTE_ASCII);
			return reject(err, what, s, len, "unknown unit at '%s'", c);
		}
		if (u < next_unit)
			return reject(
			    err, what, s, len,
			    "units must appear at most once, in the order d, h, m, s, ms");
		if (v > INT64_MAX / duration_units[u].ms ||
		    total > INT64_MAX - v * duration_units[u].ms)
			return reject(err, what, s, len, "too large");
		total += v * duration_units[u].ms;
		p += strlen(duration_units[u].name);
		next_unit = u + 1;
	}
	*ms = total;
	return 0;
}

void recon_duration_format(int64_t ms, char *buf, size_t size)
{
	uint64_t rest;
	size_t i, n = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	if (ms == 0) {
		snprintf(buf, size, "0s");
		return;
	}
	if (ms < 0) {
		snprintf(buf, size, "-");
		n = 1;
		rest = (uint64_t)(-(ms + 1)) + 1;
	} else {
		rest = (uint64_t)ms;
	}
	for (i = 0; i < NUNITS && n < size; i++) {
		uint64_t q = rest / (uint64_t)duration_units[i].ms;
		int w;

		if (q == 0)
			continue;
		rest -= q * (uint64_t)duration_units[i].ms;
		w = snprintf(buf + n, size - n, "%llu%s", (unsigned long long)q,
			     duration_units[i].name);
		if (w < 0)
			return;
		n += (size_t)w;
	}
}

void recon_time_format_utc(int64_t utc_ms, char *buf, size_t size)
{
	int64_t day = floor_div(utc_ms, RECON_MS_PER_DAY);
	/* not utc_ms - day * ms-per-day: that product overflows near INT64_MIN */
	int64_t msod = utc_ms % RECON_MS_PER_DAY;

	int64_t y;
	unsigned m, d;

	if (msod < 0)
		msod += RECON_MS_PER_DAY;
	civil_from_days64(day, &y, &m, &d);
	snprintf(buf, size, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y, m, d,
		 (int)(msod / RECON_MS_PER_HOUR), (int)(msod / RECON_MS_PER_MIN % 60),
		 (int)(msod / RECON_MS_PER_SEC % 60), (int)(msod % RECON_MS_PER_SEC));
}

void recon_time_format_local(const struct recon_tz *tz, int64_t utc_ms, char *buf, size_t size)
{
	int64_t local = recon_tz_to_local(tz, utc_ms);
	int64_t day = floor_div(local, RECON_MS_PER_DAY);
	int64_t msod = local % RECON_MS_PER_DAY;
	int64_t y;
	unsigned m, d;

	if (msod < 0)
		msod += RECON_MS_PER_DAY;
	civil_from_days64(day, &y, &m, &d);
	snprintf(buf, size, "%04lld-%02u-%02u %02d:%02d:%02d", (long long)y, m, d,
		 (int)(msod / RECON_MS_PER_HOUR), (int)(msod / RECON_MS_PER_MIN % 60),
		 (int)(msod / RECON_MS_PER_SEC % 60));
}

int64_t recon_tz_day_of(const struct recon_tz *tz, int64_t utc_ms)
{
	return floor_div(recon_tz_to_local(tz, utc_ms), RECON_MS_PER_DAY);
}

/*
 * The first instant whose wall clock is at or after local midnight `m`: the
 * zone's segments (constant offset between two changes) are scanned in time
 * order from 26 h before m, and the first one whose wall clock reaches m gives
 * max(its start, m - offset). Inside a gap that is the transition (the day
 * starts there); across a fall-back the earliest reading. Being "the first
 * instant at or after", it grows with m: a day's end is never before its
 * start, even in a crafted zone whose wall clock jumps over a whole day and
 * then falls back into it (tests/fuzz/corpus/tzif/regress-day-reversed).
 */
/* Seconds to ms, saturated at the int64 range. */
static int64_t sec_to_ms(int64_t s)
{
	if (s > INT64_MAX / RECON_MS_PER_SEC)
		return INT64_MAX;
	if (s < INT64_MIN / RECON_MS_PER_SEC)
		return INT64_MIN;
	return s * RECON_MS_PER_SEC;
}

static int64_t first_instant_at(const struct recon_tz *tz, int64_t m)
{
	int64_t from, to = 0;
	int32_t off;

	if (!tz || tz->fixed)
		return recon_tz_to_utc(tz, m);
	from = floor_div(m, RECON_MS_PER_SEC) - TZ_WINDOW;
	off = tz_offset_sec(tz, from);
	/*
	 * Ends: changes come in increasing time, and once one lies past m + 26 h
	 * the segment before it reaches m (|offset| < 26 h). As many rounds as
	 * the zone has changes in those 52 hours (a file of bounded size).
	 */
	for (;;) {
		bool bounded = tz_next_change(tz, from, &to);
		int64_t t = sat_add(m, -(int64_t)off * RECON_MS_PER_SEC);
		int64_t lo = sec_to_ms(from);

		if (t < lo)
			t = lo;
		if (!bounded || t < sec_to_ms(to))
			return t;
		from = to;
		off = tz_offset_sec(tz, to);
	}
}

void recon_tz_day_bounds(const struct recon_tz *tz, int64_t day, int64_t *start, int64_t *end)
{
	*start = first_instant_at(tz, day * RECON_MS_PER_DAY);
	*end = first_instant_at(tz, (day + 1) * RECON_MS_PER_DAY);
}

int recon_time_now(int64_t *now_ms, struct recon_err *err)
{
	const char *env = getenv("RECON_NOW");
	struct recon_err perr;
	struct timespec ts;

	if (env && *env) {
		recon_err_init(&perr);
		/* No suffix means UTC: tz NULL. */
		if (recon_time_parse(env, strlen(env), NULL, now_ms, &perr) < 0)
			return recon_err_set(err, RECON_ECONFIG, "RECON_NOW", "%s", perr.msg);
		return 0;
	}
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return recon_err_set(err, RECON_EINTERNAL, NULL, "clock_gettime failed: %s",
				     strerror(errno));
	*now_ms = (int64_t)ts.tv_sec * RECON_MS_PER_SEC + ts.tv_nsec / 1000000;
	return 0;
}

int64_t recon_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * RECON_MS_PER_SEC + ts.tv_nsec / 1000000;
}
