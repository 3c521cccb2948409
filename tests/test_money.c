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

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_money.h"

#define LEN(lit) (sizeof(lit) - 1) /* literal length, counting embedded NULs */

#define TH RECON_MONEY_THOUSANDS
#define DC RECON_MONEY_DECIMAL_COMMA
#define MI RECON_MONEY_MINOR

struct parse_case {
	const char *s;
	size_t len;
	int exponent;
	unsigned flags;
	bool ok;
	int64_t want;	 /* when ok */
	const char *msg; /* when !ok: the exact err->msg */
};

/* clang-format off */
#define OK(lit, exp, fl, v)  {lit, LEN(lit), exp, fl, true, v, NULL}
#define BAD(lit, exp, fl, m) {lit, LEN(lit), exp, fl, false, 0, m}
/* clang-format on */

static const struct parse_case parse_cases[] = {
    /* plain decimals at exponent 2 */
    OK("0", 2, 0, 0),
    OK("0.00", 2, 0, 0),
    OK("-0", 2, 0, 0),
    OK("-0.00", 2, 0, 0),
    OK("+1.5", 2, 0, 150),
    OK("12.34", 2, 0, 1234),
    OK("-12.34", 2, 0, -1234),
    OK("  12.34  ", 2, 0, 1234),
    OK("\t12.34\t", 2, 0, 1234),
    OK("12.3", 2, 0, 1230),
    OK("007", 2, 0, 700),
    OK("0.01", 2, 0, 1),
    OK("-0.05", 2, 0, -5),
    BAD(".5", 2, 0, "missing digits before decimal mark in '.5'"),
    BAD(".", 2, 0, "missing digits before decimal mark in '.'"),
    BAD("5.", 2, 0, "missing digits after decimal mark in '5.'"),
    BAD("12.345", 2, 0, "too many decimals in '12.345' (exponent 2 allows 2)"),
    BAD("1.230", 2, 0, "too many decimals in '1.230' (exponent 2 allows 2)"),
    /* junk */
    BAD("1e5", 2, 0, "invalid character 'e' in amount '1e5'"),
    BAD("0x10", 2, 0, "invalid character 'x' in amount '0x10'"),
    BAD("N/A", 2, 0, "invalid character 'N' in amount 'N/A'"),
    BAD("12.3O", 2, 0, "invalid character 'O' in amount '12.3O'"),
    BAD("", 2, 0, "empty amount"),
    BAD("   ", 2, 0, "empty amount"),
    BAD("-", 2, 0, "no digits in amount '-'"),
    BAD("+", 2, 0, "no digits in amount '+'"),
    BAD("--1", 2, 0, "invalid character '-' in amount '--1'"),
    BAD("+-1", 2, 0, "invalid character '-' in amount '+-1'"),
    BAD("- 5", 2, 0, "invalid character ' ' in amount '- 5'"),
    BAD("5-", 2, 0, "invalid character '-' in amount '5-'"),
    BAD("1 000", 2, 0, "invalid character ' ' in amount '1 000'"),
    BAD("1.2.3", 2, 0, "invalid character '.' in amount '1.2.3'"),
    BAD("12\n", 2, 0, "invalid character '\\x0a' in amount '12\\x0a'"),
    BAD("1'000", 2, 0, "invalid character '\\'' in amount '1\\'000'"),
    BAD("\xef\xbc\x91\xef\xbc\x92", 2, 0, /* full-width "12" */
	"invalid character '\\xef' in amount '\\xef\\xbc\\x91\\xef\\xbc\\x92'"),
    BAD("12\0", 2, 0, "invalid character '\\x00' in amount '12\\x00'"),
    BAD("1\0"
	"2",
	2, 0, "invalid character '\\x00' in amount '1\\x002'"),
    /* thousands grouping */
    BAD("1,234.56", 2, 0, "invalid character ',' in amount '1,234.56'"),
    OK("1,234.56", 2, TH, 123456),
    OK("1,234,567.89", 2, TH, 123456789),
    OK("-12,345,678", 2, TH, -1234567800),
    OK("1234.56", 2, TH, 123456),
    OK("999", 2, TH, 99900),
    BAD("1,23.45", 2, TH, "misplaced thousands separator in '1,23.45'"),
    BAD(",123", 2, TH, "misplaced thousands separator in ',123'"),
    BAD("1,,234", 2, TH, "misplaced thousands separator in '1,,234'"),
    BAD("1234,567", 2, TH, "misplaced thousands separator in '1234,567'"),
    BAD("1,2345", 2, TH, "misplaced thousands separator in '1,2345'"),
    BAD("1,234,", 2, TH, "misplaced thousands separator in '1,234,'"),
    BAD("1,234.5,6", 2, TH, "invalid character ',' in amount '1,234.5,6'"),
    /* int64 edges */
    OK("9223372036854775807", 0, 0, INT64_MAX),
    OK("-9223372036854775808", 0, 0, INT64_MIN),
    BAD("9223372036854775808", 0, 0, "amount '9223372036854775808' out of range"),
    BAD("-9223372036854775809", 0, 0, "amount '-9223372036854775809' out of range"),
    BAD("99999999999999999999", 0, 0, "amount '99999999999999999999' out of range"),
    OK("92233720368547758.07", 2, 0, INT64_MAX),
    OK("-92233720368547758.08", 2, 0, INT64_MIN),
    OK("92233720368547758", 2, 0, INT64_C(9223372036854775800)),
    BAD("92233720368547758.08", 2, 0, "amount '92233720368547758.08' out of range"),
    BAD("-92233720368547758.09", 2, 0, "amount '-92233720368547758.09' out of range"),
    BAD("92233720368547758.1", 2, 0, "amount '92233720368547758.1' out of range"),
    BAD("92233720368547759", 2, 0, "amount '92233720368547759' out of range"),
    OK("-922337203685477.5808", 4, 0, INT64_MIN),
    BAD("922337203685477.5808", 4, 0, "amount '922337203685477.5808' out of range"),
    OK("0000000000000000000000000000009223372036854775807", 0, 0, INT64_MAX),
    /* other exponents */
    OK("100", 0, 0, 100),
    BAD("100.0", 0, 0, "too many decimals in '100.0' (exponent 0 allows 0)"),
    BAD("100.", 0, 0, "missing digits after decimal mark in '100.'"),
    OK("1.234", 3, 0, 1234),
    OK("1.2", 3, 0, 1200),
    BAD("1.2345", 3, 0, "too many decimals in '1.2345' (exponent 3 allows 3)"),
    OK("1.2345", 4, 0, 12345),
    BAD("1", 5, 0, "unsupported exponent 5"),
    BAD("1", -1, 0, "unsupported exponent -1"),
    /* decimal comma (MT940) */
    OK("11,8", 2, DC, 1180),
    OK("9,", 2, DC, 900),
    OK("107,", 2, DC, 10700),
    OK("-0,01", 2, DC, -1),
    OK("9,", 0, DC, 9),
    BAD(",", 2, DC, "missing digits before decimal mark in ','"),
    BAD(",5", 2, DC, "missing digits before decimal mark in ',5'"),
    BAD("11.8", 2, DC, "invalid character '.' in amount '11.8'"),
    BAD("1.234,56", 2, DC, "invalid character '.' in amount '1.234,56'"),
    BAD("1,234", 2, DC, "too many decimals in '1,234' (exponent 2 allows 2)"),
    BAD("1,2,3", 2, DC, "invalid character ',' in amount '1,2,3'"),
    /* minor units */
    OK("1234", 2, MI, 1234),
    OK("-5", 2, MI, -5),
    OK("+0", 2, MI, 0),
    OK(" 42 ", 0, MI, 42),
    OK("9223372036854775807", 2, MI, INT64_MAX),
    OK("-9223372036854775808", 4, MI, INT64_MIN),
    BAD("9223372036854775808", 2, MI, "amount '9223372036854775808' out of range"),
    BAD("12.00", 2, MI, "decimal mark '.' in minor-unit amount '12.00'"),
    BAD("1,234", 2, MI, "decimal mark ',' in minor-unit amount '1,234'"),
    BAD("", 2, MI, "empty amount"),
    BAD("1", 5, MI, "unsupported exponent 5"),
    /* flag combinations */
    BAD("1", 2, TH | DC, "unsupported amount flags 0x3"),
    BAD("1", 2, MI | TH, "unsupported amount flags 0x5"),
    BAD("1", 2, 0x8u, "unsupported amount flags 0x8"),
};

static void test_money_parse_table(void **state)
{
	size_t i, n = sizeof(parse_cases) / sizeof(parse_cases[0]);

	(void)state;
	assert_true(n >= 50);
	for (i = 0; i < n; i++) {
		const struct parse_case *c = &parse_cases[i];
		struct recon_err err;
		int64_t out = 77;
		int rc;

		recon_err_init(&err);
		rc = recon_money_parse(c->s, c->len, c->exponent, c->flags, &out, &err);
		if (c->ok) {
			if (rc != 0 || out != c->want)
				print_error("case %zu '%s': rc %d, %lld, %s\n", i, c->s, rc,
					    (long long)out, err.msg);
			assert_int_equal(rc, 0);
			assert_int_equal(err.code, 0);
			assert_true(out == c->want);
		} else {
			if (rc == 0)
				print_error("case %zu '%s': accepted as %lld\n", i, c->s,
					    (long long)out);
			assert_int_equal(rc, RECON_EVALUE);
			assert_int_equal(err.code, RECON_EVALUE);
			assert_true(out == 77);
			assert_string_equal(err.where, "");
			assert_string_equal(err.msg, c->msg);
		}
	}
}

static void test_money_parse_long_digits(void **state)
{
	const size_t len = 1u << 20;
	char *s = malloc(len);
	struct recon_err err;
	int64_t out = 0;
	char want[128];

	(void)state;
	assert_non_null(s);

	/* A 1 MiB run of nines overflows; the message quotes 40 bytes then "...". */
	memset(s, '9', len);
	recon_err_init(&err);
	assert_int_equal(recon_money_parse(s, len, 2, 0, &out, &err), RECON_EVALUE);
	snprintf(want, sizeof(want), "amount '%.40s...' out of range", s);
	assert_string_equal(err.msg, want);

	/* Leading zeros never overflow: 1 MiB of them, then a 1. */
	memset(s, '0', len);
	s[len - 1] = '1';
	recon_err_init(&err);
	assert_int_equal(recon_money_parse(s, len, 2, 0, &out, &err), 0);
	assert_true(out == 100);

	/* Junk at the very end is still found and named. */
	s[len - 1] = '\x7f';
	recon_err_init(&err);
	assert_int_equal(recon_money_parse(s, len, 2, 0, &out, &err), RECON_EVALUE);
	snprintf(want, sizeof(want), "invalid character '\\x7f' in amount '%.40s...'", s);
	assert_string_equal(err.msg, want);

	/* Forty escaped bytes still fit err->msg. */
	memset(s, '\x01', len);
	recon_err_init(&err);
	assert_int_equal(recon_money_parse(s, len, 2, 0, &out, &err), RECON_EVALUE);
	assert_true(strlen(err.msg) < sizeof(err.msg) - 1);
	assert_non_null(strstr(err.msg, "...'"));
	free(s);
}

static void test_money_parse_respects_len(void **state)
{
	struct recon_err err;
	int64_t out = 0;

	(void)state;
	recon_err_init(&err);
	/* Only the first 4 bytes are the field; what follows is not read. */
	assert_int_equal(recon_money_parse("12.3456", 4, 2, 0, &out, &err), 0);
	assert_true(out == 1230);
	assert_int_equal(recon_money_parse("12.3456", 0, 2, 0, &out, &err), RECON_EVALUE);
	assert_string_equal(err.msg, "empty amount");
}

static void test_money_parse_first_error_wins(void **state)
{
	struct recon_err err;
	int64_t out = 5;

	(void)state;
	recon_err_init(&err);
	recon_err_set(&err, RECON_EIO, "x.csv:3", "earlier failure");
	assert_int_equal(recon_money_parse("abc", 3, 2, 0, &out, &err), RECON_EVALUE);
	assert_int_equal(err.code, RECON_EIO);
	assert_string_equal(err.where, "x.csv:3");
	assert_string_equal(err.msg, "earlier failure");
	assert_true(out == 5);

	/* Success leaves a set error untouched too. */
	assert_int_equal(recon_money_parse("1", 1, 2, 0, &out, &err), 0);
	assert_true(out == 100);
	assert_int_equal(err.code, RECON_EIO);
}

static void test_money_parse_null_err(void **state)
{
	int64_t out = 0;

	(void)state;
	/* recon_err_set() accepts a NULL err; parsing must too. */
	assert_int_equal(recon_money_parse("x", 1, 2, 0, &out, NULL), RECON_EVALUE);
	assert_int_equal(recon_money_parse("1.5", 3, 2, 0, &out, NULL), 0);
	assert_true(out == 150);
}

static void check_format(int64_t minor, int exponent, const char *want)
{
	char buf[32];

	assert_int_equal(recon_money_format(minor, exponent, buf, sizeof(buf)), strlen(want));
	assert_string_equal(buf, want);
}

static void test_money_format_values(void **state)
{
	(void)state;
	check_format(123456, 2, "1234.56");
	check_format(-5, 2, "-0.05");
	check_format(7, 0, "7");
	check_format(0, 0, "0");
	check_format(0, 3, "0.000");
	check_format(-1, 4, "-0.0001");
	check_format(1234, 3, "1.234");
	check_format(INT64_MAX, 0, "9223372036854775807");
	check_format(INT64_MIN, 0, "-9223372036854775808");
	check_format(INT64_MAX, 2, "92233720368547758.07");
	check_format(INT64_MIN, 2, "-92233720368547758.08");
	check_format(INT64_MIN, 4, "-922337203685477.5808");
}

static void test_money_format_truncates(void **state)
{
	char buf[5];

	(void)state;
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(recon_money_format(123456, 2, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "1234");
	assert_int_equal(recon_money_format(INT64_MIN, 4, buf, 1), 21);
	assert_string_equal(buf, "");
	/* size 0 writes nothing, so NULL is fine: the snprintf sizing idiom */
	assert_int_equal(recon_money_format(-5, 2, NULL, 0), 5);
}

static void test_money_format_bad_exponent(void **state)
{
	char buf[32] = "junk";

	(void)state;
	assert_int_equal(recon_money_format(5, 5, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(recon_money_format(5, -1, buf, sizeof(buf)), 0);
}

static void test_money_round_trip(void **state)
{
	static const int64_t values[] = {
	    0,
	    1,
	    -1,
	    5,
	    -5,
	    9,
	    10,
	    -10,
	    99,
	    100,
	    101,
	    12345,
	    -12345,
	    999999,
	    1000000,
	    INT64_C(123456789012345678),
	    INT64_C(-987654321098765432),
	    INT64_MAX / 10,
	    INT64_MIN / 10,
	    INT64_MAX - 1,
	    INT64_MIN + 1,
	    INT64_MAX,
	    INT64_MIN,
	};
	size_t i;
	int exponent;

	(void)state;
	for (exponent = 0; exponent <= 4; exponent++) {
		for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			char buf[32];
			size_t n = recon_money_format(values[i], exponent, buf, sizeof(buf));
			struct recon_err err;
			int64_t out = 0;

			assert_true(n < sizeof(buf));
			recon_err_init(&err);
			if (recon_money_parse(buf, n, exponent, 0, &out, &err) != 0)
				print_error("'%s' at %d: %s\n", buf, exponent, err.msg);
			assert_int_equal(err.code, 0);
			assert_true(out == values[i]);
		}
	}
}

static void test_money_exponent_codes(void **state)
{
	static const char *const zero[] = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY",
					   "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
					   "VND", "VUV", "XAF", "XOF", "XPF"};
	static const char *const three[] = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};
	static const char *const two[] = {"AED", "CNY", "EUR", "GBP", "USD", "CHF",
					  "HKD", "INR", "MGA", "MRU", "IDR", "HUF",
					  "VES", "ZWG", "SLE", "XCD", "ZWL"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		assert_int_equal(recon_money_exponent(zero[i]), 0);
	for (i = 0; i < sizeof(three) / sizeof(three[0]); i++)
		assert_int_equal(recon_money_exponent(three[i]), 3);
	for (i = 0; i < sizeof(two) / sizeof(two[0]); i++)
		assert_int_equal(recon_money_exponent(two[i]), 2);
	assert_int_equal(recon_money_exponent("CLF"), 4);
	assert_int_equal(recon_money_exponent("UYW"), 4);
	assert_int_equal(recon_money_exponent("usd"), 2);
	assert_int_equal(recon_money_exponent("cny"), 2);
	assert_int_equal(recon_money_exponent("jPy"), 0);
	assert_int_equal(recon_money_exponent("kwd"), 3);
}

static void test_money_exponent_rejects(void **state)
{
	(void)state;
	assert_int_equal(recon_money_exponent(""), -1);
	assert_int_equal(recon_money_exponent("CN"), -1);
	assert_int_equal(recon_money_exponent("CNYY"), -1);
	assert_int_equal(recon_money_exponent("xxx"), -1);
	assert_int_equal(recon_money_exponent("XXX"), -1);
	assert_int_equal(recon_money_exponent("XAU"), -1); /* no minor unit */
	assert_int_equal(recon_money_exponent("XDR"), -1);
	assert_int_equal(recon_money_exponent("HRK"), -1); /* withdrawn */
	assert_int_equal(recon_money_exponent("AAA"), -1);
	assert_int_equal(recon_money_exponent("ZZZ"), -1);
	assert_int_equal(recon_money_exponent(" CNY"), -1);
	assert_int_equal(recon_money_exponent("CNY "), -1);
	assert_int_equal(recon_money_exponent("C1Y"), -1);
	assert_int_equal(recon_money_exponent("\xc3\x9c"
					      "SD"),
			 -1);
}

/*
 * The parser's fast path (plain digits, a mark and decimals) against its full
 * path on the same value: a leading blank sends a value down the full path,
 * which trims it. Random strings over the characters an amount is made of;
 * every exponent and form: the same answer, or the same reject.
 */
static void test_money_plain_matches_full(void **state)
{
	static const char alphabet[] = "0123456789012345678901234567890123456789.,-+ x";
	static const unsigned forms[] = {0, TH, DC, MI};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	char s[32], b[33];

	/* around the 18-digit bound of the fast path and INT64's */
	static const char *const edges[] = {"999999999999999999",
					    "1000000000000000000",
					    "9223372036854775807",
					    "9223372036854775808",
					    "-9223372036854775808",
					    "-9223372036854775809",
					    "99999999999999999.9",
					    "9999999999999999.99",
					    "92233720368547758.07",
					    "92233720368547758.08",
					    "-92233720368547758.08",
					    "0000000000000000000001",
					    "-0",
					    "-0.00",
					    "0.",
					    "9,",
					    ".5",
					    "-",
					    "1.234",
					    "18446744073709551617"};

	(void)state;
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		for (int exponent = 0; exponent <= 4; exponent++) {
			for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
				struct recon_err e1, e2;
				int64_t v1 = 7, v2 = 7;
				size_t len = strlen(edges[i]);
				int r1, r2;

				b[0] = ' ';
				memcpy(b + 1, edges[i], len);
				recon_err_init(&e1);
				recon_err_init(&e2);
				r1 = recon_money_parse(edges[i], len, exponent, forms[f], &v1, &e1);
				r2 = recon_money_parse(b, len + 1, exponent, forms[f], &v2, &e2);
				if (r1 != r2 || (!r1 && v1 != v2) || strcmp(e1.msg, e2.msg) != 0)
					fail_msg("'%s' exponent %d flags %u: %d %lld '%s' against "
						 "%d %lld '%s'",
						 edges[i], exponent, forms[f], r1, (long long)v1,
						 e1.msg, r2, (long long)v2, e2.msg);
			}
		}
	}
	for (int i = 0; i < 400000; i++) {
		size_t len;
		int exponent;
		unsigned flags;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		len = (size_t)(seed >> 59) % 24;
		exponent = (int)((seed >> 40) % 5);
		flags = forms[(seed >> 20) % 4];
		for (size_t k = 0; k < len; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			/* mostly digits: long runs of them reach the 18-digit bound */
			s[k] = alphabet[(seed >> 33) % (k % 7 ? 40 : sizeof(alphabet) - 1)];
		}
		b[0] = ' ';
		memcpy(b + 1, s, len);
		{
			struct recon_err e1, e2;
			int64_t v1 = 7, v2 = 7;
			int r1, r2;

			recon_err_init(&e1);
			recon_err_init(&e2);
			r1 = recon_money_parse(s, len, exponent, flags, &v1, &e1);
			r2 = recon_money_parse(b, len + 1, exponent, flags, &v2, &e2);
			if (r1 != r2 || (!r1 && v1 != v2) || strcmp(e1.msg, e2.msg) != 0)
				fail_msg("'%.*s' exponent %d flags %u: %d %lld '%s' against %d "
					 "%lld '%s'",
					 (int)len, s, exponent, flags, r1, (long long)v1, e1.msg,
					 r2, (long long)v2, e2.msg);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_money_parse_table),
	    cmocka_unit_test(test_money_parse_long_digits),
	    cmocka_unit_test(test_money_parse_respects_len),
	    cmocka_unit_test(test_money_parse_first_error_wins),
	    cmocka_unit_test(test_money_parse_null_err),
	    cmocka_unit_test(test_money_format_values),
	    cmocka_unit_test(test_money_format_truncates),
	    cmocka_unit_test(test_money_format_bad_exponent),
	    cmocka_unit_test(test_money_round_trip),
	    cmocka_unit_test(test_money_exponent_codes),
	    cmocka_unit_test(test_money_exponent_rejects),
	    cmocka_unit_test(test_money_plain_matches_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
