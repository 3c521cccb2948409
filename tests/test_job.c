/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_money.h"
#include "recon_source.h"
#include "recon_time.h"

/*
 * Tests for the job loader. The DESIGN example job and a stand-in profile live in
 * tests/data/jobs/design/. Error cases copy both into a fresh mkdtemp folder, edit the job
 * text (one find/replace each) and check err.code, the exact `where` (file:LINE: 'dotted.key',
 * the line computed from the edited text) and a substring of err.msg.
 */

#define MAX_CREATED 32

struct fx {
	char dir[64];		    /* the mkdtemp folder */
	char *created[MAX_CREATED]; /* files and folders made in it, removed in reverse */
	int ncreated;
	char *base;	/* the DESIGN example job text */
	char *text;	/* the job text last written by write_job() */
	char *job_path; /* <dir>/job.json */
};

/* ---- helpers ------------------------------------------------------------ */

static void assert_contains_at(const char *hay, const char *needle, const char *file, int line)
{
	if (!hay || !strstr(hay, needle)) {
		print_error("%s:%d: '%s' does not contain '%s'\n", file, line, hay ? hay : "(null)",
			    needle);
		fail();
	}
}
#define assert_contains(hay, needle) assert_contains_at((hay), (needle), __FILE__, __LINE__)

static char *xasprintf(const char *fmt, ...) RECON_PRINTF(1, 2);
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s;
	long n;

	if (!f) {
		print_error("cannot open '%s': %s\n", path, strerror(errno));
		fail();
	}
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* tests/data/jobs/<rel>: $RECON_SOURCE_DIR (set by ctest), else next to this file. */
static char *data_path(const char *rel)
{
	const char *src = getenv("RECON_SOURCE_DIR");
	const char *me = __FILE__;
	const char *tail = strstr(me, "tests/test_job.c");

	if (src && src[0])
		return xasprintf("%s/tests/data/jobs/%s", src, rel);
	return xasprintf("%.*stests/data/jobs/%s", tail ? (int)(tail - me) : 0, me, rel);
}

static void remember(struct fx *fx, char *path)
{
	assert_true(fx->ncreated < MAX_CREATED);
	fx->created[fx->ncreated++] = path;
}

/* Writes <dir>/<rel>, making its folders; returns the path (owned by fx). */
static const char *put_file(struct fx *fx, const char *rel, const char *text)
{
	char *path = xasprintf("%s/%s", fx->dir, rel);
	size_t n = strlen(text);
	FILE *f;

	for (char *p = path + strlen(fx->dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0700) == 0)
			remember(fx, xasprintf("%s", path));
		else
			assert_int_equal(errno, EEXIST);
		*p = '/';
	}
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	for (int i = 0; i < fx->ncreated; i++) {
		if (!strcmp(fx->created[i], path)) {
			free(path);
			return fx->created[i];
		}
	}
	remember(fx, path);
	return path;
}

static int count_of(const char *text, const char *s)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, s)) != NULL; p++)
		n++;
	return n;
}

/* text with `find` (which must occur exactly once) replaced by `repl`; caller frees. */
static char *replace_once(const char *text, const char *find, const char *repl)
{
	const char *at = strstr(text, find);

	if (count_of(text, find) != 1) {
		print_error("'%s' occurs %d times in the job, expected once\n", find,
			    count_of(text, find));
		fail();
	}
	return xasprintf("%.*s%s%s", (int)(at - text), text, repl, at + strlen(find));
}

/* 1-based line of `marker`, which must occur exactly once in text. */
static int line_of(const char *text, const char *marker)
{
	const char *at = strstr(text, marker);
	int line = 1;

	if (count_of(text, marker) != 1) {
		print_error("marker '%s' occurs %d times, expected once\n", marker,
			    count_of(text, marker));
		fail();
	}
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

/* Writes `text` as <dir>/job.json and loads it. */
static int load_text(struct fx *fx, const char *text, struct recon_job **job, struct recon_err *err)
{
	free(fx->text);
	fx->text = xasprintf("%s", text);
	put_file(fx, "job.json", text);
	recon_err_init(err);
	return recon_job_load(job, fx->job_path, err);
}

/* The DESIGN example with edits applied: {find, replace, find, replace, ..., NULL}. */
static int load_edited(struct fx *fx, const char *const *edits, struct recon_job **job,
		       struct recon_err *err)
{
	char *text = xasprintf("%s", fx->base);
	int rc;

	for (int i = 0; edits && edits[i]; i += 2) {
		char *next = replace_once(text, edits[i], edits[i + 1]);
		free(text);
		text = next;
	}
	rc = load_text(fx, text, job, err);
	free(text);
	return rc;
}

static int load_edit(struct fx *fx, const char *find, const char *repl, struct recon_job **job,
		     struct recon_err *err)
{
	const char *edits[] = {find, repl, NULL};

	return load_edited(fx, edits, job, err);
}

/*
 * The last load failed with RECON_ECONFIG (exit 78), *job stayed NULL, `where` is
 * "<file>:<line of marker>: '<key>'" (or "<file>: '<key>'" when marker is NULL: a key that is
 * absent has no line), and msg contains msg_sub.
 */
static void check_config_error(const struct fx *fx, const char *file, int rc,
			       const struct recon_job *job, const struct recon_err *err,
			       const char *key, const char *marker, const char *msg_sub)
{
	char *want;

	assert_int_equal(rc, RECON_ECONFIG);
	assert_int_equal(err->code, RECON_ECONFIG);
	assert_int_equal(recon_err_exit_code(err->code), 78);
	assert_null(job);
	if (marker)
		want = xasprintf("%s:%d: '%s'", file, line_of(fx->text, marker), key);
	else
		want = xasprintf("%s: '%s'", file, key);
	assert_string_equal(err->where, want);
	assert_contains(err->msg, msg_sub);
	free(want);
}

/* One edit of the DESIGN example that must fail. */
struct bad_edit {
	const char *find, *repl;
	const char *key;    /* dotted key expected in `where` */
	const char *marker; /* text on the line `where` must name; NULL: no line */
	const char *msg;    /* substring of err.msg */
};

static void check_bad_edits(struct fx *fx, const struct bad_edit *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct bad_edit *c = &cases[i];
		struct recon_job *job = NULL;
		struct recon_err err;
		int rc = load_edit(fx, c->find, c->repl, &job, &err);

		print_message("case %zu\n", i);
		check_config_error(fx, fx->job_path, rc, job, &err, c->key, c->marker, c->msg);
	}
}

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char *design, *profile, *profile_text;

	assert_non_null(fx);
	design = data_path("design/job.json");
	profile = data_path("design/formats/wechatpay-trade-bill.json");
	fx->base = read_text(design);
	profile_text = read_text(profile);
	/* after the fixtures are read: a failed setup leaves no folder behind */
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/recon_test_job_XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	fx->job_path = xasprintf("%s/job.json", fx->dir);
	put_file(fx, "formats/wechatpay-trade-bill.json", profile_text);
	free(profile_text);
	free(profile);
	free(design);
	unsetenv("RECON_FORMATS_DIR");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	unsetenv("RECON_FORMATS_DIR");
	for (int i = fx->ncreated - 1; i >= 0; i--) {
		remove(fx->created[i]);
		free(fx->created[i]);
	}
	rmdir(fx->dir);
	free(fx->base);
	free(fx->text);
	free(fx->job_path);
	free(fx);
	return 0;
}

static void assert_side_defaults_csv_layout(const struct recon_side *s)
{
	assert_int_equal(s->csv.delimiter, ',');
	assert_int_equal(s->csv.quote, '"');
	assert_true(s->csv.header);
	assert_int_equal(s->csv.skip_lines, 0);
	assert_null(s->csv.encoding);
}

/* ---- the DESIGN example --------------------------------------------------- */

static void test_job_design_example_loads(void **state)
{
	char *path = data_path("design/job.json");
	char *dir = xasprintf("%.*s", (int)(strrchr(path, '/') - path), path);
	char *want;
	struct recon_job *job = NULL;
	struct recon_err err;
	const struct recon_side *up, *lo;

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_job_load(&job, path, &err), 0);
	assert_int_equal(err.code, 0);
	assert_non_null(job);
	up = &job->upstream;
	lo = &job->local;

	assert_string_equal(job->name, "wechatpay_payments");
	assert_string_equal(job->file, path);
	assert_string_equal(job->dir, dir);
	assert_string_equal(job->tz_name, "Asia/Shanghai");
	assert_non_null(job->tz);
	assert_string_equal(job->currency, "CNY");
	assert_int_equal(job->exponent, 2);

	/* upstream: csv, columns and status words from the profile */
	assert_string_equal(up->role, "upstream");
	assert_ptr_equal(up->backend, &recon_source_csv);
	want = xasprintf("%s/statements/{date}.csv", dir);
	assert_string_equal(up->path, want);
	free(want);
	assert_string_equal(up->csv.format, "wechatpay-trade-bill");
	assert_null(up->table);
	assert_null(up->dsn_env);
	assert_int_equal(up->nkey, 1);
	assert_string_equal(up->cols[RECON_COL_KEY0], "商户订单号");
	assert_null(up->cols[RECON_COL_KEY1]);
	assert_string_equal(up->cols[RECON_COL_AMOUNT], "应结订单金额");
	assert_null(up->cols[RECON_COL_AMOUNT_MINOR]);
	assert_string_equal(up->cols[RECON_COL_REFUND_AMOUNT], "退款金额");
	assert_string_equal(up->cols[RECON_COL_CURRENCY], "货币种类");
	assert_string_equal(up->cols[RECON_COL_STATUS], "交易状态");
	assert_string_equal(up->cols[RECON_COL_TIME], "交易时间");
	assert_string_equal(up->cols[RECON_COL_TXN_ID], "微信订单号");
	assert_null(up->cols[RECON_COL_ENTRY_TYPE]);
	assert_int_equal(up->status_map.n, 4);
	assert_int_equal(recon_map_get(&up->status_map, "SUCCESS", 7), RECON_ST_SUCCESS);
	assert_int_equal(recon_map_get(&up->status_map, "REFUND", 6), RECON_ST_REFUNDED);
	assert_int_equal(recon_map_get(&up->status_map, "REVOKED", 7), RECON_ST_CLOSED);
	assert_int_equal(recon_map_get(&up->status_map, "NOTPAY", 6), RECON_ST_PENDING);
	assert_int_equal(up->entry_types.n, 0);
	assert_side_defaults_csv_layout(up);
	assert_string_equal(up->csv.strip, "`");
	assert_non_null(up->csv.stop_prefixes);
	assert_string_equal(up->csv.stop_prefixes[0], "总交易单数");
	assert_null(up->csv.stop_prefixes[1]);
	assert_null(up->csv.comment_prefixes);
	assert_string_equal(up->tz_name, "Asia/Shanghai");
	assert_non_null(up->tz);
	assert_string_equal(up->currency, "CNY");

	/* local: sqlite, its own columns, the job-level status map */
	assert_string_equal(lo->role, "local");
	assert_ptr_equal(lo->backend, &recon_source_sqlite);
	want = xasprintf("%s/flow.db", dir);
	assert_string_equal(lo->path, want);
	free(want);
	assert_null(lo->csv.format);
	assert_string_equal(lo->table, "payment_flow");
	assert_null(lo->dsn_env);
	assert_int_equal(lo->nkey, 1);
	assert_string_equal(lo->cols[RECON_COL_KEY0], "out_trade_no");
	assert_null(lo->cols[RECON_COL_AMOUNT]);
	assert_string_equal(lo->cols[RECON_COL_AMOUNT_MINOR], "amount_cents");
	assert_string_equal(lo->cols[RECON_COL_CURRENCY], "currency");
	assert_string_equal(lo->cols[RECON_COL_STATUS], "status");
	assert_string_equal(lo->cols[RECON_COL_TIME], "created_at");
	assert_null(lo->cols[RECON_COL_TXN_ID]);
	assert_int_equal(lo->status_map.n, 4);
	assert_int_equal(recon_map_get(&lo->status_map, "PAID", 4), RECON_ST_SUCCESS);
	assert_int_equal(recon_map_get(&lo->status_map, "PENDING", 7), RECON_ST_PENDING);
	assert_int_equal(recon_map_get(&lo->status_map, "REFUNDED", 8), RECON_ST_REFUNDED);
	assert_int_equal(recon_map_get(&lo->status_map, "FAILED", 6), RECON_ST_CLOSED);
	/* exact and case-sensitive; len counts */
	assert_int_equal(recon_map_get(&lo->status_map, "paid", 4), -1);
	assert_int_equal(recon_map_get(&lo->status_map, "PAIDX", 5), -1);
	assert_int_equal(recon_map_get(&lo->status_map, "PAIDX", 4), RECON_ST_SUCCESS);
	/* the csv layout is the csv backend's: a sqlite side leaves it zero */
	assert_int_equal(lo->csv.delimiter, 0);
	assert_false(lo->csv.header);
	assert_string_equal(lo->tz_name, "Asia/Shanghai");
	assert_non_null(lo->tz);
	assert_string_equal(lo->currency, "CNY");

	assert_int_equal(job->tolerance_minor, 0);
	assert_int_equal(job->stuck_after_ms, 15 * 60 * 1000);
	assert_int_equal(job->margin_ms, 10 * 60 * 1000);
	assert_int_equal(job->hot_size_ms, 5 * 60 * 1000);
	assert_int_equal(job->hot_lag_ms, 2 * 60 * 1000);
	assert_int_equal(job->max_rejects, 0);
	want = xasprintf("%s/state/recon.db", dir);
	assert_string_equal(job->state_path, want);
	free(want);
	want = xasprintf("%s/state/recon.prom", dir);
	assert_string_equal(job->heartbeat_path, want);
	free(want);
	assert_non_null(job->config_text);
	assert_true(strlen(job->config_text) > 0);

	recon_job_free(job);
	free(dir);
	free(path);
}

/* The same example copied elsewhere resolves against its new folder. */
static void test_job_paths_resolve_against_job_folder(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	char *want;

	assert_int_equal(load_text(fx, fx->base, &job, &err), 0);
	assert_string_equal(job->dir, fx->dir);
	want = xasprintf("%s/statements/{date}.csv", fx->dir);
	assert_string_equal(job->upstream.path, want);
	free(want);
	want = xasprintf("%s/flow.db", fx->dir);
	assert_string_equal(job->local.path, want);
	free(want);
	want = xasprintf("%s/state/recon.prom", fx->dir);
	assert_string_equal(job->heartbeat_path, want);
	free(want);
	recon_job_free(job);

	/* absolute paths stay as written */
	{
		const char *edits[] = {"\"path\": \"flow.db\"", "\"path\": \"/srv/flow.db\"",
				       "\"state\": \"state/recon.db\"",
				       "\"state\": \"/var/lib/recon/x.db\"", NULL};
		assert_int_equal(load_edited(fx, edits, &job, &err), 0);
		assert_string_equal(job->local.path, "/srv/flow.db");
		assert_string_equal(job->state_path, "/var/lib/recon/x.db");
		recon_job_free(job);
	}
}

/* Everything optional left out: defaults. */
static void test_job_defaults(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	char *want;
	static const char text[] =
	    "{\n"
	    "  \"job\": \"minimal-1.0\",\n"
	    "  \"currency\": \"usd\",\n"
	    "  \"upstream\": { \"kind\": \"csv\", \"path\": \"/data/bill.csv\",\n"
	    "    \"columns\": { \"key\": \"id\", \"amount\": \"amount\", \"time\": \"ts\",\n"
	    "                   \"status\": \"st\" } },\n"
	    "  \"local\": { \"kind\": \"csv\", \"path\": \"local.csv\", \"header\": false,\n"
	    "    \"delimiter\": \"\\\\t\", \"quote\": \"\", \"encoding\": \"utf8\",\n"
	    "    \"columns\": { \"key\": \"order no\", \"amount_minor\": \"amount (cents)\",\n"
	    "                   \"time\": \"when\", \"status\": \"state\" } },\n"
	    "  \"status_map\": { \"upstream\": { \"ok\": \"success\" },\n"
	    "                  \"local\": { \"1\": \"success\", \"0\": \"closed\" } }\n"
	    "}\n";

	assert_int_equal(load_text(fx, text, &job, &err), 0);
	assert_string_equal(job->name, "minimal-1.0");
	assert_string_equal(job->tz_name, "UTC");
	assert_non_null(job->tz);
	assert_string_equal(job->currency, "USD");
	assert_int_equal(job->exponent, 2);
	assert_int_equal(job->tolerance_minor, 0);
	assert_int_equal(job->stuck_after_ms, 15 * RECON_MS_PER_MIN);
	assert_int_equal(job->margin_ms, 10 * RECON_MS_PER_MIN);
	assert_int_equal(job->hot_size_ms, 5 * RECON_MS_PER_MIN);
	assert_int_equal(job->hot_lag_ms, 2 * RECON_MS_PER_MIN);
	assert_int_equal(job->max_rejects, 0);
	want = xasprintf("%s/state/recon.db", fx->dir);
	assert_string_equal(job->state_path, want);
	free(want);
	assert_null(job->heartbeat_path);

	assert_string_equal(job->upstream.path, "/data/bill.csv");
	assert_null(job->upstream.csv.format);
	assert_side_defaults_csv_layout(&job->upstream);
	assert_string_equal(job->upstream.tz_name, "UTC");
	assert_string_equal(job->upstream.currency, "USD");
	assert_int_equal(recon_map_get(&job->upstream.status_map, "ok", 2), RECON_ST_SUCCESS);

	/* a csv side's column names are free text, not SQL identifiers */
	assert_string_equal(job->local.cols[RECON_COL_KEY0], "order no");
	assert_string_equal(job->local.cols[RECON_COL_AMOUNT_MINOR], "amount (cents)");
	assert_int_equal(job->local.csv.delimiter, '\t');
	assert_int_equal(job->local.csv.quote, '\0');
	assert_false(job->local.csv.header);
	assert_null(job->local.csv.encoding); /* "utf8" is the default, normalised away */
	assert_int_equal(recon_map_get(&job->local.status_map, "0", 1), RECON_ST_CLOSED);
	recon_job_free(job);
}

static void test_job_currency_upper_cased(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	assert_int_equal(
	    load_edit(fx, "\"currency\": \"CNY\"", "\"currency\": \"jpy\"", &job, &err), 0);
	assert_string_equal(job->currency, "JPY");
	assert_int_equal(job->exponent, 0);
	assert_string_equal(job->local.currency, "JPY");
	recon_job_free(job);

	/* a side's own default currency */
	assert_int_equal(load_edit(fx, "\"table\": \"payment_flow\",",
				   "\"table\": \"payment_flow\", \"currency\": \"kwd\",", &job,
				   &err),
			 0);
	assert_string_equal(job->currency, "CNY");
	assert_string_equal(job->local.currency, "KWD");
	assert_string_equal(job->upstream.currency, "CNY");
	recon_job_free(job);
}

static void test_job_durations_in_ms(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	const char *edits[] = {"\"stuck_after\": \"15m\"",
			       "\"stuck_after\": \"1h30m\"",
			       "\"margin\": \"10m\"",
			       "\"margin\": \"90s\"",
			       "\"hot\": { \"size\": \"5m\", \"lag\": \"2m\" }",
			       "\"hot\": { \"size\": \"500ms\", \"lag\": \"0\" }",
			       "\"max_rejects\": 0",
			       "\"max_rejects\": \"12\"",
			       "\"amount_tolerance_minor\": 0",
			       "\"amount_tolerance_minor\": 3",
			       NULL};

	assert_int_equal(load_edited(fx, edits, &job, &err), 0);
	assert_int_equal(job->stuck_after_ms, 5400000);
	assert_int_equal(job->margin_ms, 90000);
	assert_int_equal(job->hot_size_ms, 500);
	assert_int_equal(job->hot_lag_ms, 0);
	assert_int_equal(job->max_rejects, 12); /* an integer may be given as digits */
	assert_int_equal(job->tolerance_minor, 3);
	recon_job_free(job);

	/* hot: one member alone keeps the other's default; margin may be a whole day */
	{
		const char *edits2[] = {"\"hot\": { \"size\": \"5m\", \"lag\": \"2m\" }",
					"\"hot\": { \"lag\": \"1m\" }", "\"margin\": \"10m\"",
					"\"margin\": \"1d\"", NULL};
		assert_int_equal(load_edited(fx, edits2, &job, &err), 0);
		assert_int_equal(job->hot_size_ms, 5 * RECON_MS_PER_MIN);
		assert_int_equal(job->hot_lag_ms, RECON_MS_PER_MIN);
		assert_int_equal(job->margin_ms, RECON_MS_PER_DAY);
		recon_job_free(job);
	}
}

static void test_job_composite_key(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	assert_int_equal(load_edit(fx, "\"key\": \"out_trade_no\"",
				   "\"key\": [\"merchant_id\", \"out_trade_no\"]", &job, &err),
			 0);
	assert_int_equal(job->local.nkey, 2);
	assert_string_equal(job->local.cols[RECON_COL_KEY0], "merchant_id");
	assert_string_equal(job->local.cols[RECON_COL_KEY1], "out_trade_no");
	assert_null(job->local.cols[RECON_COL_KEY2]);
	assert_null(job->local.cols[RECON_COL_KEY3]);
	recon_job_free(job);

	assert_int_equal(load_edit(fx, "\"key\": \"out_trade_no\"",
				   "\"key\": [\"a\", \"b\", \"c\", \"d\"]", &job, &err),
			 0);
	assert_int_equal(job->local.nkey, 4);
	assert_string_equal(job->local.cols[RECON_COL_KEY3], "d");
	recon_job_free(job);

	/* a one-element list is a plain key */
	assert_int_equal(
	    load_edit(fx, "\"key\": \"out_trade_no\"", "\"key\": [\"out_trade_no\"]", &job, &err),
	    0);
	assert_int_equal(job->local.nkey, 1);
	assert_string_equal(job->local.cols[RECON_COL_KEY0], "out_trade_no");
	recon_job_free(job);
}

static void test_job_composite_key_errors(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"key\": \"out_trade_no\"", "\"key\": []", "local.columns.key", "\"key\": []",
	     "a composite key has 1 to 4 columns"},
	    {"\"key\": \"out_trade_no\"", "\"key\": [\"a\", \"b\", \"c\", \"d\", \"e\"]",
	     "local.columns.key", "\"e\"", "a composite key has 1 to 4 columns"},
	    {"\"key\": \"out_trade_no\"", "\"key\": [\"merchant_id\", \"out-trade-no\"]",
	     "local.columns.key", "out-trade-no", "element 1: expected a valid SQL column name"},
	    {"\"key\": \"out_trade_no\"", "\"key\": [\"merchant_id\", 7]", "local.columns.key",
	     "\"merchant_id\", 7", "element 1: expected a valid SQL column name"},
	    {"\"key\": \"out_trade_no\"", "\"key\": [\"\"]", "local.columns.key", "\"key\": [\"\"]",
	     "element 0"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

/* ---- error paths --------------------------------------------------------- */

static void test_job_duplicate_key(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	char *want;
	int rc;

	rc = load_edit(fx, "\"margin\": \"10m\",", "\"margin\": \"10m\",\n  \"margin\": \"20m\",",
		       &job, &err);
	assert_int_equal(rc, RECON_ECONFIG);
	assert_int_equal(err.code, RECON_ECONFIG);
	assert_null(job);
	/* jansson's position: file:line:column, the line of the second "margin" */
	want = xasprintf("%s:%d:", fx->job_path, line_of(fx->text, "\"margin\": \"20m\""));
	assert_true(strncmp(err.where, want, strlen(want)) == 0);
	assert_true(strlen(err.where) > strlen(want)); /* a column follows */
	assert_contains(err.msg, "duplicate object key");
	assert_contains(err.msg, "margin");
	free(want);

	/* nested objects too */
	rc = load_edit(fx, "\"PAID\": \"success\",", "\"PAID\": \"success\", \"PAID\": \"closed\",",
		       &job, &err);
	assert_int_equal(rc, RECON_ECONFIG);
	want = xasprintf("%s:%d:", fx->job_path, line_of(fx->text, "\"PAID\": \"closed\""));
	assert_true(strncmp(err.where, want, strlen(want)) == 0);
	assert_contains(err.msg, "duplicate object key");
	free(want);
}

static void test_job_syntax_errors(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	char *want;
	int rc;

	rc = load_edit(fx, "\"margin\": \"10m\",", "\"margin\" \"10m\",", &job, &err);
	assert_int_equal(rc, RECON_ECONFIG);
	assert_null(job);
	want = xasprintf("%s:%d:", fx->job_path, line_of(fx->text, "\"margin\" \"10m\""));
	assert_true(strncmp(err.where, want, strlen(want)) == 0);
	assert_contains(err.msg, "':' expected");
	free(want);

	rc = load_text(fx, "[1, 2]\n", &job, &err);
	assert_int_equal(rc, RECON_ECONFIG);
	assert_null(job);
	assert_string_equal(err.where, fx->job_path);
	assert_string_equal(err.msg, "expected a JSON object at the top");

	rc = load_text(fx, "", &job, &err);
	assert_int_equal(rc, RECON_ECONFIG);
	assert_null(job);
}

static void test_job_missing_file(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = (struct recon_job *)fx; /* must be reset to NULL */
	struct recon_err err;
	char *path = xasprintf("%s/nope.json", fx->dir);
	char *want = xasprintf("cannot open '%s': No such file or directory", path);

	recon_err_init(&err);
	assert_int_equal(recon_job_load(&job, path, &err), RECON_ECONFIG);
	assert_null(job);
	assert_int_equal(err.code, RECON_ECONFIG);
	assert_string_equal(err.msg, want);
	free(want);
	free(path);
}

static void test_job_unknown_keys(void **state)
{
	static const struct bad_edit cases[] = {
	    /* top level */
	    {"\"margin\": \"10m\",", "\"margin\": \"10m\",\n  \"margins\": \"10m\",", "margins",
	     "\"margins\"", "unknown key"},
	    /* a side */
	    {"\"table\": \"payment_flow\",", "\"table\": \"payment_flow\", \"tabel\": \"x\",",
	     "local.tabel", "\"tabel\"", "unknown key"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"delimeter\": \";\" }",
	     "upstream.delimeter", "\"delimeter\"", "unknown key"},
	    /* hot, status_map */
	    {"\"lag\": \"2m\"", "\"lags\": \"2m\"", "hot.lags", "\"lags\"", "unknown key"},
	    {"\"status_map\": { \"local\": {", "\"status_map\": { \"remote\": {},\n \"local\": {",
	     "status_map.remote", "\"remote\"", "unknown key"},
	    /* column roles */
	    {"\"time\": \"created_at\" }", "\"time\": \"created_at\",\n \"amount_major\": \"x\" }",
	     "local.columns.amount_major", "\"amount_major\"", "unknown column role"},
	    {"\"time\": \"created_at\" }", "\"time\": \"created_at\",\n \"key[1]\": \"x\" }",
	     "local.columns.key[1]", "\"key[1]\"", "unknown column role"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_wrong_types(void **state)
{
	static const struct bad_edit cases[] = {
	    /* string expected, got a number */
	    {"\"job\": \"wechatpay_payments\"", "\"job\": 42", "job", "\"job\": 42",
	     "expected a string"},
	    {"\"currency\": \"CNY\"", "\"currency\": 156", "currency", "\"currency\": 156",
	     "expected a string"},
	    {"\"table\": \"payment_flow\"", "\"table\": 7", "local.table", "\"table\": 7",
	     "expected a string"},
	    {"\"path\": \"flow.db\"", "\"path\": \"\"", "local.path", "\"path\": \"\"",
	     "must be a non-empty string"},
	    {"\"kind\": \"sqlite\"", "\"kind\": 3", "local.kind", "\"kind\": 3",
	     "expected a string"},
	    {"\"state\": \"state/recon.db\"", "\"state\": true", "state", "\"state\": true",
	     "expected a string"},
	    {"\"time\": \"created_at\"", "\"time\": 5", "local.columns.time", "\"time\": 5",
	     "expected a column name"},
	    {"\"PAID\": \"success\"", "\"PAID\": 1", "status_map.local.PAID", "\"PAID\": 1",
	     "expected a string"},
	    /* boolean */
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"header\": \"yes\" }", "upstream.header",
	     "\"header\"", "expected true or false"},
	    /* integers: not a real, not negative */
	    {"\"max_rejects\": 0", "\"max_rejects\": 1.5", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer (not a real number)"},
	    {"\"max_rejects\": 0", "\"max_rejects\": 1.0", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer"},
	    {"\"max_rejects\": 0", "\"max_rejects\": -1", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer"},
	    {"\"max_rejects\": 0", "\"max_rejects\": \"-3\"", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer"},
	    {"\"max_rejects\": 0", "\"max_rejects\": \"1.5\"", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer"},
	    {"\"max_rejects\": 0", "\"max_rejects\": \"ten\"", "max_rejects", "\"max_rejects\"",
	     "expected a non-negative integer"},
	    {"\"amount_tolerance_minor\": 0", "\"amount_tolerance_minor\": -5",
	     "amount_tolerance_minor", "\"amount_tolerance_minor\"",
	     "expected a non-negative integer"},
	    /* objects */
	    {"\"hot\": { \"size\": \"5m\", \"lag\": \"2m\" }", "\"hot\": \"5m\"", "hot", "\"hot\"",
	     "expected an object"},
	    {"\"status_map\": { \"local\": {",
	     "\"status_map\": { \"upstream\": \"x\",\n \"local\": {", "status_map.upstream",
	     "\"upstream\": \"x\"", "expected an object mapping words"},
	    /* durations are strings */
	    {"\"stuck_after\": \"15m\"", "\"stuck_after\": 15", "stuck_after", "\"stuck_after\"",
	     "expected a duration string"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_columns_not_an_object(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	const char *edits[] = {
	    "\"columns\": { \"key\": \"out_trade_no\", \"amount_minor\": \"amount_cents\",",
	    "\"columns\": [\"out_trade_no\", \"amount_cents\",",
	    "\"currency\": \"currency\", \"status\": \"status\", \"time\": \"created_at\" } }",
	    "\"currency\", \"status\", \"created_at\"] }", NULL};
	int rc = load_edited(fx, edits, &job, &err);

	check_config_error(fx, fx->job_path, rc, job, &err, "local.columns", "\"columns\"",
			   "expected an object mapping roles to column names");
}

static void test_job_sources(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"kind\": \"sqlite\"", "\"kind\": \"oracle\"", "local.kind", "\"kind\": \"oracle\"",
	     "unknown source kind 'oracle' (csv, sqlite, postgres or mysql)"},
	    {"\"kind\": \"sqlite\", ", "", "local.kind", "\"payment_flow\"", "missing"},
	    {"\"kind\": \"csv\"", "\"kind\": \"CSV\"", "upstream.kind", "\"CSV\"",
	     "unknown source kind 'CSV'"},
	    /* sqlite needs a file, a table */
	    {"\"path\": \"flow.db\", ", "", "local.path", "\"payment_flow\"",
	     "missing (the SQLite database file)"},
	    {"\"table\": \"payment_flow\",", "", "local.table", "\"flow.db\"",
	     "missing (the table to read)"},
	    {"\"upstream\": { \"kind\": \"csv\", \"path\": \"statements/{date}.csv\", \"format\": "
	     "\"wechatpay-trade-bill\" }",
	     "\"upstream\": []", "upstream", "\"upstream\"", "expected an object"},
	    /* keys a kind does not take */
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"table\": \"t\" }", "upstream.table",
	     "\"table\": \"t\"", "csv sources have no table"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"dsn_env\": \"X\" }", "upstream.dsn_env",
	     "\"dsn_env\"", "only postgres and mysql sources take a connection string"},
	    {"\"kind\": \"sqlite\",", "\"kind\": \"sqlite\", \"dsn_env\": \"X\",", "local.dsn_env",
	     "\"dsn_env\"", "only postgres and mysql sources take a connection string"},
	    {"\"kind\": \"sqlite\",", "\"kind\": \"sqlite\", \"format\": \"wechatpay-trade-bill\",",
	     "local.format", "\"kind\": \"sqlite\"", "format profiles apply to csv sources only"},
	    {"\"table\": \"payment_flow\",", "\"table\": \"payment_flow\", \"delimiter\": \";\",",
	     "local.delimiter", "\"delimiter\"", "applies to csv sources only"},
	    {"\"table\": \"payment_flow\",", "\"table\": \"payment_flow\", \"header\": true,",
	     "local.header", "\"header\"", "applies to csv sources only"},
	    /* postgres and mysql: dsn_env, not path */
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",", "\"kind\": \"postgres\",",
	     "local.dsn_env", "\"payment_flow\"",
	     "missing (the environment variable holding the connection string)"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",", "\"kind\": \"mysql\",",
	     "local.dsn_env", "\"payment_flow\"",
	     "missing (the environment variable holding the connection string)"},
	    {"\"kind\": \"sqlite\",", "\"kind\": \"postgres\", \"dsn_env\": \"RECON_LOCAL_DSN\",",
	     "local.path", "\"path\": \"flow.db\"",
	     "a postgres source takes 'dsn_env', not 'path'"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",",
	     "\"kind\": \"postgres\", \"dsn_env\": \"RECON-LOCAL-DSN\",", "local.dsn_env",
	     "\"dsn_env\"", "'RECON-LOCAL-DSN' is not a valid environment variable name"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",",
	     "\"kind\": \"mysql\", \"dsn_env\": \"1DSN\",", "local.dsn_env", "\"dsn_env\"",
	     "'1DSN' is not a valid environment variable name"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",",
	     "\"kind\": \"postgres\", \"dsn_env\": \"$DSN\",", "local.dsn_env", "\"dsn_env\"",
	     "'$DSN' is not a valid environment variable name"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\",",
	     "\"kind\": \"postgres\", \"dsn_env\": \"postgresql://u:p@h/db\",", "local.dsn_env",
	     "\"dsn_env\"", "looks like a connection string itself"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * Issue 12 #11: a whole DSN pasted where the variable's name belongs is
 * refused without echoing it: the password appears in no part of the error.
 */
static void test_job_dsn_in_dsn_env_not_echoed(void **state)
{
	static const char *const pasted[] = {
	    "\"kind\": \"postgres\", \"dsn_env\": \"postgresql://u:s3cr3t@db.example/pay\",",
	    "\"kind\": \"mysql\", \"dsn_env\": \"mysql://u:s3cr3t@db.example/pay\",",
	    "\"kind\": \"postgres\", \"dsn_env\": \"host=db password=s3cr3t\",",
	    "\"kind\": \"mysql\", \"dsn_env\": \"u:s3cr3t@tcp(db:3306)/pay\",",
	};
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	for (size_t i = 0; i < sizeof(pasted) / sizeof(pasted[0]); i++) {
		recon_err_init(&err);
		assert_int_equal(load_edit(fx, "\"kind\": \"sqlite\", \"path\": \"flow.db\",",
					   pasted[i], &job, &err),
				 RECON_ECONFIG);
		assert_null(job);
		if (strstr(err.msg, "s3cr3t") || strstr(err.where, "s3cr3t"))
			fail_msg("the password is echoed: %s: %s", err.where, err.msg);
		assert_non_null(strstr(err.msg, "looks like a connection string itself"));
		assert_non_null(strstr(err.where, "dsn_env"));
	}
}

static void test_job_database_sources_load(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	assert_int_equal(load_edit(fx, "\"kind\": \"sqlite\", \"path\": \"flow.db\",",
				   "\"kind\": \"postgres\", \"dsn_env\": \"RECON_LOCAL_DSN\",",
				   &job, &err),
			 0);
	assert_ptr_equal(job->local.backend, &recon_source_postgres);
	assert_string_equal(job->local.dsn_env, "RECON_LOCAL_DSN");
	assert_null(job->local.path);
	assert_string_equal(job->local.table, "payment_flow");
	recon_job_free(job);

	assert_int_equal(load_edit(fx, "\"kind\": \"sqlite\", \"path\": \"flow.db\",",
				   "\"kind\": \"mysql\", \"dsn_env\": \"_dsn2\",", &job, &err),
			 0);
	assert_ptr_equal(job->local.backend, &recon_source_mysql);
	assert_string_equal(job->local.dsn_env, "_dsn2");
	recon_job_free(job);

	/* a local flow exported to csv: either kind serves either side */
	assert_int_equal(load_edit(fx,
				   "\"kind\": \"sqlite\", \"path\": \"flow.db\", \"table\": "
				   "\"payment_flow\",",
				   "\"kind\": \"csv\", \"path\": \"export/{yyyymmdd}.csv\",", &job,
				   &err),
			 0);
	assert_ptr_equal(job->local.backend, &recon_source_csv);
	assert_null(job->local.table);
	recon_job_free(job);
}

static void test_job_sql_identifiers(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"table\": \"payment_flow\"", "\"table\": \"flow; DROP TABLE x\"", "local.table",
	     "DROP TABLE", "'flow; DROP TABLE x' is not a valid SQL identifier"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\", \"table\": \"payment_flow\"",
	     "\"kind\": \"postgres\", \"dsn_env\": \"RECON_LOCAL_DSN\", \"table\": \"flow; DROP "
	     "TABLE x\"",
	     "local.table", "DROP TABLE", "'flow; DROP TABLE x' is not a valid SQL identifier"},
	    {"\"kind\": \"sqlite\", \"path\": \"flow.db\", \"table\": \"payment_flow\"",
	     "\"kind\": \"mysql\", \"dsn_env\": \"RECON_LOCAL_DSN\", \"table\": \"flow; DROP "
	     "TABLE x\"",
	     "local.table", "DROP TABLE", "'flow; DROP TABLE x' is not a valid SQL identifier"},
	    {"\"table\": \"payment_flow\"", "\"table\": \"public.payment_flow\"", "local.table",
	     "public.payment_flow", "not a valid SQL identifier"},
	    {"\"table\": \"payment_flow\"", "\"table\": \"\\\"payment_flow\\\"\"", "local.table",
	     "\"table\"", "not a valid SQL identifier"},
	    /* column names of sql sources */
	    {"\"time\": \"created_at\"", "\"time\": \"created at\"", "local.columns.time",
	     "\"created at\"", "'created at' is not a valid SQL identifier"},
	    {"\"amount_minor\": \"amount_cents\"", "\"amount_minor\": \"amount_cents/100\"",
	     "local.columns.amount_minor", "amount_cents/100", "not a valid SQL identifier"},
	    {"\"status\": \"status\"", "\"status\": \"status --\"", "local.columns.status",
	     "\"status --\"", "not a valid SQL identifier"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_values(void **state)
{
	static const struct bad_edit cases[] = {
	    /* job name */
	    {"\"job\": \"wechatpay_payments\"", "\"job\": \"wechat pay\"", "job", "\"job\"",
	     "'wechat pay' is not a valid job name"},
	    {"\"job\": \"wechatpay_payments\"", "\"job\": \".hidden\"", "job", "\"job\"",
	     "not a valid job name"},
	    {"\"job\": \"wechatpay_payments\",", "", "job", NULL, "missing (the job's name)"},
	    /* currency */
	    {"\"currency\": \"CNY\"", "\"currency\": \"XYZ\"", "currency", "\"currency\": \"XYZ\"",
	     "unknown ISO 4217 currency 'XYZ'"},
	    {"\"currency\": \"CNY\"", "\"currency\": \"CNYY\"", "currency",
	     "\"currency\": \"CNYY\"", "unknown ISO 4217 currency 'CNYY'"},
	    {"\"currency\": \"CNY\"", "\"currency\": \"¥\"", "currency", "\"currency\": \"¥\"",
	     "unknown ISO 4217 currency"},
	    {"\"table\": \"payment_flow\",", "\"table\": \"payment_flow\", \"currency\": \"abc\",",
	     "local.currency", "\"currency\": \"abc\"", "unknown ISO 4217 currency 'ABC'"},
	    /* time zones */
	    {"\"timezone\": \"Asia/Shanghai\"", "\"timezone\": \"Mars/Olympus\"", "timezone",
	     "\"timezone\"", "unknown time zone 'Mars/Olympus'"},
	    {"\"timezone\": \"Asia/Shanghai\"", "\"timezone\": \"../../etc/passwd\"", "timezone",
	     "\"timezone\"", "time zone"},
	    {"\"table\": \"payment_flow\",",
	     "\"table\": \"payment_flow\", \"timezone\": \"Nowhere/City\",", "local.timezone",
	     "\"Nowhere/City\"", "unknown time zone 'Nowhere/City'"},
	    /* durations */
	    {"\"margin\": \"10m\"", "\"margin\": \"5 minutes\"", "margin", "\"margin\"",
	     "5 minutes"},
	    {"\"stuck_after\": \"15m\"", "\"stuck_after\": \"-5m\"", "stuck_after",
	     "\"stuck_after\"", "-5m"},
	    {"\"stuck_after\": \"15m\"", "\"stuck_after\": \"15\"", "stuck_after",
	     "\"stuck_after\"", "missing unit"},
	    {"\"size\": \"5m\"", "\"size\": \"5 minutes\"", "hot.size", "\"size\"", "5 minutes"},
	    {"\"size\": \"5m\"", "\"size\": \"0\"", "hot.size", "\"size\"",
	     "must be longer than zero"},
	    {"\"margin\": \"10m\"", "\"margin\": \"25h\"", "margin", "\"margin\"",
	     "must be at most 1d"},
	    /* csv layout */
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"delimiter\": \"\" }",
	     "upstream.delimiter", "\"delimiter\"", "expected exactly one ASCII character"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"delimiter\": \";;\" }",
	     "upstream.delimiter", "\"delimiter\"", "expected exactly one ASCII character"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"quote\": \"\\n\" }", "upstream.quote",
	     "\"quote\"", "expected exactly one ASCII character"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"skip_lines\": 1001 }",
	     "upstream.skip_lines", "\"skip_lines\"", "at most 1000 lines"},
	    {"\"format\": \"wechatpay-trade-bill\" }",
	     "\"format\": \"wechatpay-trade-bill\",\n    \"comment_prefixes\": [\"#\", \"\"] }",
	     "upstream.comment_prefixes", "\"comment_prefixes\"",
	     "element 1: expected a non-empty string"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_status_maps(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"PAID\": \"success\"", "\"PAID\": \"paid\"", "status_map.local.PAID", "\"PAID\"",
	     "unknown value 'paid' (expected one of success, refunded, closed, pending)"},
	    {"\"FAILED\": \"closed\"", "\"FAILED\": \"Closed\"", "status_map.local.FAILED",
	     "\"FAILED\"", "unknown value 'Closed'"},
	    /* the local side maps a status column but nothing maps its words */
	    {"  \"status_map\": { \"local\": { \"PAID\": \"success\", \"PENDING\": \"pending\",\n"
	     "                             \"REFUNDED\": \"refunded\", \"FAILED\": \"closed\" } "
	     "},\n",
	     "", "status_map.local", NULL,
	     "missing: the local side maps a 'status' column, so its words need a status map"},
	    {"\"local\": { \"PAID\"", "\"upstream\": {}, \"local\": {}, \"x\": { \"PAID\"",
	     "status_map.x", "\"x\"", "unknown key"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_status_map_merges(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	/* job-level words add to (and override) the profile's upstream map */
	assert_int_equal(load_edit(fx, "\"status_map\": { \"local\": {",
				   "\"status_map\": { \"upstream\": { \"CLOSED\": \"closed\", "
				   "\"NOTPAY\": \"closed\" },\n \"local\": {",
				   &job, &err),
			 0);
	assert_int_equal(job->upstream.status_map.n, 5);
	assert_int_equal(recon_map_get(&job->upstream.status_map, "SUCCESS", 7), RECON_ST_SUCCESS);
	assert_int_equal(recon_map_get(&job->upstream.status_map, "CLOSED", 6), RECON_ST_CLOSED);
	assert_int_equal(recon_map_get(&job->upstream.status_map, "NOTPAY", 6), RECON_ST_CLOSED);
	recon_job_free(job);

	/* a side may carry its own map instead of the job-level one */
	{
		const char *edits[] = {
		    "\"table\": \"payment_flow\",",
		    "\"table\": \"payment_flow\", \"status_map\": { \"OK\": \"success\" },",
		    "  \"status_map\": { \"local\": { \"PAID\": \"success\", \"PENDING\": "
		    "\"pending\",\n                             \"REFUNDED\": \"refunded\", "
		    "\"FAILED\": \"closed\" } },\n",
		    "", NULL};
		assert_int_equal(load_edited(fx, edits, &job, &err), 0);
		assert_int_equal(job->local.status_map.n, 1);
		assert_int_equal(recon_map_get(&job->local.status_map, "OK", 2), RECON_ST_SUCCESS);
		recon_job_free(job);
	}
}

static void test_job_column_rules(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"amount_minor\": \"amount_cents\",",
	     "\"amount_minor\": \"amount_cents\", \"amount\": \"amount_yuan\",", "local.columns",
	     "\"columns\"", "map either 'amount' (decimal) or 'amount_minor' (integer), not both"},
	    {"\"time\": \"created_at\" }", "\"time\": \"created_at\", \"entry_type\": \"kind\" }",
	     "local.columns", "\"columns\"",
	     "'entry_type' is mapped but the side has no 'entry_types' map"},
	    {"\"time\": \"created_at\" }",
	     "\"time\": \"created_at\", \"refund_amount\": \"refunded_cents\" }", "local.columns",
	     "\"columns\"", "'refund_amount' is decimal text"},
	    {"\"key\": \"out_trade_no\"", "\"key\": null", "local.columns", "\"columns\"",
	     "the 'key' role is not mapped"},
	    {"\"amount_minor\": \"amount_cents\",", "", "local.columns", "\"columns\"",
	     "map 'amount' (decimal) or 'amount_minor'"},
	    {", \"time\": \"created_at\"", "", "local.columns", "\"columns\"",
	     "the 'time' role is not mapped"},
	    {", \"status\": \"status\"", "", "local.columns", "\"columns\"",
	     "map 'status' (or 'entry_type' with 'entry_types')"},
	    {"\"table\": \"payment_flow\",",
	     "\"table\": \"payment_flow\", \"entry_types\": { \"PAY\": \"payment\", \"FEE\": "
	     "\"fee\" },",
	     "local.entry_types.FEE", "\"FEE\"",
	     "unknown value 'fee' (expected one of payment, refund, revoke, keyless, ignore, "
	     "refund_reversal)"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_job_entry_types(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	const char *edits[] = {"\"table\": \"payment_flow\",",
			       "\"table\": \"payment_flow\",\n \"entry_types\": { \"PAY\": "
			       "\"payment\", \"RFD\": \"refund\", \"FEE\": \"keyless\" },",
			       "\"time\": \"created_at\" }",
			       "\"time\": \"created_at\", \"entry_type\": \"kind\" }", NULL};

	assert_int_equal(load_edited(fx, edits, &job, &err), 0);
	assert_string_equal(job->local.cols[RECON_COL_ENTRY_TYPE], "kind");
	assert_int_equal(job->local.entry_types.n, 3);
	assert_int_equal(recon_map_get(&job->local.entry_types, "PAY", 3), RECON_ENTRY_PAYMENT);
	assert_int_equal(recon_map_get(&job->local.entry_types, "RFD", 3), RECON_ENTRY_REFUND);
	assert_int_equal(recon_map_get(&job->local.entry_types, "FEE", 3), RECON_ENTRY_KEYLESS);
	recon_job_free(job);
}

/* ---- format profiles ------------------------------------------------------- */

static const char acme_profile[] =
    "{\n"
    "  \"description\": \"ACME bill\",\n"
    "  \"delimiter\": \";\",\n"
    "  \"header\": false,\n"
    "  \"skip_lines\": 2,\n"
    "  \"thousands\": true,\n"
    "  \"encoding\": \"GB18030\",\n"
    "  \"comment_prefixes\": [\"#\", \"//\"],\n"
    "  \"currency\": \"eur\",\n"
    "  \"timezone\": \"Europe/Berlin\",\n"
    "  \"columns\": { \"key\": \"order_id\", \"amount\": \"gross\", \"status\": \"state\",\n"
    "               \"time\": \"created\", \"txn_id\": \"txn\", \"currency\": \"ccy\" },\n"
    "  \"status_map\": { \"PAID\": \"success\", \"VOID\": \"closed\" }\n"
    "}\n";

static void test_job_profile_from_formats_dir_merged(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	const struct recon_side *up;
	char *envdir = xasprintf("%s/elsewhere", fx->dir);
	const char *edits[] = {
	    "\"format\": \"wechatpay-trade-bill\" }",
	    "\"format\": \"acme-bill\", \"delimiter\": \",\",\n"
	    "    \"columns\": { \"key\": \"payment_metadata[order_id]\", \"txn_id\": null } }",
	    "\"status_map\": { \"local\": {",
	    "\"status_map\": { \"upstream\": { \"VOID\": \"pending\" },\n \"local\": {", NULL};

	put_file(fx, "elsewhere/acme-bill.json", acme_profile);
	/* a decoy in <job dir>/formats: $RECON_FORMATS_DIR is searched first */
	put_file(fx, "formats/acme-bill.json", "{ \"bogus\": true }\n");
	assert_int_equal(setenv("RECON_FORMATS_DIR", envdir, 1), 0);

	assert_int_equal(load_edited(fx, edits, &job, &err), 0);
	up = &job->upstream;
	assert_string_equal(up->csv.format, "acme-bill");
	/* the side's columns override the profile's; null unmaps */
	assert_string_equal(up->cols[RECON_COL_KEY0], "payment_metadata[order_id]");
	assert_int_equal(up->nkey, 1);
	assert_null(up->cols[RECON_COL_TXN_ID]);
	assert_string_equal(up->cols[RECON_COL_AMOUNT], "gross");
	assert_string_equal(up->cols[RECON_COL_STATUS], "state");
	assert_string_equal(up->cols[RECON_COL_TIME], "created");
	assert_string_equal(up->cols[RECON_COL_CURRENCY], "ccy");
	/* layout: profile, then the side */
	assert_int_equal(up->csv.delimiter, ',');
	assert_int_equal(up->csv.quote, '"');
	assert_false(up->csv.header);
	assert_int_equal(up->csv.skip_lines, 2);
	assert_true(up->money_flags & RECON_MONEY_THOUSANDS);
	assert_string_equal(up->csv.encoding, "GB18030");
	assert_string_equal(up->csv.comment_prefixes[0], "#");
	assert_string_equal(up->csv.comment_prefixes[1], "//");
	assert_null(up->csv.comment_prefixes[2]);
	assert_string_equal(up->currency, "EUR");
	assert_string_equal(up->tz_name, "Europe/Berlin");
	assert_non_null(up->tz);
	/* status words: profile, then the job-level map */
	assert_int_equal(up->status_map.n, 2);
	assert_int_equal(recon_map_get(&up->status_map, "PAID", 4), RECON_ST_SUCCESS);
	assert_int_equal(recon_map_get(&up->status_map, "VOID", 4), RECON_ST_PENDING);
	/* the effective configuration carries the profile */
	assert_contains(job->config_text, "\"profiles\":");
	assert_contains(job->config_text, "\"gross\"");
	assert_contains(job->config_text, "payment_metadata[order_id]");
	recon_job_free(job);
	free(envdir);
}

static void test_job_profile_amount_override(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	int rc;

	/* profile maps 'amount'; the side adding 'amount_minor' conflicts ... */
	rc = load_edit(fx, "\"format\": \"wechatpay-trade-bill\" }",
		       "\"format\": \"wechatpay-trade-bill\",\n"
		       "    \"columns\": { \"amount_minor\": \"cents\" } }",
		       &job, &err);
	check_config_error(fx, fx->job_path, rc, job, &err, "upstream.columns", "\"cents\"",
			   "not both");

	/* ... unless it unmaps the profile's (and its refund_amount, decimal text) */
	rc = load_edit(
	    fx, "\"format\": \"wechatpay-trade-bill\" }",
	    "\"format\": \"wechatpay-trade-bill\",\n"
	    "    \"columns\": { \"amount\": null, \"refund_amount\": null, \"amount_minor\": "
	    "\"cents\" } }",
	    &job, &err);
	assert_int_equal(rc, 0);
	assert_null(job->upstream.cols[RECON_COL_AMOUNT]);
	assert_null(job->upstream.cols[RECON_COL_REFUND_AMOUNT]);
	assert_string_equal(job->upstream.cols[RECON_COL_AMOUNT_MINOR], "cents");
	recon_job_free(job);

	/* a composite key in the side replaces the profile's single key */
	rc = load_edit(fx, "\"format\": \"wechatpay-trade-bill\" }",
		       "\"format\": \"wechatpay-trade-bill\",\n"
		       "    \"columns\": { \"key\": [\"商户号\", \"商户订单号\"] } }",
		       &job, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(job->upstream.nkey, 2);
	assert_string_equal(job->upstream.cols[RECON_COL_KEY0], "商户号");
	assert_string_equal(job->upstream.cols[RECON_COL_KEY1], "商户订单号");
	recon_job_free(job);
}

static void test_job_profile_unknown(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"format\": \"wechatpay-trade-bill\"", "\"format\": \"nope-bill\"", "upstream.format",
	     "\"format\"", "unknown format profile 'nope-bill'"},
	    {"\"format\": \"wechatpay-trade-bill\"",
	     "\"format\": \"../formats/wechatpay-trade-bill\"", "upstream.format", "\"format\"",
	     "invalid profile name '../formats/wechatpay-trade-bill'"},
	    {"\"format\": \"wechatpay-trade-bill\"", "\"format\": \".hidden\"", "upstream.format",
	     "\"format\"", "invalid profile name"},
	};

	check_bad_edits(*state, cases, sizeof(cases) / sizeof(cases[0]));
}

/* Errors inside a profile name the profile's file and line. */
static void test_job_profile_errors(void **state)
{
	struct fx *fx = *state;
	static const struct {
		const char *text;
		const char *key, *marker, *msg;
	} cases[] = {
	    {"{\n  \"delimiter\": \";\",\n  \"colums\": { \"key\": \"id\" }\n}\n", "colums",
	     "\"colums\"", "unknown key"},
	    {"{\n  \"delimiter\": \";\",\n  \"table\": \"x\"\n}\n", "table", "\"table\"",
	     "unknown key"},
	    {"{\n  \"columns\": { \"key\": \"id\" },\n  \"status_map\": {\n    \"DONE\": \"done\"\n"
	     "  }\n}\n",
	     "status_map.DONE", "\"DONE\"", "unknown value 'done'"},
	    {"{\n  \"columns\": {\n    \"sum\": \"x\"\n  }\n}\n", "columns.sum", "\"sum\"",
	     "unknown column role"},
	    {"{\n  \"header\": 1\n}\n", "header", "\"header\"", "expected true or false"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_job *job = NULL;
		struct recon_err err;
		const char *prof = put_file(fx, "formats/broken-bill.json", cases[i].text);
		char *want;
		int rc;

		print_message("profile case %zu\n", i);
		rc = load_edit(fx, "\"format\": \"wechatpay-trade-bill\"",
			       "\"format\": \"broken-bill\"", &job, &err);
		assert_int_equal(rc, RECON_ECONFIG);
		assert_null(job);
		want = xasprintf("%s:%d: '%s'", prof, line_of(cases[i].text, cases[i].marker),
				 cases[i].key);
		assert_string_equal(err.where, want);
		assert_contains(err.msg, cases[i].msg);
		free(want);
	}

	/* a profile that is not JSON: file:line:column */
	{
		struct recon_job *job = NULL;
		struct recon_err err;
		const char *prof = put_file(fx, "formats/broken-bill.json", "{\n  \"a\": ,\n}\n");
		char *want = xasprintf("%s:2:", prof);

		assert_int_equal(load_edit(fx, "\"format\": \"wechatpay-trade-bill\"",
					   "\"format\": \"broken-bill\"", &job, &err),
				 RECON_ECONFIG);
		assert_true(strncmp(err.where, want, strlen(want)) == 0);
		free(want);
	}
}

/* ---- helpers: paths, identifiers, config_text ------------------------------- */

static void check_expand(const char *tmpl, int64_t day, const char *want)
{
	char *got = recon_job_expand_path(tmpl, day);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_job_expand_path(void **state)
{
	(void)state;
	assert_int_equal(recon_days_from_civil(2024, 1, 16), 19738);
	check_expand("statements/{date}.csv", 19738, "statements/2024-01-16.csv");
	check_expand("bills/{yyyymmdd}.csv", 19738, "bills/20240116.csv");
	check_expand("{date}/{yyyymmdd}-{date}", 19738, "2024-01-16/20240116-2024-01-16");
	check_expand("/abs/{date}", 0, "/abs/1970-01-01");
	check_expand("leap/{yyyymmdd}", recon_days_from_civil(2024, 2, 29), "leap/20240229");
	check_expand("{date}", recon_days_from_civil(1999, 12, 31), "1999-12-31");
	check_expand("flow.db", 19738, "flow.db");
	check_expand("", 19738, "");
	check_expand("{dat}{date", 19738, "{dat}{date");
	check_expand("{DATE}", 19738, "{DATE}");
	check_expand("{{date}}", 19738, "{2024-01-16}");
}

static void test_job_ident_ok(void **state)
{
	char name[80];

	(void)state;
	assert_true(recon_job_ident_ok("payment_flow"));
	assert_true(recon_job_ident_ok("_x"));
	assert_true(recon_job_ident_ok("A1"));
	assert_true(recon_job_ident_ok("a$b"));
	assert_true(recon_job_ident_ok("x"));
	assert_false(recon_job_ident_ok(NULL));
	assert_false(recon_job_ident_ok(""));
	assert_false(recon_job_ident_ok("1abc"));
	assert_false(recon_job_ident_ok("$a"));
	assert_false(recon_job_ident_ok("flow; DROP TABLE x"));
	assert_false(recon_job_ident_ok("a-b"));
	assert_false(recon_job_ident_ok("a b"));
	assert_false(recon_job_ident_ok("a.b"));
	assert_false(recon_job_ident_ok("\"x\""));
	assert_false(recon_job_ident_ok("`x`"));
	assert_false(recon_job_ident_ok("x'"));
	assert_false(recon_job_ident_ok("x\n"));
	assert_false(recon_job_ident_ok("zahlungsfluß"));
	/* at most 64 characters */
	memset(name, 'a', sizeof(name));
	name[RECON_NAME_MAX] = '\0';
	assert_true(recon_job_ident_ok(name));
	name[RECON_NAME_MAX] = 'a';
	name[RECON_NAME_MAX + 1] = '\0';
	assert_false(recon_job_ident_ok(name));
}

static void test_job_names(void **state)
{
	(void)state;
	assert_string_equal(recon_col_name(RECON_COL_KEY0), "key");
	assert_string_equal(recon_col_name(RECON_COL_AMOUNT_MINOR), "amount_minor");
	assert_string_equal(recon_col_name(RECON_COL_ENTRY_TYPE), "entry_type");
	assert_string_equal(recon_col_name(RECON_COL__COUNT), "?");
	assert_string_equal(recon_status_name(RECON_ST_SUCCESS), "success");
	assert_string_equal(recon_status_name(RECON_ST_REFUNDED), "refunded");
	assert_string_equal(recon_status_name(RECON_ST_CLOSED), "closed");
	assert_string_equal(recon_status_name(RECON_ST_PENDING), "pending");
	assert_ptr_equal(recon_source_backend_find("csv"), &recon_source_csv);
	assert_ptr_equal(recon_source_backend_find("sqlite"), &recon_source_sqlite);
	assert_ptr_equal(recon_source_backend_find("postgres"), &recon_source_postgres);
	assert_ptr_equal(recon_source_backend_find("mysql"), &recon_source_mysql);
	assert_null(recon_source_backend_find("CSV"));
}

static void test_job_config_text_stable(void **state)
{
	struct fx *fx = *state;
	struct recon_job *a = NULL, *b = NULL, *c = NULL;
	struct recon_err err;
	json_t *root, *v;
	json_error_t je;
	char *reformatted;

	assert_int_equal(load_text(fx, fx->base, &a, &err), 0);
	assert_int_equal(load_text(fx, fx->base, &b, &err), 0);
	assert_non_null(a->config_text);
	assert_true(strlen(a->config_text) > 0);
	assert_string_equal(a->config_text, b->config_text);

	/* canonical: layout and key order of the file do not matter */
	root = json_loads(fx->base, 0, &je);
	assert_non_null(root);
	reformatted = json_dumps(root, JSON_INDENT(7) | JSON_SORT_KEYS);
	json_decref(root);
	assert_non_null(reformatted);
	recon_job_free(b);
	assert_int_equal(load_text(fx, reformatted, &b, &err), 0);
	assert_string_equal(a->config_text, b->config_text);
	free(reformatted);

	/* it is JSON: the job as written plus the profiles it pulled in */
	root = json_loads(a->config_text, JSON_REJECT_DUPLICATES, &je);
	assert_non_null(root);
	assert_true(json_is_object(json_object_get(root, "job")));
	v = json_object_get(json_object_get(root, "profiles"), "upstream");
	assert_true(json_is_object(v));
	assert_non_null(json_object_get(v, "columns"));
	assert_true(json_is_null(json_object_get(json_object_get(root, "profiles"), "local")));
	json_decref(root);

	/* a change in the job or in its profile changes it */
	assert_int_equal(load_edit(fx, "\"margin\": \"10m\"", "\"margin\": \"11m\"", &c, &err), 0);
	assert_string_not_equal(a->config_text, c->config_text);
	recon_job_free(c);
	put_file(fx, "formats/wechatpay-trade-bill.json",
		 "{ \"columns\": { \"key\": \"k\", \"amount\": \"a\", \"time\": \"t\", "
		 "\"status\": \"s\" },\n  \"status_map\": { \"OK\": \"success\" } }\n");
	assert_int_equal(load_text(fx, fx->base, &c, &err), 0);
	assert_string_not_equal(a->config_text, c->config_text);
	recon_job_free(c);

	recon_job_free(a);
	recon_job_free(b);
}

/* actions.replay and actions.replay_values (issue 13: replays that fit real tables). */
static void test_job_replay_values(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"max_rejects\": 0,", "\"max_rejects\": 0, \"actions\": {\"replay\": \"upsert\"},",
	     "actions.replay", "\"replay\": \"upsert\"", "expected \"insert\""},
	    {"\"max_rejects\": 0,",
	     "\"max_rejects\": 0, \"actions\": {\"replay_values\": {\"x\": \"{nope}\"}},",
	     "actions.replay_values.x", "\"x\": \"{nope}\"",
	     "unknown template variable at '{nope}'"},
	    {"\"max_rejects\": 0,",
	     "\"max_rejects\": 0, \"actions\": {\"replay_values\": {\"created_at\": \"{now}\"}},",
	     "actions.replay_values.created_at", "\"created_at\": \"{now}\"",
	     "the local side's 'time' column: a replay writes it itself"},
	    {"\"max_rejects\": 0,",
	     "\"max_rejects\": 0, \"actions\": {\"replay_values\": {\"a b\": \"x\"}},",
	     "actions.replay_values.a b", "\"a b\": \"x\"", "not a valid SQL identifier"},
	    {"\"max_rejects\": 0,",
	     "\"max_rejects\": 0, \"actions\": {\"replay_values\": {\"f\": 1.5}},",
	     "actions.replay_values.f", "\"f\": 1.5",
	     "expected a template string, an integer or null"},
	};
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	check_bad_edits(fx, cases, sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(load_edit(fx, "\"max_rejects\": 0,",
				   "\"max_rejects\": 0, \"actions\": {\"replay\": \"outbox\", "
				   "\"replay_values\": {\"updated_at\": \"{now}\", \"n\": 7, "
				   "\"c\": null, \"t\": \"{key}/{txn_id} {{\"}},",
				   &job, &err),
			 RECON_ECONFIG); /* "{{" is not a variable */
	assert_int_equal(load_edit(fx, "\"max_rejects\": 0,",
				   "\"max_rejects\": 0, \"actions\": {\"replay\": \"outbox\", "
				   "\"replay_values\": {\"updated_at\": \"{now}\", \"n\": 7, "
				   "\"c\": null, \"t\": \"{key}/{txn_id}\"}},",
				   &job, &err),
			 0);
	assert_int_equal(job->actions.replay, RECON_REPLAY_OUTBOX);
	assert_int_equal(job->actions.nreplay_values, 4);
	assert_string_equal(job->actions.replay_values[0].column, "updated_at");
	assert_string_equal(job->actions.replay_values[0].text, "{now}");
	assert_string_equal(job->actions.replay_values[1].text, "7");
	assert_true(job->actions.replay_values[1].number);
	assert_null(job->actions.replay_values[2].text);
	assert_int_equal(recon_job_tvar("txn_id", 6), RECON_TVAR_TXN_ID);
	assert_int_equal(recon_job_tvar("txn", 3), -1);
	recon_job_free(job);
	/* the default */
	assert_int_equal(load_text(fx, fx->base, &job, &err), 0);
	assert_int_equal(job->actions.replay, RECON_REPLAY_INSERT);
	assert_int_equal(job->actions.nreplay_values, 0);
	recon_job_free(job);
}

/* time_format on a side: checked at load (issue 13 #2). */
static void test_job_time_format(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"table\": \"payment_flow\",",
	     "\"table\": \"payment_flow\", \"time_format\": \"%H:%M\",", "local.time_format",
	     "\"time_format\": \"%H:%M\"", "names no date"},
	    {"\"table\": \"payment_flow\",",
	     "\"table\": \"payment_flow\", \"time_format\": \"%Y-%q\",", "local.time_format",
	     "\"time_format\": \"%Y-%q\"", "unknown directive '%q'"},
	};
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	check_bad_edits(fx, cases, sizeof(cases) / sizeof(cases[0]));
	assert_int_equal(load_edit(fx, "\"table\": \"payment_flow\",",
				   "\"table\": \"payment_flow\", \"time_format\": \"%s\",", &job,
				   &err),
			 0);
	assert_string_equal(job->local.time_format, "%s");
	assert_null(job->upstream.time_format);
	recon_job_free(job);
}

/* {"first_of": [...]} key roles (issue 13 #3). */
static void test_job_key_first_of(void **state)
{
	static const struct bad_edit cases[] = {
	    {"\"key\": \"out_trade_no\"", "\"key\": {\"first_of\": [\"a\"]}",
	     "local.columns.key.first_of", NULL, "expected an array of 2 to 8 column names"},
	    {"\"key\": \"out_trade_no\"", "\"key\": {\"first_of\": [\"a\", \"b c\"]}",
	     "local.columns.key.first_of", NULL, "element 1: expected a valid SQL column name"},
	    {"\"key\": \"out_trade_no\"", "\"key\": {\"last_of\": [\"a\", \"b\"]}",
	     "local.columns.key.last_of", NULL, "unknown key"},
	};
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = load_edit(fx, cases[i].find, cases[i].repl, &job, &err);
		assert_int_equal(rc, RECON_ECONFIG);
		assert_null(job);
		assert_non_null(strstr(err.where, cases[i].key));
		assert_non_null(strstr(err.msg, cases[i].msg));
	}
	assert_int_equal(load_edit(fx, "\"key\": \"out_trade_no\"",
				   "\"key\": {\"first_of\": [\"order_ref\", \"legacy_ref\"]}", &job,
				   &err),
			 0);
	assert_int_equal(job->local.nkey, 1);
	assert_string_equal(job->local.cols[RECON_COL_KEY0], "order_ref");
	assert_string_equal(job->local.key_first_of[1], "legacy_ref");
	assert_null(job->local.key_first_of[2]);
	recon_job_free(job);
}

/* A failed load leaves err's first error alone and frees everything (ASan checks). */
static void test_job_first_error_wins(void **state)
{
	struct fx *fx = *state;
	struct recon_job *job = NULL;
	struct recon_err err;
	char *text = replace_once(fx->base, "\"margin\": \"10m\"", "\"margin\": \"5 minutes\"");

	put_file(fx, "job.json", text);
	recon_err_init(&err);
	recon_err_set(&err, RECON_EIO, "earlier", "an earlier failure");
	assert_int_equal(recon_job_load(&job, fx->job_path, &err), RECON_ECONFIG);
	assert_null(job);
	assert_int_equal(err.code, RECON_EIO);
	assert_string_equal(err.where, "earlier");
	assert_string_equal(err.msg, "an earlier failure");
	free(text);
}

/*
 * Where the loader names the line: key_line() follows the key path through the
 * objects it names, so an absent key reports its parent's line (none at the
 * top), and a same-named key deeper in the file is never taken for it.
 */
static void test_job_where_line_follows_objects(void **state)
{
	static const struct bad_edit cases[] = {
	    /* upstream has no path: the line must be upstream's, not local's "path" */
	    {"\"path\": \"statements/{date}.csv\", ", "", "upstream.path", "\"upstream\"",
	     "missing (the statement file)"},
	    /* no top-level currency: no line, not local.columns.currency's */
	    {"\"currency\": \"CNY\",\n", "", "currency", NULL, "missing (the ISO 4217 code"},
	};
	struct fx *fx = *state;

	check_bad_edits(fx, cases, sizeof(cases) / sizeof(cases[0]));
	/* a top-level key written after a nested key of the same name */
	{
		const char *edits[] = {"  \"currency\": \"CNY\",\n", "", "\"max_rejects\": 0,",
				       "\"max_rejects\": 0,\n  \"currency\": \"XYZ\",", NULL};
		struct recon_job *job = NULL;
		struct recon_err err;
		int rc = load_edited(fx, edits, &job, &err);

		check_config_error(fx, fx->job_path, rc, job, &err, "currency",
				   "\"currency\": \"XYZ\"", "unknown ISO 4217 currency 'XYZ'");
	}
}

/* A bad zone does not overwrite an error recorded before the call (first error wins). */
static void test_job_first_error_wins_bad_zone(void **state)
{
	static const char *const zones[][2] = {
	    {"\"timezone\": \"Asia/Shanghai\"", "\"timezone\": \"Mars/Olympus\""},
	    {"\"table\": \"payment_flow\",",
	     "\"table\": \"payment_flow\", \"timezone\": \"Nowhere/City\","},
	};
	struct fx *fx = *state;

	for (size_t i = 0; i < 2; i++) {
		struct recon_job *job = NULL;
		struct recon_err err;
		char *text = replace_once(fx->base, zones[i][0], zones[i][1]);

		put_file(fx, "job.json", text);
		recon_err_init(&err);
		recon_err_set(&err, RECON_EIO, "earlier", "an earlier failure");
		assert_int_equal(recon_job_load(&job, fx->job_path, &err), RECON_ECONFIG);
		assert_null(job);
		assert_int_equal(err.code, RECON_EIO);
		assert_string_equal(err.where, "earlier");
		assert_string_equal(err.msg, "an earlier failure");
		free(text);
	}
}

int main(void)
{
	/* the profile search must not see the caller's environment */
	unsetenv("RECON_FORMATS_DIR");
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_job_design_example_loads),
	    T(test_job_paths_resolve_against_job_folder),
	    T(test_job_replay_values),
	    T(test_job_time_format),
	    T(test_job_key_first_of),
	    T(test_job_defaults),
	    T(test_job_currency_upper_cased),
	    T(test_job_durations_in_ms),
	    T(test_job_composite_key),
	    T(test_job_composite_key_errors),
	    T(test_job_duplicate_key),
	    T(test_job_syntax_errors),
	    T(test_job_missing_file),
	    T(test_job_unknown_keys),
	    T(test_job_wrong_types),
	    T(test_job_columns_not_an_object),
	    T(test_job_sources),
	    T(test_job_database_sources_load),
	    T(test_job_dsn_in_dsn_env_not_echoed),
	    T(test_job_sql_identifiers),
	    T(test_job_values),
	    T(test_job_status_maps),
	    T(test_job_status_map_merges),
	    T(test_job_column_rules),
	    T(test_job_entry_types),
	    T(test_job_profile_from_formats_dir_merged),
	    T(test_job_profile_amount_override),
	    T(test_job_profile_unknown),
	    T(test_job_profile_errors),
	    cmocka_unit_test(test_job_expand_path),
	    cmocka_unit_test(test_job_ident_ok),
	    cmocka_unit_test(test_job_names),
	    T(test_job_config_text_stable),
	    T(test_job_first_error_wins),
	    T(test_job_where_line_follows_objects),
	    T(test_job_first_error_wins_bad_zone),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
