/*
 * The reader interface's shared helpers (src/recon_source.c): the backend
 * registry and what the core asks of a backend, which keys an integer key
 * column can hold, and when recon_source_lookup_many() declines (no database
 * needed: a stub source stands in for one).
 */
/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <stdbool.h>
#include <string.h>

#include "recon_job.h"
#include "recon_source.h"

#define LEN(lit) (sizeof(lit) - 1)

struct int_case {
	const char *s;
	size_t len;
	bool text;	       /* recon_source_int_text */
	bool in16, in32, in64; /* recon_source_int_in over int2, int4, int8 */
};

/* clang-format off */
#define C(lit, t, a, b, c) {lit, LEN(lit), t, a, b, c}
static const struct int_case int_cases[] = {
    C("0", true, true, true, true),
    C("-0", true, true, true, true),
    C("+0", true, true, true, true),
    C("42", true, true, true, true),
    C("+42", true, true, true, true),
    C("-7", true, true, true, true),
    C("32767", true, true, true, true),
    C("32768", true, false, true, true),
    C("-32768", true, true, true, true),
    C("-32769", true, false, true, true),
    C("2147483647", true, false, true, true),
    C("2147483648", true, false, false, true),
    C("-2147483648", true, false, true, true),
    C("-2147483649", true, false, false, true),
    C("9223372036854775807", true, false, false, true),
    C("9223372036854775808", true, false, false, false),
    C("-9223372036854775808", true, false, false, true),
    C("-9223372036854775809", true, false, false, false),
    C("9999999999999999999", true, false, false, false),     /* 19 digits, beyond int8 */
    C("10000000000000000000", true, false, false, false),    /* 20 digits */
    C("18446744073709551615", true, false, false, false),    /* BIGINT UNSIGNED max */
    C("00000000000000000000042", true, true, true, true),   /* leading zeros say nothing */
    C("-00000000000000000000000", true, true, true, true),
    C("0009223372036854775807", true, false, false, true),
    C("", false, false, false, false),
    C("-", false, false, false, false),
    C("+", false, false, false, false),
    C("+-1", false, false, false, false),
    C(" 1", false, false, false, false),
    C("1 ", false, false, false, false),
    C("1e3", false, false, false, false),
    C("0x10", false, false, false, false),
    C("abc", false, false, false, false),
    C("4\0002", false, false, false, false),
    C("\xef\xbc\x91", false, false, false, false), /* full-width 1 */
};
/* clang-format on */

/* The registry: found by name, listed in order, asked by capability; absent ops answer "none". */
static void test_source_backends(void **state)
{
	struct recon_side side;
	struct recon_window win;
	uint64_t bytes = 1;
	char names[128], hex[65];

	(void)state;
	assert_ptr_equal(recon_source_backend_find("csv"), &recon_source_csv);
	assert_ptr_equal(recon_source_backend_find("mysql"), &recon_source_mysql);
	assert_null(recon_source_backend_find("oracle"));
	assert_ptr_equal(recon_source_backends()[0], &recon_source_csv);
	recon_source_backend_names(0, " or ", names, sizeof(names));
	assert_string_equal(names, "csv, sqlite, postgres or mysql");
	recon_source_backend_names(RECON_SOURCE_DSN, " and ", names, sizeof(names));
	assert_string_equal(names, "postgres and mysql");
	recon_source_backend_names(RECON_SOURCE_PATH, " or ", names, 6);
	assert_string_equal(names, "csv"); /* truncated: whole names only */

	memset(&side, 0, sizeof(side));
	memset(&win, 0, sizeof(win));
	assert_false(recon_source_has(&side, RECON_SOURCE_FILE)); /* no backend yet */
	side.backend = &recon_source_sqlite;
	assert_true(recon_source_has(&side, RECON_SOURCE_PATH | RECON_SOURCE_TABLE));
	assert_false(recon_source_has(&side, RECON_SOURCE_FILE | RECON_SOURCE_PATH));
	assert_int_equal(recon_source_estimate(&side, &win, &bytes), 0); /* sqlite: no estimate */
	assert_int_equal(bytes, 0);
	assert_int_equal(recon_source_digest(NULL, hex), -1);
}

static void test_source_int_keys(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(int_cases) / sizeof(int_cases[0]); i++) {
		const struct int_case *c = &int_cases[i];
		bool t = recon_source_int_text(c->s, c->len);
		bool a = recon_source_int_in(c->s, c->len, INT16_MIN, INT16_MAX);
		bool b = recon_source_int_in(c->s, c->len, INT32_MIN, INT32_MAX);
		bool d = recon_source_int_in(c->s, c->len, INT64_MIN, INT64_MAX);
		if (t != c->text || a != c->in16 || b != c->in32 || d != c->in64)
			fail_msg("'%s': text %d int2 %d int4 %d int8 %d, want %d %d %d %d", c->s, t,
				 a, b, d, c->text, c->in16, c->in32, c->in64);
	}
}

/* A stub source that counts its lookup_many calls. */
static int stub_calls;

static int stub_lookup_many(struct recon_source *src, size_t n, const char *const *keys,
			    const size_t *lens, struct recon_err *err)
{
	(void)src, (void)n, (void)keys, (void)lens, (void)err;
	stub_calls++;
	return 0;
}

static void test_source_lookup_many_declines(void **state)
{
	struct recon_source_ops with = {.kind = "stub", .lookup_many = stub_lookup_many};
	struct recon_source_ops without = {.kind = "stub"};
	struct recon_source src = {&with, "stub"};
	struct recon_side side;
	const char *keys[RECON_LOOKUP_BATCH + 1];
	size_t lens[RECON_LOOKUP_BATCH + 1];
	struct recon_err err;

	(void)state;
	memset(&side, 0, sizeof(side));
	for (size_t i = 0; i <= RECON_LOOKUP_BATCH; i++) {
		keys[i] = "k";
		lens[i] = 1;
	}
	recon_err_init(&err);
	stub_calls = 0;
	side.nkey = 1;
	assert_int_equal(
	    recon_source_lookup_many(&src, &side, RECON_LOOKUP_BATCH, keys, lens, &err), 0);
	assert_int_equal(stub_calls, 1);
	/* more than a batch, a composite key, a kind without it: declined, nothing recorded */
	assert_int_equal(
	    recon_source_lookup_many(&src, &side, RECON_LOOKUP_BATCH + 1, keys, lens, &err),
	    RECON_ENOTFOUND);
	side.nkey = 2;
	assert_int_equal(recon_source_lookup_many(&src, &side, 1, keys, lens, &err),
			 RECON_ENOTFOUND);
	side.nkey = 1;
	src.ops = &without;
	assert_int_equal(recon_source_lookup_many(&src, &side, 1, keys, lens, &err),
			 RECON_ENOTFOUND);
	assert_int_equal(stub_calls, 1);
	assert_int_equal(err.code, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_backends),
	    cmocka_unit_test(test_source_int_keys),
	    cmocka_unit_test(test_source_lookup_many_declines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
