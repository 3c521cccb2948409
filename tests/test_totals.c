/*
 * Tests for src/recon_totals.c: exact amount parsing, WeChat-style trailers
 * and Alipay-style footers checked against the records fed in, and the
 * failure messages (file:line and the disagreeing total).
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

#include "recon_err.h"
#include "recon_job.h"
#include "recon_totals.h"

static char *S(const char *s)
{
	return (char *)s;
}

static void test_totals_parse_amount(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(recon_totals_parse_amount("0.00600", 7, &v), 0);
	assert_int_equal(v, 6000);
	assert_int_equal(recon_totals_parse_amount("-0.04", 5, &v), 0);
	assert_int_equal(v, -40000);
	assert_int_equal(recon_totals_parse_amount(" 7 ", 3, &v), 0);
	assert_int_equal(v, 7000000);
	assert_int_equal(recon_totals_parse_amount("9223372036854.775807", 20, &v), 0);
	assert_int_equal(v, INT64_MAX);
	assert_int_equal(recon_totals_parse_amount("-9223372036854.775808", 21, &v), 0);
	assert_true(v == INT64_MIN);
	assert_true(recon_totals_parse_amount("9223372036854.775808", 20, &v) < 0);
	assert_true(recon_totals_parse_amount("12.3O", 5, &v) < 0);
	assert_true(recon_totals_parse_amount("N/A", 3, &v) < 0);
	assert_true(recon_totals_parse_amount("1.1234567", 9, &v) < 0);
	assert_true(recon_totals_parse_amount("1.", 2, &v) < 0);
	assert_true(recon_totals_parse_amount(".5", 2, &v) < 0);
	assert_true(recon_totals_parse_amount("", 0, &v) < 0);
	assert_true(recon_totals_parse_amount("-", 1, &v) < 0);
	assert_true(recon_totals_parse_amount("1e5", 3, &v) < 0);
}

/* The grammar of recon_totals_parse_amount(), digit by digit with checked arithmetic. */
static int ref_parse(const char *s, size_t len, int64_t *out)
{
	size_t i = 0, decimals = 0;
	bool neg = false, digits = false;
	uint64_t v = 0, limit;

	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits = true)
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
			return -1;
	if (!digits)
		return -1;
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, decimals++)
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, s[i] - '0', &v))
				return -1;
		if (!decimals || decimals > 6)
			return -1;
	}
	if (i != len)
		return -1;
	for (; decimals < 6; decimals++)
		if (__builtin_mul_overflow(v, 10, &v))
			return -1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (v > limit)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* Random cells, short and long, near and past the int64 edge: the same answer as ref_parse(). */
static void test_totals_parse_amount_random(void **state)
{
	static const char alphabet[] = "0123456789000999.-+ \tx";
	uint64_t r = 88172645463325252ULL;
	char buf[40];

	(void)state;
	for (int k = 0; k < 400000; k++) {
		size_t n, j = 0;
		int64_t a = 0, b = 0;
		int ra, rb;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		n = r % 28;
		if (r >> 40 & 1) {
			/* mostly digits, a mark somewhere: the common shapes */
			for (; j < n; j++)
				buf[j] = (char)('0' + (r >> (j % 50)) % 10);
			if (n > 2 && r >> 41 & 1)
				buf[n - 1 - (r >> 42) % (n < 8 ? n - 1 : 8)] = '.';
			if (n && r >> 45 & 1)
				buf[0] = '-';
		} else {
			for (; j < n; j++)
				buf[j] = alphabet[(r >> (j % 50)) % (sizeof(alphabet) - 1)];
		}
		ra = recon_totals_parse_amount(buf, n, &a);
		rb = ref_parse(buf, n, &b);
		if ((ra < 0) != (rb < 0) || (ra == 0 && a != b))
			fail_msg("'%.*s': %d %lld, expected %d %lld", (int)n, buf, ra, (long long)a,
				 rb, (long long)b);
	}
}

/* A WeChat-like side: trailer totals, count + two sums (one with 5 decimals). */
static struct recon_totals_sum wx_sums[] = {
    {.label = (char *)"退款总金额", .column = (char *)"退款金额"},
    {.label = (char *)"手续费总金额", .column = (char *)"手续费"},
};
static struct recon_totals_group wx_group = {
    .count = (char *)"总交易单数", .entry_type = NULL, .sums = wx_sums, .nsums = 2};
static char *wx_stop[] = {(char *)"总交易单数", NULL};

static void wx_side(struct recon_side *sd)
{
	memset(sd, 0, sizeof(*sd));
	sd->role = "upstream";
	sd->csv.delimiter = ',';
	sd->csv.strip = S("`");
	sd->csv.stop_prefixes = wx_stop;
	sd->csv.totals.in = RECON_TOTALS_TRAILER;
	sd->csv.totals.required = true;
	sd->csv.totals.groups = &wx_group;
	sd->csv.totals.ngroups = 1;
}

static void cells3(struct recon_totals_cell *c, const char *a, const char *b, const char *d)
{
	c[0].p = a;
	c[0].len = strlen(a);
	c[1].p = b;
	c[1].len = strlen(b);
	c[2].p = d;
	c[2].len = strlen(d);
}

static struct recon_totals *wx_fed(const struct recon_side *sd)
{
	struct recon_totals *t = recon_totals_new(sd);
	struct recon_totals_cell c[3];

	assert_non_null(t);
	cells3(c, "商户订单号", "退款金额", "手续费");
	recon_totals_bind(t, c, 3, SIZE_MAX);
	cells3(c, "`A", "`0.00", "`0.00600");
	recon_totals_add(t, c, 3, 2, NULL);
	cells3(c, "`A", "`0.01", "`0.00000");
	recon_totals_add(t, c, 3, 3, NULL);
	cells3(c, "`B", "`0.01", "`0.00001");
	recon_totals_add(t, c, 3, 4, NULL);
	return t;
}

static int check(const struct recon_totals *t, const char *text, uint64_t first,
		 struct recon_err *err)
{
	uint64_t lines[4] = {first, first + 1, first + 2, first + 3};

	recon_err_init(err);
	return recon_totals_check(t, text, text ? strlen(text) : 0, lines, 4, "bill.csv", 4, err);
}

static void test_totals_trailer_agrees(void **state)
{
	struct recon_side sd;
	struct recon_totals *t;
	struct recon_err err;

	(void)state;
	wx_side(&sd);
	t = wx_fed(&sd);
	assert_int_equal(check(t,
			       "总交易单数,退款总金额,手续费总金额\n"
			       "`3,`0.02,`0.00601\n",
			       5, &err),
			 0);
	/* a label nothing checks fails the run, naming it (a wrong value there would pass) */
	assert_int_equal(check(t,
			       "总交易单数,退款总金额,手续费总金额,订单总金额\n"
			       "`3,`0.02,`0.00601,`9.99\n",
			       5, &err),
			 RECON_EINPUT);
	assert_string_equal(err.where, "bill.csv:5");
	assert_non_null(strstr(err.msg, "control total '订单总金额' is not one the side's profile "
					"checks or knows as informational"));
	/* ... unless the profile knows it as informational, or the job ignores it */
	sd.csv.totals.informational = (char *[]){S("订单总金额"), NULL};
	assert_int_equal(check(t,
			       "总交易单数,退款总金额,手续费总金额,订单总金额\n"
			       "`3,`0.02,`0.00601,`9.99\n",
			       5, &err),
			 0);
	sd.csv.totals.informational = NULL;
	sd.csv.totals_ignore = (char *[]){S("订单总金额"), NULL};
	assert_int_equal(check(t,
			       "总交易单数,退款总金额,手续费总金额,订单总金额\n"
			       "`3,`0.02,`0.00601,`9.99\n",
			       5, &err),
			 0);
	recon_totals_free(t);
}

static void test_totals_trailer_disagrees(void **state)
{
	struct recon_side sd;
	struct recon_totals *t;
	struct recon_err err;

	(void)state;
	wx_side(&sd);
	t = wx_fed(&sd);
	assert_int_equal(check(t, "总交易单数,退款总金额\n`4,`0.02\n", 5, &err), RECON_EINPUT);
	assert_string_equal(err.where, "bill.csv:6");
	assert_string_equal(err.msg,
			    "control total '总交易单数' is 4, but the file has 3 detail records");
	assert_int_equal(check(t, "总交易单数,手续费总金额\n`3,`0.00602\n", 5, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "control total '手续费总金额' is 0.00602, but the records' "
				     "'手续费' sum to 0.00601");
	assert_int_equal(check(t, "总交易单数,退款总金额\n`3\n", 5, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "control totals: 2 names but 1 values");
	assert_int_equal(check(t, "总交易单数,退款总金额\n", 5, &err), RECON_EINPUT);
	assert_int_equal(check(t, "总笔数\n`3\n", 5, &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "control total '总笔数' is not one"));
	assert_int_equal(check(t, "退款总金额\n`0.02\n", 5, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "control totals lack '总交易单数'");
	assert_int_equal(check(t, "总交易单数,退款总金额\n`3,`0.0x\n", 5, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "control total '退款总金额': '0.0x' is not an amount");
	/* required and absent: truncated */
	assert_int_equal(check(t, NULL, 0, &err), RECON_EINPUT);
	assert_string_equal(err.where, "bill.csv:4");
	recon_totals_free(t);
	/* not required and absent: nothing to check */
	sd.csv.totals.required = false;
	t = wx_fed(&sd);
	assert_int_equal(check(t, NULL, 0, &err), 0);
	recon_totals_free(t);
}

static void test_totals_unverifiable_record(void **state)
{
	struct recon_side sd;
	struct recon_totals *t;
	struct recon_totals_cell c[3];
	struct recon_err err;

	(void)state;
	wx_side(&sd);
	t = wx_fed(&sd);
	cells3(c, "`C", "`N/A", "`0.00000");
	recon_totals_add(t, c, 3, 9, NULL);
	assert_int_equal(check(t, "总交易单数\n`4\n", 10, &err), RECON_EINPUT);
	assert_string_equal(err.where, "bill.csv:9");
	assert_string_equal(
	    err.msg, "'退款金额': 'N/A' is not an amount (the control totals cannot be verified)");
	recon_totals_free(t);
	t = wx_fed(&sd);
	recon_totals_add(t, c, 1, 7, "expected 3 fields, found 1");
	assert_int_equal(check(t, "总交易单数\n`4\n", 10, &err), RECON_EINPUT);
	assert_string_equal(err.where, "bill.csv:7");
	recon_totals_free(t);
}

/* Alipay-like: footer lines per entry type. */
static struct recon_totals_sum ali_pay_sums[] = {
    {.label = (char *)"商家实收", .column = (char *)"商家实收（元）"}};
static struct recon_totals_sum ali_ref_sums[] = {
    {.label = (char *)"商家实收退款", .column = (char *)"商家实收（元）"}};
static struct recon_totals_group ali_groups[] = {
    {.count = (char *)"#交易合计：",
     .entry_type = (char *)"交易",
     .sums = ali_pay_sums,
     .nsums = 1},
    {.count = (char *)"#退款合计：",
     .entry_type = (char *)"退款",
     .sums = ali_ref_sums,
     .nsums = 1},
};
static char *ali_comments[] = {(char *)"#", NULL};

static void test_totals_footer(void **state)
{
	struct recon_side sd;
	struct recon_totals *t;
	struct recon_totals_cell c[3];
	struct recon_err err;
	uint64_t lines[3] = {20, 21, 22};
	const char *ok = "#-----业务明细列表结束-----\n"
			 "#交易合计：2笔，商家实收共0.03元，商家优惠共0.00元\n"
			 "#退款合计：1笔，商家实收退款共-0.01元，商家优惠退款共0.00元\n";
	const char *bad = "#-----业务明细列表结束-----\n"
			  "#交易合计：2笔，商家实收共0.03元，商家优惠共0.00元\n"
			  "#退款合计：1笔，商家实收退款共-0.02元，商家优惠退款共0.00元\n";

	(void)state;
	memset(&sd, 0, sizeof(sd));
	sd.role = "upstream";
	sd.csv.delimiter = ',';
	sd.csv.strip = S("\t");
	sd.csv.comment_prefixes = ali_comments;
	sd.csv.totals.in = RECON_TOTALS_FOOTER;
	sd.csv.totals.required = true;
	sd.csv.totals.groups = ali_groups;
	sd.csv.totals.ngroups = 2;
	t = recon_totals_new(&sd);
	cells3(c, "业务类型", "订单金额（元）", "商家实收（元）");
	recon_totals_bind(t, c, 3, 0);
	cells3(c, "交易\t", "0.01", "0.01");
	recon_totals_add(t, c, 3, 6, NULL);
	cells3(c, "交易\t", "0.02", "0.02");
	recon_totals_add(t, c, 3, 7, NULL);
	cells3(c, "退款\t", "-0.01", "-0.01");
	recon_totals_add(t, c, 3, 8, NULL);
	/* 商家优惠 is not summed here: unknown, unless informational */
	recon_err_init(&err);
	assert_int_equal(recon_totals_check(t, ok, strlen(ok), lines, 3, "a.csv", 23, &err),
			 RECON_EINPUT);
	assert_string_equal(err.where, "a.csv:21");
	assert_non_null(strstr(err.msg, "control total '商家优惠' is not one"));
	sd.csv.totals.informational = (char *[]){S("商家优惠"), S("商家优惠退款"), NULL};
	recon_err_init(&err);
	assert_int_equal(recon_totals_check(t, ok, strlen(ok), lines, 3, "a.csv", 23, &err), 0);
	/* another line stating totals that no group reads */
	{
		const char *other = "#交易合计：2笔，商家实收共0.03元，商家优惠共0.00元\n"
				    "#退款合计：1笔，商家实收退款共-0.01元，商家优惠退款共0.00元\n"
				    "#分账合计：1笔，分账共0.01元\n";
		recon_err_init(&err);
		assert_int_equal(
		    recon_totals_check(t, other, strlen(other), lines, 3, "a.csv", 23, &err),
		    RECON_EINPUT);
		assert_string_equal(err.where, "a.csv:22");
		assert_non_null(strstr(err.msg, "control total '#分账合计：' is not one"));
		sd.csv.totals_ignore = (char *[]){S("#分账合计："), NULL};
		recon_err_init(&err);
		assert_int_equal(
		    recon_totals_check(t, other, strlen(other), lines, 3, "a.csv", 23, &err), 0);
		sd.csv.totals_ignore = NULL;
	}
	assert_int_equal(recon_totals_check(t, bad, strlen(bad), lines, 3, "a.csv", 23, &err),
			 RECON_EINPUT);
	assert_string_equal(err.where, "a.csv:22");
	assert_string_equal(err.msg, "control total '商家实收退款' is -0.02, but the records' "
				     "'商家实收（元）' sum to -0.01");
	recon_err_init(&err);
	assert_int_equal(recon_totals_check(t, ok, 40, lines, 1, "a.csv", 23, &err), RECON_EINPUT);
	assert_string_equal(err.where, "a.csv:23");
	assert_string_equal(err.msg, "the file ends without its control totals (no '#交易合计：' "
				     "line): truncated?");
	recon_totals_free(t);
}

static void test_totals_none(void **state)
{
	struct recon_side sd;

	(void)state;
	memset(&sd, 0, sizeof(sd));
	assert_null(recon_totals_new(&sd));
	recon_totals_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_totals_parse_amount),
	    cmocka_unit_test(test_totals_parse_amount_random),
	    cmocka_unit_test(test_totals_trailer_agrees),
	    cmocka_unit_test(test_totals_trailer_disagrees),
	    cmocka_unit_test(test_totals_unverifiable_record),
	    cmocka_unit_test(test_totals_footer),
	    cmocka_unit_test(test_totals_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
