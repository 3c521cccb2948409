/*
 * recon_money: exact money. Decimal text <-> int64 minor units.
 *
 * Parsing is done in two passes over the trimmed text: a syntax pass that
 * locates sign, integer digits, decimal mark and decimals (rejecting junk,
 * bad grouping and excess decimals before any arithmetic), then a value pass
 * that accumulates the digits as a NEGATIVE int64 so that INT64_MIN, whose
 * magnitude has no positive int64, is representable. Every multiply and add
 * is checked before it happens (Redis: util.c string2ll does the same).
 */
#include "recon_money.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECON_MONEY_MAX_EXPONENT 4
#define RECON_MONEY_ALL_FLAGS                                                                      \
	(RECON_MONEY_THOUSANDS | RECON_MONEY_DECIMAL_COMMA | RECON_MONEY_MINOR)

struct currency {
	char code[4];
	int exponent;
};

/*
 * ISO 4217 List One, active codes, sorted by code for a binary search. Funds codes
 * (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW) are included; codes whose
 * minor unit is "N.A." (XAU, XDR, XTS, XXX, ...) are not, so they report -1.
 * Codes being phased out (ANG, CUC, SLL, ZWL) stay while they are still
 * listed, as old statements use them; HRK (euro since 2023) is gone. New:
 * VED 2021, SLE 2022, ZWG 2024, XCG 2025.
 */
static const struct currency currencies[] = {
    {"AED", 2}, {"AFN", 2}, {"ALL", 2}, {"AMD", 2}, {"ANG", 2}, {"AOA", 2}, {"ARS", 2}, {"AUD", 2},
    {"AWG", 2}, {"AZN", 2}, {"BAM", 2}, {"BBD", 2}, {"BDT", 2}, {"BGN", 2}, {"BHD", 3}, {"BIF", 0},
    {"BMD", 2}, {"BND", 2}, {"BOB", 2}, {"BOV", 2}, {"BRL", 2}, {"BSD", 2}, {"BTN", 2}, {"BWP", 2},
    {"BYN", 2}, {"BZD", 2}, {"CAD", 2}, {"CDF", 2}, {"CHE", 2}, {"CHF", 2}, {"CHW", 2}, {"CLF", 4},
    {"CLP", 0}, {"CNY", 2}, {"COP", 2}, {"COU", 2}, {"CRC", 2}, {"CUC", 2}, {"CUP", 2}, {"CVE", 2},
    {"CZK", 2}, {"DJF", 0}, {"DKK", 2}, {"DOP", 2}, {"DZD", 2}, {"EGP", 2}, {"ERN", 2}, {"ETB", 2},
    {"EUR", 2}, {"FJD", 2}, {"FKP", 2}, {"GBP", 2}, {"GEL", 2}, {"GHS", 2}, {"GIP", 2}, {"GMD", 2},
    {"GNF", 0}, {"GTQ", 2}, {"GYD", 2}, {"HKD", 2}, {"HNL", 2}, {"HTG", 2}, {"HUF", 2}, {"IDR", 2},
    {"ILS", 2}, {"INR", 2}, {"IQD", 3}, {"IRR", 2}, {"ISK", 0}, {"JMD", 2}, {"JOD", 3}, {"JPY", 0},
    {"KES", 2}, {"KGS", 2}, {"KHR", 2}, {"KMF", 0}, {"KPW", 2}, {"KRW", 0}, {"KWD", 3}, {"KYD", 2},
    {"KZT", 2}, {"LAK", 2}, {"LBP", 2}, {"LKR", 2}, {"LRD", 2}, {"LSL", 2}, {"LYD", 3}, {"MAD", 2},
    {"MDL", 2}, {"MGA", 2}, {"MKD", 2}, {"MMK", 2}, {"MNT", 2}, {"MOP", 2}, {"MRU", 2}, {"MUR", 2},
    {"MVR", 2}, {"MWK", 2}, {"MXN", 2}, {"MXV", 2}, {"MYR", 2}, {"MZN", 2}, {"NAD", 2}, {"NGN", 2},
    {"NIO", 2}, {"NOK", 2}, {"NPR", 2}, {"NZD", 2}, {"OMR", 3}, {"PAB", 2}, {"PEN", 2}, {"PGK", 2},
    {"PHP", 2}, {"PKR", 2}, {"PLN", 2}, {"PYG", 0}, {"QAR", 2}, {"RON", 2}, {"RSD", 2}, {"RUB", 2},
    {"RWF", 0}, {"SAR", 2}, {"SBD", 2}, {"SCR", 2}, {"SDG", 2}, {"SEK", 2}, {"SGD", 2}, {"SHP", 2},
    {"SLE", 2}, {"SLL", 2}, {"SOS", 2}, {"SRD", 2}, {"SSP", 2}, {"STN", 2}, {"SVC", 2}, {"SYP", 2},
    {"SZL", 2}, {"THB", 2}, {"TJS", 2}, {"TMT", 2}, {"TND", 3}, {"TOP", 2}, {"TRY", 2}, {"TTD", 2},
    {"TWD", 2}, {"TZS", 2}, {"UAH", 2}, {"UGX", 0}, {"USD", 2}, {"USN", 2}, {"UYI", 0}, {"UYU", 2},
    {"UYW", 4}, {"UZS", 2}, {"VED", 2}, {"VES", 2}, {"VND", 0}, {"VUV", 0}, {"WST", 2}, {"XAF", 0},
    {"XCD", 2}, {"XCG", 2}, {"XOF", 0}, {"XPF", 0}, {"YER", 2}, {"ZAR", 2}, {"ZMW", 2}, {"ZWG", 2},
    {"ZWL", 2},
};

/* A 3-letter code as a number that sorts like the code. */
static uint32_t code24(const char *c)
{
	return (uint32_t)(unsigned char)c[0] << 16 | (uint32_t)(unsigned char)c[1] << 8 |
	       (uint32_t)(unsigned char)c[2];
}

int recon_money_exponent(const char *currency)
{
	char key[4];
	size_t i;

	for (i = 0; i < 3; i++) {
		unsigned char ch = (unsigned char)currency[i];

		if (ch >= 'a' && ch <= 'z')
			ch = (unsigned char)(ch - 'a' + 'A');
		if (ch < 'A' || ch > 'Z')
			return -1; /* also stops at a NUL, so short input is safe */
		key[i] = (char)ch;
	}
	if (currency[3] != '\0')
		return -1;
	key[3] = '\0';
	/*
	 * This runs for every row, nearly always with the code of the row
	 * before: that answer is kept per thread. Else a binary search on numbers.
	 */
	static _Thread_local uint32_t last_code;
	static _Thread_local int last_exponent;
	const uint32_t want = code24(key);
	if (want == last_code)
		return last_exponent;
	for (size_t lo = 0, hi = sizeof(currencies) / sizeof(currencies[0]); lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t c = code24(currencies[mid].code);

		if (want == c) {
			last_code = want;
			last_exponent = currencies[mid].exponent;
			return last_exponent;
		}
		if (want < c)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Input quoted in messages: escaped, cut to RECON_QUOTE_MAX bytes (recon_err_quote). */
static const char *quote(char dst[RECON_QUOTE_BUF], const char *s, size_t len)
{
	return recon_err_quote(dst, s, len, RECON_QUOTE_ASCII);
}

/*
 * Checks the integer part s[0..len) when it may hold ',' separators: either
 * no ',' at all, or a first group of 1-3 digits then groups of exactly 3.
 */
static bool grouping_ok(const char *s, size_t len)
{
	size_t i, group = 0;
	bool first = true;

	if (!memchr(s, ',', len))
		return true;
	for (i = 0; i < len; i++) {
		if (s[i] != ',') {
			group++;
			continue;
		}
		if (first ? group < 1 || group > 3 : group != 3)
			return false;
		first = false;
		group = 0;
	}
	return group == 3;
}

/*
 * acc = acc * 10 - digit, with acc <= 0. Returns false on int64 overflow.
 * INT64_MIN / 10 and % 10 truncate toward zero in C99+, so the limit is exact.
 */
static bool acc_digit(int64_t *acc, int digit)
{
	if (*acc < INT64_MIN / 10 || (*acc == INT64_MIN / 10 && digit > -(INT64_MIN % 10)))
		return false;
	*acc = *acc * 10 - digit;
	return true;
}

/*
 * The common form: [-]digits, then (not in minor units) the mark and at most
 * `exponent` decimals, no blanks, no grouping, at most 18 digits with the
 * decimals padded (no overflow is possible). Its value, or false for anything
 * else, which the full parser reads (and rejects) as before.
 */
static bool parse_plain(const char *s, size_t len, int exponent, bool minor, char mark,
			int64_t *out)
{
	const char *p = s, *end = s + len;
	uint64_t v = 0;
	int nd = 0, nf = 0;
	bool neg = false;

	if (p < end && *p == '-')
		neg = true, p++;
	for (; p < end && is_digit(*p) && nd < 19; p++, nd++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (!nd)
		return false;
	if (p < end) {
		if (minor || *p != mark)
			return false;
		for (p++; p < end && is_digit(*p) && nf <= exponent; p++, nf++)
			v = v * 10 + (uint64_t)(*p - '0');
		if (p != end || !nf || nf > exponent)
			return false;
	}
	if (nd + (minor ? 0 : exponent) > 18)
		return false;
	for (int i = minor ? exponent : nf; i < exponent; i++)
		v *= 10;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

int recon_money_parse(const char *s, size_t len, int exponent, unsigned flags, int64_t *out,
		      struct recon_err *err)
{
	char q[RECON_QUOTE_BUF], c[RECON_QUOTE_BUF];
	const char *p = s, *end = s + len;
	const char *v = NULL;
	size_t vlen = 0;
	const char *int_start, *int_end, *frac_start = NULL, *frac_end = NULL;
	bool neg = false, grouped = (flags & RECON_MONEY_THOUSANDS) != 0;
	bool minor = (flags & RECON_MONEY_MINOR) != 0;
	char mark = (flags & RECON_MONEY_DECIMAL_COMMA) ? ',' : '.';
	int64_t acc = 0;
	int pad;

	if (exponent < 0 || exponent > RECON_MONEY_MAX_EXPONENT)
		return recon_err_set(err, RECON_EVALUE, NULL, "unsupported exponent %d", exponent);
	/* Grouping and a comma decimal mark cannot share ','; minor units have neither. */
	if ((flags & ~RECON_MONEY_ALL_FLAGS) || (grouped && (flags & RECON_MONEY_DECIMAL_COMMA)) ||
	    (minor && flags != RECON_MONEY_MINOR))
		return recon_err_set(err, RECON_EVALUE, NULL, "unsupported amount flags 0x%x",
				     flags);
	if (parse_plain(s, len, exponent, minor, mark, out))
		return 0;

	while (p < end && is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		end--;
	if (p == end)
		return recon_err_set(err, RECON_EVALUE, NULL, "empty amount");
	/* the value as quoted in messages (built only for one) */
	v = p;
	vlen = (size_t)(end - p);

	/* Syntax pass: sign, integer part, optional mark and decimals, nothing else. */
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	int_start = p;
	while (p < end && (is_digit(*p) || (grouped && *p == ',')))
		p++;
	int_end = p;
	if (!minor && p < end && *p == mark) {
		frac_start = ++p;
		while (p < end && is_digit(*p))
			p++;
		frac_end = p;
	}
	if (p < end) {
		recon_err_quote(c, p, 1, RECON_QUOTE_ASCII);
		if (minor && (*p == '.' || *p == ','))
			return recon_err_set(err, RECON_EVALUE, NULL,
					     "decimal mark '%s' in minor-unit amount '%s'", c,
					     quote(q, v, vlen));
		return recon_err_set(err, RECON_EVALUE, NULL,
				     "invalid character '%s' in amount '%s'", c, quote(q, v, vlen));
	}
	if (int_start == int_end) {
		if (frac_start)
			return recon_err_set(err, RECON_EVALUE, NULL,
					     "missing digits before decimal mark in '%s'",
					     quote(q, v, vlen));
		return recon_err_set(err, RECON_EVALUE, NULL, "no digits in amount '%s'",
				     quote(q, v, vlen));
	}
	if (grouped && !grouping_ok(int_start, (size_t)(int_end - int_start)))
		return recon_err_set(err, RECON_EVALUE, NULL,
				     "misplaced thousands separator in '%s'", quote(q, v, vlen));
	/* MT940 writes "9," for 9.00, so a bare trailing mark is fine with a comma mark only. */
	if (frac_start && frac_start == frac_end && mark != ',')
		return recon_err_set(err, RECON_EVALUE, NULL,
				     "missing digits after decimal mark in '%s'",
				     quote(q, v, vlen));
	if (frac_start && frac_end - frac_start > exponent)
		return recon_err_set(err, RECON_EVALUE, NULL,
				     "too many decimals in '%s' (exponent %d allows %d)",
				     quote(q, v, vlen), exponent, exponent);

	/* Value pass: integer digits, decimals, then zeros up to the exponent. */
	for (p = int_start; p < int_end; p++)
		if (*p != ',' && !acc_digit(&acc, *p - '0'))
			goto range;
	for (p = frac_start; p && p < frac_end; p++)
		if (!acc_digit(&acc, *p - '0'))
			goto range;
	pad = minor ? 0 : exponent - (frac_start ? (int)(frac_end - frac_start) : 0);
	while (pad-- > 0)
		if (!acc_digit(&acc, 0))
			goto range;
	if (!neg) {
		if (acc == INT64_MIN)
			goto range;
		acc = -acc;
	}
	*out = acc;
	return 0;
range:
	return recon_err_set(err, RECON_EVALUE, NULL, "amount '%s' out of range",
			     quote(q, v, vlen));
}

size_t recon_money_format(int64_t minor, int exponent, char *buf, size_t size)
{
	char tmp[32];
	char *p = tmp + sizeof(tmp);
	/* Magnitude in unsigned arithmetic: well defined for INT64_MIN too. */
	uint64_t mag = minor < 0 ? 0 - (uint64_t)minor : (uint64_t)minor;
	size_t n;
	int i;

	if (exponent < 0 || exponent > RECON_MONEY_MAX_EXPONENT)
		exponent = -1; /* contract violation: format nothing */
	if (exponent >= 0) {
		for (i = 0; i < exponent; i++) {
			*--p = (char)('0' + mag % 10);
			mag /= 10;
		}
		if (exponent > 0)
			*--p = '.';
		do {
			*--p = (char)('0' + mag % 10);
			mag /= 10;
		} while (mag);
		if (minor < 0)
			*--p = '-';
	}
	n = (size_t)(tmp + sizeof(tmp) - p);
	if (size > 0) {
		size_t k = n < size - 1 ? n : size - 1;

		memcpy(buf, p, k);
		buf[k] = '\0';
	}
	return n;
}
