#include "recon_job.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_time.h"

static const char *const col_names[RECON_COL__COUNT] = {
    [RECON_COL_KEY0] = "key",
    [RECON_COL_KEY1] = "key[1]",
    [RECON_COL_KEY2] = "key[2]",
    [RECON_COL_KEY3] = "key[3]",
    [RECON_COL_AMOUNT] = "amount",
    [RECON_COL_AMOUNT_MINOR] = "amount_minor",
    [RECON_COL_REFUND_AMOUNT] = "refund_amount",
    [RECON_COL_CURRENCY] = "currency",
    [RECON_COL_STATUS] = "status",
    [RECON_COL_TIME] = "time",
    [RECON_COL_TXN_ID] = "txn_id",
    [RECON_COL_REFUND_ID] = "refund_id",
    [RECON_COL_ENTRY_TYPE] = "entry_type",
};

const char *recon_col_name(enum recon_col col)
{
	return (unsigned)col < RECON_COL__COUNT ? col_names[col] : "?";
}

const char *recon_status_name(enum recon_status st)
{
	static const char *const names[] = {"success", "refunded", "closed", "pending"};

	return (unsigned)st < RECON_ST__COUNT ? names[st] : "?";
}

const char *recon_kind_name(enum recon_kind kind)
{
	static const char *const names[] = {"csv", "sqlite", "postgres", "mysql"};

	return (unsigned)kind < 4 ? names[kind] : "?";
}

int recon_map_get(const struct recon_map *m, const char *s, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].len == len && !memcmp(m->v[i].word, s, len))
			return m->v[i].value;
	return -1;
}

int recon_job_override_upstream(struct recon_job *job, const char *path, struct recon_err *err)
{
	if (job->upstream.kind != RECON_KIND_CSV)
		return recon_err_set(err, RECON_EUSAGE, "--upstream",
				     "replaces a statement file, and the upstream is a %s source",
				     recon_kind_name(job->upstream.kind));
	if (!path[0])
		return recon_err_set(err, RECON_EUSAGE, "--upstream", "expected a file or '-'");
	free(job->upstream.path);
	/* standard input: a pipe is read once (recon_run reads it again only if a regular file) */
	job->upstream.path = recon_xstrdup(strcmp(path, "-") ? path : "/dev/stdin");
	return 0;
}

bool recon_job_ident_ok(const char *s)
{
	size_t n = 0;

	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (; s[n]; n++)
		if (!(isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '$'))
			return false;
	return n <= RECON_NAME_MAX;
}

char *recon_job_expand_path(const char *tmpl, int64_t day)
{
	struct recon_buf b;
	char date[16];
	const char *p = tmpl;

	recon_date_format(day, date, sizeof(date));
	recon_buf_init(&b);
	while (*p) {
		if (!strncmp(p, "{date}", 6)) {
			recon_buf_adds(&b, date);
			p += 6;
		} else if (!strncmp(p, "{yyyymmdd}", 10)) {
			recon_buf_add(&b, date, 4);
			recon_buf_add(&b, date + 5, 2);
			recon_buf_add(&b, date + 8, 2);
			p += 10;
		} else {
			recon_buf_addc(&b, *p++);
		}
	}
	return recon_buf_detach(&b);
}

/* ---- loading ---------------------------------------------------------- */

#define PATH_MAX_DEPTH 6

/* Loader state: the file being read and the key path being validated, for messages. */
struct loader {
	const char *file;
	const char *text; /* the file's text, to find the line a key stands on */
	const char *path[PATH_MAX_DEPTH];
	int depth;
	struct recon_err *err;
};

/* JSON text scanning, only to tell which line a key stands on (jansson keeps no positions). */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* p at '"': returns the position after the closing quote. */
static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p ? p + 1 : p;
}

static const char *skip_value(const char *p)
{
	int depth = 0;

	p = skip_ws(p);
	if (*p == '"')
		return skip_string(p);
	if (*p != '{' && *p != '[') {
		while (*p && *p != ',' && *p != '}' && *p != ']')
			p++;
		return p;
	}
	for (; *p; p++) {
		if (*p == '"') {
			p = skip_string(p) - 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0)
				return p + 1;
		}
	}
	return p;
}

/* The member `name` directly inside the object at obj ('{'): its key's position, or NULL. */
static const char *find_member(const char *obj, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *p = skip_ws(obj);

	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *key = p, *after = skip_string(p);
		p = skip_ws(after);
		if (*p != ':')
			return NULL;
		p = skip_ws(p + 1);
		if ((size_t)(after - key) == n + 2 && !strncmp(key + 1, name, n)) {
			*value = p;
			return key;
		}
		p = skip_ws(skip_value(p));
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

static int line_of(const char *text, const char *pos)
{
	int line = 1;

	for (const char *c = text; c < pos; c++)
		line += *c == '\n';
	return line;
}

/*
 * Line of the current key path, following the path through the objects it
 * names; a key that is absent reports its parent's line (0 at the top).
 */
static int key_line(const struct loader *L)
{
	const char *obj = L->text, *hit = NULL, *value;
	int depth = L->depth < PATH_MAX_DEPTH ? L->depth : PATH_MAX_DEPTH;

	for (int i = 0; i < depth; i++) {
		const char *k = find_member(obj, L->path[i], &value);
		if (!k)
			break;
		hit = k;
		obj = value;
	}
	return hit ? line_of(L->text, hit) : 0;
}

static int lerr(struct loader *L, const char *fmt, ...) RECON_PRINTF(2, 3);
static int lerr(struct loader *L, const char *fmt, ...)
{
	char where[160], keys[96];
	size_t used = 0;
	va_list ap;
	int line = key_line(L);

	keys[0] = '\0';
	for (int i = 0; i < L->depth && used < sizeof(keys); i++) {
		int n =
		    snprintf(keys + used, sizeof(keys) - used, "%s%s", i ? "." : "", L->path[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (line > 0)
		snprintf(where, sizeof(where), "%s:%d: '%s'", L->file, line, keys);
	else if (L->depth)
		snprintf(where, sizeof(where), "%s: '%s'", L->file, keys);
	else
		snprintf(where, sizeof(where), "%s", L->file);
	va_start(ap, fmt);
	recon_err_setv(L->err, RECON_ECONFIG, where, fmt, ap);
	va_end(ap);
	return RECON_ECONFIG;
}

static void push(struct loader *L, const char *key)
{
	if (L->depth < PATH_MAX_DEPTH)
		L->path[L->depth] = key;
	L->depth++;
}

static void pop(struct loader *L)
{
	L->depth--;
}

/* Every key of obj must be in allowed (NULL-terminated). */
static int check_keys(struct loader *L, json_t *obj, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		size_t i;
		(void)v;
		for (i = 0; allowed[i]; i++)
			if (!strcmp(k, allowed[i]))
				break;
		if (!allowed[i]) {
			int rc;
			push(L, k);
			rc = lerr(L, "unknown key");
			pop(L);
			return rc;
		}
	}
	return 0;
}

/* Optional string member; *out is a fresh copy, or untouched when absent. */
static int get_str(struct loader *L, json_t *obj, const char *key, char **out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	if (!json_is_string(v)) {
		rc = lerr(L, "expected a string");
	} else if (json_string_length(v) == 0 ||
		   strlen(json_string_value(v)) != json_string_length(v)) {
		rc = lerr(L, "must be a non-empty string without NUL characters");
	} else {
		free(*out);
		*out = recon_xstrdup(json_string_value(v));
	}
	pop(L);
	return rc;
}

/* "description": free text for people; only its type is checked. */
static int check_description(struct loader *L, json_t *obj)
{
	char *d = NULL;
	int rc = get_str(L, obj, "description", &d);

	free(d);
	return rc;
}

static int get_bool(struct loader *L, json_t *obj, const char *key, bool *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	if (!json_is_boolean(v))
		rc = lerr(L, "expected true or false");
	else
		*out = json_is_true(v);
	pop(L);
	return rc;
}

/* A non-negative integer: a JSON integer or a string of digits, never a real. */
static int get_count(struct loader *L, json_t *obj, const char *key, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;
	struct recon_err e;

	if (!v)
		return 0;
	push(L, key);
	recon_err_init(&e);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = json_integer_value(v);
	} else if (json_is_string(v) && json_string_length(v) > 0 &&
		   strspn(json_string_value(v), "0123456789") == json_string_length(v) &&
		   recon_money_parse(json_string_value(v), json_string_length(v), 0,
				     RECON_MONEY_MINOR, out, &e) == 0) {
		;
	} else {
		rc = lerr(L, "expected a non-negative integer (not a real number)");
	}
	pop(L);
	return rc;
}

static int get_duration(struct loader *L, json_t *obj, const char *key, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	struct recon_err e;
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	recon_err_init(&e);
	if (!json_is_string(v))
		rc = lerr(L, "expected a duration string such as \"5m\"");
	else if (recon_duration_parse(json_string_value(v), out, &e) < 0)
		rc = lerr(L, "%s", e.msg);
	pop(L);
	return rc;
}

/* A timestamp in the job's zone ("2024-01-16 00:00:00", or with Z / an offset). */
static int get_instant(struct loader *L, json_t *obj, const char *key, const struct recon_tz *tz,
		       bool *set, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	struct recon_err e;
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	recon_err_init(&e);
	if (!json_is_string(v))
		rc = lerr(L, "expected a timestamp string such as \"2024-01-16 00:00:00\"");
	else if (recon_time_parse(json_string_value(v), json_string_length(v), tz, out, &e) < 0)
		rc = lerr(L, "%s", e.msg);
	else
		*set = true;
	pop(L);
	return rc;
}

/* A single character (delimiter, quote); "" means none (quote only). */
static int get_char(struct loader *L, json_t *obj, const char *key, bool allow_none, char *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	if (!json_is_string(v)) {
		rc = lerr(L, "expected a one-character string");
	} else if (json_string_length(v) == 0 && allow_none) {
		*out = '\0';
	} else if (!strcmp(json_string_value(v), "\\t")) {
		*out = '\t';
	} else if (json_string_length(v) != 1 || (unsigned char)json_string_value(v)[0] >= 0x80 ||
		   json_string_value(v)[0] == '\n' || json_string_value(v)[0] == '\r') {
		rc = lerr(L, "expected exactly one ASCII character");
	} else {
		*out = json_string_value(v)[0];
	}
	pop(L);
	return rc;
}

static void free_strv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* Array of non-empty strings -> NULL-terminated vector (replaces *out). */
static int get_strv(struct loader *L, json_t *obj, const char *key, char ***out)
{
	json_t *v = json_object_get(obj, key), *e;
	size_t i;
	char **vec;
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	if (!json_is_array(v)) {
		rc = lerr(L, "expected an array of strings");
		goto out;
	}
	vec = recon_xcalloc(json_array_size(v) + 1, sizeof(*vec));
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || !json_string_length(e)) {
			free_strv(vec);
			rc = lerr(L, "element %zu: expected a non-empty string", i);
			goto out;
		}
		vec[i] = recon_xstrdup(json_string_value(e));
	}
	free_strv(*out);
	*out = vec;
out:
	pop(L);
	return rc;
}

static void map_release(struct recon_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].word);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static void map_put(struct recon_map *m, const char *word, int value)
{
	for (size_t i = 0; i < m->n; i++) {
		if (!strcmp(m->v[i].word, word)) {
			m->v[i].value = value;
			return;
		}
	}
	m->v = recon_xrealloc(m->v, recon_st_mult(m->n + 1, sizeof(*m->v)));
	m->v[m->n].word = recon_xstrdup(word);
	m->v[m->n].len = strlen(word);
	m->v[m->n].value = value;
	m->n++;
}

/* {"WORD": "name", ...} with names from `names` (count n) merged into m. */
static int get_map(struct loader *L, json_t *obj, const char *key, const char *const *names, int n,
		   struct recon_map *m)
{
	json_t *v = json_object_get(obj, key), *e;
	const char *word;
	int rc = 0;

	if (!v)
		return 0;
	push(L, key);
	if (!json_is_object(v)) {
		rc = lerr(L, "expected an object mapping words to names");
		goto out;
	}
	json_object_foreach(v, word, e)
	{
		int i;
		push(L, word);
		if (!json_is_string(e)) {
			rc = lerr(L, "expected a string");
			pop(L);
			goto out;
		}
		for (i = 0; i < n; i++)
			if (!strcmp(json_string_value(e), names[i]))
				break;
		if (i == n) {
			char list[128] = "";
			for (int j = 0; j < n; j++) {
				strncat(list, j ? ", " : "", sizeof(list) - strlen(list) - 1);
				strncat(list, names[j], sizeof(list) - strlen(list) - 1);
			}
			rc = lerr(L, "unknown value '%s' (expected one of %s)",
				  json_string_value(e), list);
			pop(L);
			goto out;
		}
		map_put(m, word, i);
		pop(L);
	}
out:
	pop(L);
	return rc;
}

static const char *const status_names[] = {"success", "refunded", "closed", "pending"};
static const char *const entry_names[] = {"payment", "refund", "revoke",
					  "keyless", "ignore", "refund_reversal"};

/* Drops the key's columns, alternatives and first_of list (before a new mapping). */
static void clear_key(struct recon_side *s)
{
	for (int i = 0; i < RECON_KEY_PARTS_MAX; i++) {
		free(s->cols[RECON_COL_KEY0 + i]);
		s->cols[RECON_COL_KEY0 + i] = NULL;
		free_strv(s->alt_cols[RECON_COL_KEY0 + i]);
		s->alt_cols[RECON_COL_KEY0 + i] = NULL;
	}
	free_strv(s->key_first_of);
	s->key_first_of = NULL;
}

/*
 * "key": {"first_of": [col, ...]}: the first non-empty of 2 to
 * RECON_FIRST_OF_MAX columns (Stripe rows carry the order id in one of
 * several metadata columns).
 */
static int get_first_of(struct loader *L, json_t *v, struct recon_side *s, bool sql)
{
	static const char *const keys[] = {"first_of", NULL};
	json_t *a = json_object_get(v, "first_of"), *e;
	size_t i;
	int rc;

	if ((rc = check_keys(L, v, keys)) < 0)
		return rc;
	push(L, "first_of");
	if (!json_is_array(a) || json_array_size(a) < 2 ||
	    json_array_size(a) > RECON_FIRST_OF_MAX) {
		rc = lerr(L, "expected an array of 2 to %d column names", RECON_FIRST_OF_MAX);
		pop(L);
		return rc;
	}
	json_array_foreach(a, i, e)
	{
		if (!json_is_string(e) || !json_string_length(e) ||
		    (sql && !recon_job_ident_ok(json_string_value(e)))) {
			rc = lerr(L, "element %zu: expected a%s column name", i,
				  sql ? " valid SQL" : "");
			pop(L);
			return rc;
		}
	}
	pop(L);
	clear_key(s);
	rc = get_strv(L, v, "first_of", &s->key_first_of);
	if (rc == 0) {
		s->cols[RECON_COL_KEY0] = recon_xstrdup(s->key_first_of[0]);
		s->nkey = 1;
	}
	return rc;
}

/* "columns": role -> column name; "key" may be an array (composite key) or {"first_of": [...]}. */
static int get_columns(struct loader *L, json_t *obj, struct recon_side *s, bool sql)
{
	json_t *cols = json_object_get(obj, "columns"), *v;
	const char *role;
	int rc = 0;

	if (!cols)
		return 0;
	push(L, "columns");
	if (!json_is_object(cols)) {
		rc = lerr(L, "expected an object mapping roles to column names");
		goto out;
	}
	json_object_foreach(cols, role, v)
	{
		int c;
		push(L, role);
		if (!strcmp(role, "key") && json_is_array(v)) {
			size_t i, n = json_array_size(v);
			json_t *e;
			if (n < 1 || n > RECON_KEY_PARTS_MAX) {
				rc = lerr(L, "a composite key has 1 to %d columns",
					  RECON_KEY_PARTS_MAX);
				pop(L);
				goto out;
			}
			clear_key(s);
			json_array_foreach(v, i, e)
			{
				if (!json_is_string(e) || !json_string_length(e) ||
				    (sql && !recon_job_ident_ok(json_string_value(e)))) {
					rc = lerr(L, "element %zu: expected a%s column name", i,
						  sql ? " valid SQL" : "");
					pop(L);
					goto out;
				}
				s->cols[RECON_COL_KEY0 + i] = recon_xstrdup(json_string_value(e));
			}
			s->nkey = (unsigned)n;
			pop(L);
			continue;
		}
		if (!strcmp(role, "key") && json_is_object(v)) {
			rc = get_first_of(L, v, s, sql);
			pop(L);
			if (rc < 0)
				goto out;
			continue;
		}
		for (c = 0; c < RECON_COL__COUNT; c++)
			if (!strcmp(role, col_names[c]) &&
			    (c < RECON_COL_KEY1 || c > RECON_COL_KEY3))
				break;
		if (c == RECON_COL__COUNT) {
			rc = lerr(L, "unknown column role (expected key, amount, amount_minor, "
				     "refund_amount, currency, status, time, txn_id, refund_id, "
				     "entry_type)");
			pop(L);
			goto out;
		}
		/* a role mapped here drops the profile's alternative names for it */
		free_strv(s->alt_cols[c]);
		s->alt_cols[c] = NULL;
		if (json_is_null(v)) { /* a job may unmap a profile's column */
			free(s->cols[c]);
			s->cols[c] = NULL;
		} else if (!json_is_string(v) || !json_string_length(v)) {
			rc = lerr(L, "expected a column name");
			pop(L);
			goto out;
		} else if (sql && !recon_job_ident_ok(json_string_value(v))) {
			rc = lerr(L,
				  "'%s' is not a valid SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, "
				  "at most %d characters)",
				  json_string_value(v), RECON_NAME_MAX);
			pop(L);
			goto out;
		} else {
			free(s->cols[c]);
			s->cols[c] = recon_xstrdup(json_string_value(v));
			if (c == RECON_COL_KEY0) {
				for (int i = 1; i < RECON_KEY_PARTS_MAX; i++) {
					free(s->cols[RECON_COL_KEY0 + i]);
					s->cols[RECON_COL_KEY0 + i] = NULL;
				}
				free_strv(s->key_first_of);
				s->key_first_of = NULL;
				s->nkey = 1;
			}
		}
		pop(L);
	}
	if (s->cols[RECON_COL_AMOUNT] && s->cols[RECON_COL_AMOUNT_MINOR]) {
		rc = lerr(L, "map either 'amount' (decimal) or 'amount_minor' (integer), not both");
		goto out;
	}
out:
	pop(L);
	return rc;
}

static const char *const csv_keys[] = {
    "description",     "encoding",     "delimiter",	"quote",
    "header",	       "skip_lines",   "strip",		"comment_prefixes",
    "stop_prefixes",   "columns",      "entry_types",	"status_map",
    "currency",	       "timezone",     "thousands",	"alt_columns",
    "delimiter_guard", "reject_empty", "zip_entry",	"zip_exclude",
    "totals",	       "time_format",  "totals_ignore", NULL};

/* Role index for a name in "columns"/"alt_columns" (key parts excluded), or -1. */
static int role_of(const char *role)
{
	for (int c = 0; c < RECON_COL__COUNT; c++)
		if (!strcmp(role, col_names[c]) && (c < RECON_COL_KEY1 || c > RECON_COL_KEY3))
			return c;
	return -1;
}

/* "alt_columns": role -> [names]: header names tried in order when the role's column is absent. */
static int get_alt_columns(struct loader *L, json_t *obj, struct recon_side *s)
{
	json_t *alts = json_object_get(obj, "alt_columns"), *v;
	const char *role;
	int rc = 0;

	if (!alts)
		return 0;
	push(L, "alt_columns");
	if (!json_is_object(alts)) {
		rc = lerr(L, "expected an object mapping roles to arrays of column names");
		goto out;
	}
	json_object_foreach(alts, role, v)
	{
		int c = role_of(role);
		push(L, role);
		if (c < 0)
			rc = lerr(L, "unknown column role");
		else if (!json_is_array(v) || !json_array_size(v))
			rc = lerr(L, "expected a non-empty array of column names");
		else if (!s->cols[c])
			rc = lerr(L, "the role has alternatives but no column in 'columns'");
		pop(L);
		if (rc < 0 || (rc = get_strv(L, alts, role, &s->alt_cols[c])) < 0)
			goto out;
	}
out:
	pop(L);
	return rc;
}

/* Sums of one totals group: {"label": "column", ...}. */
static int get_totals_sums(struct loader *L, json_t *g, struct recon_totals_group *grp)
{
	json_t *sums = json_object_get(g, "sums"), *v;
	const char *label;
	int rc = 0;

	if (!sums)
		return 0;
	push(L, "sums");
	if (!json_is_object(sums)) {
		rc = lerr(L, "expected an object mapping total names to detail columns");
		goto out;
	}
	grp->sums = recon_xcalloc(json_object_size(sums) + 1, sizeof(*grp->sums));
	json_object_foreach(sums, label, v)
	{
		push(L, label);
		if (!json_is_string(v) || !json_string_length(v)) {
			rc = lerr(L, "expected a column name");
			pop(L);
			goto out;
		}
		grp->sums[grp->nsums].label = recon_xstrdup(label);
		grp->sums[grp->nsums].column = recon_xstrdup(json_string_value(v));
		grp->nsums++;
		pop(L);
	}
out:
	pop(L);
	return rc;
}

static void totals_release(struct recon_totals_rule *t)
{
	for (size_t i = 0; i < t->ngroups; i++) {
		struct recon_totals_group *g = &t->groups[i];
		free(g->count);
		free(g->entry_type);
		for (size_t j = 0; j < g->nsums; j++) {
			free(g->sums[j].label);
			free(g->sums[j].column);
		}
		free(g->sums);
	}
	free(t->groups);
	free_strv(t->informational);
	memset(t, 0, sizeof(*t));
}

/*
 * "totals": {"in": "trailer"|"footer", "required": bool,
 *            "groups": [{"count": "...", "entry_type": "...", "sums": {...}}]}
 */
static int get_totals(struct loader *L, json_t *obj, struct recon_side *s)
{
	static const char *const keys[] = {"in",	  "required",	   "groups",
					   "description", "informational", NULL};
	static const char *const gkeys[] = {"count", "entry_type", "sums", NULL};
	json_t *t = json_object_get(obj, "totals"), *groups, *g;
	char *in = NULL;
	size_t i;
	int rc = 0;

	if (!t)
		return 0;
	totals_release(&s->totals);
	push(L, "totals");
	if (json_is_null(t)) /* a side may drop its profile's totals */
		goto out;
	if (!json_is_object(t)) {
		rc = lerr(L, "expected an object");
		goto out;
	}
	if ((rc = check_keys(L, t, keys)) < 0 || (rc = get_str(L, t, "in", &in)) < 0 ||
	    (rc = get_bool(L, t, "required", &s->totals.required)) < 0 ||
	    (rc = get_strv(L, t, "informational", &s->totals.informational)) < 0)
		goto out;
	push(L, "in");
	if (in && !strcmp(in, "trailer"))
		s->totals.in = RECON_TOTALS_TRAILER;
	else if (in && !strcmp(in, "footer"))
		s->totals.in = RECON_TOTALS_FOOTER;
	else
		rc = lerr(L, "expected \"trailer\" or \"footer\"");
	pop(L);
	if (rc < 0)
		goto out;
	groups = json_object_get(t, "groups");
	push(L, "groups");
	if (!json_is_array(groups) || !json_array_size(groups) || json_array_size(groups) > 16) {
		rc = lerr(L, "expected an array of 1 to 16 groups");
		pop(L);
		goto out;
	}
	s->totals.groups = recon_xcalloc(json_array_size(groups), sizeof(*s->totals.groups));
	json_array_foreach(groups, i, g)
	{
		struct recon_totals_group *grp = &s->totals.groups[s->totals.ngroups++];
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		push(L, idx);
		if (!json_is_object(g))
			rc = lerr(L, "expected an object");
		else if ((rc = check_keys(L, g, gkeys)) == 0 &&
			 (rc = get_str(L, g, "count", &grp->count)) == 0 &&
			 (rc = get_str(L, g, "entry_type", &grp->entry_type)) == 0 &&
			 (rc = get_totals_sums(L, g, grp)) == 0 && !grp->count)
			rc = lerr(L, "'count' is missing (the name or line prefix of the count)");
		pop(L);
		if (rc < 0)
			break;
	}
	pop(L);
out:
	pop(L);
	free(in);
	if (rc < 0)
		totals_release(&s->totals);
	return rc;
}

/* The CSV layout keys, shared by profiles and inline sides. */
static int get_csv_layout(struct loader *L, json_t *obj, struct recon_side *s)
{
	int64_t skip = s->skip_lines;
	bool thousands = (s->money_flags & RECON_MONEY_THOUSANDS) != 0;
	int rc;

	if ((rc = get_str(L, obj, "encoding", &s->encoding)) < 0 ||
	    (rc = get_char(L, obj, "delimiter", false, &s->delimiter)) < 0 ||
	    (rc = get_char(L, obj, "quote", true, &s->quote)) < 0 ||
	    (rc = get_bool(L, obj, "header", &s->header)) < 0 ||
	    (rc = get_count(L, obj, "skip_lines", &skip)) < 0 ||
	    (rc = get_str(L, obj, "strip", &s->strip)) < 0 ||
	    (rc = get_strv(L, obj, "comment_prefixes", &s->comment_prefixes)) < 0 ||
	    (rc = get_strv(L, obj, "stop_prefixes", &s->stop_prefixes)) < 0 ||
	    (rc = get_bool(L, obj, "thousands", &thousands)) < 0 ||
	    (rc = get_char(L, obj, "delimiter_guard", true, &s->delim_guard)) < 0 ||
	    (rc = get_bool(L, obj, "reject_empty", &s->reject_empty)) < 0 ||
	    (rc = get_str(L, obj, "zip_entry", &s->zip_entry)) < 0 ||
	    (rc = get_str(L, obj, "zip_exclude", &s->zip_exclude)) < 0 ||
	    (rc = get_totals(L, obj, s)) < 0 ||
	    (rc = get_strv(L, obj, "totals_ignore", &s->totals_ignore)) < 0)
		return rc;
	if (skip > 1000) {
		push(L, "skip_lines");
		rc = lerr(L, "at most 1000 lines can be skipped");
		pop(L);
		return rc;
	}
	s->skip_lines = (unsigned)skip;
	if (thousands)
		s->money_flags |= RECON_MONEY_THOUSANDS;
	else
		s->money_flags &= ~RECON_MONEY_THOUSANDS;
	return 0;
}

/* "time_format": how the side writes its timestamps (strftime-style), checked here. */
static int get_time_format(struct loader *L, json_t *obj, struct recon_side *s)
{
	struct recon_err e;
	int rc;

	if ((rc = get_str(L, obj, "time_format", &s->time_format)) < 0 || !s->time_format)
		return rc;
	recon_err_init(&e);
	if (recon_time_format_check(s->time_format, &e) < 0) {
		push(L, "time_format");
		rc = lerr(L, "%s", e.msg);
		pop(L);
	}
	return rc;
}

/* Common per-side keys that both profiles and sides may carry. */
static int get_side_common(struct loader *L, json_t *obj, struct recon_side *s, bool sql)
{
	int rc;

	if ((rc = get_columns(L, obj, s, sql)) < 0 || (rc = get_alt_columns(L, obj, s)) < 0 ||
	    (rc = get_map(L, obj, "status_map", status_names, RECON_ST__COUNT, &s->status_map)) <
		0 ||
	    (rc = get_map(L, obj, "entry_types", entry_names, 6, &s->entry_types)) < 0 ||
	    (rc = get_str(L, obj, "currency", &s->currency)) < 0 ||
	    (rc = get_str(L, obj, "timezone", &s->tz_name)) < 0 ||
	    (rc = get_time_format(L, obj, s)) < 0)
		return rc;
	return 0;
}

static char *path_join(const char *dir, const char *p)
{
	struct recon_buf b;

	if (p[0] == '/' || !dir[0])
		return recon_xstrdup(p);
	recon_buf_init(&b);
	recon_buf_addf(&b, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", p);
	return recon_buf_detach(&b);
}

static char *slurp(const char *path, size_t *len, struct recon_err *err)
{
	FILE *f = fopen(path, "rb");
	struct recon_buf b;
	char chunk[8192];
	size_t n;

	if (!f) {
		recon_err_set(err, RECON_ECONFIG, NULL, "cannot open '%s': %s", path,
			      strerror(errno));
		return NULL;
	}
	recon_buf_init(&b);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		recon_buf_add(&b, chunk, n);
		if (b.len > (16u << 20)) {
			fclose(f);
			recon_buf_release(&b);
			recon_err_set(err, RECON_ECONFIG, NULL, "'%s' is larger than 16 MiB", path);
			return NULL;
		}
	}
	if (ferror(f)) {
		fclose(f);
		recon_buf_release(&b);
		recon_err_set(err, RECON_ECONFIG, NULL, "cannot read '%s': %s", path,
			      strerror(errno));
		return NULL;
	}
	fclose(f);
	*len = b.len;
	return recon_buf_detach(&b);
}

/* Parses JSON text strictly; a syntax error names file:line:column. */
static json_t *parse_json(const char *file, const char *text, size_t len, struct recon_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	char where[160];

	if (!root) {
		snprintf(where, sizeof(where), "%s:%d:%d", file, je.line, je.column);
		recon_err_set(err, RECON_ECONFIG, where, "%s", je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		recon_err_set(err, RECON_ECONFIG, file, "expected a JSON object at the top");
		return NULL;
	}
	return root;
}

static bool profile_name_ok(const char *s)
{
	if (!s[0] || strlen(s) > RECON_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return s[0] != '.';
}

/* The format profiles compiled into the binary (build/recon_formats.c). */
struct recon_embedded_file {
	const char *name, *text;
};
extern const struct recon_embedded_file recon_job_builtin_formats[];

/* The folder above the one holding the running binary ("/usr" for /usr/bin/recon), or "". */
static void exe_prefix(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0 || (size_t)n >= size - 1) {
		buf[0] = '\0';
		return;
	}
	buf[n] = '\0';
	for (int up = 0; up < 2; up++) {
		slash = strrchr(buf, '/');
		if (!slash) {
			buf[0] = '\0';
			return;
		}
		*slash = '\0';
	}
}

void recon_job_datadir(char *buf, size_t size)
{
	char prefix[4096];
	struct recon_buf b;

	exe_prefix(prefix, sizeof(prefix));
	recon_buf_init(&b);
	recon_buf_addf(&b, "%s/share/recon", prefix);
	if (!prefix[0] || access(b.s, R_OK | X_OK) != 0) {
		recon_buf_reset(&b);
		recon_buf_adds(&b, RECON_DATADIR);
	}
	snprintf(buf, size, "%s", b.s);
	recon_buf_release(&b);
}

/*
 * Finds the profile `name`, in order: $RECON_FORMATS_DIR; beside the job
 * (formats/, rules/formats/, ../rules/formats/, ../../rules/formats/); the
 * data folder relative to the installed binary (PREFIX/share/recon/formats
 * for PREFIX/bin/recon); the compiled-in data folder; last, the copies
 * compiled into the binary. Sets *path (malloc'd, caller frees) to a file, or
 * *builtin (static text) to a compiled-in copy; returns false when neither
 * exists, with every folder searched in `searched`.
 */
static bool find_profile(const char *jobdir, const char *name, char **path, const char **builtin,
			 struct recon_buf *searched)
{
	static const char *const rel[] = {"formats", "rules/formats", "../rules/formats",
					  "../../rules/formats"};
	const char *env = getenv("RECON_FORMATS_DIR");
	char prefix[4096];
	struct recon_buf dirs[3], b;
	size_t nd = 0;
	bool found = false;

	*path = NULL;
	*builtin = NULL;
	recon_buf_init(&b);
	for (size_t i = 0; i < 3; i++)
		recon_buf_init(&dirs[i]);
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		recon_buf_reset(&b);
		recon_buf_addf(&b, "%s%s%s/%s.json", jobdir, jobdir[0] ? "/" : "", rel[i], name);
		if (!found && access(b.s, R_OK) == 0) {
			*path = recon_buf_detach(&b);
			found = true;
		}
	}
	if (env && env[0])
		recon_buf_adds(&dirs[nd++], env);
	exe_prefix(prefix, sizeof(prefix));
	if (prefix[0])
		recon_buf_addf(&dirs[nd++], "%s/share/recon/formats", prefix);
	if (!prefix[0] || strcmp(dirs[nd - 1].s, RECON_DATADIR "/formats"))
		recon_buf_adds(&dirs[nd++], RECON_DATADIR "/formats");
	/* $RECON_FORMATS_DIR wins over the job's folder */
	if (env && env[0]) {
		recon_buf_reset(&b);
		recon_buf_addf(&b, "%s/%s.json", env, name);
		if (access(b.s, R_OK) == 0) {
			free(*path);
			*path = recon_buf_detach(&b);
			found = true;
		}
	}
	for (size_t i = env && env[0] ? 1 : 0; i < nd && !found; i++) {
		recon_buf_reset(&b);
		recon_buf_addf(&b, "%s/%s.json", dirs[i].s, name);
		if (access(b.s, R_OK) == 0) {
			*path = recon_buf_detach(&b);
			found = true;
		}
	}
	for (size_t i = 0; recon_job_builtin_formats[i].name && !found; i++)
		if (!strcmp(recon_job_builtin_formats[i].name, name)) {
			*builtin = recon_job_builtin_formats[i].text;
			found = true;
		}
	if (env && env[0])
		recon_buf_addf(searched, "%s, ", env);
	recon_buf_addf(searched, "%s/{formats,rules/formats,../rules/formats,../../rules/formats}",
		       jobdir[0] ? jobdir : ".");
	for (size_t i = env && env[0] ? 1 : 0; i < nd; i++)
		recon_buf_addf(searched, ", %s", dirs[i].s);
	for (size_t i = 0; i < 3; i++)
		recon_buf_release(&dirs[i]);
	recon_buf_release(&b);
	return found;
}

static const char *const side_keys[] = {"kind",
					"path",
					"format",
					"table",
					"dsn_env",
					"columns",
					"timezone",
					"currency",
					"status_map",
					"entry_types",
					"encoding",
					"delimiter",
					"quote",
					"header",
					"skip_lines",
					"strip",
					"comment_prefixes",
					"stop_prefixes",
					"thousands",
					"description",
					"alt_columns",
					"delimiter_guard",
					"reject_empty",
					"allow_empty",
					"idle_timeout",
					"zip_entry",
					"zip_exclude",
					"totals",
					"time_format",
					"totals_ignore",
					NULL};

static bool env_name_ok(const char *s)
{
	if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return strlen(s) <= RECON_NAME_MAX;
}

/*
 * The error for a value that is no variable name. A DSN pasted where its
 * variable's name belongs ("postgresql://u:secret@h/db", "host=h password=x")
 * is not echoed: the job file's error would print the password.
 */
static int env_name_err(struct loader *L, const char *v)
{
	if (strpbrk(v, ":@=/ \t") || strlen(v) > RECON_NAME_MAX)
		return lerr(L, "expected the name of an environment variable (letters, digits, "
			       "'_'), and this value looks like a connection string itself: put "
			       "the DSN in a variable and name that variable here (the value is "
			       "not shown)");
	return lerr(L, "'%s' is not a valid environment variable name", v);
}

/* Reads a format profile into s (before the side's own keys override it). */
static int load_profile(struct loader *outer, const char *jobdir, struct recon_side *s,
			json_t **profile_out)
{
	char *path = NULL, *text = NULL;
	const char *builtin = NULL;
	struct recon_buf searched;
	size_t len = 0;
	json_t *root = NULL;
	struct loader L = {0};
	int rc = 0;

	recon_buf_init(&searched);
	push(outer, "format");
	if (!profile_name_ok(s->format)) {
		rc = lerr(outer, "invalid profile name '%s'", s->format);
		goto out;
	}
	if (!find_profile(jobdir, s->format, &path, &builtin, &searched)) {
		/* the folder list can outgrow recon_err's message: then it goes first, whole */
		if (searched.len + 2 * strlen(s->format) > 160) {
			recon_log(RECON_LOG_ERROR, "format profile '%s' searched: %s", s->format,
				  searched.s);
			recon_buf_reset(&searched);
			recon_buf_adds(&searched, "the folders listed above");
		}
		rc = lerr(outer, "unknown format profile '%s': not built in, no %s.json in %s",
			  s->format, s->format, searched.s);
		goto out;
	}
	if (builtin) {
		text = recon_xstrdup(builtin);
		len = strlen(text);
		recon_buf_reset(&searched);
		recon_buf_addf(&searched, "(built in)/%s.json", s->format);
		path = recon_buf_detach(&searched);
	} else if (!(text = slurp(path, &len, outer->err))) {
		rc = RECON_ECONFIG;
		goto out;
	}
	root = parse_json(path, text, len, outer->err);
	if (!root) {
		rc = RECON_ECONFIG;
		goto out;
	}
	L.file = path;
	L.text = text;
	L.err = outer->err;
	if ((rc = check_keys(&L, root, csv_keys)) < 0 || (rc = check_description(&L, root)) < 0 ||
	    (rc = get_csv_layout(&L, root, s)) < 0 ||
	    (rc = get_side_common(&L, root, s, false)) < 0)
		goto out;
	*profile_out = json_incref(root);
out:
	pop(outer);
	json_decref(root);
	free(text);
	free(path);
	recon_buf_release(&searched);
	return rc;
}

static int load_side(struct loader *L, json_t *root, const char *name, const char *jobdir,
		     struct recon_side *s, json_t **profile)
{
	json_t *obj = json_object_get(root, name);
	char *kind = NULL;
	bool sql;
	int rc = 0;

	s->role = name;
	s->delimiter = ',';
	s->quote = '"';
	s->header = true;
	push(L, name);
	if (!obj) {
		rc = lerr(L, "missing (an object describing the %s source)", name);
		goto out;
	}
	if (!json_is_object(obj)) {
		rc = lerr(L, "expected an object");
		goto out;
	}
	if ((rc = check_keys(L, obj, side_keys)) < 0 || (rc = check_description(L, obj)) < 0 ||
	    (rc = get_str(L, obj, "kind", &kind)) < 0)
		goto out;
	if (!kind) {
		push(L, "kind");
		rc = lerr(L, "missing (csv, sqlite, postgres or mysql)");
		pop(L);
		goto out;
	}
	for (int k = 0; k <= RECON_KIND_MYSQL; k++)
		if (!strcmp(kind, recon_kind_name(k)))
			s->kind = k, rc = 1;
	if (rc != 1) {
		push(L, "kind");
		rc = lerr(L, "unknown source kind '%s' (csv, sqlite, postgres or mysql)", kind);
		pop(L);
		goto out;
	}
	rc = 0;
	sql = s->kind != RECON_KIND_CSV;
	if ((rc = get_str(L, obj, "format", &s->format)) < 0)
		goto out;
	if (s->format) {
		if (sql) {
			push(L, "format");
			rc = lerr(L, "format profiles apply to csv sources only");
			pop(L);
			goto out;
		}
		if ((rc = load_profile(L, jobdir, s, profile)) < 0)
			goto out;
	}
	if ((rc = get_csv_layout(L, obj, s)) < 0 || (rc = get_side_common(L, obj, s, sql)) < 0 ||
	    (rc = get_bool(L, obj, "allow_empty", &s->allow_empty)) < 0 ||
	    (rc = get_duration(L, obj, "idle_timeout", &s->idle_timeout_ms)) < 0 ||
	    (rc = get_str(L, obj, "path", &s->path)) < 0 ||
	    (rc = get_str(L, obj, "table", &s->table)) < 0 ||
	    (rc = get_str(L, obj, "dsn_env", &s->dsn_env)) < 0)
		goto out;
	if (sql) {
		static const char *const csv_only[] = {"encoding",
						       "delimiter",
						       "quote",
						       "header",
						       "skip_lines",
						       "strip",
						       "comment_prefixes",
						       "stop_prefixes",
						       "alt_columns",
						       "delimiter_guard",
						       "reject_empty",
						       "zip_entry",
						       "zip_exclude",
						       "totals",
						       "allow_empty",
						       "totals_ignore",
						       NULL};
		for (int i = 0; csv_only[i]; i++) {
			if (json_object_get(obj, csv_only[i])) {
				push(L, csv_only[i]);
				rc = lerr(L, "applies to csv sources only");
				pop(L);
				goto out;
			}
		}
	}
	/* kind-specific requirements */
	if (s->kind == RECON_KIND_CSV || s->kind == RECON_KIND_SQLITE) {
		if (!s->path) {
			push(L, "path");
			rc = lerr(L, "missing (the %s file)",
				  s->kind == RECON_KIND_CSV ? "statement" : "SQLite database");
			pop(L);
			goto out;
		}
		char *abs = path_join(jobdir, s->path);
		free(s->path);
		s->path = abs;
	} else if (s->path) {
		push(L, "path");
		rc = lerr(L, "a %s source takes 'dsn_env', not 'path'", kind);
		pop(L);
		goto out;
	}
	if (s->kind == RECON_KIND_POSTGRES || s->kind == RECON_KIND_MYSQL) {
		push(L, "dsn_env");
		if (!s->dsn_env)
			rc = lerr(L, "missing (the environment variable holding the connection "
				     "string)");
		else if (!env_name_ok(s->dsn_env))
			rc = env_name_err(L, s->dsn_env);
		pop(L);
		if (rc < 0)
			goto out;
	} else if (s->dsn_env) {
		push(L, "dsn_env");
		rc = lerr(L, "only postgres and mysql sources take a connection string");
		pop(L);
		goto out;
	}
	if (sql) {
		push(L, "table");
		if (!s->table)
			rc = lerr(L, "missing (the table to read)");
		else if (!recon_job_ident_ok(s->table))
			rc = lerr(L,
				  "'%s' is not a valid SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, at "
				  "most %d characters)",
				  s->table, RECON_NAME_MAX);
		pop(L);
		if (rc < 0)
			goto out;
	} else if (s->table) {
		push(L, "table");
		rc = lerr(L, "csv sources have no table");
		pop(L);
		goto out;
	}
	/* columns */
	push(L, "columns");
	if (!s->cols[RECON_COL_KEY0])
		rc = lerr(L, "the 'key' role is not mapped");
	else if (!s->cols[RECON_COL_AMOUNT] && !s->cols[RECON_COL_AMOUNT_MINOR])
		rc = lerr(L, "map 'amount' (decimal) or 'amount_minor' (integer minor units)");
	else if (!s->cols[RECON_COL_TIME])
		rc = lerr(L, "the 'time' role is not mapped");
	else if (!s->cols[RECON_COL_STATUS] && !s->cols[RECON_COL_ENTRY_TYPE])
		rc = lerr(L, "map 'status' (or 'entry_type' with 'entry_types')");
	else if (s->cols[RECON_COL_ENTRY_TYPE] && !s->entry_types.n)
		rc = lerr(L, "'entry_type' is mapped but the side has no 'entry_types' map");
	else if (s->cols[RECON_COL_REFUND_AMOUNT] && s->cols[RECON_COL_AMOUNT_MINOR])
		rc = lerr(L, "'refund_amount' is decimal text: use it with 'amount', not "
			     "'amount_minor'");
	pop(L);
	if (rc < 0)
		goto out;
	if (s->totals.in != RECON_TOTALS_NONE) {
		push(L, "totals");
		if (s->totals.in == RECON_TOTALS_TRAILER && !s->stop_prefixes)
			rc = lerr(L,
				  "trailer totals need 'stop_prefixes' (where the trailer starts)");
		else if (s->totals.in == RECON_TOTALS_FOOTER && !s->comment_prefixes)
			rc = lerr(L, "footer totals need 'comment_prefixes' (the footer's lines)");
		else if (!s->header)
			rc = lerr(L, "totals name detail columns: the csv needs a header");
		for (size_t i = 0; rc == 0 && i < s->totals.ngroups; i++)
			if (s->totals.groups[i].entry_type && !s->cols[RECON_COL_ENTRY_TYPE])
				rc =
				    lerr(L, "a group filters on 'entry_type', which is not mapped");
		pop(L);
		if (rc < 0)
			goto out;
	}
	if (s->delim_guard && s->quote) {
		push(L, "delimiter_guard");
		rc = lerr(L, "needs \"quote\": \"\" (a guarded delimiter means no quoting)");
		pop(L);
		goto out;
	}
	if (s->currency) {
		push(L, "currency");
		for (char *p = s->currency; *p; p++)
			*p = (char)toupper((unsigned char)*p);
		if (recon_money_exponent(s->currency) < 0)
			rc = lerr(L, "unknown ISO 4217 currency '%s'", s->currency);
		pop(L);
		if (rc < 0)
			goto out;
	}
	if (s->encoding &&
	    (!strcasecmp(s->encoding, "UTF-8") || !strcasecmp(s->encoding, "UTF8"))) {
		free(s->encoding);
		s->encoding = NULL;
	}
out:
	pop(L);
	free(kind);
	return rc;
}

static void side_release(struct recon_side *s)
{
	free(s->path);
	free(s->format);
	free(s->table);
	free(s->dsn_env);
	for (int c = 0; c < RECON_COL__COUNT; c++)
		free(s->cols[c]);
	free(s->tz_name);
	free(s->time_format);
	free_strv(s->key_first_of);
	recon_tz_free(s->tz);
	free(s->currency);
	map_release(&s->status_map);
	map_release(&s->entry_types);
	free(s->encoding);
	free(s->strip);
	free_strv(s->comment_prefixes);
	free_strv(s->stop_prefixes);
	for (int c = 0; c < RECON_COL__COUNT; c++)
		free_strv(s->alt_cols[c]);
	free(s->zip_entry);
	free(s->zip_exclude);
	totals_release(&s->totals);
	free_strv(s->totals_ignore);
}

void recon_job_free(struct recon_job *job)
{
	if (!job)
		return;
	free(job->name);
	free(job->file);
	free(job->dir);
	free(job->tz_name);
	recon_tz_free(job->tz);
	side_release(&job->upstream);
	side_release(&job->local);
	free(job->actions.writer_dsn_env);
	for (int i = 0; i < RECON_ST__COUNT; i++)
		free(job->actions.replay_status[i]);
	free(job->actions.repush_event);
	free(job->actions.transition_to);
	free_strv(job->actions.transition_from);
	for (size_t i = 0; i < job->actions.nreplay_values; i++) {
		free(job->actions.replay_values[i].column);
		free(job->actions.replay_values[i].text);
	}
	free(job->actions.replay_values);
	free(job->state_path);
	free(job->heartbeat_path);
	free(job->config_text);
	free(job);
}

static bool job_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > RECON_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return s[0] != '.';
}

static const char *const tvar_names[RECON_TVAR__COUNT] = {
    "key",  "amount_minor", "amount", "currency", "status",
    "time", "now",	    "txn_id", "job",	  "run_id"};

int recon_job_tvar(const char *name, size_t len)
{
	for (int i = 0; i < RECON_TVAR__COUNT; i++)
		if (strlen(tvar_names[i]) == len && !memcmp(name, tvar_names[i], len))
			return i;
	return -1;
}

/* A replay template: every '{' opens a known variable closed by '}'. */
static int check_template(struct loader *L, const char *t)
{
	for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
		const char *end = strchr(p, '}');
		if (!end || recon_job_tvar(p + 1, (size_t)(end - p - 1)) < 0)
			return lerr(
			    L,
			    "unknown template variable at '%.24s' (known: {key}, "
			    "{amount_minor}, {amount}, {currency}, {status}, {time}, {now}, "
			    "{txn_id}, {job}, {run_id})",
			    p);
	}
	return 0;
}

/* The role whose local column is `col`, or -1: a replay writes those itself. */
static int local_role_of_column(const struct recon_side *l, const char *col)
{
	for (int c = 0; c < RECON_COL__COUNT; c++)
		if (l->cols[c] && !strcmp(l->cols[c], col))
			return c;
	return -1;
}

/*
 * "replay": "insert"|"outbox"; "replay_values": {column: template | integer | null}
 * (DESIGN: replays must fit the merchant's real table).
 */
static int get_replay(struct loader *L, json_t *v, struct recon_job *job)
{
	struct recon_actions_cfg *a = &job->actions;
	json_t *rv = json_object_get(v, "replay_values"), *t;
	char *mode = NULL;
	const char *col;
	int rc;

	if ((rc = get_str(L, v, "replay", &mode)) < 0)
		return rc;
	if (mode) {
		push(L, "replay");
		if (!strcmp(mode, "insert"))
			a->replay = RECON_REPLAY_INSERT;
		else if (!strcmp(mode, "outbox"))
			a->replay = RECON_REPLAY_OUTBOX;
		else
			rc = lerr(L, "expected \"insert\" (a row in the local table) or \"outbox\" "
				     "(a replay event in recon_outbox)");
		pop(L);
		free(mode);
		if (rc < 0)
			return rc;
	}
	if (!rv)
		return 0;
	push(L, "replay_values");
	if (!json_is_object(rv) || json_object_size(rv) > RECON_REPLAY_VALUES_MAX) {
		rc = lerr(L,
			  "expected an object of at most %d columns such as {\"updated_at\": "
			  "\"{now}\"}",
			  RECON_REPLAY_VALUES_MAX);
		pop(L);
		return rc;
	}
	a->replay_values = recon_xcalloc(json_object_size(rv) + 1, sizeof(*a->replay_values));
	json_object_foreach(rv, col, t)
	{
		struct recon_replay_value *x = &a->replay_values[a->nreplay_values];
		int role = local_role_of_column(&job->local, col);
		push(L, col);
		if (!recon_job_ident_ok(col))
			rc = lerr(L, "not a valid SQL identifier");
		else if (role >= 0)
			rc = lerr(L, "the local side's '%s' column: a replay writes it itself",
				  recon_col_name(role));
		else if (json_is_string(t))
			rc = check_template(L, json_string_value(t));
		else if (!json_is_integer(t) && !json_is_null(t))
			rc = lerr(L, "expected a template string, an integer or null");
		if (rc == 0) {
			char num[32];
			x->column = recon_xstrdup(col);
			if (json_is_integer(t)) {
				snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
					 json_integer_value(t));
				x->text = recon_xstrdup(num);
				x->number = true;
			} else if (json_is_string(t)) {
				x->text = recon_xstrdup(json_string_value(t));
			}
			a->nreplay_values++;
		}
		pop(L);
		if (rc < 0)
			break;
	}
	pop(L);
	return rc;
}

/* "actions": writer, replay words, re-push event, guarded transition. */
static int get_actions(struct loader *L, json_t *root, struct recon_job *job)
{
	static const char *const keys[] = {
	    "enabled", "writer_dsn_env", "replay_status", "repush_event",  "transition", "attempts",
	    "breaker", "timeout",	 "replay",	  "replay_values", NULL};
	static const char *const tkeys[] = {"to", "from", NULL};
	struct recon_actions_cfg *a = &job->actions;
	json_t *v = json_object_get(root, "actions"), *rs, *tr;
	int rc = 0;

	a->enabled = true;
	a->attempts = 5;
	a->breaker = 3;
	/* replay words default to the first local word mapping to each status */
	for (size_t i = job->local.status_map.n; i-- > 0;) {
		const struct recon_map_entry *e = &job->local.status_map.v[i];
		free(a->replay_status[e->value]);
		a->replay_status[e->value] = recon_xstrdup(e->word);
	}
	if (!v)
		goto out_defaults;
	push(L, "actions");
	if (!json_is_object(v)) {
		rc = lerr(L, "expected an object");
		goto out;
	}
	if ((rc = check_keys(L, v, keys)) < 0 ||
	    (rc = get_bool(L, v, "enabled", &a->enabled)) < 0 ||
	    (rc = get_str(L, v, "writer_dsn_env", &a->writer_dsn_env)) < 0 ||
	    (rc = get_str(L, v, "repush_event", &a->repush_event)) < 0 ||
	    (rc = get_count(L, v, "attempts", &a->attempts)) < 0 ||
	    (rc = get_count(L, v, "breaker", &a->breaker)) < 0 ||
	    (rc = get_duration(L, v, "timeout", &a->timeout_ms)) < 0 ||
	    (rc = get_replay(L, v, job)) < 0)
		goto out;
	if (a->attempts < 1 || a->attempts > 10) {
		push(L, "attempts");
		rc = lerr(L, "expected 1 to 10 tries per action");
		pop(L);
		goto out;
	}
	if (a->writer_dsn_env) {
		push(L, "writer_dsn_env");
		if (job->local.kind != RECON_KIND_POSTGRES && job->local.kind != RECON_KIND_MYSQL)
			rc = lerr(L, "only postgres and mysql local sides take a writer DSN (a "
				     "sqlite local side is written through its own file)");
		else if (!env_name_ok(a->writer_dsn_env))
			rc = env_name_err(L, a->writer_dsn_env);
		pop(L);
		if (rc < 0)
			goto out;
	}
	rs = json_object_get(v, "replay_status");
	if (rs) {
		const char *st;
		json_t *w;
		push(L, "replay_status");
		if (!json_is_object(rs)) {
			rc = lerr(L, "expected an object such as {\"success\": \"PAID\"}");
			pop(L);
			goto out;
		}
		json_object_foreach(rs, st, w)
		{
			int i;
			for (i = 0; i < RECON_ST__COUNT; i++)
				if (!strcmp(st, status_names[i]))
					break;
			push(L, st);
			if (i == RECON_ST__COUNT)
				rc = lerr(L, "unknown status (success, refunded, closed, pending)");
			else if (!json_is_string(w) || !json_string_length(w))
				rc = lerr(L, "expected the local status word to write");
			else if (recon_map_get(&job->local.status_map, json_string_value(w),
					       json_string_length(w)) != i)
				rc = lerr(L, "'%s' does not map to '%s' in the local status map",
					  json_string_value(w), st);
			pop(L);
			if (rc < 0) {
				pop(L);
				goto out;
			}
			free(a->replay_status[i]);
			a->replay_status[i] = recon_xstrdup(json_string_value(w));
		}
		pop(L);
	}
	tr = json_object_get(v, "transition");
	if (tr) {
		push(L, "transition");
		if (!json_is_object(tr))
			rc = lerr(L, "expected {\"to\": WORD, \"from\": [WORDS]}");
		else if ((rc = check_keys(L, tr, tkeys)) == 0 &&
			 (rc = get_str(L, tr, "to", &a->transition_to)) == 0)
			rc = get_strv(L, tr, "from", &a->transition_from);
		if (rc == 0 && (!a->transition_to || !a->transition_from || !a->transition_from[0]))
			rc = lerr(L, "needs both 'to' and a non-empty 'from'");
		if (rc == 0 && !job->local.cols[RECON_COL_STATUS])
			rc = lerr(L, "the local side maps no status column to move");
		pop(L);
		if (rc < 0)
			goto out;
	}
out:
	pop(L);
out_defaults:
	if (rc == 0 && !a->repush_event)
		a->repush_event = recon_xstrdup("recon.repush");
	return rc;
}

/* one key a line (a 21st key makes clang-format pack them) */
/* clang-format off */
static const char *const job_keys[] = {"job",
				       "description",
				       "timezone",
				       "currency",
				       "upstream",
				       "local",
				       "status_map",
				       "amount_tolerance_minor",
				       "stuck_after",
				       "margin",
				       "hot",
				       "max_rejects",
				       "state",
				       "heartbeat",
				       "check",
				       "actions",
				       "settle_after",
				       "lock_wait",
				       "t1",
				       "ledger",
				       "partition",
				       NULL};
/* clang-format on */

/* "partition": {"count": N}: the key space splits into N (recon_partition.h). */
static int get_partition(struct loader *L, json_t *root, struct recon_job *job)
{
	static const char *const keys[] = {"count", NULL};
	json_t *v = json_object_get(root, "partition");
	int rc = 0;

	if (!v)
		return 0;
	push(L, "partition");
	if (!json_is_object(v) || !json_object_get(v, "count"))
		rc = lerr(L, "expected an object with 'count'");
	else if ((rc = check_keys(L, v, keys)) == 0 &&
		 (rc = get_count(L, v, "count", &job->partition_count)) == 0 &&
		 (job->partition_count < 1 || job->partition_count > RECON_PARTITION_MAX)) {
		push(L, "count");
		rc = lerr(L, "must be between 1 and %d", RECON_PARTITION_MAX);
		pop(L);
	}
	pop(L);
	return rc;
}

/* "t1": {"after", "max_days"} and "ledger": {"retention", "settled"} (DESIGN "Days, watermarks and
 * locks"). */
static int get_t1_ledger(struct loader *L, json_t *root, struct recon_job *job)
{
	static const char *const t1_keys[] = {"after", "max_days", NULL};
	static const char *const ledger_keys[] = {"retention", "settled", NULL};
	json_t *v;
	int rc = 0;

	if ((v = json_object_get(root, "t1"))) {
		push(L, "t1");
		if (!json_is_object(v))
			rc = lerr(L, "expected an object with 'after' and/or 'max_days'");
		else if ((rc = check_keys(L, v, t1_keys)) == 0 &&
			 (rc = get_duration(L, v, "after", &job->t1_after_ms)) == 0 &&
			 (rc = get_count(L, v, "max_days", &job->t1_max_days)) == 0 &&
			 job->t1_max_days < 1) {
			push(L, "max_days");
			rc = lerr(L, "must be at least 1");
			pop(L);
		}
		pop(L);
		if (rc < 0)
			return rc;
	}
	if ((v = json_object_get(root, "ledger"))) {
		push(L, "ledger");
		if (!json_is_object(v))
			rc = lerr(L, "expected an object with 'retention' and/or 'settled'");
		else if ((rc = check_keys(L, v, ledger_keys)) == 0 &&
			 (rc = get_duration(L, v, "retention", &job->ledger_retention_ms)) == 0)
			rc = get_duration(L, v, "settled", &job->ledger_settled_ms);
		pop(L);
	}
	return rc;
}

/* Side zone and currency defaults, then the zone itself. */
static int finish_side(struct loader *L, struct recon_job *job, struct recon_side *s)
{
	int rc;

	if (!s->tz_name)
		s->tz_name = recon_xstrdup(job->tz_name);
	if (!s->currency)
		s->currency = recon_xstrdup(job->currency);
	struct recon_err e;

	push(L, s->role);
	push(L, "timezone");
	recon_err_init(&e);
	rc = recon_tz_load(&s->tz, s->tz_name, &e);
	if (rc < 0)
		rc = lerr(L, "%s", e.msg);
	pop(L);
	pop(L);
	return rc;
}

int recon_job_load(struct recon_job **out, const char *path, struct recon_err *err)
{
	struct recon_job *job = recon_xcalloc(1, sizeof(*job));
	struct loader L = {0};
	char *text = NULL, *cur = NULL;
	size_t len = 0;
	json_t *root = NULL, *v, *profiles = NULL, *eff = NULL;
	json_t *prof_up = NULL, *prof_local = NULL;
	int rc = 0;
	const char *slash;

	*out = NULL;
	job->file = recon_xstrdup(path);
	slash = strrchr(path, '/');
	job->dir = slash ? recon_xstrndup(path, (size_t)(slash - path)) : recon_xstrdup("");
	if (slash && slash == path) {
		free(job->dir);
		job->dir = recon_xstrdup("/");
	}
	text = slurp(path, &len, err);
	if (!text) {
		rc = RECON_ECONFIG;
		goto out;
	}
	root = parse_json(path, text, len, err);
	if (!root) {
		rc = RECON_ECONFIG;
		goto out;
	}
	L.file = path;
	L.text = text;
	L.err = err;
	job->stuck_after_ms = 15 * RECON_MS_PER_MIN;
	job->margin_ms = 10 * RECON_MS_PER_MIN;
	job->hot_size_ms = 5 * RECON_MS_PER_MIN;
	job->hot_lag_ms = 2 * RECON_MS_PER_MIN;
	job->hot_max_windows = 12;
	job->t1_max_days = 31;
	job->settle_after_ms = -1; /* default: the margin, once known */
	job->refund_after_ms = 3 * RECON_MS_PER_DAY;
	job->lock_wait_ms = 10 * RECON_MS_PER_MIN;
	job->ledger_retention_ms = 400 * RECON_MS_PER_DAY;
	job->ledger_settled_ms = 7 * RECON_MS_PER_DAY;
	/* t1: at 10:30 yesterday is reconciled, so the watermark is ~34.5h old at worst */
	job->check_max_lag_ms[0] = 36 * RECON_MS_PER_HOUR;
	job->check_max_age_ms[0] = 26 * RECON_MS_PER_HOUR;
	job->check_max_lag_ms[1] = 15 * RECON_MS_PER_MIN;
	job->check_max_age_ms[1] = 15 * RECON_MS_PER_MIN;
	if ((rc = check_keys(&L, root, job_keys)) < 0 || (rc = check_description(&L, root)) < 0 ||
	    (rc = get_str(&L, root, "job", &job->name)) < 0 ||
	    (rc = get_str(&L, root, "timezone", &job->tz_name)) < 0 ||
	    (rc = get_str(&L, root, "currency", &cur)) < 0)
		goto out;
	if (!job->name) {
		push(&L, "job");
		rc = lerr(&L, "missing (the job's name)");
		pop(&L);
		goto out;
	}
	if (!job_name_ok(job->name)) {
		push(&L, "job");
		rc =
		    lerr(&L, "'%s' is not a valid job name ([A-Za-z0-9_.-], at most %d characters)",
			 job->name, RECON_NAME_MAX);
		pop(&L);
		goto out;
	}
	if (!job->tz_name)
		job->tz_name = recon_xstrdup("UTC");
	push(&L, "timezone");
	{
		struct recon_err e;
		recon_err_init(&e);
		rc = recon_tz_load(&job->tz, job->tz_name, &e);
		if (rc < 0)
			rc = lerr(&L, "%s", e.msg);
	}
	pop(&L);
	if (rc < 0)
		goto out;
	push(&L, "currency");
	if (!cur) {
		rc = lerr(&L, "missing (the ISO 4217 code of the job's currency)");
	} else if (strlen(cur) != 3 || recon_money_exponent(cur) < 0) {
		rc = lerr(&L, "unknown ISO 4217 currency '%s'", cur);
	} else {
		for (int i = 0; i < 3; i++)
			job->currency[i] = (char)toupper((unsigned char)cur[i]);
		job->exponent = recon_money_exponent(job->currency);
	}
	pop(&L);
	if (rc < 0)
		goto out;
	if ((rc = load_side(&L, root, "upstream", job->dir, &job->upstream, &prof_up)) < 0 ||
	    (rc = load_side(&L, root, "local", job->dir, &job->local, &prof_local)) < 0)
		goto out;
	v = json_object_get(root, "status_map");
	if (v) {
		static const char *const sm_keys[] = {"upstream", "local", NULL};
		push(&L, "status_map");
		if (!json_is_object(v))
			rc = lerr(&L, "expected an object with 'upstream' and/or 'local' maps");
		else if ((rc = check_keys(&L, v, sm_keys)) == 0 &&
			 (rc = get_map(&L, v, "upstream", status_names, RECON_ST__COUNT,
				       &job->upstream.status_map)) == 0)
			rc = get_map(&L, v, "local", status_names, RECON_ST__COUNT,
				     &job->local.status_map);
		pop(&L);
		if (rc < 0)
			goto out;
	}
	for (int i = 0; i < 2; i++) {
		struct recon_side *s = i ? &job->local : &job->upstream;
		if (s->cols[RECON_COL_STATUS] && !s->status_map.n) {
			push(&L, "status_map");
			push(&L, s->role);
			rc = lerr(&L,
				  "missing: the %s side maps a 'status' column, so its words "
				  "need a status map",
				  s->role);
			pop(&L);
			pop(&L);
			goto out;
		}
		if ((rc = finish_side(&L, job, s)) < 0)
			goto out;
	}
	if ((rc = get_actions(&L, root, job)) < 0)
		goto out;
	if ((rc = get_count(&L, root, "amount_tolerance_minor", &job->tolerance_minor)) < 0 ||
	    (rc = get_duration(&L, root, "stuck_after", &job->stuck_after_ms)) < 0 ||
	    (rc = get_duration(&L, root, "margin", &job->margin_ms)) < 0 ||
	    (rc = get_duration(&L, root, "settle_after", &job->settle_after_ms)) < 0 ||
	    (rc = get_duration(&L, root, "refund_after", &job->refund_after_ms)) < 0 ||
	    (rc = get_duration(&L, root, "lock_wait", &job->lock_wait_ms)) < 0 ||
	    (rc = get_t1_ledger(&L, root, job)) < 0 || (rc = get_partition(&L, root, job)) < 0 ||
	    (rc = get_count(&L, root, "max_rejects", &job->max_rejects)) < 0 ||
	    (rc = get_str(&L, root, "state", &job->state_path)) < 0 ||
	    (rc = get_str(&L, root, "heartbeat", &job->heartbeat_path)) < 0)
		goto out;
	v = json_object_get(root, "hot");
	if (v) {
		static const char *const hot_keys[] = {"size", "lag", "start", "max_windows", NULL};
		push(&L, "hot");
		if (!json_is_object(v))
			rc = lerr(&L, "expected an object");
		else if ((rc = check_keys(&L, v, hot_keys)) == 0 &&
			 (rc = get_duration(&L, v, "size", &job->hot_size_ms)) == 0 &&
			 (rc = get_duration(&L, v, "lag", &job->hot_lag_ms)) == 0 &&
			 (rc = get_count(&L, v, "max_windows", &job->hot_max_windows)) == 0)
			rc = get_instant(&L, v, "start", job->tz, &job->hot_start_set,
					 &job->hot_start);
		if (rc == 0 && job->hot_max_windows < 1) {
			push(&L, "max_windows");
			rc = lerr(&L, "must be at least 1");
			pop(&L);
		}
		if (rc == 0 && job->hot_size_ms <= 0) {
			push(&L, "size");
			rc = lerr(&L, "must be longer than zero");
			pop(&L);
		}
		pop(&L);
		if (rc < 0)
			goto out;
	}
	v = json_object_get(root, "check");
	if (v) {
		static const char *const check_keys_[] = {"t1", "hot", NULL};
		static const char *const mode_keys[] = {"max_lag", "max_age", NULL};
		push(&L, "check");
		if (!json_is_object(v))
			rc = lerr(&L, "expected an object with 't1' and/or 'hot'");
		else
			rc = check_keys(&L, v, check_keys_);
		for (int m = 0; m < 2 && rc == 0; m++) {
			json_t *mv = json_object_get(v, m ? "hot" : "t1");
			if (!mv)
				continue;
			push(&L, m ? "hot" : "t1");
			if (!json_is_object(mv))
				rc = lerr(&L, "expected an object with 'max_lag' and/or 'max_age'");
			else if ((rc = check_keys(&L, mv, mode_keys)) == 0 &&
				 (rc = get_duration(&L, mv, "max_lag",
						    &job->check_max_lag_ms[m])) == 0)
				rc = get_duration(&L, mv, "max_age", &job->check_max_age_ms[m]);
			pop(&L);
		}
		pop(&L);
		if (rc < 0)
			goto out;
	}
	if (job->settle_after_ms < 0)
		job->settle_after_ms = job->margin_ms;
	if (job->margin_ms > RECON_MS_PER_DAY) {
		push(&L, "margin");
		rc = lerr(&L, "must be at most 1d");
		pop(&L);
		goto out;
	}
	{
		char *p = path_join(job->dir, job->state_path ? job->state_path : "state/recon.db");
		free(job->state_path);
		job->state_path = p;
	}
	if (job->heartbeat_path) {
		char *p = path_join(job->dir, job->heartbeat_path);
		free(job->heartbeat_path);
		job->heartbeat_path = p;
	}
	/* The effective configuration: job file plus the profiles it pulled in. */
	profiles = json_object();
	json_object_set(profiles, "upstream", prof_up ? prof_up : json_null());
	json_object_set(profiles, "local", prof_local ? prof_local : json_null());
	eff = json_object();
	json_object_set(eff, "job", root);
	json_object_set(eff, "profiles", profiles);
	job->config_text = json_dumps(eff, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!job->config_text) {
		rc = recon_err_set(err, RECON_EINTERNAL, path, "cannot serialise the job");
		goto out;
	}
	*out = job;
	job = NULL;
out:
	json_decref(eff);
	json_decref(profiles);
	json_decref(prof_up);
	json_decref(prof_local);
	json_decref(root);
	free(text);
	free(cur);
	recon_job_free(job);
	return rc;
}
