#include "recon_source.h"

#include <stdio.h>
#include <string.h>

#include "recon_buf.h"

/*
 * A backend whose library this build lacks still names its kind: a job
 * naming it loads, opening it fails ("not supported by this build") and
 * `validate` says the driver is missing. Its descriptor is then this one,
 * with a name and capabilities but no ops.
 */
#ifndef RECON_HAVE_POSTGRES
const struct recon_source_backend recon_source_postgres = {
    .name = "postgres", .caps = RECON_SOURCE_TABLE | RECON_SOURCE_DSN};
#endif
#ifndef RECON_HAVE_MYSQL
const struct recon_source_backend recon_source_mysql = {
    .name = "mysql", .caps = RECON_SOURCE_TABLE | RECON_SOURCE_DSN};
#endif

/* The registry: one line per backend (STYLE 17b), in the order job errors list the kinds. */
static const struct recon_source_backend *const backends[] = {
    &recon_source_csv, &recon_source_sqlite, &recon_source_postgres, &recon_source_mysql, NULL,
};

const struct recon_source_backend *const *recon_source_backends(void)
{
	return backends;
}

const struct recon_source_backend *recon_source_backend_find(const char *name)
{
	for (size_t i = 0; backends[i]; i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

void recon_source_backend_names(unsigned caps, const char *last_sep, char *buf, size_t size)
{
	size_t n = 0, k = 0, used = 0;

	for (size_t i = 0; backends[i]; i++)
		n += (backends[i]->caps & caps) == caps;
	buf[0] = '\0';
	for (size_t i = 0; backends[i]; i++) {
		int w;
		if ((backends[i]->caps & caps) != caps)
			continue;
		w = snprintf(buf + used, size - used, "%s%s",
			     !k		 ? ""
			     : k + 1 < n ? ", "
					 : last_sep,
			     backends[i]->name);
		k++;
		if (w < 0 || (size_t)w >= size - used) {
			buf[used] = '\0'; /* whole names only */
			return;
		}
		used += (size_t)w;
	}
}

void recon_probe_say(const struct recon_probe *p, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	p->say(p->arg, code, fmt, ap);
	va_end(ap);
}

bool recon_source_has(const struct recon_side *side, unsigned caps)
{
	return side->backend && (side->backend->caps & caps) == caps;
}

static const struct recon_source_backend *backend_of(const struct recon_source *src)
{
	for (size_t i = 0; backends[i]; i++)
		if (backends[i]->ops == src->ops)
			return backends[i];
	return NULL;
}

uint64_t recon_source_estimate(const struct recon_side *side, const struct recon_window *win,
			       uint64_t *bytes)
{
	*bytes = 0;
	if (!side->backend || !side->backend->estimate)
		return 0;
	return side->backend->estimate(side, win, bytes);
}

int recon_source_digest(const struct recon_source *src, char hex[65])
{
	const struct recon_source_backend *b = src ? backend_of(src) : NULL;

	if (!b || !b->digest)
		return -1;
	return b->digest(src, hex);
}

int recon_source_open(struct recon_source **out, const struct recon_side *side,
		      const struct recon_window *win, struct recon_err *err)
{
	*out = NULL;
	if (!side->backend || !side->backend->ops)
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "source kind '%s' is not supported by this build",
				     side->backend ? side->backend->name : "?");
	return side->backend->ops->open(out, side, win, err);
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
