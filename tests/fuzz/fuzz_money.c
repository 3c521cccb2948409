/*
 * fuzz_money: recon_money_parse(), recon_money_format() and
 * recon_money_exponent() (src/recon_money.c).
 *
 * Input: one selector byte, then the amount text. The selector picks the
 * exponent (low 3 bits: 0..7, so 5..7 test the unsupported-exponent path)
 * and the flags (next 3 bits: every combination, including the invalid ones).
 *
 * Checked beyond the sanitizers, against the contract in recon_money.h:
 *   - an independent reference parser (128-bit arithmetic, written from the
 *     header comment) accepts exactly the same texts with the same values;
 *   - failure returns RECON_EVALUE with a message and leaves *out and
 *     err->where alone; success leaves err untouched;
 *   - format(parse(x)) parses back to the same value, and format() of the
 *     input's first 8 bytes read as an int64 does too (INT64_MIN included);
 *   - recon_money_exponent() answers -1 or 0..4 for any NUL-terminated text.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_money.h"

#define SENTINEL ((int64_t)0x5A5A5A5A5A5A5A5A)

static void fail(const char *what, const uint8_t *s, size_t len, int exponent, unsigned flags)
{
	fprintf(stderr, "fuzz_money: %s (exponent %d, flags 0x%x, input '", what, exponent, flags);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, s[i] >= 0x20 && s[i] < 0x7f ? "%c" : "\\x%02x", s[i]);
	fprintf(stderr, "')\n");
	abort();
}

static bool blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static bool digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* Integer part with ',' groups: no ',' at all, or 1-3 digits then groups of exactly 3. */
static bool ref_grouping(const uint8_t *p, size_t n)
{
	size_t i = 0, g = 0;

	if (!memchr(p, ',', n))
		return true;
	while (i < n && p[i] != ',')
		i++, g++;
	if (g < 1 || g > 3)
		return false;
	while (i < n) {
		i++; /* the ',' */
		for (g = 0; i < n && p[i] != ','; i++)
			g++;
		if (g != 3)
			return false;
	}
	return true;
}

/* The contract of recon_money_parse(), written independently. true: *out is the value. */
static bool ref_parse(const uint8_t *s, size_t len, int exponent, unsigned flags, int64_t *out)
{
	const unsigned all = RECON_MONEY_THOUSANDS | RECON_MONEY_DECIMAL_COMMA | RECON_MONEY_MINOR;
	const bool grouped = flags & RECON_MONEY_THOUSANDS;
	const bool minor = flags & RECON_MONEY_MINOR;
	const uint8_t mark = (flags & RECON_MONEY_DECIMAL_COMMA) ? ',' : '.';
	size_t b = 0, e = len, i, int_b, int_e, nfrac = 0;
	bool neg = false, has_mark = false;
	__int128 v = 0;

	if (exponent < 0 || exponent > 4 || (flags & ~all))
		return false;
	if (grouped && (flags & RECON_MONEY_DECIMAL_COMMA))
		return false;
	if (minor && flags != RECON_MONEY_MINOR)
		return false;
	while (b < e && blank(s[b]))
		b++;
	while (e > b && blank(s[e - 1]))
		e--;
	i = b;
	if (i < e && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	int_b = i;
	while (i < e && (digit(s[i]) || (grouped && s[i] == ',')))
		i++;
	int_e = i;
	if (!minor && i < e && s[i] == mark) {
		has_mark = true;
		for (i++; i < e && digit(s[i]); i++)
			nfrac++;
	}
	if (i != e || int_b == int_e)
		return false;
	if (!ref_grouping(s + int_b, int_e - int_b))
		return false;
	/* "12." is rejected, except MT940's "9," with a comma mark */
	if (has_mark && nfrac == 0 && mark != ',')
		return false;
	if (nfrac > (size_t)exponent)
		return false;
	for (i = int_b; i < int_e; i++) {
		if (s[i] == ',')
			continue;
		v = v * 10 + (s[i] - '0');
		if (v > (__int128)INT64_MAX + 1)
			return false;
	}
	if (has_mark)
		for (i = int_e + 1; i < int_e + 1 + nfrac; i++) {
			v = v * 10 + (s[i] - '0');
			if (v > (__int128)INT64_MAX + 1)
				return false;
		}
	if (!minor)
		for (size_t k = nfrac; k < (size_t)exponent; k++) {
			v *= 10;
			if (v > (__int128)INT64_MAX + 1)
				return false;
		}
	if (neg)
		v = -v;
	if (v > INT64_MAX || v < INT64_MIN)
		return false;
	*out = (int64_t)v;
	return true;
}

static void check_format(int64_t v, int exponent, const uint8_t *s, size_t len, unsigned flags)
{
	char buf[32], small[8];
	struct recon_err err;
	int64_t back = SENTINEL;
	size_t n = recon_money_format(v, exponent, buf, sizeof(buf));
	size_t m = recon_money_format(v, exponent, small, sizeof(small));

	if (n >= sizeof(buf) || strlen(buf) != n)
		fail("format: wrong length", s, len, exponent, flags);
	if (m != n || strlen(small) != (n < sizeof(small) ? n : sizeof(small) - 1) ||
	    memcmp(small, buf, strlen(small)))
		fail("format: truncated output differs", s, len, exponent, flags);
	recon_err_init(&err);
	if (recon_money_parse(buf, n, exponent, 0, &back, &err) < 0 || back != v)
		fail("format: output does not parse back", s, len, exponent, flags);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *s;
	size_t len;
	int exponent;
	unsigned flags;
	int64_t got = SENTINEL, want = SENTINEL;
	struct recon_err err;
	bool ok;
	char *text;
	int rc, x;

	if (size < 1)
		return 0;
	exponent = data[0] & 7;
	flags = (data[0] >> 3) & 7;
	s = data + 1;
	len = size - 1;

	/* an exact-size heap copy: any read past len is an ASan report */
	{
		char *copy = malloc(len ? len : 1);

		if (!copy)
			abort();
		memcpy(copy, s, len);
		recon_err_init(&err);
		rc = recon_money_parse(copy, len, exponent, flags, &got, &err);
		free(copy);
	}
	ok = ref_parse(s, len, exponent, flags, &want);
	if (rc == 0) {
		if (err.code || err.where[0] || err.msg[0])
			fail("success touched err", s, len, exponent, flags);
		if (!ok)
			fail("accepted what the contract rejects", s, len, exponent, flags);
		if (got != want)
			fail("value differs from the reference", s, len, exponent, flags);
		check_format(got, exponent, s, len, flags);
	} else {
		if (rc != RECON_EVALUE || err.code != RECON_EVALUE || !err.msg[0])
			fail("failure without RECON_EVALUE and a message", s, len, exponent, flags);
		if (err.where[0])
			fail("failure set err->where", s, len, exponent, flags);
		if (got != SENTINEL)
			fail("failure changed *out", s, len, exponent, flags);
		if (ok)
			fail("rejected what the contract accepts", s, len, exponent, flags);
	}

	/* format() of an arbitrary value, every supported exponent */
	if (len >= 8) {
		int64_t v;

		memcpy(&v, s, 8);
		for (int ex = 0; ex <= 4; ex++)
			check_format(v, ex, s, len, flags);
	}

	/* the currency table: any text, NUL-terminated */
	text = fuzz_strndup(s, len < 8 ? len : 8);
	x = recon_money_exponent(text);
	if (x < -1 || x > 4 || (x >= 0 && strlen(text) != 3))
		fail("exponent out of range", s, len, exponent, flags);
	free(text);
	return 0;
}
