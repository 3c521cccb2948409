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
#include "recon_cfg.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_source.h"
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

int recon_map_get(const struct recon_map *m, const char *s, size_t len)
{
	/* a status word of every row: a few short words, compared here without a call */
	for (size_t i = 0; i < m->n; i++) {
		const char *w = m->v[i].word;
		size_t k = 0;
		if (m->v[i].len != len)
			continue;
		while (k < len && w[k] == s[k])
			k++;
		if (k == len)
			return m->v[i].value;
	}
	return -1;
}

void recon_map_put(struct recon_map *m, const char *word, int value)
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

int recon_job_override_upstream(struct recon_job *job, const char *path, struct recon_err *err)
{
	if (!recon_source_has(&job->upstream, RECON_SOURCE_FILE))
		return recon_err_set(err, RECON_EUSAGE, "--upstream",
				     "replaces a statement file, and the upstream is a %s source",
				     job->upstream.backend->name);
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

/* A timestamp in the job's zone ("2024-01-16 00:00:00", or with Z / an offset). */
static int get_instant(struct recon_cfg *L, json_t *obj, const char *key, const struct recon_tz *tz,
		       bool *set, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	struct recon_err e;
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, key);
	recon_err_init(&e);
	if (!json_is_string(v))
		rc =
		    recon_cfg_err(L, "expected a timestamp string such as \"2024-01-16 00:00:00\"");
	else if (recon_time_parse(json_string_value(v), json_string_length(v), tz, out, &e) < 0)
		rc = recon_cfg_err(L, "%s", e.msg);
	else
		*set = true;
	recon_cfg_pop(L);
	return rc;
}

void recon_job_datadir(char *buf, size_t size)
{
	char prefix[4096];
	struct recon_buf b;

	recon_cfg_exe_prefix(prefix, sizeof(prefix));
	recon_buf_init(&b);
	recon_buf_addf(&b, "%s/share/recon", prefix);
	if (!prefix[0] || access(b.s, R_OK | X_OK) != 0) {
		recon_buf_reset(&b);
		recon_buf_adds(&b, RECON_DATADIR);
	}
	snprintf(buf, size, "%s", b.s);
	recon_buf_release(&b);
}

/* The keys every side takes; a backend adds its own (recon_source_backend.keys). */
static const char *const side_keys[] = {"kind",	       "path",	    "table",	   "dsn_env",
					"columns",     "timezone",  "currency",	   "status_map",
					"entry_types", "thousands", "description", "idle_timeout",
					"time_format", NULL};

static bool in_strv(const char *const *v, const char *k)
{
	for (size_t i = 0; v[i]; i++)
		if (!strcmp(v[i], k))
			return true;
	return false;
}

/* b's own key k, or NULL. */
static const struct recon_source_key *backend_key(const struct recon_source_backend *b,
						  const char *k)
{
	for (const struct recon_source_key *x = b->keys; x && x->name; x++)
		if (!strcmp(x->name, k))
			return x;
	return NULL;
}

/*
 * A side's keys: each is one every side takes or one of some backend's
 * (before the kind is known: else "unknown key"); once b is known (b not
 * NULL), one of another backend's is the error that kind's key gives.
 */
static int side_keys_check(struct recon_cfg *L, json_t *obj, const struct recon_source_backend *b)
{
	const struct recon_source_backend *const *all = recon_source_backends();
	const struct recon_source_key *x = NULL;
	const char *k;
	json_t *v;
	int rc;

	json_object_foreach(obj, k, v)
	{
		size_t i;
		(void)v;
		if (in_strv(side_keys, k) || (b && backend_key(b, k)))
			continue;
		x = NULL;
		for (i = 0; all[i] && !(x = backend_key(all[i], k)); i++)
			;
		if (b || !x) {
			recon_cfg_push(L, k);
			if (!x)
				rc = recon_cfg_err(L, "unknown key");
			else if (x->elsewhere)
				rc = recon_cfg_err(L, "%s", x->elsewhere);
			else
				rc = recon_cfg_err(L, "applies to %s sources only", all[i]->name);
			recon_cfg_pop(L);
			return rc;
		}
	}
	return 0;
}

/* "kind": the backend reading the side. */
static int side_backend(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	char *kind = NULL, names[128];
	int rc;

	if ((rc = recon_cfg_str(L, obj, "kind", &kind)) < 0)
		return rc;
	recon_source_backend_names(0, " or ", names, sizeof(names));
	recon_cfg_push(L, "kind");
	if (!kind)
		rc = recon_cfg_err(L, "missing (%s)", names);
	else if (!(s->backend = recon_source_backend_find(kind)))
		rc = recon_cfg_err(L, "unknown source kind '%s' (%s)", kind, names);
	recon_cfg_pop(L);
	free(kind);
	return rc;
}

/* "path" for a backend that reads a file (RECON_SOURCE_PATH), resolved against the job's folder. */
static int side_path(struct recon_cfg *L, struct recon_side *s)
{
	const struct recon_source_backend *b = s->backend;
	int rc = 0;

	recon_cfg_push(L, "path");
	if ((b->caps & RECON_SOURCE_PATH) && !s->path) {
		rc = recon_cfg_err(L, "missing (the %s file)", b->path_what);
	} else if (b->caps & RECON_SOURCE_PATH) {
		char *abs = recon_cfg_path_join(L->dir, s->path);
		free(s->path);
		s->path = abs;
	} else if (s->path && (b->caps & RECON_SOURCE_DSN)) {
		rc = recon_cfg_err(L, "a %s source takes 'dsn_env', not 'path'", b->name);
	} else if (s->path) {
		rc = recon_cfg_err(L, "a %s source takes no 'path'", b->name);
	}
	recon_cfg_pop(L);
	return rc;
}

/* "dsn_env" for a server (RECON_SOURCE_DSN) and "table" for SQL (RECON_SOURCE_TABLE). */
static int side_server(struct recon_cfg *L, struct recon_side *s)
{
	const struct recon_source_backend *b = s->backend;
	char names[128];
	int rc = 0;

	recon_cfg_push(L, "dsn_env");
	if ((b->caps & RECON_SOURCE_DSN) && !s->dsn_env) {
		rc = recon_cfg_err(L, "missing (the environment variable holding the connection "
				      "string)");
	} else if (b->caps & RECON_SOURCE_DSN) {
		if (!recon_cfg_env_name_ok(s->dsn_env))
			rc = recon_cfg_env_name_err(L, s->dsn_env);
	} else if (s->dsn_env) {
		recon_source_backend_names(RECON_SOURCE_DSN, " and ", names, sizeof(names));
		rc = recon_cfg_err(L, "only %s sources take a connection string", names);
	}
	recon_cfg_pop(L);
	if (rc < 0)
		return rc;
	recon_cfg_push(L, "table");
	if ((b->caps & RECON_SOURCE_TABLE) && !s->table)
		rc = recon_cfg_err(L, "missing (the table to read)");
	else if ((b->caps & RECON_SOURCE_TABLE) && !recon_job_ident_ok(s->table))
		rc =
		    recon_cfg_err(L,
				  "'%s' is not a valid SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, at "
				  "most %d characters)",
				  s->table, RECON_NAME_MAX);
	else if (!(b->caps & RECON_SOURCE_TABLE) && s->table)
		rc = recon_cfg_err(L, "%s sources have no table", b->name);
	recon_cfg_pop(L);
	return rc;
}

/* The roles a side must map. */
static int side_columns(struct recon_cfg *L, const struct recon_side *s)
{
	int rc = 0;

	recon_cfg_push(L, "columns");
	if (!s->cols[RECON_COL_KEY0])
		rc = recon_cfg_err(L, "the 'key' role is not mapped");
	else if (!s->cols[RECON_COL_AMOUNT] && !s->cols[RECON_COL_AMOUNT_MINOR])
		rc = recon_cfg_err(
		    L, "map 'amount' (decimal) or 'amount_minor' (integer minor units)");
	else if (!s->cols[RECON_COL_TIME])
		rc = recon_cfg_err(L, "the 'time' role is not mapped");
	else if (!s->cols[RECON_COL_STATUS] && !s->cols[RECON_COL_ENTRY_TYPE])
		rc = recon_cfg_err(L, "map 'status' (or 'entry_type' with 'entry_types')");
	else if (s->cols[RECON_COL_ENTRY_TYPE] && !s->entry_types.n)
		rc = recon_cfg_err(L,
				   "'entry_type' is mapped but the side has no 'entry_types' map");
	else if (s->cols[RECON_COL_REFUND_AMOUNT] && s->cols[RECON_COL_AMOUNT_MINOR])
		rc = recon_cfg_err(L, "'refund_amount' is decimal text: use it with 'amount', not "
				      "'amount_minor'");
	recon_cfg_pop(L);
	return rc;
}

static int side_currency(struct recon_cfg *L, struct recon_side *s)
{
	int rc = 0;

	if (!s->currency)
		return 0;
	recon_cfg_push(L, "currency");
	for (char *p = s->currency; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (recon_money_exponent(s->currency) < 0)
		rc = recon_cfg_err(L, "unknown ISO 4217 currency '%s'", s->currency);
	recon_cfg_pop(L);
	return rc;
}

/*
 * One side: its keys, its backend ("kind"), the backend's own keys (a csv
 * format profile first), the keys every side takes, where it reads, the
 * roles it maps, the backend's checks of them.
 */
static int load_side(struct recon_cfg *L, json_t *root, const char *name, struct recon_side *s,
		     json_t **profile)
{
	json_t *obj = json_object_get(root, name);
	const struct recon_source_backend *b;
	int rc;

	s->role = name;
	recon_cfg_push(L, name);
	if (!obj) {
		rc = recon_cfg_err(L, "missing (an object describing the %s source)", name);
		goto out;
	}
	if (!json_is_object(obj)) {
		rc = recon_cfg_err(L, "expected an object");
		goto out;
	}
	if ((rc = side_keys_check(L, obj, NULL)) < 0 || (rc = recon_cfg_description(L, obj)) < 0 ||
	    (rc = side_backend(L, obj, s)) < 0 || (rc = side_keys_check(L, obj, s->backend)) < 0)
		goto out;
	b = s->backend;
	if ((b->validate && (rc = b->validate(L, obj, s, profile)) < 0) ||
	    (rc = recon_cfg_side_common(L, obj, s, (b->caps & RECON_SOURCE_TABLE) != 0)) < 0 ||
	    (rc = recon_cfg_duration(L, obj, "idle_timeout", &s->idle_timeout_ms)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "path", &s->path)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "table", &s->table)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "dsn_env", &s->dsn_env)) < 0 ||
	    (rc = side_path(L, s)) < 0 || (rc = side_server(L, s)) < 0 ||
	    (rc = side_columns(L, s)) < 0 || (b->check && (rc = b->check(L, obj, s)) < 0))
		goto out;
	rc = side_currency(L, s);
out:
	recon_cfg_pop(L);
	return rc;
}

static void side_release(struct recon_side *s)
{
	if (s->backend && s->backend->release)
		s->backend->release(s);
	free(s->path);
	free(s->table);
	free(s->dsn_env);
	for (int c = 0; c < RECON_COL__COUNT; c++) {
		free(s->cols[c]);
		recon_cfg_strv_free(s->alt_cols[c]);
	}
	free(s->tz_name);
	free(s->time_format);
	recon_cfg_strv_free(s->key_first_of);
	recon_tz_free(s->tz);
	free(s->currency);
	recon_cfg_map_release(&s->status_map);
	recon_cfg_map_release(&s->entry_types);
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
	recon_cfg_strv_free(job->actions.transition_from);
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
static int check_template(struct recon_cfg *L, const char *t)
{
	for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
		const char *end = strchr(p, '}');
		if (!end || recon_job_tvar(p + 1, (size_t)(end - p - 1)) < 0)
			return recon_cfg_err(
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
static int get_replay(struct recon_cfg *L, json_t *v, struct recon_job *job)
{
	struct recon_actions_cfg *a = &job->actions;
	json_t *rv = json_object_get(v, "replay_values"), *t;
	char *mode = NULL;
	const char *col;
	int rc;

	if ((rc = recon_cfg_str(L, v, "replay", &mode)) < 0)
		return rc;
	if (mode) {
		recon_cfg_push(L, "replay");
		if (!strcmp(mode, "insert"))
			a->replay = RECON_REPLAY_INSERT;
		else if (!strcmp(mode, "outbox"))
			a->replay = RECON_REPLAY_OUTBOX;
		else
			rc = recon_cfg_err(
			    L, "expected \"insert\" (a row in the local table) or \"outbox\" "
			       "(a replay event in recon_outbox)");
		recon_cfg_pop(L);
		free(mode);
		if (rc < 0)
			return rc;
	}
	if (!rv)
		return 0;
	recon_cfg_push(L, "replay_values");
	if (!json_is_object(rv) || json_object_size(rv) > RECON_REPLAY_VALUES_MAX) {
		rc = recon_cfg_err(
		    L,
		    "expected an object of at most %d columns such as {\"updated_at\": "
		    "\"{now}\"}",
		    RECON_REPLAY_VALUES_MAX);
		recon_cfg_pop(L);
		return rc;
	}
	a->replay_values = recon_xcalloc(json_object_size(rv) + 1, sizeof(*a->replay_values));
	json_object_foreach(rv, col, t)
	{
		struct recon_replay_value *x = &a->replay_values[a->nreplay_values];
		int role = local_role_of_column(&job->local, col);
		recon_cfg_push(L, col);
		if (!recon_job_ident_ok(col))
			rc = recon_cfg_err(L, "not a valid SQL identifier");
		else if (role >= 0)
			rc = recon_cfg_err(
			    L, "the local side's '%s' column: a replay writes it itself",
			    recon_col_name(role));
		else if (json_is_string(t))
			rc = check_template(L, json_string_value(t));
		else if (!json_is_integer(t) && !json_is_null(t))
			rc = recon_cfg_err(L, "expected a template string, an integer or null");
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
		recon_cfg_pop(L);
		if (rc < 0)
			break;
	}
	recon_cfg_pop(L);
	return rc;
}

/* "replay_status": {STATUS: WORD}: the local word a replay writes, one the local map knows. */
static int get_replay_status(struct recon_cfg *L, json_t *v, struct recon_job *job)
{
	struct recon_actions_cfg *a = &job->actions;
	json_t *rs = json_object_get(v, "replay_status"), *w;
	const char *st;
	int rc = 0;

	if (!rs)
		return 0;
	recon_cfg_push(L, "replay_status");
	if (!json_is_object(rs)) {
		rc = recon_cfg_err(L, "expected an object such as {\"success\": \"PAID\"}");
		recon_cfg_pop(L);
		return rc;
	}
	json_object_foreach(rs, st, w)
	{
		int i;
		for (i = 0; i < RECON_ST__COUNT; i++)
			if (!strcmp(st, recon_cfg_statuses[i]))
				break;
		recon_cfg_push(L, st);
		if (i == RECON_ST__COUNT)
			rc =
			    recon_cfg_err(L, "unknown status (success, refunded, closed, pending)");
		else if (!json_is_string(w) || !json_string_length(w))
			rc = recon_cfg_err(L, "expected the local status word to write");
		else if (recon_map_get(&job->local.status_map, json_string_value(w),
				       json_string_length(w)) != i)
			rc = recon_cfg_err(L, "'%s' does not map to '%s' in the local status map",
					   json_string_value(w), st);
		recon_cfg_pop(L);
		if (rc < 0)
			break;
		free(a->replay_status[i]);
		a->replay_status[i] = recon_xstrdup(json_string_value(w));
	}
	recon_cfg_pop(L);
	return rc;
}

/* "transition": {"to": WORD, "from": [WORDS]}: the guarded move of stuck orders. */
static int get_transition(struct recon_cfg *L, json_t *v, struct recon_job *job)
{
	static const char *const tkeys[] = {"to", "from", NULL};
	struct recon_actions_cfg *a = &job->actions;
	json_t *tr = json_object_get(v, "transition");
	int rc = 0;

	if (!tr)
		return 0;
	recon_cfg_push(L, "transition");
	if (!json_is_object(tr))
		rc = recon_cfg_err(L, "expected {\"to\": WORD, \"from\": [WORDS]}");
	else if ((rc = recon_cfg_keys(L, tr, tkeys)) == 0 &&
		 (rc = recon_cfg_str(L, tr, "to", &a->transition_to)) == 0)
		rc = recon_cfg_strv(L, tr, "from", &a->transition_from);
	if (rc == 0 && (!a->transition_to || !a->transition_from || !a->transition_from[0]))
		rc = recon_cfg_err(L, "needs both 'to' and a non-empty 'from'");
	if (rc == 0 && !job->local.cols[RECON_COL_STATUS])
		rc = recon_cfg_err(L, "the local side maps no status column to move");
	recon_cfg_pop(L);
	return rc;
}

/* "actions": writer, replay words, re-recon_cfg_push event, guarded transition. */
static int get_actions(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const keys[] = {
	    "enabled", "writer_dsn_env", "replay_status", "repush_event",  "transition", "attempts",
	    "breaker", "timeout",	 "replay",	  "replay_values", NULL};
	struct recon_actions_cfg *a = &job->actions;
	json_t *v = json_object_get(root, "actions");
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
	recon_cfg_push(L, "actions");
	if (!json_is_object(v)) {
		rc = recon_cfg_err(L, "expected an object");
		goto out;
	}
	if ((rc = recon_cfg_keys(L, v, keys)) < 0 ||
	    (rc = recon_cfg_bool(L, v, "enabled", &a->enabled)) < 0 ||
	    (rc = recon_cfg_str(L, v, "writer_dsn_env", &a->writer_dsn_env)) < 0 ||
	    (rc = recon_cfg_str(L, v, "repush_event", &a->repush_event)) < 0 ||
	    (rc = recon_cfg_count(L, v, "attempts", &a->attempts)) < 0 ||
	    (rc = recon_cfg_count(L, v, "breaker", &a->breaker)) < 0 ||
	    (rc = recon_cfg_duration(L, v, "timeout", &a->timeout_ms)) < 0 ||
	    (rc = get_replay(L, v, job)) < 0)
		goto out;
	if (a->attempts < 1 || a->attempts > 10) {
		recon_cfg_push(L, "attempts");
		rc = recon_cfg_err(L, "expected 1 to 10 tries per action");
		recon_cfg_pop(L);
		goto out;
	}
	if (a->writer_dsn_env) {
		recon_cfg_push(L, "writer_dsn_env");
		if (!recon_source_has(&job->local, RECON_SOURCE_DSN))
			rc = recon_cfg_err(
			    L, "only postgres and mysql local sides take a writer DSN (a "
			       "sqlite local side is written through its own file)");
		else if (!recon_cfg_env_name_ok(a->writer_dsn_env))
			rc = recon_cfg_env_name_err(L, a->writer_dsn_env);
		recon_cfg_pop(L);
		if (rc < 0)
			goto out;
	}
	if ((rc = get_replay_status(L, v, job)) < 0 || (rc = get_transition(L, v, job)) < 0)
		goto out;
out:
	recon_cfg_pop(L);
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
static int get_partition(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const keys[] = {"count", NULL};
	json_t *v = json_object_get(root, "partition");
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, "partition");
	if (!json_is_object(v) || !json_object_get(v, "count"))
		rc = recon_cfg_err(L, "expected an object with 'count'");
	else if ((rc = recon_cfg_keys(L, v, keys)) == 0 &&
		 (rc = recon_cfg_count(L, v, "count", &job->partition_count)) == 0 &&
		 (job->partition_count < 1 || job->partition_count > RECON_PARTITION_MAX)) {
		recon_cfg_push(L, "count");
		rc = recon_cfg_err(L, "must be between 1 and %d", RECON_PARTITION_MAX);
		recon_cfg_pop(L);
	}
	recon_cfg_pop(L);
	return rc;
}

/* "t1": {"after", "max_days"} and "ledger": {"retention", "settled"} (DESIGN "Days, watermarks and
 * locks"). */
static int get_t1_ledger(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const t1_keys[] = {"after", "max_days", NULL};
	static const char *const ledger_keys[] = {"retention", "settled", NULL};
	json_t *v;
	int rc = 0;

	if ((v = json_object_get(root, "t1"))) {
		recon_cfg_push(L, "t1");
		if (!json_is_object(v))
			rc = recon_cfg_err(L, "expected an object with 'after' and/or 'max_days'");
		else if ((rc = recon_cfg_keys(L, v, t1_keys)) == 0 &&
			 (rc = recon_cfg_duration(L, v, "after", &job->t1_after_ms)) == 0 &&
			 (rc = recon_cfg_count(L, v, "max_days", &job->t1_max_days)) == 0 &&
			 job->t1_max_days < 1) {
			recon_cfg_push(L, "max_days");
			rc = recon_cfg_err(L, "must be at least 1");
			recon_cfg_pop(L);
		}
		recon_cfg_pop(L);
		if (rc < 0)
			return rc;
	}
	if ((v = json_object_get(root, "ledger"))) {
		recon_cfg_push(L, "ledger");
		if (!json_is_object(v))
			rc = recon_cfg_err(L,
					   "expected an object with 'retention' and/or 'settled'");
		else if ((rc = recon_cfg_keys(L, v, ledger_keys)) == 0 &&
			 (rc = recon_cfg_duration(L, v, "retention", &job->ledger_retention_ms)) ==
			     0)
			rc = recon_cfg_duration(L, v, "settled", &job->ledger_settled_ms);
		recon_cfg_pop(L);
	}
	return rc;
}

/* Side zone and currency defaults, then the zone itself. */
static int finish_side(struct recon_cfg *L, struct recon_job *job, struct recon_side *s)
{
	int rc;

	if (!s->tz_name)
		s->tz_name = recon_xstrdup(job->tz_name);
	if (!s->currency)
		s->currency = recon_xstrdup(job->currency);
	struct recon_err e;

	recon_cfg_push(L, s->role);
	recon_cfg_push(L, "timezone");
	recon_err_init(&e);
	rc = recon_tz_load(&s->tz, s->tz_name, &e);
	if (rc < 0)
		rc = recon_cfg_err(L, "%s", e.msg);
	recon_cfg_pop(L);
	recon_cfg_pop(L);
	return rc;
}

/* The defaults of every key the job file may leave out. */
static struct recon_job *job_new(const char *path)
{
	struct recon_job *job = recon_xcalloc(1, sizeof(*job));
	const char *slash = strrchr(path, '/');

	job->file = recon_xstrdup(path);
	if (slash && slash == path)
		job->dir = recon_xstrdup("/");
	else
		job->dir = slash ? recon_xstrndup(path, (size_t)(slash - path)) : recon_xstrdup("");
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
	return job;
}

/* "job", "timezone", "currency": the job's name, its business day's zone, its currency. */
static int get_head(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	char *cur = NULL;
	struct recon_err e;
	int rc;

	if ((rc = recon_cfg_keys(L, root, job_keys)) < 0 ||
	    (rc = recon_cfg_description(L, root)) < 0 ||
	    (rc = recon_cfg_str(L, root, "job", &job->name)) < 0 ||
	    (rc = recon_cfg_str(L, root, "timezone", &job->tz_name)) < 0 ||
	    (rc = recon_cfg_str(L, root, "currency", &cur)) < 0)
		goto out;
	recon_cfg_push(L, "job");
	if (!job->name)
		rc = recon_cfg_err(L, "missing (the job's name)");
	else if (!job_name_ok(job->name))
		rc = recon_cfg_err(
		    L, "'%s' is not a valid job name ([A-Za-z0-9_.-], at most %d characters)",
		    job->name, RECON_NAME_MAX);
	recon_cfg_pop(L);
	if (rc < 0)
		goto out;
	if (!job->tz_name)
		job->tz_name = recon_xstrdup("UTC");
	recon_cfg_push(L, "timezone");
	recon_err_init(&e);
	if (recon_tz_load(&job->tz, job->tz_name, &e) < 0)
		rc = recon_cfg_err(L, "%s", e.msg);
	recon_cfg_pop(L);
	if (rc < 0)
		goto out;
	recon_cfg_push(L, "currency");
	if (!cur) {
		rc = recon_cfg_err(L, "missing (the ISO 4217 code of the job's currency)");
	} else if (strlen(cur) != 3 || recon_money_exponent(cur) < 0) {
		rc = recon_cfg_err(L, "unknown ISO 4217 currency '%s'", cur);
	} else {
		for (int i = 0; i < 3; i++)
			job->currency[i] = (char)toupper((unsigned char)cur[i]);
		job->exponent = recon_money_exponent(job->currency);
	}
	recon_cfg_pop(L);
out:
	free(cur);
	return rc;
}

/* "status_map": {"upstream", "local"}; a side mapping a status column needs one; zones. */
static int get_status_maps(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const sm_keys[] = {"upstream", "local", NULL};
	json_t *v = json_object_get(root, "status_map");
	int rc = 0;

	if (v) {
		recon_cfg_push(L, "status_map");
		if (!json_is_object(v))
			rc = recon_cfg_err(
			    L, "expected an object with 'upstream' and/or 'local' maps");
		else if ((rc = recon_cfg_keys(L, v, sm_keys)) == 0 &&
			 (rc = recon_cfg_map(L, v, "upstream", recon_cfg_statuses, RECON_ST__COUNT,
					     &job->upstream.status_map)) == 0)
			rc = recon_cfg_map(L, v, "local", recon_cfg_statuses, RECON_ST__COUNT,
					   &job->local.status_map);
		recon_cfg_pop(L);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < 2; i++) {
		struct recon_side *s = i ? &job->local : &job->upstream;
		if (s->cols[RECON_COL_STATUS] && !s->status_map.n) {
			recon_cfg_push(L, "status_map");
			recon_cfg_push(L, s->role);
			rc = recon_cfg_err(
			    L,
			    "missing: the %s side maps a 'status' column, so its words "
			    "need a status map",
			    s->role);
			recon_cfg_pop(L);
			recon_cfg_pop(L);
			return rc;
		}
		if ((rc = finish_side(L, job, s)) < 0)
			return rc;
	}
	return 0;
}

/* "hot": {"size", "lag", "start", "max_windows"}. */
static int get_hot(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const hot_keys[] = {"size", "lag", "start", "max_windows", NULL};
	json_t *v = json_object_get(root, "hot");
	int rc = 0;

	if (!v)
		return 0;
	recon_cfg_push(L, "hot");
	if (!json_is_object(v))
		rc = recon_cfg_err(L, "expected an object");
	else if ((rc = recon_cfg_keys(L, v, hot_keys)) == 0 &&
		 (rc = recon_cfg_duration(L, v, "size", &job->hot_size_ms)) == 0 &&
		 (rc = recon_cfg_duration(L, v, "lag", &job->hot_lag_ms)) == 0 &&
		 (rc = recon_cfg_count(L, v, "max_windows", &job->hot_max_windows)) == 0)
		rc = get_instant(L, v, "start", job->tz, &job->hot_start_set, &job->hot_start);
	if (rc == 0 && job->hot_max_windows < 1) {
		recon_cfg_push(L, "max_windows");
		rc = recon_cfg_err(L, "must be at least 1");
		recon_cfg_pop(L);
	}
	if (rc == 0 && job->hot_size_ms <= 0) {
		recon_cfg_push(L, "size");
		rc = recon_cfg_err(L, "must be longer than zero");
		recon_cfg_pop(L);
	}
	recon_cfg_pop(L);
	return rc;
}

/* "check": {"t1", "hot"}: each {"max_lag", "max_age"}. */
static int get_check(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	static const char *const check_keys[] = {"t1", "hot", NULL};
	static const char *const mode_keys[] = {"max_lag", "max_age", NULL};
	json_t *v = json_object_get(root, "check");
	int rc;

	if (!v)
		return 0;
	recon_cfg_push(L, "check");
	if (!json_is_object(v))
		rc = recon_cfg_err(L, "expected an object with 't1' and/or 'hot'");
	else
		rc = recon_cfg_keys(L, v, check_keys);
	for (int m = 0; m < 2 && rc == 0; m++) {
		json_t *mv = json_object_get(v, m ? "hot" : "t1");
		if (!mv)
			continue;
		recon_cfg_push(L, m ? "hot" : "t1");
		if (!json_is_object(mv))
			rc = recon_cfg_err(L, "expected an object with 'max_lag' and/or 'max_age'");
		else if ((rc = recon_cfg_keys(L, mv, mode_keys)) == 0 &&
			 (rc = recon_cfg_duration(L, mv, "max_lag", &job->check_max_lag_ms[m])) ==
			     0)
			rc = recon_cfg_duration(L, mv, "max_age", &job->check_max_age_ms[m]);
		recon_cfg_pop(L);
	}
	recon_cfg_pop(L);
	return rc;
}

/* The durations and counts of the top level, then the margin's bound. */
static int get_limits(struct recon_cfg *L, json_t *root, struct recon_job *job)
{
	int rc;

	if ((rc = recon_cfg_count(L, root, "amount_tolerance_minor", &job->tolerance_minor)) < 0 ||
	    (rc = recon_cfg_duration(L, root, "stuck_after", &job->stuck_after_ms)) < 0 ||
	    (rc = recon_cfg_duration(L, root, "margin", &job->margin_ms)) < 0 ||
	    (rc = recon_cfg_duration(L, root, "settle_after", &job->settle_after_ms)) < 0 ||
	    (rc = recon_cfg_duration(L, root, "refund_after", &job->refund_after_ms)) < 0 ||
	    (rc = recon_cfg_duration(L, root, "lock_wait", &job->lock_wait_ms)) < 0 ||
	    (rc = get_t1_ledger(L, root, job)) < 0 || (rc = get_partition(L, root, job)) < 0 ||
	    (rc = recon_cfg_count(L, root, "max_rejects", &job->max_rejects)) < 0 ||
	    (rc = recon_cfg_str(L, root, "state", &job->state_path)) < 0 ||
	    (rc = recon_cfg_str(L, root, "heartbeat", &job->heartbeat_path)) < 0 ||
	    (rc = get_hot(L, root, job)) < 0 || (rc = get_check(L, root, job)) < 0)
		return rc;
	if (job->settle_after_ms < 0)
		job->settle_after_ms = job->margin_ms;
	if (job->margin_ms > RECON_MS_PER_DAY) {
		recon_cfg_push(L, "margin");
		rc = recon_cfg_err(L, "must be at most 1d");
		recon_cfg_pop(L);
	}
	return rc;
}

/* The state store's and heartbeat's paths, resolved; the effective configuration's text. */
static int finish_job(struct recon_job *job, json_t *root, json_t *prof_up, json_t *prof_local,
		      struct recon_err *err)
{
	char *p =
	    recon_cfg_path_join(job->dir, job->state_path ? job->state_path : "state/recon.db");
	json_t *profiles = json_object(), *eff = json_object();
	int rc = 0;

	free(job->state_path);
	job->state_path = p;
	if (job->heartbeat_path) {
		p = recon_cfg_path_join(job->dir, job->heartbeat_path);
		free(job->heartbeat_path);
		job->heartbeat_path = p;
	}
	/* The effective configuration: job file plus the profiles it pulled in. */
	json_object_set(profiles, "upstream", prof_up ? prof_up : json_null());
	json_object_set(profiles, "local", prof_local ? prof_local : json_null());
	json_object_set(eff, "job", root);
	json_object_set(eff, "profiles", profiles);
	job->config_text = json_dumps(eff, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!job->config_text)
		rc = recon_err_set(err, RECON_EINTERNAL, job->file, "cannot serialise the job");
	json_decref(eff);
	json_decref(profiles);
	return rc;
}

int recon_job_load(struct recon_job **out, const char *path, struct recon_err *err)
{
	struct recon_job *job = job_new(path);
	struct recon_cfg L = {0};
	char *text = NULL;
	size_t len = 0;
	json_t *root = NULL, *prof_up = NULL, *prof_local = NULL;
	int rc = RECON_ECONFIG;

	*out = NULL;
	if (!(text = recon_cfg_slurp(path, &len, err)) ||
	    !(root = recon_cfg_parse(path, text, len, err)))
		goto out;
	L.file = path;
	L.text = text;
	L.dir = job->dir;
	L.err = err;
	if ((rc = get_head(&L, root, job)) < 0 ||
	    (rc = load_side(&L, root, "upstream", &job->upstream, &prof_up)) < 0 ||
	    (rc = load_side(&L, root, "local", &job->local, &prof_local)) < 0 ||
	    (rc = get_status_maps(&L, root, job)) < 0 || (rc = get_actions(&L, root, job)) < 0 ||
	    (rc = get_limits(&L, root, job)) < 0 ||
	    (rc = finish_job(job, root, prof_up, prof_local, err)) < 0)
		goto out;
	*out = job;
	job = NULL;
out:
	json_decref(prof_up);
	json_decref(prof_local);
	json_decref(root);
	free(text);
	recon_job_free(job);
	return rc;
}
