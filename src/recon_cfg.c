/*
 * recon_cfg: strict reading of configuration JSON (recon_cfg.h).
 */
#include "recon_cfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_buf.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_time.h"

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
static int key_line(const struct recon_cfg *L)
{
	const char *obj = L->text, *hit = NULL, *value;
	int depth = L->depth < RECON_CFG_DEPTH ? L->depth : RECON_CFG_DEPTH;

	for (int i = 0; i < depth; i++) {
		const char *k = find_member(obj, L->path[i], &value);
		if (!k)
			break;
		hit = k;
		obj = value;
	}
	return hit ? line_of(L->text, hit) : 0;
}

int recon_cfg_err(struct recon_cfg *L, const char *fmt, ...)
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

void recon_cfg_push(struct recon_cfg *L, const char *key)
{
	if (L->depth < RECON_CFG_DEPTH)
		L->path[L->depth] = key;
	L->depth++;
}

void recon_cfg_pop(struct recon_cfg *L)
{
	L->depth--;
}

/* Every key of obj must be in allowed (NULL-terminated). */
int recon_cfg_keys(struct recon_cfg *L, json_t *obj, const char *const *allowed)
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
			recon_cfg_push(L, k);
			rc = recon_cfg_err(L, "unknown key");
			recon_cfg_pop(L);
			return rc;
		}
	}
	return 0;
}

/* Optional string member; *out is a fresh copy, or untouched when absent. */
int recon_cfg_str(struct recon_cfg *L, json_t *obj, const char *key, char **out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	if (!json_is_string(v)) {
		rc = recon_cfg_err(L, "expected a string");
	} else if (json_string_length(v) == 0 ||
		   strlen(json_string_value(v)) != json_string_length(v)) {
		rc = recon_cfg_err(L, "must be a non-empty string without NUL characters");
	} else {
		free(*out);
		*out = recon_xstrdup(json_string_value(v));
	}
	recon_cfg_pop(L);
	return rc;
}

/* "description": free text for people; only its type is checked. */
int recon_cfg_description(struct recon_cfg *L, json_t *obj)
{
	char *d = NULL;
	int rc = recon_cfg_str(L, obj, "description", &d);

	free(d);
	return rc;
}

int recon_cfg_bool(struct recon_cfg *L, json_t *obj, const char *key, bool *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	if (!json_is_boolean(v))
		rc = recon_cfg_err(L, "expected true or false");
	else
		*out = json_is_true(v);
	recon_cfg_pop(L);
	return rc;
}

/* A non-negative integer: a JSON integer or a string of digits, never a real. */
int recon_cfg_count(struct recon_cfg *L, json_t *obj, const char *key, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;
	struct recon_err e;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	recon_err_init(&e);
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = json_integer_value(v);
	} else if (json_is_string(v) && json_string_length(v) > 0 &&
		   strspn(json_string_value(v), "0123456789") == json_string_length(v) &&
		   recon_money_parse(json_string_value(v), json_string_length(v), 0,
				     RECON_MONEY_MINOR, out, &e) == 0) {
		;
	} else {
		rc = recon_cfg_err(L, "expected a non-negative integer (not a real number)");
	}
	recon_cfg_pop(L);
	return rc;
}

int recon_cfg_duration(struct recon_cfg *L, json_t *obj, const char *key, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	struct recon_err e;
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	recon_err_init(&e);
	if (!json_is_string(v))
		rc = recon_cfg_err(L, "expected a duration string such as \"5m\"");
	else if (recon_duration_parse(json_string_value(v), out, &e) < 0)
		rc = recon_cfg_err(L, "%s", e.msg);
	recon_cfg_pop(L);
	return rc;
}

/* A single character (delimiter, quote); "" means none (quote only). */
int recon_cfg_char(struct recon_cfg *L, json_t *obj, const char *key, bool allow_none, char *out)
{
	json_t *v = json_object_get(obj, key);
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	if (!json_is_string(v)) {
		rc = recon_cfg_err(L, "expected a one-character string");
	} else if (json_string_length(v) == 0 && allow_none) {
		*out = '\0';
	} else if (!strcmp(json_string_value(v), "\\t")) {
		*out = '\t';
	} else if (json_string_length(v) != 1 || (unsigned char)json_string_value(v)[0] >= 0x80 ||
		   json_string_value(v)[0] == '\n' || json_string_value(v)[0] == '\r') {
		rc = recon_cfg_err(L, "expected exactly one ASCII character");
	} else {
		*out = json_string_value(v)[0];
	}
	recon_cfg_pop(L);
	return rc;
}

void recon_cfg_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* Array of non-empty strings -> NULL-terminated vector (replaces *out). */
int recon_cfg_strv(struct recon_cfg *L, json_t *obj, const char *key, char ***out)
{
	json_t *v = json_object_get(obj, key), *e;
	size_t i;
	char **vec;
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	if (!json_is_array(v)) {
		rc = recon_cfg_err(L, "expected an array of strings");
		goto out;
	}
	vec = recon_xcalloc(json_array_size(v) + 1, sizeof(*vec));
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || !json_string_length(e)) {
			recon_cfg_strv_free(vec);
			rc = recon_cfg_err(L, "element %zu: expected a non-empty string", i);
			goto out;
		}
		vec[i] = recon_xstrdup(json_string_value(e));
	}
	recon_cfg_strv_free(*out);
	*out = vec;
out:
	recon_cfg_pop(L);
	return rc;
}

void recon_cfg_map_release(struct recon_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].word);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* {"WORD": "name", ...} with names from `names` (count n) merged into m. */
int recon_cfg_map(struct recon_cfg *L, json_t *obj, const char *key, const char *const *names,
		  int n, struct recon_map *m)
{
	json_t *v = json_object_get(obj, key), *e;
	const char *word;
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	if (!json_is_object(v)) {
		rc = recon_cfg_err(L, "expected an object mapping words to names");
		goto out;
	}
	json_object_foreach(v, word, e)
	{
		int i;
		recon_cfg_push(L, word);
		if (!json_is_string(e)) {
			rc = recon_cfg_err(L, "expected a string");
			recon_cfg_pop(L);
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
			rc = recon_cfg_err(L, "unknown value '%s' (expected one of %s)",
					   json_string_value(e), list);
			recon_cfg_pop(L);
			goto out;
		}
		recon_map_put(m, word, i);
		recon_cfg_pop(L);
	}
out:
	recon_cfg_pop(L);
	return rc;
}

const char *const recon_cfg_statuses[RECON_ST__COUNT] = {"success", "refunded", "closed",
							 "pending"};
static const char *const entry_names[] = {"payment", "refund", "revoke",
					  "keyless", "ignore", "refund_reversal"};

/* Drops the key's columns, alternatives and first_of list (before a new mapping). */
static void clear_key(struct recon_side *s)
{
	for (int i = 0; i < RECON_KEY_PARTS_MAX; i++) {
		free(s->cols[RECON_COL_KEY0 + i]);
		s->cols[RECON_COL_KEY0 + i] = NULL;
		recon_cfg_strv_free(s->alt_cols[RECON_COL_KEY0 + i]);
		s->alt_cols[RECON_COL_KEY0 + i] = NULL;
	}
	recon_cfg_strv_free(s->key_first_of);
	s->key_first_of = NULL;
}

/*
 * "key": {"first_of": [col, ...]}: the first non-empty of 2 to
 * RECON_FIRST_OF_MAX columns (Stripe rows carry the order id in one of
 * several metadata columns).
 */
static int get_first_of(struct recon_cfg *L, json_t *v, struct recon_side *s, bool sql)
{
	static const char *const keys[] = {"first_of", NULL};
	json_t *a = json_object_get(v, "first_of"), *e;
	size_t i;
	int rc;

	if ((rc = recon_cfg_keys(L, v, keys)) < 0)
		return rc;
	recon_cfg_push(L, "first_of");
	if (!json_is_array(a) || json_array_size(a) < 2 ||
	    json_array_size(a) > RECON_FIRST_OF_MAX) {
		rc = recon_cfg_err(L, "expected an array of 2 to %d column names",
				   RECON_FIRST_OF_MAX);
		recon_cfg_pop(L);
		return rc;
	}
	json_array_foreach(a, i, e)
	{
		if (!json_is_string(e) || !json_string_length(e) ||
		    (sql && !recon_job_ident_ok(json_string_value(e)))) {
			rc = recon_cfg_err(L, "element %zu: expected a%s column name", i,
					   sql ? " valid SQL" : "");
			recon_cfg_pop(L);
			return rc;
		}
	}
	recon_cfg_pop(L);
	clear_key(s);
	rc = recon_cfg_strv(L, v, "first_of", &s->key_first_of);
	if (rc == 0) {
		s->cols[RECON_COL_KEY0] = recon_xstrdup(s->key_first_of[0]);
		s->nkey = 1;
	}
	return rc;
}

/* "key": [col, ...]: a composite key of 1 to RECON_KEY_PARTS_MAX columns. */
static int get_key_parts(struct recon_cfg *L, json_t *v, struct recon_side *s, bool sql)
{
	size_t i, n = json_array_size(v);
	json_t *e;

	if (n < 1 || n > RECON_KEY_PARTS_MAX)
		return recon_cfg_err(L, "a composite key has 1 to %d columns", RECON_KEY_PARTS_MAX);
	clear_key(s);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || !json_string_length(e) ||
		    (sql && !recon_job_ident_ok(json_string_value(e))))
			return recon_cfg_err(L, "element %zu: expected a%s column name", i,
					     sql ? " valid SQL" : "");
		s->cols[RECON_COL_KEY0 + i] = recon_xstrdup(json_string_value(e));
	}
	s->nkey = (unsigned)n;
	return 0;
}

/* One role of "columns" (the current key): a column name, or null to unmap the profile's. */
static int get_column(struct recon_cfg *L, const char *role, json_t *v, struct recon_side *s,
		      bool sql)
{
	int c;

	if (!strcmp(role, "key") && json_is_array(v))
		return get_key_parts(L, v, s, sql);
	if (!strcmp(role, "key") && json_is_object(v))
		return get_first_of(L, v, s, sql);
	if ((c = recon_cfg_role(role)) < 0)
		return recon_cfg_err(L, "unknown column role (expected key, amount, amount_minor, "
					"refund_amount, currency, status, time, txn_id, refund_id, "
					"entry_type)");
	/* a role mapped here drops the profile's alternative names for it */
	recon_cfg_strv_free(s->alt_cols[c]);
	s->alt_cols[c] = NULL;
	if (json_is_null(v)) { /* a job may unmap a profile's column */
		free(s->cols[c]);
		s->cols[c] = NULL;
		return 0;
	}
	if (!json_is_string(v) || !json_string_length(v))
		return recon_cfg_err(L, "expected a column name");
	if (sql && !recon_job_ident_ok(json_string_value(v)))
		return recon_cfg_err(L,
				     "'%s' is not a valid SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, "
				     "at most %d characters)",
				     json_string_value(v), RECON_NAME_MAX);
	free(s->cols[c]);
	s->cols[c] = recon_xstrdup(json_string_value(v));
	if (c == RECON_COL_KEY0) {
		for (int i = 1; i < RECON_KEY_PARTS_MAX; i++) {
			free(s->cols[RECON_COL_KEY0 + i]);
			s->cols[RECON_COL_KEY0 + i] = NULL;
		}
		recon_cfg_strv_free(s->key_first_of);
		s->key_first_of = NULL;
		s->nkey = 1;
	}
	return 0;
}

/* "columns": role -> column name; "key" may be an array (composite key) or {"first_of": [...]}. */
static int get_columns(struct recon_cfg *L, json_t *obj, struct recon_side *s, bool sql)
{
	json_t *cols = json_object_get(obj, "columns"), *v;
	const char *role;
	int rc = 0;

	if (!cols)
		return 0;
	recon_cfg_push(L, "columns");
	if (!json_is_object(cols)) {
		rc = recon_cfg_err(L, "expected an object mapping roles to column names");
		goto out;
	}
	json_object_foreach(cols, role, v)
	{
		recon_cfg_push(L, role);
		rc = get_column(L, role, v, s, sql);
		recon_cfg_pop(L);
		if (rc < 0)
			goto out;
	}
	if (s->cols[RECON_COL_AMOUNT] && s->cols[RECON_COL_AMOUNT_MINOR])
		rc = recon_cfg_err(
		    L, "map either 'amount' (decimal) or 'amount_minor' (integer), not both");
out:
	recon_cfg_pop(L);
	return rc;
}

/* Role index for a name in "columns"/"alt_columns" (key parts excluded), or -1. */
int recon_cfg_role(const char *role)
{
	for (int c = 0; c < RECON_COL__COUNT; c++)
		if (!strcmp(role, recon_col_name(c)) && (c < RECON_COL_KEY1 || c > RECON_COL_KEY3))
			return c;
	return -1;
}

/* "time_format": how the side writes its timestamps (strftime-style), checked here. */
static int get_time_format(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	struct recon_err e;
	int rc;

	if ((rc = recon_cfg_str(L, obj, "time_format", &s->time_format)) < 0 || !s->time_format)
		return rc;
	recon_err_init(&e);
	if (recon_time_format_check(s->time_format, &e) < 0) {
		recon_cfg_push(L, "time_format");
		rc = recon_cfg_err(L, "%s", e.msg);
		recon_cfg_pop(L);
	}
	return rc;
}

/* "thousands": amounts may group digits ("1,234.56"). */
static int get_thousands(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	bool thousands = (s->money_flags & RECON_MONEY_THOUSANDS) != 0;
	int rc = recon_cfg_bool(L, obj, "thousands", &thousands);

	if (thousands)
		s->money_flags |= RECON_MONEY_THOUSANDS;
	else
		s->money_flags &= ~RECON_MONEY_THOUSANDS;
	return rc;
}

int recon_cfg_side_common(struct recon_cfg *L, json_t *obj, struct recon_side *s, bool sql)
{
	int rc;

	if ((rc = get_thousands(L, obj, s)) < 0 || (rc = get_columns(L, obj, s, sql)) < 0 ||
	    (rc = recon_cfg_map(L, obj, "status_map", recon_cfg_statuses, RECON_ST__COUNT,
				&s->status_map)) < 0 ||
	    (rc = recon_cfg_map(L, obj, "entry_types", entry_names, 6, &s->entry_types)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "currency", &s->currency)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "timezone", &s->tz_name)) < 0 ||
	    (rc = get_time_format(L, obj, s)) < 0)
		return rc;
	return 0;
}

char *recon_cfg_path_join(const char *dir, const char *p)
{
	struct recon_buf b;

	if (p[0] == '/' || !dir[0])
		return recon_xstrdup(p);
	recon_buf_init(&b);
	recon_buf_addf(&b, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", p);
	return recon_buf_detach(&b);
}

char *recon_cfg_slurp(const char *path, size_t *len, struct recon_err *err)
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
json_t *recon_cfg_parse(const char *file, const char *text, size_t len, struct recon_err *err)
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

/* The folder above the one holding the running binary ("/usr" for /usr/bin/recon), or "". */
void recon_cfg_exe_prefix(char *buf, size_t size)
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

bool recon_cfg_env_name_ok(const char *s)
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
int recon_cfg_env_name_err(struct recon_cfg *L, const char *v)
{
	if (strpbrk(v, ":@=/ \t") || strlen(v) > RECON_NAME_MAX)
		return recon_cfg_err(
		    L, "expected the name of an environment variable (letters, digits, "
		       "'_'), and this value looks like a connection string itself: put "
		       "the DSN in a variable and name that variable here (the value is "
		       "not shown)");
	return recon_cfg_err(L, "'%s' is not a valid environment variable name", v);
}
