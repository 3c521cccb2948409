#include "recon_report.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_time.h"

int recon_report_format_from_name(const char *name)
{
	if (!strcmp(name, "table"))
		return RECON_REPORT_TABLE;
	if (!strcmp(name, "jsonl"))
		return RECON_REPORT_JSONL;
	if (!strcmp(name, "csv"))
		return RECON_REPORT_CSV;
	return -1;
}

/*
 * The difference objects are written by hand, not through jansson: a run can
 * record hundreds of thousands of them and building a json_t tree for each
 * cost more than storing it. The text is what jansson's compact dump gives
 * (tests/test_report.c holds the two side by side): '"', '\\' and control
 * characters escaped ("\n" style where JSON has one, else "\u00XX"), UTF-8
 * kept as is. Bytes that are not UTF-8 (a file name can hold any) become
 * U+FFFD, where jansson would fail the whole object.
 */

size_t recon_report_utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t len;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* s[0..n) escaped for the inside of a JSON string. */
static void add_esc(struct recon_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s, *end = p + n, *run = p;

	recon_buf_grow(b, n + 2);
	while (p < end) {
		unsigned c = *p;
		size_t l;
		char esc[6];

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0x80 && (l = recon_report_utf8_len(p, (size_t)(end - p))) > 0) {
			p += l;
			continue;
		}
		recon_buf_add(b, run, (size_t)(p - run));
		switch (c) {
		case '"':
			recon_buf_add(b, "\\\"", 2);
			break;
		case '\\':
			recon_buf_add(b, "\\\\", 2);
			break;
		case '\b':
			recon_buf_add(b, "\\b", 2);
			break;
		case '\f':
			recon_buf_add(b, "\\f", 2);
			break;
		case '\n':
			recon_buf_add(b, "\\n", 2);
			break;
		case '\r':
			recon_buf_add(b, "\\r", 2);
			break;
		case '\t':
			recon_buf_add(b, "\\t", 2);
			break;
		default:
			if (c < 0x20) {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				recon_buf_add(b, esc, 6);
			} else {
				recon_buf_add(b, "\xef\xbf\xbd", 3); /* not UTF-8: U+FFFD */
			}
			break;
		}
		run = ++p;
	}
	recon_buf_add(b, run, (size_t)(p - run));
}

static void add_str(struct recon_buf *b, const char *s, size_t n)
{
	recon_buf_addc(b, '"');
	add_esc(b, s, n);
	recon_buf_addc(b, '"');
}

static void add_int(struct recon_buf *b, int64_t v)
{
	char d[24];
	size_t i = sizeof(d);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		d[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		d[--i] = '-';
	recon_buf_add(b, d + i, sizeof(d) - i);
}

static void add_side(struct recon_buf *b, const struct recon_side_view *v, const char *name,
		     const char *key, bool upstream)
{
	char when[40];

	if (!v->present) {
		recon_buf_add(b, "null", 4);
		return;
	}
	recon_time_format_utc(v->time, when, sizeof(when));
	recon_buf_adds(b, "{\"amount_minor\":");
	add_int(b, v->amount);
	recon_buf_adds(b, ",\"currency\":");
	add_str(b, v->currency, strlen(v->currency));
	recon_buf_adds(b, ",\"status\":\"");
	recon_buf_adds(b, recon_status_name(v->status));
	recon_buf_adds(b, "\",\"time\":\"");
	recon_buf_adds(b, when);
	recon_buf_adds(b, "\",\"origin\":\"");
	/*
	 * "<name>:<line>" for a file row, "<name>:<key>" for a database row, and
	 * "ledger:<key>" for an upstream known only from earlier days' entries
	 */
	if (upstream && v->carried && !v->line)
		name = "ledger";
	add_esc(b, name, strlen(name));
	recon_buf_addc(b, ':');
	if (v->line && !v->looked_up)
		add_int(b, (int64_t)v->line);
	else
		add_esc(b, key, strlen(key));
	recon_buf_addc(b, '"');
	if (upstream) {
		recon_buf_adds(b, ",\"refunded_minor\":");
		add_int(b, v->refunded);
		recon_buf_adds(b, ",\"entries\":");
	} else {
		recon_buf_adds(b, ",\"rows\":");
	}
	add_int(b, (int64_t)v->rows);
	recon_buf_addc(b, '}');
}

void recon_report_diff_json_buf(struct recon_buf *b, const struct recon_job *job,
				const struct recon_diff *d, const char *up_name,
				const char *local_name)
{
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];

	(void)job;
	recon_key_display(d->key, d->key_len, key, sizeof(key));
	recon_buf_reset(b);
	recon_buf_grow(b, 400);
	recon_buf_adds(b, "{\"key\":");
	add_str(b, key, strlen(key));
	recon_buf_adds(b, ",\"class\":\"");
	recon_buf_adds(b, recon_class_name(d->klass));
	recon_buf_adds(b, "\",\"upstream\":");
	add_side(b, &d->up, up_name, key, true);
	recon_buf_adds(b, ",\"local\":");
	add_side(b, &d->local, local_name, key, false);
	recon_buf_addc(b, '}');
}

char *recon_report_diff_json(const struct recon_job *job, const struct recon_diff *d,
			     const char *up_name, const char *local_name)
{
	struct recon_buf b;

	recon_buf_init(&b);
	recon_report_diff_json_buf(&b, job, d, up_name, local_name);
	return recon_buf_detach(&b);
}

void recon_report_csv_field(FILE *out, const char *s)
{
	/*
	 * A cell a spreadsheet would run as a formula (=cmd|' /C calc'!A0, +, -,
	 * @, or a tab or CR before one) is neutralised with a leading apostrophe
	 * (OWASP "CSV injection"): the text stays readable, nothing executes.
	 */
	const bool formula = strchr("=+-@\t\r", s[0]) && s[0];

	if (!formula && !strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	if (formula)
		fputc('\'', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void recon_report_text_field(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* C1 controls */
			fprintf(out, "\\xc2\\x%02x", *++p);
		else if (*p == '\\')
			fputs("\\\\", out);
		else
			fputc(*p, out);
	}
}

struct view {
	bool present;
	const char *currency, *status, *time, *origin;
	json_int_t amount;
};

static int parse_view(json_t *o, struct view *v)
{
	memset(v, 0, sizeof(*v));
	if (json_is_null(o))
		return 0;
	if (json_unpack(o, "{s:I, s:s, s:s, s:s, s:s}", "amount_minor", &v->amount, "currency",
			&v->currency, "status", &v->status, "time", &v->time, "origin",
			&v->origin) < 0)
		return -1;
	v->present = true;
	return 0;
}

static void money_cell(const struct view *v, char *buf, size_t size)
{
	char num[40];
	int e;

	if (!v->present) {
		snprintf(buf, size, "-");
		return;
	}
	e = recon_money_exponent(v->currency);
	recon_money_format(v->amount, e < 0 ? 0 : e, num, sizeof(num));
	snprintf(buf, size, "%s %s", num, v->currency);
}

int recon_report_print(FILE *out, enum recon_report_format fmt, const struct recon_job *job,
		       char *const *json, size_t n, struct recon_err *err)
{
	(void)job;
	if (fmt == RECON_REPORT_JSONL) {
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%s\n", json[i]);
		return 0;
	}
	if (fmt == RECON_REPORT_CSV)
		fputs("key,class,upstream_amount_minor,upstream_currency,upstream_status,"
		      "upstream_time,upstream_origin,local_amount_minor,local_currency,"
		      "local_status,local_time,local_origin\n",
		      out);
	else
		fprintf(out, "%-32s %-16s %18s %-9s %18s %-9s\n", "KEY", "CLASS", "UPSTREAM",
			"STATUS", "LOCAL", "STATUS");
	for (size_t i = 0; i < n; i++) {
		json_error_t je;
		json_t *o = json_loads(json[i], 0, &je), *up, *lo;
		const char *key, *klass;
		struct view u, l;
		if (!o ||
		    json_unpack(o, "{s:s, s:s, s:o, s:o}", "key", &key, "class", &klass, "upstream",
				&up, "local", &lo) < 0 ||
		    parse_view(up, &u) < 0 || parse_view(lo, &l) < 0) {
			json_decref(o);
			return recon_err_set(err, RECON_EIO, NULL,
					     "stored difference %zu is not a difference object", i);
		}
		if (fmt == RECON_REPORT_CSV) {
			const struct view *vs[2] = {&u, &l};
			recon_report_csv_field(out, key);
			fprintf(out, ",%s", klass);
			for (int s = 0; s < 2; s++) {
				if (vs[s]->present) {
					fprintf(out, ",%lld,%s,%s,%s,", (long long)vs[s]->amount,
						vs[s]->currency, vs[s]->status, vs[s]->time);
					recon_report_csv_field(out, vs[s]->origin);
				} else {
					fputs(",,,,,", out);
				}
			}
			fputc('\n', out);
		} else {
			char ua[48], la[48];
			size_t klen = strlen(key);
			money_cell(&u, ua, sizeof(ua));
			money_cell(&l, la, sizeof(la));
			/* the key is input: a terminal control sequence in it is shown, not run */
			recon_report_text_field(out, key);
			fprintf(out, "%*s %-16s %18s %-9s %18s %-9s\n",
				klen < 32 ? (int)(32 - klen) : 0, "", klass, ua,
				u.present ? u.status : "-", la, l.present ? l.status : "-");
		}
		json_decref(o);
	}
	return 0;
}
