/*
 * Tickets, outbox re-pushes and guarded transitions in the merchant's
 * database, each unique on its business identity so that writing it twice is
 * a no-op: recon_ticket (job, biz_key, class), recon_outbox (job, biz_key,
 * event), and an UPDATE whose WHERE clause admits only the allowed states.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_action.h"
#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_writer.h"

int recon_action_writer_ticket(struct recon_writer *w, const struct recon_job *job, const char *key,
			       const char *klass, const char *severity, int64_t run_id,
			       const char *json, int64_t *affected, struct recon_err *err)
{
	static const char *const cols[] = {"job",      "biz_key", "class",
					   "severity", "run_id",  "detail"};
	static const char *const unique[] = {"job", "biz_key", "class"};
	struct recon_buf sql;
	char run[32];
	const char *params[6];
	int rc;

	snprintf(run, sizeof(run), "%lld", (long long)run_id);
	params[0] = job->name;
	params[1] = key;
	params[2] = klass;
	params[3] = severity;
	params[4] = run;
	params[5] = json;
	recon_buf_init(&sql);
	/* a ticket that ended (resolved) and whose difference is back opens again */
	{
		char q = recon_writer_quote(w), ph[6][16];
		const char *rp[5] = {run, json, job->name, key, klass};
		int64_t reopened = 0;
		for (int i = 0; i < 5; i++)
			recon_writer_ph(w, i + 1, ph[i], sizeof(ph[i]));
		recon_buf_addf(
		    &sql,
		    "UPDATE %crecon_ticket%c SET status = 'open', run_id = %s, detail = "
		    "%s, resolved_run = NULL, note = NULL, updated_at = CURRENT_TIMESTAMP "
		    "WHERE job = %s AND biz_key = %s AND class = %s AND status = "
		    "'resolved'",
		    q, q, ph[0], ph[1], ph[2], ph[3], ph[4]);
		if ((rc = recon_writer_exec(w, sql.s, rp, 5, &reopened, err)) < 0)
			goto out;
		recon_buf_reset(&sql);
		if (reopened > 0) {
			*affected = reopened;
			goto out;
		}
	}
	recon_writer_add_insert(w, &sql, "recon_ticket", cols, 6, unique, 3);
	rc = recon_writer_exec(w, sql.s, params, 6, affected, err);
out:
	recon_buf_release(&sql);
	return rc;
}

int recon_action_ticket_end(struct recon_writer *w, const struct recon_job *job, const char *key,
			    const char *klass, const char *status, int64_t run_id, const char *note,
			    int64_t *affected, struct recon_err *err)
{
	char q = recon_writer_quote(w), ph[6][16], run[32];
	const char *params[6] = {status, run_id ? run : NULL, note, job->name, key, klass};
	struct recon_buf sql;
	int rc;

	snprintf(run, sizeof(run), "%lld", (long long)run_id);
	for (int i = 0; i < 6; i++)
		recon_writer_ph(w, i + 1, ph[i], sizeof(ph[i]));
	recon_buf_init(&sql);
	recon_buf_addf(&sql,
		       "UPDATE %crecon_ticket%c SET status = %s, resolved_run = %s, note = %s, "
		       "updated_at = CURRENT_TIMESTAMP WHERE job = %s AND biz_key = %s AND "
		       "class = %s AND status = 'open'",
		       q, q, ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]);
	rc = recon_writer_exec(w, sql.s, params, 6, affected, err);
	recon_buf_release(&sql);
	return rc;
}

int recon_action_outbox(struct recon_writer *w, const struct recon_job *job, const char *key,
			const char *json, int64_t *affected, struct recon_err *err)
{
	return recon_action_outbox_event(w, job, key, job->actions.repush_event, json, affected,
					 err);
}

int recon_action_outbox_event(struct recon_writer *w, const struct recon_job *job, const char *key,
			      const char *event, const char *json, int64_t *affected,
			      struct recon_err *err)
{
	static const char *const cols[] = {"job", "biz_key", "event", "payload"};
	static const char *const unique[] = {"job", "biz_key", "event"};
	const char *params[4] = {job->name, key, event, json};
	struct recon_buf sql;
	int rc;

	recon_buf_init(&sql);
	recon_writer_add_insert(w, &sql, "recon_outbox", cols, 4, unique, 3);
	rc = recon_writer_exec(w, sql.s, params, 4, affected, err);
	recon_buf_release(&sql);
	return rc;
}

int recon_action_transition(struct recon_writer *w, const struct recon_job *job,
			    const struct recon_diff *d, int64_t *affected, struct recon_err *err)
{
	const struct recon_side *l = &job->local;
	const struct recon_actions_cfg *a = &job->actions;
	char q = recon_writer_quote(w), ph[16];
	const char **params = NULL;
	char *parts = recon_xmalloc((size_t)d->key_len + 1);
	const char *kp[RECON_KEY_PARTS_MAX];
	size_t kl[RECON_KEY_PARTS_MAX];
	struct recon_buf sql;
	int np = 0, nfrom = 0, rc;

	while (a->transition_from[nfrom])
		nfrom++;
	params = recon_xcalloc((size_t)(1 + l->nkey + (unsigned)nfrom), sizeof(*params));
	recon_buf_init(&sql);
	params[np++] = a->transition_to;
	recon_buf_addf(&sql, "UPDATE %c%s%c SET %c%s%c = %s WHERE ", q, l->table, q, q,
		       l->cols[RECON_COL_STATUS], q, recon_writer_ph(w, 1, ph, sizeof(ph)));
	recon_key_split(d->key, d->key_len, l->nkey, parts, kp, kl);
	for (unsigned i = 0; i < l->nkey; i++) {
		params[np++] = kp[i];
		recon_buf_addf(&sql, "%c%s%c = %s AND ", q, l->cols[RECON_COL_KEY0 + i], q,
			       recon_writer_ph(w, np, ph, sizeof(ph)));
	}
	/* the guard: only from the states the job allows, so a second run changes nothing */
	recon_buf_addf(&sql, "%c%s%c IN (", q, l->cols[RECON_COL_STATUS], q);
	for (int i = 0; i < nfrom; i++) {
		params[np++] = a->transition_from[i];
		recon_buf_addf(&sql, "%s%s", i ? ", " : "", recon_writer_ph(w, np, ph, sizeof(ph)));
	}
	recon_buf_adds(&sql, ")");
	rc = recon_writer_exec(w, sql.s, params, np, affected, err);
	recon_buf_release(&sql);
	free(params);
	free(parts);
	return rc;
}
