/*
 * Tests for src/recon_dbcs.c: converting pair by pair equals iconv converting
 * the whole line, on random lines of GBK, GB18030 (with its four-byte
 * sequences), Big5 and EUC-KR text mixed with ASCII, CSV punctuation, NUL
 * and bad bytes; whatever it declines iconv still converts as before (the
 * caller's way). It must take the common line (Alipay's), and refuse the
 * encodings it cannot do pair by pair.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_dbcs.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* iconv's whole-line conversion: true, out/outlen, when it converts every byte. */
static bool iconv_whole(iconv_t cd, const char *in, size_t n, char *out, size_t cap, size_t *outlen)
{
	char *i = (char *)in, *o = out;
	size_t il = n, ol = cap;

	iconv(cd, NULL, NULL, NULL, NULL);
	if (iconv(cd, &i, &il, &o, &ol) == (size_t)-1 || il)
		return false;
	if (iconv(cd, NULL, NULL, &o, &ol) == (size_t)-1)
		return false;
	*outlen = (size_t)(o - out);
	return true;
}

/*
 * A random line: ASCII and whole characters of the encoding (from sample);
 * !*clean: with odd bytes (a lone high byte, NUL, any byte) now and then.
 */
static size_t random_line(const char *sample, size_t slen, char *buf, size_t cap, bool *clean)
{
	static const char ascii[] = "0123456789abcXYZ,.-:\t\r `\"#";
	size_t n = 0, want = 1 + next() % (cap / 2);
	const unsigned top = (*clean = next() % 2) ? 90 : 100;

	while (n + 4 < cap && n < want) {
		const unsigned r = (unsigned)(next() % top);

		if (r < 50) {
			buf[n++] = ascii[next() % (sizeof(ascii) - 1)];
		} else if (r < 90 && slen >= 2) {
			/* a whole character of the sample (its text is 2-byte characters) */
			size_t at = (next() % (slen / 2)) * 2;
			memcpy(buf + n, sample + at, 2);
			n += 2;
		} else if (r < 94) {
			buf[n++] = (char)(0x80 + next() % 128); /* a lone high byte */
		} else if (r < 96) {
			buf[n++] = '\0';
		} else {
			buf[n++] = (char)(next() % 256);
		}
	}
	return n;
}

/* Converts a sample text from UTF-8 to enc. */
static size_t from_utf8(const char *enc, const char *utf8, char *out, size_t cap)
{
	iconv_t cd = iconv_open(enc, "UTF-8");
	char *i = (char *)utf8, *o = out;
	size_t il = strlen(utf8), ol = cap;

	assert_true(cd != (iconv_t)-1);
	assert_true(iconv(cd, &i, &il, &o, &ol) != (size_t)-1);
	iconv_close(cd);
	return (size_t)(o - out);
}

static void check_encoding(const char *enc, const char *sample_utf8, size_t rounds)
{
	iconv_t cd = iconv_open("UTF-8", enc);
	struct recon_dbcs *d;
	char sample[512], line[600], fast[1200], slow[4800];
	size_t slen, taken = 0, agreed = 0;

	assert_true(cd != (iconv_t)-1);
	d = recon_dbcs_new(enc, cd);
	assert_non_null(d);
	slen = from_utf8(enc, sample_utf8, sample, sizeof(sample));

	/* the sample itself, and with ASCII around: taken, and iconv's result */
	{
		size_t fl, sl;
		bool nul = true;
		assert_true(recon_dbcs_convert(d, sample, slen, fast, &fl, &nul));
		assert_false(nul);
		assert_true(iconv_whole(cd, sample, slen, slow, sizeof(slow), &sl));
		assert_int_equal(fl, sl);
		assert_memory_equal(fast, slow, fl);
		assert_int_equal(fl, strlen(sample_utf8));
		assert_memory_equal(fast, sample_utf8, fl);
	}
	for (size_t r = 0; r < rounds; r++) {
		bool clean, nul = false, ok;
		size_t n = random_line(sample, slen, line, sizeof(line), &clean), fl = 0, sl = 0;

		ok = recon_dbcs_convert(d, line, n, fast, &fl, &nul);
		/* ASCII and whole characters: always taken */
		assert_true(ok || !clean);
		if (!ok)
			continue;
		taken++;
		/* taken: iconv converts the line whole, to the same bytes */
		assert_true(iconv_whole(cd, line, n, slow, sizeof(slow), &sl));
		assert_int_equal(fl, sl);
		assert_memory_equal(fast, slow, fl);
		assert_true(fl <= 2 * n);
		assert_int_equal(nul, memchr(line, '\0', n) != NULL);
		agreed++;
	}
	if (getenv("TEST_DBCS_VERBOSE"))
		fprintf(stderr, "%s: %zu of %zu lines taken\n", enc, taken, rounds);
	assert_true(taken > rounds / 3);
	assert_int_equal(agreed, taken);
	recon_dbcs_free(d);
	iconv_close(cd);
}

static const char zh[] = "商户订单号交易退款下单测试，蓝色支付宝业务明细查询合计商家实收共元";

static void test_gbk(void **state)
{
	(void)state;
	check_encoding("GBK", zh, 200000);
}

static void test_gb18030(void **state)
{
	char four[8], out[32];
	size_t fl;
	bool nul;
	iconv_t cd = iconv_open("UTF-8", "GB18030");
	struct recon_dbcs *d;

	(void)state;
	check_encoding("GB18030", zh, 100000);
	/* a four-byte sequence is iconv's to convert */
	assert_true(cd != (iconv_t)-1);
	d = recon_dbcs_new("gb18030", cd);
	assert_non_null(d);
	/* U+1F600, beyond GBK: four bytes in GB18030 */
	assert_int_equal(from_utf8("GB18030", "a\xF0\x9F\x98\x80", four, sizeof(four)), 5);
	assert_false(recon_dbcs_convert(d, four, 5, out, &fl, &nul));
	recon_dbcs_free(d);
	iconv_close(cd);
}

static void test_big5_euckr(void **state)
{
	(void)state;
	check_encoding("BIG5", "商戶訂單號交易退款測試藍色", 100000);
	check_encoding("EUC-KR",
		       "\xEC\xA3\xBC\xEB\xAC\xB8\xEB\xB2\x88\xED\x98\xB8\xEA\xB1\xB0\xEB\x9E\x98",
		       100000);
}

/* A lead byte at the end, or before a byte no pair has: iconv decides (and reports). */
static void test_declines(void **state)
{
	iconv_t cd = iconv_open("UTF-8", "GBK");
	struct recon_dbcs *d = recon_dbcs_new("GBK", cd);
	char out[64];
	size_t fl;
	bool nul;

	(void)state;
	assert_non_null(d);
	assert_false(recon_dbcs_convert(d, "ab\xD6", 3, out, &fl, &nul));
	assert_false(recon_dbcs_convert(d, "\xD6,x", 3, out, &fl, &nul));
	assert_true(recon_dbcs_convert(d, "a\0b", 3, out, &fl, &nul));
	assert_true(nul);
	assert_int_equal(fl, 3);
	recon_dbcs_free(d);
	iconv_close(cd);
}

/* Stateful, wider or UTF-8 itself: no converter. */
static void test_refuses(void **state)
{
	static const char *const no[] = {"UTF-16", "ISO-2022-JP", "UTF-8", "UTF-7", "SHIFT_JIS"};

	(void)state;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		iconv_t cd = iconv_open("UTF-8", no[i]);
		if (cd == (iconv_t)-1)
			continue;
		assert_null(recon_dbcs_new(no[i], cd));
		iconv_close(cd);
	}
	assert_null(recon_dbcs_new(NULL, (iconv_t)-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gbk),	       cmocka_unit_test(test_gb18030),
	    cmocka_unit_test(test_big5_euckr), cmocka_unit_test(test_declines),
	    cmocka_unit_test(test_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
