/*
 * Replay of a missing order, in the writer's dialect (its descriptor,
 * recon_writer.h): the upstream order inserted into the local flow table and
 * its idempotency record, in one local transaction, each with the dialect's
 * upsert form:
 *
 *   PostgreSQL, SQLite: INSERT ... ON CONFLICT (key) DO NOTHING
 *   MySQL/MariaDB:      INSERT ... ON DUPLICATE KEY UPDATE key = key
 *                       (affected rows 0: already there; not INSERT IGNORE,
 *                       which would hide every other error)
 *
 * Never SELECT-then-INSERT: the business table's unique key decides. With
 * the ON DUPLICATE KEY form (MySQL), the insert gives way to a clash on *any*
 * unique index of the table (a unique provider_txn column whose default is
 * already taken), so "0 rows affected" is confirmed, in the same
 * transaction, by reading the row back by its business key (a locking read:
 * the latest committed row). When it is not there, the clash was on another
 * index: the plain INSERT is tried once to learn which (MySQL names it in
 * error 1062), and the action fails naming that index; nothing is recorded
 * as done.
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
 * The ON DUPLICATE KEY form only (its SQL is MySQL's), inside the replay's
 * transaction, after the insert changed nothing: *affected stays 0 when the
 * row with the business key is there; else the clash was on another unique
 * index, and the action fails naming it (or, should the clash be gone by
 * now, the plain insert counts as the replay). `insert` is the INSERT
 * without its ON DUPLICATE KEY clause.
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
	rc = recon_writer_exec(w, sql.s, params, (int)l->nkey, &found, err);
	recon_buf_release(&sql);
	if (rc < 0 || found > 0)
		return rc;
	recon_err_init(&e);
	rc = recon_writer_exec(w, insert, params, np, affected, &e);
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
 * The replay's INSERT for one difference, built column by column: columns
 * and placeholders side by side, the parameters pointing into the struct.
 */
struct replay_stmt {
	const char *params[RECON_KEY_PARTS_MAX + 4 + RECON_REPLAY_VALUES_MAX];
	int np;
	const char *keycols[RECON_KEY_PARTS_MAX]; /* the business key's columns */
	char *parts;				  /* the key's parts, params[0..nkey) */
	char *rendered[RECON_REPLAY_VALUES_MAX];  /* actions.replay_values */
	char amount[40], when[48];
	struct recon_buf cols, vals;
	char *insert;	      /* INSERT ... VALUES (...): confirm_present() */
	struct recon_buf sql; /* and the dialect's upsert clause after it */
};

static void replay_stmt_release(struct replay_stmt *r)
{
	for (size_t i = 0; i < RECON_REPLAY_VALUES_MAX; i++)
		free(r->rendered[i]);
	free(r->parts);
	free(r->insert);
	recon_buf_release(&r->cols);
	recon_buf_release(&r->vals);
	recon_buf_release(&r->sql);
}

/* Column col with parameter value; wrap puts text around the placeholder ("%s::timestamptz"). */
static void add_col(struct recon_writer *w, struct replay_stmt *r, const char *col,
		    const char *value, const char *wrap)
{
	const char *at = strstr(wrap, "%s");
	char q = recon_writer_quote(w), ph[16];

	r->params[r->np++] = value;
	recon_buf_addf(&r->cols, "%s%c%s%c", r->np > 1 ? ", " : "", q, col, q);
	recon_buf_adds(&r->vals, r->np > 1 ? ", " : "");
	recon_buf_add(&r->vals, wrap, (size_t)(at - wrap));
	recon_buf_adds(&r->vals, recon_writer_ph(w, r->np, ph, sizeof(ph)));
	recon_buf_adds(&r->vals, at + 2);
}

/*
 * The INSERT of the upstream order of d into the local flow table: key parts,
 * amount, currency and status when mapped, time in the dialect's form, then
 * the job's replay_values.
 */
static int build_insert(struct recon_writer *w, const struct recon_job *job,
			const struct recon_diff *d, struct replay_stmt *r, struct recon_err *err)
{
	const struct recon_side *l = &job->local;
	const char *status = job->actions.replay_status[d->up.status], *wrap = "%s";
	const char *kp[RECON_KEY_PARTS_MAX];
	size_t kl[RECON_KEY_PARTS_MAX];
	char q = recon_writer_quote(w);
	int rc;

	if (!status)
		return recon_err_set(err, RECON_ECONFIG, "actions.replay_status",
				     "no local status word maps to '%s': cannot replay",
				     recon_status_name(d->up.status));
	r->parts = recon_xmalloc((size_t)d->key_len + 1);
	recon_key_split(d->key, d->key_len, l->nkey, r->parts, kp, kl);
	for (unsigned i = 0; i < l->nkey; i++) {
		r->keycols[i] = l->cols[RECON_COL_KEY0 + i];
		add_col(w, r, r->keycols[i], kp[i], "%s");
	}
	if (l->cols[RECON_COL_AMOUNT_MINOR]) {
		snprintf(r->amount, sizeof(r->amount), "%lld", (long long)d->up.amount);
		add_col(w, r, l->cols[RECON_COL_AMOUNT_MINOR], r->amount, "%s");
	} else {
		int e = recon_money_exponent(d->up.currency);
		recon_money_format(d->up.amount, e < 0 ? 0 : e, r->amount, sizeof(r->amount));
		add_col(w, r, l->cols[RECON_COL_AMOUNT], r->amount, "%s");
	}
	if (l->cols[RECON_COL_CURRENCY])
		add_col(w, r, l->cols[RECON_COL_CURRENCY], d->up.currency, "%s");
	if (l->cols[RECON_COL_STATUS])
		add_col(w, r, l->cols[RECON_COL_STATUS], status, "%s");
	if ((rc = recon_writer_time_param(w, d->up.time, r->when, sizeof(r->when), &wrap, err)) < 0)
		return rc;
	if (!strstr(wrap, "%s"))
		return recon_err_set(err, RECON_EINTERNAL, NULL, "bad time wrapper '%s'", wrap);
	add_col(w, r, l->cols[RECON_COL_TIME], r->when, wrap);
	/* the merchant's other columns (updated_at, channel, ...): actions.replay_values */
	for (size_t i = 0; i < job->actions.nreplay_values; i++) {
		r->rendered[i] = render(w, job, d, job->actions.replay_values[i].text);
		add_col(w, r, job->actions.replay_values[i].column, r->rendered[i], "%s");
	}
	recon_buf_addf(&r->sql, "INSERT INTO %c%s%c (%s) VALUES (%s)", q, l->table, q, r->cols.s,
		       r->vals.s);
	r->insert = recon_xstrdup(r->sql.s);
	recon_writer_add_upsert(w, &r->sql, r->keycols, l->nkey);
	return 0;
}

/* The replay's idempotency record, in its transaction. */
static int record_idem(struct recon_writer *w, const struct recon_job *job, const char *key,
		       bool inserted, struct recon_err *err)
{
	static const char *const cols[] = {"idem_key", "biz_type", "status", "result"};
	static const char *const unique[] = {"idem_key"};
	char idem[160];
	const char *params[4] = {idem, "recon_replay", "done",
				 inserted ? "inserted" : "already present"};
	struct recon_buf sql;
	int64_t affected = 0;
	int rc;

	idem_key(job, key, idem, sizeof(idem));
	recon_buf_init(&sql);
	recon_writer_add_insert(w, &sql, "idempotency_record", cols, 4, unique, 1);
	rc = recon_writer_exec(w, sql.s, params, 4, &affected, err);
	recon_buf_release(&sql);
	return rc;
}

int recon_action_replay(struct recon_writer *w, const struct recon_job *job,
			const struct recon_diff *d, int64_t *affected, struct recon_err *err)
{
	struct replay_stmt r;
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];
	int rc;

	if (job->actions.replay == RECON_REPLAY_OUTBOX)
		return replay_outbox(w, job, d, affected, err);
	memset(&r, 0, sizeof(r));
	recon_buf_init(&r.cols);
	recon_buf_init(&r.vals);
	recon_buf_init(&r.sql);
	if ((rc = build_insert(w, job, d, &r, err)) < 0)
		goto out;
	recon_key_display(d->key, d->key_len, key, sizeof(key));
	/* the order and its idempotency record, one transaction */
	if ((rc = recon_writer_begin(w, err)) < 0)
		goto out;
	if ((rc = recon_writer_exec(w, r.sql.s, r.params, r.np, affected, err)) < 0 ||
	    (*affected == 0 && w->backend->upsert == RECON_WRITER_UPSERT_DUPLICATE_KEY &&
	     (rc = confirm_present(w, job, r.params, r.keycols, r.insert, r.np, key, affected,
				   err)) < 0) ||
	    (rc = record_idem(w, job, key, *affected > 0, err)) < 0 ||
	    (rc = recon_writer_commit(w, err)) < 0)
		recon_writer_rollback(w);
out:
	replay_stmt_release(&r);
	return rc;
}
