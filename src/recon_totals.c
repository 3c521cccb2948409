#include "recon_totals.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"

#define TOTALS_EXP 6 /* millionths: exact for every provider amount column (WeChat fees: 5) */
#define NO_COL	   SIZE_MAX

struct gacc {
	uint64_t count;
	size_t entry_len; /* of the group's entry_type, if any */
	size_t *col;	  /* per sum: header index, or NO_COL */
	int64_t *sum;
	size_t *bound; /* the sums whose column the header has, in the rule's order */
	size_t nbound;
};

struct recon_totals {
	const struct recon_side *side;
	unsigned char trim[256];
	size_t entry_col;
	struct gacc *g;
	uint64_t records;
	uint64_t bad_line; /* first record whose cells cannot be summed, or 0 */
	char bad_reason[256];
};

struct recon_totals *recon_totals_new(const struct recon_side *side)
{
	const struct recon_totals_rule *rule = &side->csv.totals;
	struct recon_totals *t;

	if (rule->in == RECON_TOTALS_NONE)
		return NULL;
	t = recon_xcalloc(1, sizeof(*t));
	t->side = side;
	t->entry_col = NO_COL;
	t->trim[' '] = t->trim['\t'] = t->trim['\r'] = t->trim['\n'] = 1;
	for (const char *p = side->csv.strip ? side->csv.strip : ""; *p; p++)
		t->trim[(unsigned char)*p] = 1;
	t->g = recon_xcalloc(rule->ngroups ? rule->ngroups : 1, sizeof(*t->g));
	for (size_t i = 0; i < rule->ngroups; i++) {
		size_t n = rule->groups[i].nsums;
		t->g[i].col = recon_xcalloc(n ? n : 1, sizeof(*t->g[i].col));
		t->g[i].sum = recon_xcalloc(n ? n : 1, sizeof(*t->g[i].sum));
		t->g[i].bound = recon_xcalloc(n ? n : 1, sizeof(*t->g[i].bound));
		if (rule->groups[i].entry_type)
			t->g[i].entry_len = strlen(rule->groups[i].entry_type);
		for (size_t j = 0; j < n; j++)
			t->g[i].col[j] = NO_COL;
	}
	return t;
}

void recon_totals_free(struct recon_totals *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->side->csv.totals.ngroups; i++) {
		free(t->g[i].col);
		free(t->g[i].sum);
		free(t->g[i].bound);
	}
	free(t->g);
	free(t);
}

static void trim(const struct recon_totals *t, const char **p, size_t *n)
{
	while (*n && t->trim[(unsigned char)**p]) {
		(*p)++;
		(*n)--;
	}
	while (*n && t->trim[(unsigned char)(*p)[*n - 1]])
		(*n)--;
}

/* Whether cell c, trimmed, is word (wl bytes). */
static bool cell_is(const struct recon_totals *t, const struct recon_totals_cell *c,
		    const char *word, size_t wl)
{
	const char *p = c->p;
	size_t n = c->len;

	trim(t, &p, &n);
	return n == wl && !memcmp(p, word, n);
}

void recon_totals_bind(struct recon_totals *t, const struct recon_totals_cell *header, size_t n,
		       size_t entry_col)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;

	t->entry_col = entry_col;
	for (size_t i = 0; i < rule->ngroups; i++) {
		for (size_t j = 0; j < rule->groups[i].nsums; j++)
			for (size_t c = 0; c < n; c++)
				if (cell_is(t, &header[c], rule->groups[i].sums[j].column,
					    strlen(rule->groups[i].sums[j].column))) {
					t->g[i].col[j] = c;
					break;
				}
		/* a row visits these only: a layout has a few of the columns a rule knows */
		t->g[i].nbound = 0;
		for (size_t j = 0; j < rule->groups[i].nsums; j++)
			if (t->g[i].col[j] != NO_COL)
				t->g[i].bound[t->g[i].nbound++] = j;
	}
}

/*
 * The common cell at once: [+-]digits[.1-6 digits] with at most 12 integer
 * digits, whose millionths (below 10^(12 + 6)) fit int64 without a check per
 * digit. false: the checked way below decides (and names what is wrong).
 */
static bool parse_short(const char *s, size_t len, int64_t *out)
{
	static const uint64_t scale[TOTALS_EXP + 1] = {1000000, 100000, 10000, 1000, 100, 10, 1};
	size_t i = 0, digits = 0, decimals = 0;
	bool neg = false;
	uint64_t v = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	for (; i < len && (unsigned)(s[i] - '0') < 10; i++, digits++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	if (i < len && s[i] == '.')
		for (i++; i < len && (unsigned)(s[i] - '0') < 10; i++, decimals++)
			v = v * 10 + (uint64_t)(s[i] - '0');
	if (i != len || !digits || digits > 12 || decimals > TOTALS_EXP || (i && s[i - 1] == '.'))
		return false;
	v *= scale[decimals];
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

int recon_totals_parse_amount(const char *s, size_t len, int64_t *out)
{
	size_t i = 0, digits = 0, decimals = 0;
	bool neg = false;
	uint64_t v = 0, limit;

	/* strict: [+-]digits[.1-6 digits], exact (recon_money stops at 4 decimals) */
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (parse_short(s + i, len - i, out))
		return 0;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (v > (limit - (uint64_t)(s[i] - '0')) / 10)
			return RECON_EVALUE;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!digits)
		return RECON_EVALUE;
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, decimals++) {
			if (decimals == TOTALS_EXP || v > (limit - (uint64_t)(s[i] - '0')) / 10)
				return RECON_EVALUE;
			v = v * 10 + (uint64_t)(s[i] - '0');
		}
		if (!decimals)
			return RECON_EVALUE;
	}
	if (i != len)
		return RECON_EVALUE;
	for (; decimals < TOTALS_EXP; decimals++) {
		if (v > limit / 10)
			return RECON_EVALUE;
		v *= 10;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* Quotes at most 40 bytes of a value for a message. */
static void show(const char *s, size_t len, char *buf, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i == 40) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	buf[o] = '\0';
}

static void set_bad(struct recon_totals *t, uint64_t line, const char *fmt, ...) RECON_PRINTF(3, 4);
static void set_bad(struct recon_totals *t, uint64_t line, const char *fmt, ...)
{
	va_list ap;

	if (t->bad_line)
		return;
	t->bad_line = line;
	va_start(ap, fmt);
	vsnprintf(t->bad_reason, sizeof(t->bad_reason), fmt, ap);
	va_end(ap);
}

void recon_totals_add(struct recon_totals *t, const struct recon_totals_cell *cells, size_t n,
		      uint64_t line, const char *malformed)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;

	t->records++;
	if (malformed) {
		set_bad(t, line, "%s", malformed);
		return;
	}
	for (size_t i = 0; i < rule->ngroups; i++) {
		const struct recon_totals_group *grp = &rule->groups[i];
		struct gacc *g = &t->g[i];

		if (grp->entry_type &&
		    (t->entry_col >= n ||
		     !cell_is(t, &cells[t->entry_col], grp->entry_type, g->entry_len)))
			continue;
		g->count++;
		for (size_t b = 0; b < g->nbound; b++) {
			const size_t j = g->bound[b];
			const char *p;
			size_t len;
			int64_t v;
			char shown[64];

			if (g->col[j] >= n) {
				set_bad(t, line, "'%s': no such cell", grp->sums[j].column);
				continue;
			}
			p = cells[g->col[j]].p;
			len = cells[g->col[j]].len;
			trim(t, &p, &len);
			if (!len || (len == 4 && !memcmp(p, "0.00", 4)))
				continue; /* an empty cell adds nothing, nor does the usual zero */
			/* trimmed already: the short form at once, else the checked way */
			if (!parse_short(p, len, &v) && recon_totals_parse_amount(p, len, &v) < 0) {
				show(p, len, shown, sizeof(shown));
				set_bad(t, line, "'%s': '%s' is not an amount", grp->sums[j].column,
					shown);
				continue;
			}
			if ((v > 0 && g->sum[j] > INT64_MAX - v) ||
			    (v < 0 && g->sum[j] < INT64_MIN - v)) {
				set_bad(t, line, "'%s': the column's sum overflows",
					grp->sums[j].column);
				continue;
			}
			g->sum[j] += v;
		}
	}
}

/* Millionths as decimal text, at least 2 decimals: 60000 -> "0.06", 6000 -> "0.006". */
static const char *fmt_amount(int64_t v, char *buf, size_t size)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	char frac[TOTALS_EXP + 1];
	int n = TOTALS_EXP;

	snprintf(frac, sizeof(frac), "%06llu", (unsigned long long)(u % 1000000u));
	while (n > 2 && frac[n - 1] == '0')
		frac[--n] = '\0';
	snprintf(buf, size, "%s%llu.%s", v < 0 ? "-" : "", (unsigned long long)(u / 1000000u),
		 frac);
	return buf;
}

static int terr(struct recon_err *err, const char *path, uint64_t line, const char *fmt, ...)
    RECON_PRINTF(4, 5);
static int terr(struct recon_err *err, const char *path, uint64_t line, const char *fmt, ...)
{
	char where[160];
	va_list ap;

	if (line)
		snprintf(where, sizeof(where), "%s:%llu", path, (unsigned long long)line);
	else
		snprintf(where, sizeof(where), "%s", path);
	va_start(ap, fmt);
	recon_err_setv(err, RECON_EINPUT, where, fmt, ap);
	va_end(ap);
	return RECON_EINPUT;
}

/* Splits text into lines (without '\n'); returns how many, at most max. */
static size_t split_lines(const char *text, size_t len, const char **lp, size_t *ll, size_t max)
{
	size_t n = 0;
	const char *p = text, *e = text + len;

	while (p < e && n < max) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(e - p);
		lp[n] = p;
		ll[n] = l;
		n++;
		p += l + (nl ? 1 : 0);
	}
	return n;
}

#define MAX_CELLS 64

/* Splits one trailer line on the delimiter; cells trimmed. Returns the count (<= MAX_CELLS). */
static size_t split_cells(const struct recon_totals *t, const char *p, size_t len, char delim,
			  const char **cp, size_t *cl)
{
	size_t n = 0;
	const char *e = p + len;

	for (;;) {
		const char *d = memchr(p, delim, (size_t)(e - p));
		size_t l = d ? (size_t)(d - p) : (size_t)(e - p);
		if (n == MAX_CELLS)
			return n + 1;
		cp[n] = p;
		cl[n] = l;
		trim(t, &cp[n], &cl[n]);
		n++;
		if (!d)
			return n;
		p = d + 1;
	}
}

static bool parse_count(const char *p, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (!len || len > 18)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return true;
}

static int compare_sum(const struct recon_totals *t, const struct recon_totals_group *grp,
		       size_t gi, size_t j, const char *val, size_t vlen, const char *path,
		       uint64_t line, struct recon_err *err)
{
	int64_t stated;
	char a[40], b[40], shown[64];

	if (t->g[gi].col[j] == NO_COL)
		return terr(err, path, line,
			    "control total '%s' sums column '%s', which the header lacks",
			    grp->sums[j].label, grp->sums[j].column);
	if (recon_totals_parse_amount(val, vlen, &stated) < 0) {
		show(val, vlen, shown, sizeof(shown));
		return terr(err, path, line, "control total '%s': '%s' is not an amount",
			    grp->sums[j].label, shown);
	}
	if (stated != t->g[gi].sum[j])
		return terr(err, path, line,
			    "control total '%s' is %s, but the records' '%s' sum to %s",
			    grp->sums[j].label, fmt_amount(stated, a, sizeof(a)),
			    grp->sums[j].column, fmt_amount(t->g[gi].sum[j], b, sizeof(b)));
	return 0;
}

static int compare_count(const struct recon_totals *t, const struct recon_totals_group *grp,
			 size_t gi, const char *val, size_t vlen, const char *path, uint64_t line,
			 struct recon_err *err)
{
	uint64_t stated;
	char shown[64];

	if (!parse_count(val, vlen, &stated)) {
		show(val, vlen, shown, sizeof(shown));
		return terr(err, path, line, "control total '%s': '%s' is not a count", grp->count,
			    shown);
	}
	if (stated != t->g[gi].count)
		return terr(
		    err, path, line,
		    "control total '%s' is %llu, but the file has %llu %s record%s", grp->count,
		    (unsigned long long)stated, (unsigned long long)t->g[gi].count,
		    grp->entry_type ? grp->entry_type : "detail", t->g[gi].count == 1 ? "" : "s");
	return 0;
}

static bool in_strv(char *const *v, const char *p, size_t n)
{
	for (; v && *v; v++)
		if (strlen(*v) == n && !memcmp(*v, p, n))
			return true;
	return false;
}

/* A label the profile marks informational, or the job ignores. */
static bool label_waived(const struct recon_totals *t, const char *p, size_t n)
{
	return in_strv(t->side->csv.totals.informational, p, n) ||
	       in_strv(t->side->csv.totals_ignore, p, n);
}

/* Trailer: a count or a sum of some group, or waived. */
static bool trailer_label_known(const struct recon_totals *t, const char *p, size_t n)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;

	for (size_t gi = 0; gi < rule->ngroups; gi++) {
		const struct recon_totals_group *grp = &rule->groups[gi];
		if (strlen(grp->count) == n && !memcmp(grp->count, p, n))
			return true;
		for (size_t j = 0; j < grp->nsums; j++)
			if (strlen(grp->sums[j].label) == n && !memcmp(grp->sums[j].label, p, n))
				return true;
	}
	return label_waived(t, p, n);
}

/*
 * A label the statement states but nothing checks: the README promises the
 * totals are checked exactly, so a wrong value there must not pass silently.
 */
static int unknown_label(const struct recon_totals *t, const char *p, size_t n, const char *path,
			 uint64_t line, struct recon_err *err)
{
	char shown[64];

	show(p, n, shown, sizeof(shown));
	return terr(err, path, line,
		    "control total '%s' is not one the %s profile checks or knows as "
		    "informational: its value cannot be verified (a newer layout? list it in the "
		    "side's \"totals_ignore\" to accept it unchecked)",
		    shown, t->side->csv.format ? t->side->csv.format : "side's");
}

static int check_trailer(const struct recon_totals *t, const char **lp, const size_t *ll,
			 const uint64_t *lines, size_t nl, const char *path, struct recon_err *err)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;
	const char delim = t->side->csv.delimiter ? t->side->csv.delimiter : ',';
	const char *np[MAX_CELLS], *vp[MAX_CELLS];
	size_t nlen[MAX_CELLS], vlen[MAX_CELLS], nn, nv, first = 0, second;
	int rc;

	while (first < nl && !ll[first])
		first++;
	second = first + 1;
	while (second < nl && !ll[second])
		second++;
	if (second >= nl)
		return terr(err, path, first < nl ? lines[first] : 0,
			    "control totals: the names line has no values line after it "
			    "(truncated?)");
	nn = split_cells(t, lp[first], ll[first], delim, np, nlen);
	nv = split_cells(t, lp[second], ll[second], delim, vp, vlen);
	if (nn != nv || nn > MAX_CELLS)
		return terr(err, path, lines[second], "control totals: %zu names but %zu values",
			    nn, nv);
	for (size_t c = 0; c < nn; c++)
		if (!trailer_label_known(t, np[c], nlen[c]))
			return unknown_label(t, np[c], nlen[c], path, lines[first], err);
	for (size_t gi = 0; gi < rule->ngroups; gi++) {
		const struct recon_totals_group *grp = &rule->groups[gi];
		bool have_count = false;

		for (size_t c = 0; c < nn; c++) {
			if (nlen[c] == strlen(grp->count) && !memcmp(np[c], grp->count, nlen[c])) {
				have_count = true;
				if ((rc = compare_count(t, grp, gi, vp[c], vlen[c], path,
							lines[second], err)) < 0)
					return rc;
			}
			for (size_t j = 0; j < grp->nsums; j++)
				if (nlen[c] == strlen(grp->sums[j].label) &&
				    !memcmp(np[c], grp->sums[j].label, nlen[c]) &&
				    (rc = compare_sum(t, grp, gi, j, vp[c], vlen[c], path,
						      lines[second], err)) < 0)
					return rc;
		}
		if (!have_count)
			return terr(err, path, lines[first], "control totals lack '%s'",
				    grp->count);
	}
	return 0;
}

/* Next segment of a footer line: up to "，" (U+FF0C) or ','. */
static bool next_segment(const char **p, const char *e, const char **sp, size_t *sl)
{
	const char *s = *p;

	if (s >= e)
		return false;
	for (const char *q = s; q < e; q++) {
		if (*q == ',') {
			*sp = s;
			*sl = (size_t)(q - s);
			*p = q + 1;
			return true;
		}
		if (e - q >= 3 && !memcmp(q, "\xEF\xBC\x8C", 3)) {
			*sp = s;
			*sl = (size_t)(q - s);
			*p = q + 3;
			return true;
		}
	}
	*sp = s;
	*sl = (size_t)(e - s);
	*p = e;
	return true;
}

static const char *memmem_(const char *h, size_t hl, const char *n, size_t nl)
{
	for (size_t i = 0; nl <= hl && i <= hl - nl; i++)
		if (!memcmp(h + i, n, nl))
			return h + i;
	return NULL;
}

/* "#交易合计：6笔，商家实收共0.06元，商家优惠共0.00元" */
static int check_footer_line(const struct recon_totals *t, size_t gi, const char *p, size_t len,
			     uint64_t line, const char *path, struct recon_err *err)
{
	const struct recon_totals_group *grp = &t->side->csv.totals.groups[gi];
	const char *e = p + len, *sp;
	size_t sl, digits = 0;
	int rc;

	p += strlen(grp->count);
	if (!next_segment(&p, e, &sp, &sl))
		return terr(err, path, line, "control total '%s': no count", grp->count);
	while (digits < sl && sp[digits] >= '0' && sp[digits] <= '9')
		digits++;
	if ((rc = compare_count(t, grp, gi, sp, digits ? digits : sl, path, line, err)) < 0)
		return rc;
	while (next_segment(&p, e, &sp, &sl)) {
		const char *gong = memmem_(sp, sl, "\xE5\x85\xB1", 3); /* 共 */
		const char *name = sp, *val;
		size_t name_len, vl = 0;

		if (!gong)
			continue;
		name_len = (size_t)(gong - sp);
		trim(t, &name, &name_len);
		val = gong + 3;
		while (val + vl < sp + sl && strchr("+-0123456789.", val[vl]) && val[vl])
			vl++;
		bool known = label_waived(t, name, name_len);
		for (size_t j = 0; j < grp->nsums; j++) {
			if (name_len != strlen(grp->sums[j].label) ||
			    memcmp(name, grp->sums[j].label, name_len))
				continue;
			known = true;
			if ((rc = compare_sum(t, grp, gi, j, val, vl, path, line, err)) < 0)
				return rc;
		}
		if (!known)
			return unknown_label(t, name, name_len, path, line, err);
	}
	return 0;
}

/* A footer line stating totals ("合计") that no group reads, unless waived. */
static int check_footer_other(const struct recon_totals *t, const char *p, size_t len,
			      uint64_t line, const char *path, struct recon_err *err)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;
	const char *colon;
	size_t n;

	for (size_t gi = 0; gi < rule->ngroups; gi++) {
		size_t cl = strlen(rule->groups[gi].count);
		if (len >= cl && !memcmp(p, rule->groups[gi].count, cl))
			return 0;
	}
	if (!memmem_(p, len, "\xE5\x90\x88\xE8\xAE\xA1", 6)) /* 合计 */
		return 0;
	/* the label: the line up to its full-width colon ("#交易合计：") */
	colon = memmem_(p, len, "\xEF\xBC\x9A", 3);
	n = colon ? (size_t)(colon - p) + 3 : len;
	if (label_waived(t, p, n))
		return 0;
	return unknown_label(t, p, n, path, line, err);
}

static int check_footer(const struct recon_totals *t, const char **lp, const size_t *ll,
			const uint64_t *lines, size_t nl, const char *path, uint64_t last_line,
			struct recon_err *err)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;
	int rc;

	for (size_t gi = 0; gi < rule->ngroups; gi++) {
		const struct recon_totals_group *grp = &rule->groups[gi];
		size_t cl = strlen(grp->count), i;

		for (i = 0; i < nl; i++)
			if (ll[i] >= cl && !memcmp(lp[i], grp->count, cl))
				break;
		if (i == nl) {
			if (!rule->required)
				continue;
			return terr(err, path, last_line,
				    "the file ends without its control totals (no '%s' line): "
				    "truncated?",
				    grp->count);
		}
		if ((rc = check_footer_line(t, gi, lp[i], ll[i], lines[i], path, err)) < 0)
			return rc;
	}
	for (size_t i = 0; i < nl; i++)
		if ((rc = check_footer_other(t, lp[i], ll[i], lines[i], path, err)) < 0)
			return rc;
	return 0;
}

#define MAX_LINES 4096

int recon_totals_check(const struct recon_totals *t, const char *text, size_t len,
		       const uint64_t *lines, size_t nlines, const char *path, uint64_t last_line,
		       struct recon_err *err)
{
	const struct recon_totals_rule *rule = &t->side->csv.totals;
	const char **lp = NULL;
	size_t *ll = NULL, nl;
	int rc = 0;

	if (!text || !len) {
		if (!rule->required)
			return 0;
		if (rule->in == RECON_TOTALS_TRAILER)
			return terr(err, path, last_line,
				    "the file ends without its control totals (no line starting "
				    "with '%s'): truncated?",
				    t->side->csv.stop_prefixes && t->side->csv.stop_prefixes[0]
					? t->side->csv.stop_prefixes[0]
					: rule->groups[0].count);
		return terr(err, path, last_line,
			    "the file ends without its control totals (no '%s' line): truncated?",
			    rule->groups[0].count);
	}
	if (t->bad_line)
		return terr(err, path, t->bad_line, "%s (the control totals cannot be verified)",
			    t->bad_reason);
	lp = recon_xcalloc(MAX_LINES, sizeof(*lp));
	ll = recon_xcalloc(MAX_LINES, sizeof(*ll));
	nl = split_lines(text, len, lp, ll, nlines < MAX_LINES ? nlines : MAX_LINES);
	if (rule->in == RECON_TOTALS_TRAILER)
		rc = check_trailer(t, lp, ll, lines, nl, path, err);
	else
		rc = check_footer(t, lp, ll, lines, nl, path, last_line, err);
	free(lp);
	free(ll);
	return rc;
}
