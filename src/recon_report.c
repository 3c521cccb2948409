#include "recon_report.h"

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

static json_t *side_json(const struct recon_diff *d, const struct recon_side_view *v,
			 const char *name, bool upstream)
{
	json_t *o;
	char when[40];
	struct recon_buf origin;
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];

	if (!v->present)
		return json_null();
	o = json_object();
	recon_time_format_utc(v->time, when, sizeof(when));
	recon_buf_init(&origin);
	if (v->line && !v->looked_up)
		recon_buf_addf(&origin, "%s:%llu", name, (unsigned long long)v->line);
	else
		recon_buf_addf(&origin, "%s:%s", name,
			       recon_key_display(d->key, d->key_len, key, sizeof(key)));
	json_object_set_new(o, "amount_minor", json_integer(v->amount));
	json_object_set_new(o, "currency", json_string(v->currency));
	json_object_set_new(o, "status", json_string(recon_status_name(v->status)));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "origin", json_stringn(origin.s, origin.len));
	if (upstream) {
		json_object_set_new(o, "refunded_minor", json_integer(v->refunded));
		json_object_set_new(o, "entries", json_integer(v->rows));
	} else {
		json_object_set_new(o, "rows", json_integer(v->rows));
	}
	recon_buf_release(&origin);
	return o;
}

char *recon_report_diff_json(const struct recon_job *job, const struct recon_diff *d,
			     const char *up_name, const char *local_name)
{
	json_t *o = json_object();
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];
	char *s;

	(void)job;
	recon_key_display(d->key, d->key_len, key, sizeof(key));
	json_object_set_new(o, "key", json_string(key));
	json_object_set_new(o, "class", json_string(recon_class_name(d->klass)));
	json_object_set_new(o, "upstream", side_json(d, &d->up, up_name, true));
	json_object_set_new(o, "local", side_json(d, &d->local, local_name, false));
	s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	if (!s) /* only on out-of-memory or invalid UTF-8 in a key, which normalize rejects */
		s = recon_xstrdup("{}");
	return s;
}

void recon_report_csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
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
			money_cell(&u, ua, sizeof(ua));
			money_cell(&l, la, sizeof(la));
			fprintf(out, "%-32s %-16s %18s %-9s %18s %-9s\n", key, klass, ua,
				u.present ? u.status : "-", la, l.present ? l.status : "-");
		}
		json_decref(o);
	}
	return 0;
}
