#include "recon_source.h"

#include "recon_buf.h"

const struct recon_source_ops *recon_source_ops_for(enum recon_kind kind)
{
	switch (kind) {
	case RECON_KIND_CSV:
		return &recon_source_csv;
	case RECON_KIND_SQLITE:
		return &recon_source_sqlite;
	case RECON_KIND_POSTGRES:
#ifdef RECON_HAVE_POSTGRES
		return &recon_source_postgres;
#else
		return NULL;
#endif
	case RECON_KIND_MYSQL:
#ifdef RECON_HAVE_MYSQL
		return &recon_source_mysql;
#else
		return NULL;
#endif
	}
	return NULL;
}

int recon_source_open(struct recon_source **out, const struct recon_side *side,
		      const struct recon_window *win, struct recon_err *err)
{
	const struct recon_source_ops *ops = recon_source_ops_for(side->kind);

	*out = NULL;
	if (!ops)
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "source kind '%s' is not supported by this build",
				     recon_kind_name(side->kind));
	return ops->open(out, side, win, err);
}

int recon_source_next(struct recon_source *src, const struct recon_raw_row **row,
		      struct recon_err *err)
{
	return src->ops->next(src, row, err);
}

int recon_source_lookup(struct recon_source *src, const char *const *parts, const size_t *lens,
			struct recon_err *err)
{
	if (!src->ops->lookup)
		return RECON_ENOTFOUND;
	return src->ops->lookup(src, parts, lens, err);
}

int recon_source_lookup_many(struct recon_source *src, const struct recon_side *side, size_t n,
			     const char *const *keys, const size_t *lens, struct recon_err *err)
{
	if (!src->ops->lookup_many || side->nkey != 1 || n > RECON_LOOKUP_BATCH)
		return RECON_ENOTFOUND;
	return src->ops->lookup_many(src, n, keys, lens, err);
}

void recon_source_close(struct recon_source *src)
{
	if (src)
		src->ops->close(src);
}

void recon_source_sql_key(const struct recon_side *side, char q, unsigned part,
			  struct recon_buf *sql)
{
	/* MySQL casts to CHAR; PostgreSQL and SQLite to TEXT */
	const char *text = q == '`' ? "CHAR" : "TEXT";

	if (part > 0 || !side->key_first_of) {
		recon_buf_addf(sql, "%c%s%c", q, side->cols[RECON_COL_KEY0 + part], q);
		return;
	}
	recon_buf_adds(sql, "COALESCE(");
	for (size_t k = 0; side->key_first_of[k]; k++)
		recon_buf_addf(sql, "%sNULLIF(TRIM(CAST(%c%s%c AS %s)), '')", k ? ", " : "", q,
			       side->key_first_of[k], q, text);
	recon_buf_adds(sql, ")");
}

unsigned recon_source_sql_select(const struct recon_side *side, char q, struct recon_buf *sql,
				 int colidx[RECON_COL__COUNT])
{
	int n = 0;

	recon_buf_adds(sql, "SELECT ");
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		colidx[c] = -1;
		if (!side->cols[c])
			continue;
		recon_buf_adds(sql, n ? ", " : "");
		if (c == RECON_COL_KEY0)
			recon_source_sql_key(side, q, 0, sql);
		else
			recon_buf_addf(sql, "%c%s%c", q, side->cols[c], q);
		colidx[c] = n++;
	}
	recon_buf_addf(sql, " FROM %c%s%c", q, side->table, q);
	return (unsigned)n;
}

bool recon_source_int_in(const char *p, size_t n, int64_t lo, int64_t hi)
{
	size_t i = (n && (*p == '-' || *p == '+')) ? 1 : 0;
	const bool neg = n && *p == '-';
	uint64_t v = 0;

	if (!recon_source_int_text(p, n))
		return false;
	while (i < n - 1 && p[i] == '0') /* leading zeros say nothing */
		i++;
	if (n - i > 19)
		return false; /* 10^19 and beyond: outside every integer column */
	for (; i < n; i++)
		v = v * 10 + (uint64_t)(p[i] - '0'); /* < 10^19 < 2^64 */
	return neg ? v <= (uint64_t)0 - (uint64_t)lo : v <= (uint64_t)hi;
}

bool recon_source_int_text(const char *p, size_t n)
{
	size_t i = (n && (*p == '-' || *p == '+')) ? 1 : 0;

	if (i == n)
		return false;
	for (; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}
