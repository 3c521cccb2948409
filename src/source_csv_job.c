/*
 * The csv backend's descriptor (recon_source_csv): its capabilities, the keys
 * of a csv side and the format profiles they may name (loaded from the
 * folders recon_job.h lists, or the copies compiled into the binary) read
 * into side->csv, and what the core asks about a statement besides reading
 * it (a size estimate, the file's digest). The reader itself is
 * src/source_csv.c. recon_job calls this file through the descriptor and
 * never reads a csv key itself.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_cfg.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_source.h"
#include "recon_zip.h"

static const char *const profile_keys[] = {
    "description",     "encoding",     "delimiter",	"quote",
    "header",	       "skip_lines",   "strip",		"comment_prefixes",
    "stop_prefixes",   "columns",      "entry_types",	"status_map",
    "currency",	       "timezone",     "thousands",	"alt_columns",
    "delimiter_guard", "reject_empty", "zip_entry",	"zip_exclude",
    "totals",	       "time_format",  "totals_ignore", NULL};

/* "alt_columns": role -> [names]: header names tried in order when the role's column is absent. */
static int get_alt_columns(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	json_t *alts = json_object_get(obj, "alt_columns"), *v;
	const char *role;
	int rc = 0;

	if (!alts)
		return 0;
	recon_cfg_push(L, "alt_columns");
	if (!json_is_object(alts)) {
		rc = recon_cfg_err(L, "expected an object mapping roles to arrays of column names");
		goto out;
	}
	json_object_foreach(alts, role, v)
	{
		int c = recon_cfg_role(role);
		recon_cfg_push(L, role);
		if (c < 0)
			rc = recon_cfg_err(L, "unknown column role");
		else if (!json_is_array(v) || !json_array_size(v))
			rc = recon_cfg_err(L, "expected a non-empty array of column names");
		else if (!s->cols[c])
			rc = recon_cfg_err(L,
					   "the role has alternatives but no column in 'columns'");
		recon_cfg_pop(L);
		if (rc < 0 || (rc = recon_cfg_strv(L, alts, role, &s->alt_cols[c])) < 0)
			goto out;
	}
out:
	recon_cfg_pop(L);
	return rc;
}

/* Sums of one totals group: {"label": "column", ...}. */
static int get_totals_sums(struct recon_cfg *L, json_t *g, struct recon_totals_group *grp)
{
	json_t *sums = json_object_get(g, "sums"), *v;
	const char *label;
	int rc = 0;

	if (!sums)
		return 0;
	recon_cfg_push(L, "sums");
	if (!json_is_object(sums)) {
		rc = recon_cfg_err(L, "expected an object mapping total names to detail columns");
		goto out;
	}
	grp->sums = recon_xcalloc(json_object_size(sums) + 1, sizeof(*grp->sums));
	json_object_foreach(sums, label, v)
	{
		recon_cfg_push(L, label);
		if (!json_is_string(v) || !json_string_length(v)) {
			rc = recon_cfg_err(L, "expected a column name");
			recon_cfg_pop(L);
			goto out;
		}
		grp->sums[grp->nsums].label = recon_xstrdup(label);
		grp->sums[grp->nsums].column = recon_xstrdup(json_string_value(v));
		grp->nsums++;
		recon_cfg_pop(L);
	}
out:
	recon_cfg_pop(L);
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
	recon_cfg_strv_free(t->informational);
	memset(t, 0, sizeof(*t));
}

/*
 * "totals": {"in": "trailer"|"footer", "required": bool,
 *            "groups": [{"count": "...", "entry_type": "...", "sums": {...}}]}
 */
static int get_totals(struct recon_cfg *L, json_t *obj, struct recon_side *s)
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
	totals_release(&s->csv.totals);
	recon_cfg_push(L, "totals");
	if (json_is_null(t)) /* a side may drop its profile's totals */
		goto out;
	if (!json_is_object(t)) {
		rc = recon_cfg_err(L, "expected an object");
		goto out;
	}
	if ((rc = recon_cfg_keys(L, t, keys)) < 0 || (rc = recon_cfg_str(L, t, "in", &in)) < 0 ||
	    (rc = recon_cfg_bool(L, t, "required", &s->csv.totals.required)) < 0 ||
	    (rc = recon_cfg_strv(L, t, "informational", &s->csv.totals.informational)) < 0)
		goto out;
	recon_cfg_push(L, "in");
	if (in && !strcmp(in, "trailer"))
		s->csv.totals.in = RECON_TOTALS_TRAILER;
	else if (in && !strcmp(in, "footer"))
		s->csv.totals.in = RECON_TOTALS_FOOTER;
	else
		rc = recon_cfg_err(L, "expected \"trailer\" or \"footer\"");
	recon_cfg_pop(L);
	if (rc < 0)
		goto out;
	groups = json_object_get(t, "groups");
	recon_cfg_push(L, "groups");
	if (!json_is_array(groups) || !json_array_size(groups) || json_array_size(groups) > 16) {
		rc = recon_cfg_err(L, "expected an array of 1 to 16 groups");
		recon_cfg_pop(L);
		goto out;
	}
	s->csv.totals.groups =
	    recon_xcalloc(json_array_size(groups), sizeof(*s->csv.totals.groups));
	json_array_foreach(groups, i, g)
	{
		struct recon_totals_group *grp = &s->csv.totals.groups[s->csv.totals.ngroups++];
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		recon_cfg_push(L, idx);
		if (!json_is_object(g))
			rc = recon_cfg_err(L, "expected an object");
		else if ((rc = recon_cfg_keys(L, g, gkeys)) == 0 &&
			 (rc = recon_cfg_str(L, g, "count", &grp->count)) == 0 &&
			 (rc = recon_cfg_str(L, g, "entry_type", &grp->entry_type)) == 0 &&
			 (rc = get_totals_sums(L, g, grp)) == 0 && !grp->count)
			rc = recon_cfg_err(
			    L, "'count' is missing (the name or line prefix of the count)");
		recon_cfg_pop(L);
		if (rc < 0)
			break;
	}
	recon_cfg_pop(L);
out:
	recon_cfg_pop(L);
	free(in);
	if (rc < 0)
		totals_release(&s->csv.totals);
	return rc;
}

/* The CSV layout keys, shared by profiles and inline sides. */
static int get_csv_layout(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	int64_t skip = s->csv.skip_lines;
	int rc;

	if ((rc = recon_cfg_str(L, obj, "encoding", &s->csv.encoding)) < 0 ||
	    (rc = recon_cfg_char(L, obj, "delimiter", false, &s->csv.delimiter)) < 0 ||
	    (rc = recon_cfg_char(L, obj, "quote", true, &s->csv.quote)) < 0 ||
	    (rc = recon_cfg_bool(L, obj, "header", &s->csv.header)) < 0 ||
	    (rc = recon_cfg_count(L, obj, "skip_lines", &skip)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "strip", &s->csv.strip)) < 0 ||
	    (rc = recon_cfg_strv(L, obj, "comment_prefixes", &s->csv.comment_prefixes)) < 0 ||
	    (rc = recon_cfg_strv(L, obj, "stop_prefixes", &s->csv.stop_prefixes)) < 0 ||
	    (rc = recon_cfg_char(L, obj, "delimiter_guard", true, &s->csv.delim_guard)) < 0 ||
	    (rc = recon_cfg_bool(L, obj, "reject_empty", &s->csv.reject_empty)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "zip_entry", &s->csv.zip_entry)) < 0 ||
	    (rc = recon_cfg_str(L, obj, "zip_exclude", &s->csv.zip_exclude)) < 0 ||
	    (rc = get_totals(L, obj, s)) < 0 ||
	    (rc = recon_cfg_strv(L, obj, "totals_ignore", &s->csv.totals_ignore)) < 0)
		return rc;
	if (skip > 1000) {
		recon_cfg_push(L, "skip_lines");
		rc = recon_cfg_err(L, "at most 1000 lines can be skipped");
		recon_cfg_pop(L);
		return rc;
	}
	s->csv.skip_lines = (unsigned)skip;
	return 0;
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
	recon_cfg_exe_prefix(prefix, sizeof(prefix));
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

/* Reads a format profile into s (before the side's own keys override it). */
static int load_profile(struct recon_cfg *outer, struct recon_side *s, json_t **profile_out)
{
	char *path = NULL, *text = NULL;
	const char *builtin = NULL;
	struct recon_buf searched;
	size_t len = 0;
	json_t *root = NULL;
	struct recon_cfg L = {0};
	int rc = 0;

	recon_buf_init(&searched);
	recon_cfg_push(outer, "format");
	if (!profile_name_ok(s->csv.format)) {
		rc = recon_cfg_err(outer, "invalid profile name '%s'", s->csv.format);
		goto out;
	}
	if (!find_profile(outer->dir, s->csv.format, &path, &builtin, &searched)) {
		/* the folder list can outgrow recon_err's message: then it goes first, whole */
		if (searched.len + 2 * strlen(s->csv.format) > 160) {
			recon_log(RECON_LOG_ERROR, "format profile '%s' searched: %s",
				  s->csv.format, searched.s);
			recon_buf_reset(&searched);
			recon_buf_adds(&searched, "the folders listed above");
		}
		rc = recon_cfg_err(outer,
				   "unknown format profile '%s': not built in, no %s.json in %s",
				   s->csv.format, s->csv.format, searched.s);
		goto out;
	}
	if (builtin) {
		text = recon_xstrdup(builtin);
		len = strlen(text);
		recon_buf_reset(&searched);
		recon_buf_addf(&searched, "(built in)/%s.json", s->csv.format);
		path = recon_buf_detach(&searched);
	} else if (!(text = recon_cfg_slurp(path, &len, outer->err))) {
		rc = RECON_ECONFIG;
		goto out;
	}
	root = recon_cfg_parse(path, text, len, outer->err);
	if (!root) {
		rc = RECON_ECONFIG;
		goto out;
	}
	L.file = path;
	L.text = text;
	L.dir = outer->dir;
	L.err = outer->err;
	if ((rc = recon_cfg_keys(&L, root, profile_keys)) < 0 ||
	    (rc = recon_cfg_description(&L, root)) < 0 || (rc = get_csv_layout(&L, root, s)) < 0 ||
	    (rc = recon_cfg_side_common(&L, root, s, false)) < 0 ||
	    (rc = get_alt_columns(&L, root, s)) < 0)
		goto out;
	*profile_out = json_incref(root);
out:
	recon_cfg_pop(outer);
	json_decref(root);
	free(text);
	free(path);
	recon_buf_release(&searched);
	return rc;
}

static int csv_validate(struct recon_cfg *L, json_t *obj, struct recon_side *s, json_t **profile)
{
	int rc;

	s->csv.delimiter = ',';
	s->csv.quote = '"';
	s->csv.header = true;
	if ((rc = recon_cfg_str(L, obj, "format", &s->csv.format)) < 0 ||
	    (s->csv.format && (rc = load_profile(L, s, profile)) < 0) ||
	    (rc = get_csv_layout(L, obj, s)) < 0)
		return rc;
	return recon_cfg_bool(L, obj, "allow_empty", &s->csv.allow_empty);
}

/* Control totals name what the layout must have to find them. */
static int check_totals(struct recon_cfg *L, const struct recon_side *s)
{
	const struct recon_totals_rule *t = &s->csv.totals;
	int rc = 0;

	if (t->in == RECON_TOTALS_NONE)
		return 0;
	recon_cfg_push(L, "totals");
	if (t->in == RECON_TOTALS_TRAILER && !s->csv.stop_prefixes)
		rc = recon_cfg_err(
		    L, "trailer totals need 'stop_prefixes' (where the trailer starts)");
	else if (t->in == RECON_TOTALS_FOOTER && !s->csv.comment_prefixes)
		rc = recon_cfg_err(L, "footer totals need 'comment_prefixes' (the footer's lines)");
	else if (!s->csv.header)
		rc = recon_cfg_err(L, "totals name detail columns: the csv needs a header");
	for (size_t i = 0; rc == 0 && i < t->ngroups; i++)
		if (t->groups[i].entry_type && !s->cols[RECON_COL_ENTRY_TYPE])
			rc = recon_cfg_err(L,
					   "a group filters on 'entry_type', which is not mapped");
	recon_cfg_pop(L);
	return rc;
}

static int csv_check(struct recon_cfg *L, json_t *obj, struct recon_side *s)
{
	int rc;

	if ((rc = get_alt_columns(L, obj, s)) < 0 || (rc = check_totals(L, s)) < 0)
		return rc;
	if (s->csv.delim_guard && s->csv.quote) {
		recon_cfg_push(L, "delimiter_guard");
		rc = recon_cfg_err(L,
				   "needs \"quote\": \"\" (a guarded delimiter means no quoting)");
		recon_cfg_pop(L);
		return rc;
	}
	if (s->csv.encoding &&
	    (!strcasecmp(s->csv.encoding, "UTF-8") || !strcasecmp(s->csv.encoding, "UTF8"))) {
		free(s->csv.encoding);
		s->csv.encoding = NULL;
	}
	return 0;
}

static void csv_release(struct recon_side *s)
{
	struct recon_side_csv *c = &s->csv;

	free(c->format);
	free(c->encoding);
	free(c->strip);
	recon_cfg_strv_free(c->comment_prefixes);
	recon_cfg_strv_free(c->stop_prefixes);
	free(c->zip_entry);
	free(c->zip_exclude);
	totals_release(&c->totals);
	recon_cfg_strv_free(c->totals_ignore);
	memset(c, 0, sizeof(*c));
}

/*
 * The inflated size of a .zip's member or a .gz (its trailer's ISIZE: the
 * last member's size mod 2^32, so at least what the sample read), and the
 * first up to `sample` inflated bytes in buf: their count. 0 if it cannot
 * tell (a damaged archive: the read says why).
 */
static size_t packed_sample(const struct recon_side *side, int fd, const char *path,
			    const struct stat *st, char *buf, size_t sample, uint64_t *size)
{
	struct recon_zip *z = NULL;
	struct recon_gz *g = NULL;
	struct recon_err err;
	unsigned char head[4], tail[4];
	size_t got = 0;
	long n;

	*size = 0;
	recon_err_init(&err);
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
		return 0;
	if (recon_zip_magic(head, sizeof(head))) {
		if (recon_zip_open(&z, fd, path, side->csv.encoding, side->csv.zip_entry,
				   side->csv.zip_exclude, NULL, &err) < 0)
			return 0;
		*size = recon_zip_member_size(z);
		while (got < sample && (n = recon_zip_read(z, buf + got, sample - got, &err)) > 0)
			got += (size_t)n;
		recon_zip_close(z);
	} else if (recon_zip_gz_magic(head, sizeof(head)) && st->st_size > 18 &&
		   pread(fd, tail, sizeof(tail), st->st_size - 4) == (ssize_t)sizeof(tail) &&
		   lseek(fd, 0, SEEK_SET) == 0 &&
		   recon_zip_gz_open(&g, fd, path, NULL, &err) == 0) {
		*size = (uint64_t)tail[0] | (uint64_t)tail[1] << 8 | (uint64_t)tail[2] << 16 |
			(uint64_t)tail[3] << 24;
		while (got < sample &&
		       (n = recon_zip_gz_read(g, buf + got, sample - got, &err)) > 0)
			got += (size_t)n;
		recon_zip_gz_close(g);
		if (*size < got)
			*size = got;
	}
	return got;
}

/*
 * Rows a csv side's file likely holds: its size over the mean line length of
 * its first 256 KiB (a .zip's member or a .gz: both inflated); 0 when unknown
 * (a database, a FIFO, an unreadable file or archive). It only sizes the
 * compare's tables up front and decides whether the run may speculate.
 */
static uint64_t csv_estimate(const struct recon_side *side, const struct recon_window *win,
			     uint64_t *bytes)
{
	const size_t sample = (size_t)256 << 10;
	char *path = NULL, *buf = NULL;
	struct stat st;
	uint64_t rows = 0, lines = 0;
	ssize_t n;
	size_t len;
	int fd = -1;

	*bytes = 0;
	if (!side->path)
		return 0;
	path = recon_job_expand_path(side->path, win->day);
	len = strlen(path);
	/*
	 * Regular files only: opening a FIFO (a statement streamed in) would block
	 * for a writer, then consume the data the real read needs.
	 */
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		goto out;
	buf = recon_xmalloc(sample);
	{
		/* a .zip or .gz: its lines counted inflated, against its inflated size */
		uint64_t size = (uint64_t)st.st_size, inflated;
		n = (ssize_t)packed_sample(side, fd, path, &st, buf, sample, &inflated);
		if (n > 0)
			size = inflated;
		else if (len < 4 || strcmp(path + len - 4, ".zip"))
			n = pread(fd, buf, sample, 0);
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
		if (n > 0 && lines)
			rows = size / ((uint64_t)n / lines);
	}
	*bytes = (uint64_t)st.st_size;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(path);
	return rows;
}

/* A csv side's own job keys. */
static const struct recon_source_key csv_keys[] = {
    {"format", "format profiles apply to csv sources only"},
    {"encoding", NULL},
    {"delimiter", NULL},
    {"quote", NULL},
    {"header", NULL},
    {"skip_lines", NULL},
    {"strip", NULL},
    {"comment_prefixes", NULL},
    {"stop_prefixes", NULL},
    {"alt_columns", NULL},
    {"delimiter_guard", NULL},
    {"reject_empty", NULL},
    {"allow_empty", NULL},
    {"zip_entry", NULL},
    {"zip_exclude", NULL},
    {"totals", NULL},
    {"totals_ignore", NULL},
    {NULL, NULL},
};

const struct recon_source_backend recon_source_csv = {
    .name = "csv",
    .caps = RECON_SOURCE_FILE | RECON_SOURCE_PATH,
    .path_what = "statement",
    .keys = csv_keys,
    .validate = csv_validate,
    .check = csv_check,
    .release = csv_release,
    .ops = &recon_source_csv_ops,
    .estimate = csv_estimate,
    .digest = recon_source_csv_sha256,
};
