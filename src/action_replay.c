/*
 * Replay of a missing order, per SQL dialect: the upstream order inserted into
 * the local flow table and its idempotency record, in one local transaction.
 *
 *   PostgreSQL, SQLite: INSERT ... ON CONFLICT (key) DO NOTHING
 *   MySQL/MariaDB:      INSERT ... ON DUPLICATE KEY UPDATE key = key
 *                       (affected rows 0: already there; not INSERT IGNORE,
 *                       which would hide every other error)
 *
 * Never SELECT-then-INSERT: the business table's unique key decides. On
 * MySQL, ON DUPLICATE KEY gives way to a clash on *any* unique index of the
 * table (a unique provider_txn column whose default is already taken), so
 * "0 rows affected" is confirmed, in the same transaction, by reading the row
 * back by its business key (a locking read: the latest committed row). When
 * it is not there, the clash was on another index: the plain INSERT is tried
 * once to learn which (MySQL names it in error 1062), and the action fails
 * naming that index; nothing is recorded as done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "recon_action.h"
#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_normalize.h"
#include "recon_sha256.h"
#include "recon_time.h"

/* "recon:<job>:replay:<key>", or a digest of it when longer than the column allows. */
static void idem_key(const struct recon_job *job, const char *key, char *out, size_t size)
{
	struct recon_buf b;

	recon_buf_init(&b);
	recon_buf_addf(&b, "recon:%s:replay:%s", job->name, key);
	if (b.len <= 128) {
		snprintf(out, size, "%s", b.s);
	} else {
		char hex[65];
		recon_sha256_hex(b.s, b.len, hex);
		snprintf(out, size, "recon:replay:%s", hex);
	}
	recon_buf_release(&b);
}

/*
 * The index name in a MySQL duplicate-key message ("Duplicate entry 'x' for key
 * 'provider_txn'", MySQL 8: "... for key 'payment_flow.provider_txn'") into out,
 * or "" when the message is not one.
 */
static void dup_index_name(const char *msg, char *out, size_t size)
{
	const char *at = strstr(msg, "for key '"), *end;

	out[0] = '\0';
	if (!at)
		return;
	at += strlen("for key '");
	end = strrchr(at, '\'');
	if (!end || end < at)
		return;
	snprintf(out, size, "%.*s", (int)(end - at), at);
}

/*
 * MySQL only, inside the replay's transaction, after the insert changed
 * nothing: *affected stays 0 when the row with the business key is there;
 * else the clash was on another unique index, and the action fails naming it
 * (or, should the clash be gone by now, the plain insert counts as the replay).
 * `insert` is the INSERT without its ON DUPLICATE KEY clause.
 */
static int confirm_present(struct recon_writer *w, const struct recon_job *job,
			   const char *const *params, const char *const *cols, const char *insert,
			   int np, const char *display, int64_t *affected, struct recon_err *err)
{
	const struct recon_side *l = &job->local;
	struct recon_buf sql;
	struct recon_err e;
	char index[128];
	int64_t found = 0;
	int rc;

	recon_buf_init(&sql);
	recon_buf_addf(&sql, "SELECT 1 FROM `%s` WHERE ", l->table);
	for (unsigned i = 0; i < l->nkey; i++)
		recon_buf_addf(&sql, "%s`%s` = ?", i ? " AND " : "", cols[i]);
	recon_buf_adds(&sql, " LOCK IN SHARE MODE");
	rc = w->ops->exec(w, sql.s, params, (int)l->nkey, &found, err);
	recon_buf_release(&sql);
	if (rc < 0 || found > 0)
		return rc;
	recon_err_init(&e);
	rc = w->ops->exec(w, insert, params, np, affected, &e);
	if (rc == 0)
		return 0;
	if (rc == RECON_ERETRY) {
		*err = e;
		return rc;
	}
	dup_index_name(e.msg, index, sizeof(index));
	if (!index[0])
		return recon_err_set(err, rc, e.where,
				     "replay of '%s' into table '%s' changed nothing and no row "
				     "has that key: %s",
				     display, l->table, e.msg);
	return recon_err_set(err, RECON_EINPUT, e.where,
			     "replay of '%s' into table '%s' clashes with another row on unique "
			     "index '%s' (not the business key): nothing inserted",
			     display, l->table, index);
}

/* Appends the dialect's "insert unless the unique key exists" clause. */
static void on_conflict(struct recon_writer *w, struct recon_buf *sql, const char *const *cols,
			unsigned ncols)
{
	char q = recon_writer_quote(w);

	if (q == '`') {
		recon_buf_addf(sql, " ON DUPLICATE KEY UPDATE `%s` = `%s`", cols[0], cols[0]);
		return;
	}
	recon_buf_adds(sql, " ON CONFLICT (");
	for (unsigned i = 0; i < ncols; i++)
		recon_buf_addf(sql, "%s%c%s%c", i ? ", " : "", q, cols[i], q);
	recon_buf_adds(sql, ") DO NOTHING");
}

/*
 * Variable v of a replay for difference d, appended to b; false when it has
 * no value ({txn_id}: the compare keeps no transaction id in a difference).
 */
static bool tvar(struct recon_writer *w, const struct recon_job *job, const struct recon_diff *d,
		 int v, struct recon_buf *b)
{
	char buf[RECON_KEY_PARTS_MAX * 1025 + 8];
	int e;

	switch (v) {
	case RECON_TVAR_KEY:
		recon_buf_adds(b, recon_key_display(d->key, d->key_len, buf, sizeof(buf)));
		return true;
	case RECON_TVAR_AMOUNT_MINOR:
		recon_buf_addf(b, "%lld", (long long)d->up.amount);
		return true;
	case RECON_TVAR_AMOUNT:
		e = recon_money_exponent(d->up.currency);
		recon_money_format(d->up.amount, e < 0 ? 0 : e, buf, sizeof(buf));
		recon_buf_adds(b, buf);
		return true;
	case RECON_TVAR_CURRENCY:
		recon_buf_adds(b, d->up.currency);
		return true;
	case RECON_TVAR_STATUS:
		recon_buf_adds(b, job->actions.replay_status[d->up.status]
				      ? job->actions.replay_status[d->up.status]
				      : recon_status_name(d->up.status));
		return true;
	case RECON_TVAR_TIME:
	case RECON_TVAR_NOW:
		/* wall clock in the local side's zone, as the flow writes its times */
		recon_time_format_local(job->local.tz, v == RECON_TVAR_TIME ? d->up.time : w->now,
					buf, sizeof(buf));
		recon_buf_adds(b, buf);
		return true;
	case RECON_TVAR_JOB:
		recon_buf_adds(b, job->name);
		return true;
	case RECON_TVAR_RUN_ID:
		recon_buf_addf(b, "%lld", (long long)w->run_id);
		return true;
	default:
		return false;
	}
}

/*
 * The text of a replay_values template for d (the loader checked its
 * variables). NULL for SQL NULL: a null in the job, or a template that is one
 * variable without a value. Caller frees.
 */
static char *render(struct recon_writer *w, const struct recon_job *job, const struct recon_diff *d,
		    const char *t)
{
	struct recon_buf b;
	const char *p = t;
	int vars = 0, empty = 0;

	if (!t)
		return NULL;
	recon_buf_init(&b);
	while (*p) {
		const char *open = strchr(p, '{'), *close;
		if (!open) {
			recon_buf_adds(&b, p);
			break;
		}
		close = strchr(open, '}');
		recon_buf_add(&b, p, (size_t)(open - p));
		vars++;
		if (!tvar(w, job, d, recon_job_tvar(open + 1, (size_t)(close - open - 1)), &b))
			empty++;
		p = close + 1;
	}
	if (vars == 1 && empty == 1 && t[0] == '{' && strchr(t, '}')[1] == '\0') {
		recon_buf_release(&b);
		return NULL;
	}
	return recon_buf_detach(&b);
}

/*
 * actions.replay "outbox": a "replay" event carrying the upstream order, for
 * the merchant's consumer to take through its normal path (stock, shipping,
 * ledger) instead of a bare insert. Unique on (job, key, "replay").
 */
static int replay_outbox(struct recon_writer *w, const struct recon_job *job,
			 const struct recon_diff *d, int64_t *affected, struct recon_err *err)
{
	json_t *o = json_object(), *vals = NULL;
	struct recon_buf b;
	char key[RECON_KEY_PARTS_MAX * 1025 + 8], when[32];
	char *json = NULL;
	int rc;

	recon_buf_init(&b);
	recon_key_display(d->key, d->key_len, key, sizeof(key));
	json_object_set_new(o, "job", json_string(job->name));
	json_object_set_new(o, "run_id", json_integer((json_int_t)w->run_id));
	json_object_set_new(o, "key", json_string(key));
	for (int v = RECON_TVAR_AMOUNT_MINOR; v <= RECON_TVAR_STATUS; v++) {
		static const char *const names[] = {"", "amount_minor", "amount", "currency",
						    "local_status"};
		recon_buf_reset(&b);
		tvar(w, job, d, v, &b);
		if (v == RECON_TVAR_AMOUNT_MINOR)
			json_object_set_new(o, names[v], json_integer((json_int_t)d->up.amount));
		else
			json_object_set_new(o, names[v], json_string(b.s));
	}
	json_object_set_new(o, "status", json_string(recon_status_name(d->up.status)));
	json_object_set_new(o, "refunded_minor", json_integer((json_int_t)d->up.refunded));
	recon_time_format_utc(d->up.time, when, sizeof(when));
	json_object_set_new(o, "time", json_string(when));
	recon_buf_reset(&b);
	tvar(w, job, d, RECON_TVAR_TIME, &b);
	json_object_set_new(o, "local_time", json_string(b.s));
	if (job->actions.nreplay_values) {
		vals = json_object();
		for (size_t i = 0; i < job->actions.nreplay_values; i++) {
			const struct recon_replay_value *x = &job->actions.replay_values[i];
			char *t = render(w, job, d, x->text);
			json_t *jv = !t		 ? json_null()
				     : x->number ? json_integer((json_int_t)strtoll(t, NULL, 10))
						 : json_string(t);
			json_object_set_new(vals, x->column, jv);
			free(t);
		}
		json_object_set_new(o, "values", vals);
	}
	json = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	if (!json)
		rc = recon_err_set(err, RECON_EINTERNAL, NULL, "cannot render the replay event");
	else
		rc = recon_action_outbox_event(w, job, key, "replay", json, affected, err);
	free(json);
	json_decref(o);
	recon_buf_release(&b);
	return rc;
}

/*
 * Longer than a screen: the statement is built column by column in one pass
 * (columns and placeholders side by side, the dialect's time wrapper in the
 * middle), then the two inserts of one transaction; split, the halves would
 * share a dozen locals.
 */
int recon_action_replay(struct recon_writer *w, const struct recon_job *job,
			const struct recon_diff *d, int64_t *affected, struct recon_err *err)
{
	const struct recon_side *l = &job->local;
	const size_t nv = job->actions.nreplay_values;
	const char *params[RECON_KEY_PARTS_MAX + 4 + RECON_REPLAY_VALUES_MAX],
	    *cols[RECON_KEY_PARTS_MAX];
	char *rendered[RECON_REPLAY_VALUES_MAX] = {NULL};
	size_t plens[RECON_KEY_PARTS_MAX];
	const char *wrap = "%s", *status;
	char q = recon_writer_quote(w), ph[16], amount[40], when[48], idem[160],
	     key[RECON_KEY_PARTS_MAX * 1025 + 8];
	char *parts = NULL, *insert = NULL;
	struct recon_buf sql, vals;
	int np = 0, rc = 0;
	int64_t idem_affected = 0;

	if (job->actions.replay == RECON_REPLAY_OUTBOX)
		return replay_outbox(w, job, d, affected, err);
	recon_buf_init(&sql);
	recon_buf_init(&vals);
	status = job->actions.replay_status[d->up.status];
	if (!status) {
		rc = recon_err_set(err, RECON_ECONFIG, "actions.replay_status",
				   "no local status word maps to '%s': cannot replay",
				   recon_status_name(d->up.status));
		goto out;
	}
	/* key parts */
	parts = recon_xmalloc((size_t)d->key_len + 1);
	recon_key_split(d->key, d->key_len, l->nkey, parts, params, plens);
	for (unsigned i = 0; i < l->nkey; i++)
		cols[np++] = l->cols[RECON_COL_KEY0 + i];
	recon_buf_addf(&sql, "INSERT INTO %c%s%c (", q, l->table, q);
	for (int i = 0; i < np; i++) {
		recon_buf_addf(&sql, "%s%c%s%c", i ? ", " : "", q, cols[i], q);
		recon_buf_addf(&vals, "%s%s", i ? ", " : "",
			       recon_writer_ph(w, i + 1, ph, sizeof(ph)));
	}
	if (l->cols[RECON_COL_AMOUNT_MINOR]) {
		snprintf(amount, sizeof(amount), "%lld", (long long)d->up.amount);
	} else {
		int e = recon_money_exponent(d->up.currency);
		recon_money_format(d->up.amount, e < 0 ? 0 : e, amount, sizeof(amount));
	}
	recon_buf_addf(&sql, ", %c%s%c", q,
		       l->cols[RECON_COL_AMOUNT_MINOR] ? l->cols[RECON_COL_AMOUNT_MINOR]
						       : l->cols[RECON_COL_AMOUNT],
		       q);
	params[np++] = amount;
	recon_buf_addf(&vals, ", %s", recon_writer_ph(w, np, ph, sizeof(ph)));
	if (l->cols[RECON_COL_CURRENCY]) {
		recon_buf_addf(&sql, ", %c%s%c", q, l->cols[RECON_COL_CURRENCY], q);
		params[np++] = d->up.currency;
		recon_buf_addf(&vals, ", %s", recon_writer_ph(w, np, ph, sizeof(ph)));
	}
	if (l->cols[RECON_COL_STATUS]) {
		recon_buf_addf(&sql, ", %c%s%c", q, l->cols[RECON_COL_STATUS], q);
		params[np++] = status;
		recon_buf_addf(&vals, ", %s", recon_writer_ph(w, np, ph, sizeof(ph)));
	}
	if ((rc = w->ops->time_param(w, d->up.time, when, sizeof(when), &wrap, err)) < 0)
		goto out;
	recon_buf_addf(&sql, ", %c%s%c", q, l->cols[RECON_COL_TIME], q);
	/* the merchant's other columns (updated_at, channel, ...): actions.replay_values */
	for (size_t i = 0; i < nv; i++)
		recon_buf_addf(&sql, ", %c%s%c", q, job->actions.replay_values[i].column, q);
	recon_buf_addf(&sql, ") VALUES (%s, ", vals.s);
	params[np++] = when;
	{
		/* wrap is "%s" with text around it ("%s::timestamptz"): put the placeholder in */
		const char *at = strstr(wrap, "%s");
		if (!at) {
			rc = recon_err_set(err, RECON_EINTERNAL, NULL, "bad time wrapper '%s'",
					   wrap);
			goto out;
		}
		recon_buf_add(&sql, wrap, (size_t)(at - wrap));
		recon_buf_adds(&sql, recon_writer_ph(w, np, ph, sizeof(ph)));
		recon_buf_adds(&sql, at + 2);
	}
	for (size_t i = 0; i < nv; i++) {
		rendered[i] = render(w, job, d, job->actions.replay_values[i].text);
		params[np++] = rendered[i];
		recon_buf_addf(&sql, ", %s", recon_writer_ph(w, np, ph, sizeof(ph)));
	}
	recon_buf_adds(&sql, ")");
	insert = recon_xstrdup(sql.s);
	on_conflict(w, &sql, cols, l->nkey);
	recon_key_display(d->key, d->key_len, key, sizeof(key));

	if ((rc = w->ops->begin(w, err)) < 0)
		goto out;
	if ((rc = w->ops->exec(w, sql.s, params, np, affected, err)) < 0)
		goto rollback;
	if (*affected == 0 && q == '`' &&
	    (rc = confirm_present(w, job, params, cols, insert, np, key, affected, err)) < 0)
		goto rollback;
	/* the idempotency record, in the same transaction */
	idem_key(job, key, idem, sizeof(idem));
	recon_buf_reset(&sql);
	recon_buf_addf(
	    &sql,
	    "INSERT INTO %cidempotency_record%c (%cidem_key%c, %cbiz_type%c, %cstatus%c, "
	    "%cresult%c) VALUES (",
	    q, q, q, q, q, q, q, q, q, q);
	for (int i = 1; i <= 4; i++)
		recon_buf_addf(&sql, "%s%s", i > 1 ? ", " : "",
			       recon_writer_ph(w, i, ph, sizeof(ph)));
	recon_buf_adds(&sql, ")");
	{
		const char *icol = "idem_key";
		on_conflict(w, &sql, &icol, 1);
	}
	{
		const char *ip[4] = {idem, "recon_replay", "done",
				     *affected > 0 ? "inserted" : "already present"};
		if ((rc = w->ops->exec(w, sql.s, ip, 4, &idem_affected, err)) < 0)
			goto rollback;
	}
	if ((rc = w->ops->commit(w, err)) < 0)
		goto rollback;
	goto out;
rollback:
	w->ops->rollback(w);
out:
	for (size_t i = 0; i < nv; i++)
		free(rendered[i]);
	free(parts);
	free(insert);
	recon_buf_release(&sql);
	recon_buf_release(&vals);
	return rc;
}
