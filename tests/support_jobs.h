/*
 * support_jobs: a `struct recon_job` built in memory for unit tests, without a
 * job file, so compare, normalize and state tests can vary one field at a time.
 *
 * The job (support_job_new) is "test_job", zone Asia/Shanghai, currency CNY,
 * margin 10m, stuck_after 15m, tolerance 0, max_rejects 0.
 * Upstream: a csv statement of entries ("payment", "refund", "revoke" and the
 * keyless "fee"), columns key "out_trade_no", amount "amount", time
 * "trade_time", txn_id "transaction_id", refund_id "refund_id", entry_type
 * "type"; guard character "`"; upstream status map SUCCESS/REFUND/CLOSED/
 * NOTPAY (used when a test unmaps the entry type column).
 * Local: a sqlite flow, key "out_trade_no", amount_minor "amount_cents",
 * currency "currency", status "status", time "created_at"; status map
 * PAID/PENDING/REFUNDED/FAILED.
 * Every string is heap-allocated, so recon_job_free() releases the job.
 */
#ifndef SUPPORT_JOBS_H
#define SUPPORT_JOBS_H

#include <stdint.h>

#include "recon_job.h"
#include "recon_source.h"

/* A new job as described above. Caller frees with recon_job_free(). Aborts on failure. */
struct recon_job *support_job_new(void);

/* Maps role col of sd to column `name` (NULL unmaps it). */
void support_side_col(struct recon_side *sd, enum recon_col col, const char *name);

/* Adds (or replaces) word -> value in m. */
void support_map_put(struct recon_map *m, const char *word, int value);

/* The t1 window of calendar day y-m-d in the job's zone, with the job's margins. */
void support_window_day(const struct recon_job *job, int y, unsigned m, unsigned d,
			struct recon_window *win);

/* "YYYY-MM-DD HH:MM:SS[.fff]" read as wall-clock time in the job's zone -> UTC ms. Aborts on junk.
 */
int64_t support_local_ms(const struct recon_job *job, const char *ts);

#endif
