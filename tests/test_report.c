/*
 * Tests for src/recon_report.c: the JSON object of one difference.
 *
 * recon_report_diff_json() writes its text by hand. It used to build a jansson
 * tree and dump it compactly; that implementation is kept below as the
 * reference (ref_diff_json), and the two must agree byte for byte whenever
 * every string is valid UTF-8: a pseudo-random sweep over classes, sides,
 * integer extremes, times, origins, keys full of characters JSON escapes and
 * names with quotes, backslashes and UTF-8. Where they must differ (a name
 * that is not UTF-8), the new text is a valid object with U+FFFD in place of
 * each bad byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_compare.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_report.h"
#include "recon_time.h"
#include "support_jobs.h"

#define SEP "\037" /* RECON_KEY_SEP as a string literal */

#define FFFD "\xef\xbf\xbd" /* U+FFFD REPLACEMENT CHARACTER */

/* The earliest whole day int64 milliseconds hold (recon_time_format_utc once overflowed below it).
 */
#define TIME_MIN (-106751991167LL * RECON_MS_PER_DAY)

#define SWEEP_ITERATIONS 20000

/* ---- the reference: the jansson implementation this file replaced ---- */

static json_t *ref_side_json(const struct recon_diff *d, const struct recon_side_view *v,
			     const char *name, bool upstream)
{
	json_t *o;
	char when[40];
	struct recon_buf origin;
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];

	if (!v->present)
		return json_null();
	o = json_object();
	recon_time_format_utc(v->time, when, sizeof(when));
	recon_buf_init(&origin);
	if (v->line && !v->looked_up)
		recon_buf_addf(&origin, "%s:%llu", name, (unsigned long long)v->line);
	else
		recon_buf_addf(&origin, "%s:%s", name,
			       recon_key_display(d->key, d->key_len, key, sizeof(key)));
	json_object_set_new(o, "amount_minor", json_integer(v->amount));
	json_object_set_new(o, "currency", json_string(v->currency));
	json_object_set_new(o, "status", json_string(recon_status_name(v->status)));
	json_object_set_new(o, "time", json_string(when));
	json_object_set_new(o, "origin", json_stringn(origin.s, origin.len));
	if (upstream) {
		json_object_set_new(o, "refunded_minor", json_integer(v->refunded));
		json_object_set_new(o, "entries", json_integer(v->rows));
	} else {
		json_object_set_new(o, "rows", json_integer(v->rows));
	}
	recon_buf_release(&origin);
	return o;
}

static char *ref_diff_json(const struct recon_diff *d, const char *up_name, const char *local_name)
{
	json_t *o = json_object();
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];
	char *s;

	recon_key_display(d->key, d->key_len, key, sizeof(key));
	json_object_set_new(o, "key", json_string(key));
	json_object_set_new(o, "class", json_string(recon_class_name(d->klass)));
	json_object_set_new(o, "upstream", ref_side_json(d, &d->up, up_name, true));
	json_object_set_new(o, "local", ref_side_json(d, &d->local, local_name, false));
	s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
	json_decref(o);
	if (!s)
		s = recon_xstrdup("{}");
	return s;
}

/* ---- inputs ---- */

/* xorshift64*: deterministic, so a failure names an iteration that replays */
static uint64_t next_rand(uint64_t *st)
{
	uint64_t x = *st;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*st = x;
	return x * 2685821657736338717ULL;
}

static unsigned pick(uint64_t *st, unsigned n)
{
	return (unsigned)(next_rand(st) % n);
}

/* The two's complement reading of u, without implementation-defined conversion. */
static int64_t as_i64(uint64_t u)
{
	return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static int64_t rand_amount(uint64_t *st)
{
	static const int64_t special[] = {
	    0, 1, -1, 100, -100, 999999999, INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1,
	};

	switch (pick(st, 4)) {
	case 0:
		return special[pick(st, sizeof(special) / sizeof(special[0]))];
	case 1:
		return as_i64(next_rand(st)); /* anywhere in int64 */
	case 2:
		return (int64_t)pick(st, 1000000) - 500000;
	default:
		return (int64_t)pick(st, 100000000);
	}
}

static int64_t rand_time(uint64_t *st)
{
	static const int64_t special[] = {
	    0,
	    -1,
	    1705334400000LL,	  /* 2024-01-16T00:00:00+08:00 */
	    -62135596800000LL,	  /* 0001-01-01T00:00:00Z */
	    -62135596800001LL,	  /* the millisecond before: year 0 */
	    253402300799999LL,	  /* 9999-12-31T23:59:59.999Z */
	    253402300800000LL,	  /* year 10000 */
	    -86400000LL * 800000, /* far past: a negative year */
	    TIME_MIN,
	    TIME_MIN + 1,
	    TIME_MIN - 1,
	    INT64_MIN,
	    INT64_MAX,
	    INT64_MAX - 1,
	};
	int64_t t;

	switch (pick(st, 3)) {
	case 0:
		return special[pick(st, sizeof(special) / sizeof(special[0]))];
	case 1:
		t = as_i64(next_rand(st));
		return t;
	default:
		/* 1970 .. about 2100, where real rows live */
		return (int64_t)(next_rand(st) % 4102444800000ULL);
	}
}

/*
 * Origin line numbers stay <= INT64_MAX: the reference printed the line with
 * %llu, the new code as (int64_t)line, so a line above INT64_MAX (no file has
 * that many) would come out negative there and is not compared.
 */
static uint64_t rand_line(uint64_t *st)
{
	switch (pick(st, 5)) {
	case 0:
		return 0; /* a database row: origin is "<name>:<key>" */
	case 1:
		return 1;
	case 2:
		return (uint64_t)INT64_MAX;
	case 3:
		return next_rand(st) >> 1;
	default:
		return 2 + pick(st, 1000000);
	}
}

static uint32_t rand_rows(uint64_t *st)
{
	switch (pick(st, 4)) {
	case 0:
		return 0;
	case 1:
		return UINT32_MAX;
	case 2:
		return (uint32_t)next_rand(st);
	default:
		return 1 + pick(st, 5);
	}
}

/*
 * Pieces a key is made of: every one valid UTF-8 on its own, so keys are too.
 * Control characters, '"', '\\' and DEL test the JSON escaping, '|' and '\\' in
 * composite keys recon_key_display()'s escaping too; the multi-byte ones sit on the edges
 * of each UTF-8 length class (U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF,
 * U+10000, U+10FFFF), so none of them is taken for an invalid sequence.
 */
static const char *const key_pieces[] = {
    "a",
    "Z",
    "0",
    "9",
    "_",
    "-",
    " ",
    ".",
    "\"",
    "\\",
    "/",
    "|",
    ":",
    "\x7f",
    "\xe8\xae\xa2\xe5\x8d\x95", /* 订单 */
    "\xc3\xa9",			/* é */
    "\xf0\x9f\x92\xb0",		/* 💰 */
    "\xe2\x82\xac",		/* € */
    "\xc2\x80",
    "\xdf\xbf",
    "\xe0\xa0\x80",
    "\xed\x9f\xbf",
    "\xee\x80\x80",
    "\xef\xbf\xbf",
    "\xf0\x90\x80\x80",
    "\xf4\x8f\xbf\xbf",
};

/* Writes a random key of up to RECON_KEY_PARTS_MAX parts into key; returns its length. */
static size_t rand_key(uint64_t *st, char *key, size_t size)
{
	unsigned parts = 1 + pick(st, RECON_KEY_PARTS_MAX);
	size_t len = 0;

	for (unsigned p = 0; p < parts; p++) {
		unsigned n = pick(st, 12);

		if (p > 0)
			key[len++] = RECON_KEY_SEP;
		for (unsigned i = 0; i < n; i++) {
			unsigned r = pick(st, 8);
			const char *s;
			size_t sl;

			if (r < 2) {
				/* a control character other than the separator: 0x01-0x1e */
				key[len++] = (char)(1 + pick(st, 0x1e));
				continue;
			}
			if (r < 4) {
				static const char alnum[] = "abcdefghijklmnopqrstuvwxyz"
							    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

				key[len++] = alnum[pick(st, sizeof(alnum) - 1)];
				continue;
			}
			s = key_pieces[pick(st, sizeof(key_pieces) / sizeof(key_pieces[0]))];
			sl = strlen(s);
			memcpy(key + len, s, sl);
			len += sl;
		}
	}
	assert_true(len < size);
	key[len] = '\0';
	return len;
}

static const char *const names[] = {
    "statements/2024-01-16.csv",
    "flow",
    "",
    "orders \"live\".csv",
    "C:\\exports\\bill.csv",
    "\xe8\xb4\xa6\xe5\x8d\x95/2024-01-16.csv", /* 账单/ */
    "tab\there\nnewline",
    "\x01\x1f\x7f.csv",
    "emoji\xf0\x9f\x98\x80.csv",
    "host:5432/db",
    "sqlite:flow.db",
};
#define NAMES_N (sizeof(names) / sizeof(names[0]))

static const char *const currencies[] = {"CNY", "USD", "JPY", "EUR", "HKD"};

static void rand_side(uint64_t *st, struct recon_side_view *v)
{
	memset(v, 0, sizeof(*v));
	v->present = pick(st, 4) != 0;
	/* mostly the four canonical statuses; now and then one recon_status_name() calls "?" */
	v->status =
	    (uint8_t)(pick(st, 20) ? pick(st, RECON_ST__COUNT) : RECON_ST__COUNT + pick(st, 200));
	memcpy(v->currency, currencies[pick(st, 5)], 4);
	v->amount = rand_amount(st);
	v->refunded = rand_amount(st);
	v->time = rand_time(st);
	v->line = rand_line(st);
	v->rows = rand_rows(st);
	v->looked_up = pick(st, 3) == 0;
}

struct fixture {
	struct recon_job *job;
};

static int setup(void **state)
{
	struct fixture *fx = recon_xcalloc(1, sizeof(*fx));

	fx->job = support_job_new();
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	recon_job_free(fx->job);
	free(fx);
	return 0;
}

/* Parses s (which must be an object) or fails the test with s in the message. */
static json_t *parse(const char *s)
{
	json_error_t jerr;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);

	if (!o)
		fail_msg("not JSON (%s at column %d): %s", jerr.text, jerr.column, s);
	assert_true(json_is_object(o));
	return o;
}

/* The string member `name` of o (which must be one). */
static const char *member_str(const json_t *o, const char *name)
{
	const json_t *v = json_object_get(o, name);

	assert_non_null(v);
	assert_true(json_is_string(v));
	return json_string_value(v);
}

/* Checks the parsed object against d: key, class, and which sides are there. */
static void check_parsed(const char *s, const struct recon_diff *d)
{
	char key[RECON_KEY_PARTS_MAX * 1025 + 8];
	json_t *o = parse(s);

	recon_key_display(d->key, d->key_len, key, sizeof(key));
	assert_string_equal(member_str(o, "key"), key);
	assert_string_equal(member_str(o, "class"), recon_class_name(d->klass));
	assert_int_equal(json_is_object(json_object_get(o, "upstream")), d->up.present);
	assert_int_equal(json_is_object(json_object_get(o, "local")), d->local.present);
	assert_true(d->up.present || json_is_null(json_object_get(o, "upstream")));
	assert_true(d->local.present || json_is_null(json_object_get(o, "local")));
	json_decref(o);
}

/* ---- tests ---- */

static void test_report_json_matches_jansson(void **state)
{
	struct fixture *fx = *state;
	uint64_t st = 0x9e3779b97f4a7c15ULL;
	char keybuf[RECON_KEY_PARTS_MAX * 12 * 6 + 8];

	for (unsigned it = 0; it < SWEEP_ITERATIONS; it++) {
		struct recon_diff d;
		const char *up_name = names[pick(&st, NAMES_N)];
		const char *local_name = names[pick(&st, NAMES_N)];
		char *got, *want;

		memset(&d, 0, sizeof(d));
		d.key_len = (uint32_t)rand_key(&st, keybuf, sizeof(keybuf));
		d.key = keybuf;
		d.klass = (uint8_t)pick(&st, RECON_CLASS_MATCHED);
		rand_side(&st, &d.up);
		rand_side(&st, &d.local);

		got = recon_report_diff_json(fx->job, &d, up_name, local_name);
		want = ref_diff_json(&d, up_name, local_name);
		if (strcmp(got, want) != 0)
			fail_msg("iteration %u differs\n new: %s\n ref: %s", it, got, want);
		check_parsed(got, &d);
		free(got);
		free(want);
	}
}

/* One hand-picked difference compared in full: the layout, readable. */
static void test_report_json_layout(void **state)
{
	struct fixture *fx = *state;
	struct recon_diff d;
	char *got, *want;

	memset(&d, 0, sizeof(d));
	d.key = "4200001234" SEP "A|B";
	d.key_len = (uint32_t)strlen(d.key);
	d.klass = RECON_CLASS_AMOUNT_MISMATCH;
	d.up = (struct recon_side_view){.present = true,
					.status = RECON_ST_SUCCESS,
					.currency = "CNY",
					.amount = 1000,
					.refunded = 0,
					.time = 1705370400000LL,
					.line = 88,
					.rows = 1};
	d.local = (struct recon_side_view){.present = true,
					   .status = RECON_ST_SUCCESS,
					   .currency = "CNY",
					   .amount = 999,
					   .time = 1705370401000LL,
					   .rows = 1};
	got = recon_report_diff_json(fx->job, &d, "statements/2024-01-16.csv", "flow");
	assert_string_equal(
	    got,
	    "{\"key\":\"4200001234|A\\\\|B\",\"class\":\"amount_mismatch\","
	    "\"upstream\":{\"amount_minor\":1000,\"currency\":\"CNY\",\"status\":\"success\","
	    "\"time\":\"2024-01-16T02:00:00.000Z\",\"origin\":\"statements/2024-01-16.csv:88\","
	    "\"refunded_minor\":0,\"entries\":1},"
	    "\"local\":{\"amount_minor\":999,\"currency\":\"CNY\",\"status\":\"success\","
	    "\"time\":\"2024-01-16T02:00:01.000Z\",\"origin\":\"flow:4200001234|A\\\\|B\","
	    "\"rows\":1}}");
	want = ref_diff_json(&d, "statements/2024-01-16.csv", "flow");
	assert_string_equal(got, want);
	free(got);
	free(want);

	/* neither side: both null */
	d.up.present = false;
	d.local.present = false;
	d.klass = RECON_CLASS_MISSING;
	got = recon_report_diff_json(fx->job, &d, "a", "b");
	assert_string_equal(got, "{\"key\":\"4200001234|A\\\\|B\",\"class\":\"missing\","
				 "\"upstream\":null,\"local\":null}");
	free(got);
}

/* Control characters escape as jansson does: short forms where JSON has one, else \u00XX. */
static void test_report_json_control_chars(void **state)
{
	static const struct {
		const char *key;
		const char *json; /* the "key" member as written */
	} cases[] = {
	    {"\x01", "\"key\":\"\\u0001\""},
	    {"\n", "\"key\":\"\\n\""},
	    {"a\x1b"
	     "b",
	     "\"key\":\"a\\u001Bb\""}, /* uppercase hex */
	    {"\x0b\x0e\x1e", "\"key\":\"\\u000B\\u000E\\u001E\""},
	    {"\b\f\r\t", "\"key\":\"\\b\\f\\r\\t\""},
	    {"\"\\/", "\"key\":\"\\\"\\\\/\""}, /* '/' stays */
	    {"\x7f", "\"key\":\"\x7f\""},	/* DEL is not a control character to JSON */
	    {"\xe8\xae\xa2\xe5\x8d\x95\xf0\x9f\x92\xb0",
	     "\"key\":\"\xe8\xae\xa2\xe5\x8d\x95\xf0\x9f\x92\xb0\""}, /* UTF-8 kept */
	    {"x\n" SEP "y\x01", "\"key\":\"x\\n|y\\u0001\""},
	};
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_diff d;
		char *got, *want;

		memset(&d, 0, sizeof(d));
		d.key = cases[i].key;
		d.key_len = (uint32_t)strlen(d.key);
		d.klass = RECON_CLASS_EXTRA;
		d.local = (struct recon_side_view){
		    .present = true, .status = RECON_ST_PENDING, .currency = "CNY", .rows = 1};
		got = recon_report_diff_json(fx->job, &d, "up", "flow");
		if (!strstr(got, cases[i].json))
			fail_msg("case %zu: %s lacks %s", i, got, cases[i].json);
		want = ref_diff_json(&d, "up", "flow");
		assert_string_equal(got, want);
		check_parsed(got, &d);
		free(got);
		free(want);
	}
}

/*
 * A name that is not UTF-8. The reference could not hold it: json_stringn()
 * refused the origin, so the object lost its "origin" member. The new text is
 * a valid object whose origin has U+FFFD for each bad byte: exactly what the
 * name with U+FFFD already in it gives, which the reference agrees with.
 */
static void test_report_json_invalid_utf8_name(void **state)
{
	static const struct {
		const char *bad;
		const char *fixed;
	} cases[] = {
	    {"bad\xff.csv", "bad" FFFD ".csv"},
	    {"\xfe", FFFD},
	    {"lone\x80", "lone" FFFD},
	    {"overlong\xc0\xaf", "overlong" FFFD FFFD},
	    {"cut\xe8\xae", "cut" FFFD FFFD}, /* a 3-byte sequence missing its last byte */
	    {"surrogate\xed\xa0\x80", "surrogate" FFFD FFFD FFFD},
	    {"big\xf4\x90\x80\x80", "big" FFFD FFFD FFFD FFFD}, /* above U+10FFFF */
	    {"f5\xf5\x80\x80\x80", "f5" FFFD FFFD FFFD FFFD},	/* no lead byte beyond F4 */
	    {"o3\xe0\x9f\xbf", "o3" FFFD FFFD FFFD},		/* U+07FF in three bytes */
	    {"o4\xf0\x8f\xbf\xbf", "o4" FFFD FFFD FFFD FFFD},	/* U+FFFF in four bytes */
	    {"hi\xed\xbf\xbf", "hi" FFFD FFFD FFFD},		/* U+DFFF */
	    {"end\xc3", "end" FFFD},				/* cut before ':' */
	    {"mid\xe8"
	     "AB",
	     "mid" FFFD "AB"}, /* a lead byte, then ASCII */
	    {"\xe8\xb4\xa6\xff\xe5\x8d\x95", "\xe8\xb4\xa6" FFFD "\xe5\x8d\x95"},
	};
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_diff d;
		char *got, *fixed, *want;
		json_t *o, *up, *local, *ref, *ref_up;
		char origin[64];

		memset(&d, 0, sizeof(d));
		d.key = "K1" SEP "\xc3\xa9";
		d.key_len = (uint32_t)strlen(d.key);
		d.klass = RECON_CLASS_STATUS_MISMATCH;
		d.up = (struct recon_side_view){.present = true,
						.status = RECON_ST_REFUNDED,
						.currency = "USD",
						.amount = -5,
						.refunded = INT64_MAX,
						.time = 1705370400000LL,
						.line = 42,
						.rows = 3};
		d.local = (struct recon_side_view){.present = true,
						   .status = RECON_ST_CLOSED,
						   .currency = "USD",
						   .amount = INT64_MIN,
						   .time = -1,
						   .line = 7,
						   .looked_up = true,
						   .rows = 2};

		/* upstream name bad: line origin; local name bad: key origin (looked up) */
		got = recon_report_diff_json(fx->job, &d, cases[i].bad, cases[i].bad);
		o = parse(got);
		up = json_object_get(o, "upstream");
		local = json_object_get(o, "local");
		snprintf(origin, sizeof(origin), "%s:42", cases[i].fixed);
		assert_string_equal(member_str(up, "origin"), origin);
		snprintf(origin, sizeof(origin), "%s:K1|\xc3\xa9", cases[i].fixed);
		assert_string_equal(member_str(local, "origin"), origin);
		assert_non_null(strstr(got, FFFD));

		/* the other fields are intact */
		assert_string_equal(member_str(o, "key"), "K1|\xc3\xa9");
		assert_string_equal(member_str(o, "class"), "status_mismatch");
		assert_int_equal(json_integer_value(json_object_get(up, "amount_minor")), -5);
		assert_string_equal(member_str(up, "currency"), "USD");
		assert_string_equal(member_str(up, "status"), "refunded");
		assert_string_equal(member_str(up, "time"), "2024-01-16T02:00:00.000Z");
		assert_true(json_integer_value(json_object_get(up, "refunded_minor")) == INT64_MAX);
		assert_int_equal(json_integer_value(json_object_get(up, "entries")), 3);
		assert_true(json_integer_value(json_object_get(local, "amount_minor")) ==
			    INT64_MIN);
		assert_string_equal(member_str(local, "status"), "closed");
		assert_string_equal(member_str(local, "time"), "1969-12-31T23:59:59.999Z");
		assert_int_equal(json_integer_value(json_object_get(local, "rows")), 2);
		assert_int_equal(json_object_size(up), 7);
		assert_int_equal(json_object_size(local), 6);

		/* byte for byte what the repaired name gives, and what the reference gives for it
		 */
		fixed = recon_report_diff_json(fx->job, &d, cases[i].fixed, cases[i].fixed);
		assert_string_equal(got, fixed);
		want = ref_diff_json(&d, cases[i].fixed, cases[i].fixed);
		assert_string_equal(got, want);

		/* the reference on the bad name: everything but the origin */
		free(want);
		want = ref_diff_json(&d, cases[i].bad, cases[i].bad);
		ref = parse(want);
		ref_up = json_object_get(ref, "upstream");
		assert_null(json_object_get(ref_up, "origin"));
		json_object_del(up, "origin");
		json_object_del(local, "origin");
		assert_true(json_equal(o, ref));

		json_decref(ref);
		json_decref(o);
		free(got);
		free(fixed);
		free(want);
	}
}

/* A good upstream name next to a bad local one: only the bad one is repaired. */
static void test_report_json_invalid_utf8_one_side(void **state)
{
	struct fixture *fx = *state;
	struct recon_diff d;
	char *got, *want;

	memset(&d, 0, sizeof(d));
	d.key = "T\"1";
	d.key_len = (uint32_t)strlen(d.key);
	d.klass = RECON_CLASS_DUPLICATE;
	d.up = (struct recon_side_view){
	    .present = true, .currency = "JPY", .amount = 500, .line = 3, .rows = 2};
	d.local = (struct recon_side_view){.present = true, .currency = "JPY", .amount = 500};
	got = recon_report_diff_json(fx->job, &d, "statements/\xe8\xb4\xa6.csv", "fl\xffow");
	want = ref_diff_json(&d, "statements/\xe8\xb4\xa6.csv", "fl" FFFD "ow");
	assert_string_equal(got, want);
	assert_non_null(strstr(got, "\"origin\":\"statements/\xe8\xb4\xa6.csv:3\""));
	assert_non_null(strstr(got, "\"origin\":\"fl" FFFD "ow:T\\\"1\""));
	check_parsed(got, &d);
	free(got);
	free(want);
}

/* What fn writes for s, in buf. */
static const char *written(void (*fn)(FILE *, const char *), const char *s, char *buf, size_t size)
{
	FILE *f;

	memset(buf, 0, size);
	f = fmemopen(buf, size, "w");
	assert_non_null(f);
	fn(f, s);
	fclose(f);
	return buf;
}

/*
 * Issue 12 #12: keys like =cmd|' /C calc'!A0 must not run as a formula when
 * the CSV output is opened in a spreadsheet; names from input printed to a
 * terminal carry no control sequence.
 */
static void test_report_csv_formula_neutralised(void **state)
{
	static const struct {
		const char *in, *out;
	} csv[] = {
	    {"ORD-1", "ORD-1"},
	    {"a,b", "\"a,b\""},
	    {"=cmd|' /C calc'!A0", "\"'=cmd|' /C calc'!A0\""},
	    {"+1+1", "\"'+1+1\""},
	    {"-2+3", "\"'-2+3\""},
	    {"@SUM(A1)", "\"'@SUM(A1)\""},
	    {"\t=1", "\"'\t=1\""},
	    {"=\"x\"", "\"'=\"\"x\"\"\""},
	    {"", ""},
	    {"ORD=1", "ORD=1"},
	};
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(csv) / sizeof(csv[0]); i++)
		assert_string_equal(written(recon_report_csv_field, csv[i].in, buf, sizeof(buf)),
				    csv[i].out);
	assert_string_equal(
	    written(recon_report_text_field, "ORD-1 \xe8\xae\xa2", buf, sizeof(buf)),
	    "ORD-1 \xe8\xae\xa2");
	assert_string_equal(
	    written(recon_report_text_field, "a\x1b[2Jb\nrecon: run succeeded", buf, sizeof(buf)),
	    "a\\x1b[2Jb\\x0arecon: run succeeded");
	assert_string_equal(written(recon_report_text_field, "x\xc2\x9by\\", buf, sizeof(buf)),
			    "x\\xc2\\x9by\\\\");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_report_json_layout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_json_control_chars, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_json_matches_jansson, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_json_invalid_utf8_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_report_json_invalid_utf8_one_side, setup,
					    teardown),
	    cmocka_unit_test(test_report_csv_formula_neutralised),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
