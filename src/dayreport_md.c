/*
 * The daily report in Markdown: the same facts as the HTML page, as text and
 * tables.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dayreport_int.h"
#include "recon_buf.h"
#include "recon_money.h"
#include "recon_time.h"

/* ---- Markdown ---------------------------------------------------------------- */

/* The verdict, the day, money at stake and the ages. */
static void md_summary(struct recon_buf *b, const struct recon_dayreport *r)
{
	const struct item *o = recon_dayreport_oldest(r);
	char date[16], t[1024], m[64], a[32];
	int level;

	recon_date_format(r->to, date, sizeof(date));
	recon_dayreport_verdict(r, true, t, sizeof(t), &level);
	recon_buf_adds(b, "# ");
	recon_dayreport_add_text(b, r->job->name, true);
	recon_buf_addf(b, ": reconciliation of %s\n\n**%s** ", date,
		       level == 0   ? "OK"
		       : level == 1 ? "ATTENTION"
				    : "ACTION NEEDED");
	recon_dayreport_add_text(b, t, true);
	recon_buf_addf(b, "\n\nMode %s, business days in ", r->mode);
	recon_dayreport_add_text(b, r->job->tz_name, true);
	recon_dayreport_local_time(r, r->now, t, sizeof(t));
	recon_buf_addf(b, "; generated %s.\n\n## The day\n\n", t);
	if (r->main) {
		recon_buf_addf(b, "| run %" PRId64 " (%s) | count |\n| --- | ---: |\n", r->main->id,
			       r->main->outcome);
		for (int i = 0; i < 10; i++)
			recon_buf_addf(b, "| %s | %" PRId64 " |\n", recon_dayreport_run_labels[i],
				       r->main->n[i]);
		recon_dayreport_totals_line(r, t, sizeof(t));
		recon_buf_adds(b, "\nControl totals: ");
		recon_dayreport_add_text(b, t, true);
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
			recon_dayreport_stake_text(s, true, m, sizeof(m));
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
		recon_dayreport_age(r, o, a, sizeof(a));
		recon_dayreport_money(o->amount, o->exp, true, m, sizeof(m));
		recon_buf_adds(b, "\nThe oldest: **");
		recon_dayreport_add_text(b, o->key, true);
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
			recon_dayreport_money(d->stake, r->exp, true, m, sizeof(m));
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

		recon_dayreport_side(r, d, "upstream", &s[0]);
		recon_dayreport_side(r, d, "local", &s[1]);
		recon_dayreport_money(it->amount, it->exp, true, m, sizeof(m));
		recon_dayreport_age(r, it, a, sizeof(a));
		recon_buf_adds(b, "| ");
		recon_dayreport_add_text(b, it->key, true);
		recon_buf_addf(b, " | %s | %s %s |", it->klass, m, it->cur);
		for (int k = 0; k < 2; k++) {
			if (!s[k].present) {
				recon_buf_adds(b, " none |");
				continue;
			}
			recon_buf_addf(b, " %s ", s[k].amount);
			recon_dayreport_add_text(b, s[k].status, true);
			recon_buf_addf(b, " %s (", s[k].time);
			recon_dayreport_add_text(b, s[k].origin, true);
			recon_buf_adds(b, ") |");
		}
		recon_buf_addf(b, " %s | %s | %s |\n", a, it->ticket ? it->ticket : "-",
			       recon_dayreport_next_step(it->klass));
		json_decref(d);
		recon_dayreport_spill(w, false);
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
		recon_dayreport_add_text(b, slash ? slash + 1 : x->origin, true);
		recon_buf_adds(b, " (");
		recon_dayreport_add_text(b, x->side, true);
		recon_buf_adds(b, ", ");
		recon_dayreport_add_text(b, x->field, true);
		recon_buf_adds(b, "): ");
		recon_dayreport_add_text(b, x->reason, true);
		recon_buf_adds(b, "\n");
	}
}

void recon_dayreport_md(struct w *w, const struct recon_dayreport *r)
{
	md_summary(&w->b, r);
	md_days(&w->b, r);
	md_items(w, r);
}
