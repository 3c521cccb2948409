/*
 * The writer registry, the dialect helpers and the transaction bookkeeping
 * every writer shares (recon_writer.h).
 */
#include "recon_writer.h"

#include <stdio.h>
#include <string.h>

/* Adding a writer: its file, one line here, nothing else (CMake globs src/). */
static const struct recon_writer_backend *const writers[] = {
    &recon_writer_sqlite,
#ifdef RECON_HAVE_POSTGRES
    &recon_writer_postgres,
#endif
#ifdef RECON_HAVE_MYSQL
    &recon_writer_mysql,
#endif
    NULL,
};

const struct recon_writer_backend *recon_writer_find(const char *name)
{
	for (size_t i = 0; name && writers[i]; i++)
		if (!strcmp(writers[i]->name, name))
			return writers[i];
	return NULL;
}

int recon_writer_open(struct recon_writer **out, const struct recon_writer_backend *be,
		      const struct recon_job *job, struct recon_err *err)
{
	*out = NULL;
	return be->open(out, job, err);
}

void recon_writer_close(struct recon_writer *w)
{
	if (w)
		w->backend->close(w);
}

/* ---- transactions --------------------------------------------------------------- */

int recon_writer_begin(struct recon_writer *w, struct recon_err *err)
{
	int rc;

	if (w->in_tx)
		return recon_err_set(err, RECON_EINTERNAL, w->where,
				     "begin inside a transaction (commit or roll back first)");
	if ((rc = w->backend->begin(w, err)) < 0)
		return rc;
	w->in_tx = true;
	w->tx_failed = 0;
	w->tx_msg[0] = '\0';
	return 0;
}

void recon_writer_rollback(struct recon_writer *w)
{
	if (!w || !w->in_tx)
		return;
	w->in_tx = false;
	w->tx_failed = 0;
	w->backend->rollback(w);
}

int recon_writer_commit(struct recon_writer *w, struct recon_err *err)
{
	int rc;

	if (!w->in_tx)
		return recon_err_set(err, RECON_EINTERNAL, w->where,
				     "commit outside a transaction");
	if (w->tx_failed) {
		rc = recon_err_set(err, w->tx_failed, w->where, "transaction rolled back: %s",
				   w->tx_msg);
		recon_writer_rollback(w);
		return rc;
	}
	if ((rc = w->backend->commit(w, err)) < 0) {
		/*
		 * Leave no half-state behind, whatever the engine did with the
		 * transaction (PostgreSQL ends it, SQLite keeps it open after a
		 * deferred constraint, MySQL after some errors): it rolls back.
		 */
		recon_writer_rollback(w);
		return rc;
	}
	w->in_tx = false;
	return 0;
}

int recon_writer_exec(struct recon_writer *w, const char *sql, const char *const *params, int n,
		      int64_t *affected, struct recon_err *err)
{
	int rc;

	*affected = 0;
	if (w->in_tx && w->tx_failed)
		return recon_err_set(err, w->tx_failed, w->where,
				     "a statement earlier in the transaction failed: %s",
				     w->tx_msg);
	rc = w->backend->exec(w, sql, params, n, affected, err);
	/* remembered, so that the transaction cannot commit */
	if (rc < 0 && w->in_tx && !w->tx_failed) {
		w->tx_failed = rc;
		snprintf(w->tx_msg, sizeof(w->tx_msg), "%s", err->msg);
	}
	return rc;
}

int recon_writer_time_param(struct recon_writer *w, int64_t utc_ms, char *buf, size_t size,
			    const char **wrap, struct recon_err *err)
{
	return w->backend->time_param(w, utc_ms, buf, size, wrap, err);
}

/* ---- the dialect ---------------------------------------------------------------- */

const char *recon_writer_ph(const struct recon_writer *w, int i, char *buf, size_t size)
{
	if (w->backend->placeholder == RECON_WRITER_PH_DOLLAR)
		snprintf(buf, size, "$%d", i);
	else
		snprintf(buf, size, "?");
	return buf;
}

char recon_writer_quote(const struct recon_writer *w)
{
	return w->backend->quote;
}

void recon_writer_add_upsert(const struct recon_writer *w, struct recon_buf *sql,
			     const char *const *unique, unsigned n)
{
	char q = w->backend->quote;

	if (w->backend->upsert == RECON_WRITER_UPSERT_DUPLICATE_KEY) {
		recon_buf_addf(sql, " ON DUPLICATE KEY UPDATE %c%s%c = %c%s%c", q, unique[0], q, q,
			       unique[0], q);
		return;
	}
	recon_buf_adds(sql, " ON CONFLICT (");
	for (unsigned i = 0; i < n; i++)
		recon_buf_addf(sql, "%s%c%s%c", i ? ", " : "", q, unique[i], q);
	recon_buf_adds(sql, ") DO NOTHING");
}

void recon_writer_add_insert(const struct recon_writer *w, struct recon_buf *sql, const char *table,
			     const char *const *cols, unsigned ncols, const char *const *unique,
			     unsigned nunique)
{
	char q = w->backend->quote, ph[16];

	recon_buf_addf(sql, "INSERT INTO %c%s%c (", q, table, q);
	for (unsigned i = 0; i < ncols; i++)
		recon_buf_addf(sql, "%s%c%s%c", i ? ", " : "", q, cols[i], q);
	recon_buf_adds(sql, ") VALUES (");
	for (unsigned i = 0; i < ncols; i++)
		recon_buf_addf(sql, "%s%s", i ? ", " : "",
			       recon_writer_ph(w, (int)i + 1, ph, sizeof(ph)));
	recon_buf_adds(sql, ")");
	if (nunique)
		recon_writer_add_upsert(w, sql, unique, nunique);
}
