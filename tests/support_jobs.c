/* In-memory jobs for unit tests: see support_jobs.h. */
#include "support_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"
#include "recon_source.h"
#include "recon_time.h"

static void die(const char *what, const struct recon_err *err)
{
	char buf[512];

	fprintf(stderr, "support_jobs: %s: %s\n", what, recon_err_str(err, buf, sizeof(buf)));
	abort();
}

void support_side_col(struct recon_side *sd, enum recon_col col, const char *name)
{
	free(sd->cols[col]);
	sd->cols[col] = name ? recon_xstrdup(name) : NULL;
}

void support_map_put(struct recon_map *m, const char *word, int value)
{
	recon_map_put(m, word, value);
}

static void side_base(struct recon_side *sd, const char *role, const char *tz_name)
{
	struct recon_err err;

	sd->role = role;
	sd->nkey = 1;
	sd->tz_name = recon_xstrdup(tz_name);
	recon_err_init(&err);
	if (recon_tz_load(&sd->tz, tz_name, &err) < 0)
		die("cannot load the zone", &err);
	sd->currency = recon_xstrdup("CNY");
	sd->csv.delimiter = ',';
	sd->csv.quote = '"';
	sd->csv.header = true;
	support_side_col(sd, RECON_COL_KEY0, "out_trade_no");
}

struct recon_job *support_job_new(void)
{
	struct recon_job *job = recon_xcalloc(1, sizeof(*job));
	struct recon_side *up = &job->upstream, *lo = &job->local;
	struct recon_err err;

	job->name = recon_xstrdup("test_job");
	job->file = recon_xstrdup("/nonexistent/test_job.json");
	job->dir = recon_xstrdup("/nonexistent");
	job->tz_name = recon_xstrdup("Asia/Shanghai");
	recon_err_init(&err);
	if (recon_tz_load(&job->tz, job->tz_name, &err) < 0)
		die("cannot load the zone", &err);
	memcpy(job->currency, "CNY", 4);
	job->exponent = 2;
	job->tolerance_minor = 0;
	job->stuck_after_ms = 15 * RECON_MS_PER_MIN;
	job->margin_ms = 10 * RECON_MS_PER_MIN;
	job->settle_after_ms = job->margin_ms;
	job->refund_after_ms = 3 * RECON_MS_PER_DAY;
	job->lock_wait_ms = 10 * RECON_MS_PER_MIN;
	job->t1_max_days = 31;
	job->ledger_retention_ms = 400 * RECON_MS_PER_DAY;
	job->ledger_settled_ms = 7 * RECON_MS_PER_DAY;
	job->hot_size_ms = 5 * RECON_MS_PER_MIN;
	job->hot_lag_ms = 2 * RECON_MS_PER_MIN;
	job->max_rejects = 0;
	job->config_text = recon_xstrdup("{\"job\":\"test_job\"}");

	side_base(up, "upstream", "Asia/Shanghai");
	up->backend = &recon_source_csv;
	up->path = recon_xstrdup("/nonexistent/statements/{date}.csv");
	up->csv.strip = recon_xstrdup("`");
	support_side_col(up, RECON_COL_AMOUNT, "amount");
	support_side_col(up, RECON_COL_TIME, "trade_time");
	support_side_col(up, RECON_COL_TXN_ID, "transaction_id");
	support_side_col(up, RECON_COL_REFUND_ID, "refund_id");
	support_side_col(up, RECON_COL_ENTRY_TYPE, "type");
	support_map_put(&up->entry_types, "payment", RECON_ENTRY_PAYMENT);
	support_map_put(&up->entry_types, "refund", RECON_ENTRY_REFUND);
	support_map_put(&up->entry_types, "revoke", RECON_ENTRY_REVOKE);
	support_map_put(&up->entry_types, "fee", RECON_ENTRY_KEYLESS);
	support_map_put(&up->status_map, "SUCCESS", RECON_ST_SUCCESS);
	support_map_put(&up->status_map, "REFUND", RECON_ST_REFUNDED);
	support_map_put(&up->status_map, "CLOSED", RECON_ST_CLOSED);
	support_map_put(&up->status_map, "NOTPAY", RECON_ST_PENDING);

	side_base(lo, "local", "Asia/Shanghai");
	lo->backend = &recon_source_sqlite;
	lo->path = recon_xstrdup("/nonexistent/flow.db");
	lo->table = recon_xstrdup("payment_flow");
	support_side_col(lo, RECON_COL_AMOUNT_MINOR, "amount_cents");
	support_side_col(lo, RECON_COL_CURRENCY, "currency");
	support_side_col(lo, RECON_COL_STATUS, "status");
	support_side_col(lo, RECON_COL_TIME, "created_at");
	support_map_put(&lo->status_map, "PAID", RECON_ST_SUCCESS);
	support_map_put(&lo->status_map, "PENDING", RECON_ST_PENDING);
	support_map_put(&lo->status_map, "REFUNDED", RECON_ST_REFUNDED);
	support_map_put(&lo->status_map, "FAILED", RECON_ST_CLOSED);
	return job;
}

void support_window_day(const struct recon_job *job, int y, unsigned m, unsigned d,
			struct recon_window *win)
{
	int64_t day = recon_days_from_civil(y, m, d);

	memset(win, 0, sizeof(*win));
	recon_tz_day_bounds(job->tz, day, &win->start, &win->end);
	win->read_start = win->start - job->margin_ms;
	win->read_end = win->end + job->margin_ms;
	win->day = day;
}

int64_t support_local_ms(const struct recon_job *job, const char *ts)
{
	struct recon_err err;
	int64_t ms = 0;

	recon_err_init(&err);
	if (recon_time_parse(ts, strlen(ts), job->tz, &ms, &err) < 0)
		die(ts, &err);
	return ms;
}
