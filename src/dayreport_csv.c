/*
 * The daily report as finance's CSV: one row per open item, decimal amounts,
 * local times with their offset, one column per field.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dayreport_int.h"
#include "recon_buf.h"
#include "recon_money.h"
#include "recon_time.h"

/* ---- CSV --------------------------------------------------------------------- */

void recon_dayreport_csv(struct w *w, const struct recon_dayreport *r)
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

		recon_dayreport_side(r, d, "upstream", &s[0]);
		recon_dayreport_side(r, d, "local", &s[1]);
		recon_dayreport_money(it->amount, it->exp, false, m, sizeof(m));
		recon_dayreport_local_time(r, it->opened_ms, opened, sizeof(opened));
		recon_date_format(it->opened_day, day, sizeof(day));
		recon_buf_addf(b, "%s,%s,", date, r->mode);
		recon_dayreport_add_csv(b, it->key);
		recon_buf_addf(b, ",%s,%s,%s,%s", it->klass, it->sev, m, it->cur);
		for (int k = 0; k < 2; k++) {
			recon_buf_addf(b, ",%s,%s,", s[k].decimal, s[k].cur);
			recon_dayreport_add_csv(b, s[k].status);
			recon_buf_addf(b, ",%s,", s[k].time);
			recon_dayreport_add_csv(b, s[k].origin);
		}
		recon_buf_addf(b, ",%s,%s,%" PRId64 ",%s,", day, opened, r->to - it->opened_day,
			       it->ticket ? it->ticket : "");
		recon_dayreport_add_csv(b, recon_dayreport_next_step(it->klass));
		recon_buf_adds(b, "\r\n");
		json_decref(d);
		recon_dayreport_spill(w, false);
	}
}
