#include "recon_normalize.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "recon_money.h"
#include "recon_time.h"

/*
 * Whether byte c is trimmed: an ASCII blank or one of the guard characters
 * (a few bytes: WeChat's "`"), compared in line, not through strlen() and
 * memchr() for every byte looked at (a WeChat row has 27 guarded cells).
 */
static inline bool trimmed(const char *guard, unsigned char c)
{
	if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
		return true;
	for (; *guard; guard++)
		if ((unsigned char)*guard == c)
			return true;
	return false;
}

/* Trims ASCII blanks and the side's guard characters from both ends. */
static void trim_ends(const struct recon_side *side, const char **s, size_t *len)
{
	const char *p = *s;
	size_t n = *len;
	const char *guard = side->csv.strip ? side->csv.strip : "";

	while (n && trimmed(guard, (unsigned char)*p))
		p++, n--;
	while (n && trimmed(guard, (unsigned char)p[n - 1]))
		n--;
	*s = p;
	*len = n;
}

/*
 * trim_ends(), but nearly every value has nothing to trim: that is seen here,
 * inline (a CSV source has taken the guard characters off its cells already).
 */
static inline void trim(const struct recon_side *side, const char **s, size_t *len)
{
	const char *guard = side->csv.strip ? side->csv.strip : "";

	if (*len && !trimmed(guard, (unsigned char)(*s)[0]) &&
	    !trimmed(guard, (unsigned char)(*s)[*len - 1]))
		return;
	trim_ends(side, s, len);
}

/*
 * recon_money_exponent() of a currency code (its 4 bytes, NUL included, as a
 * word in memory order), the last answer kept per thread (rows repeat one
 * code). A word, not bytes: a code stored byte by byte and compared at once
 * as 4 bytes is read back across stores the store buffer cannot forward (a
 * stall that took 15% of normalizing a row).
 */
static int exponent_of(uint32_t code)
{
	static _Thread_local uint32_t last;
	static _Thread_local int last_exponent = -1;

	if (last_exponent < 0 || code != last) {
		char c[4];
		memcpy(c, &code, 4);
		last_exponent = recon_money_exponent(c);
		if (last_exponent < 0)
			return -1;
		last = code;
	}
	return last_exponent;
}

/* An ASCII letter in upper case; any other byte as it is. */
static inline uint32_t ascii_upper(unsigned char c)
{
	return c >= 'a' && c <= 'z' ? (uint32_t)c - ('a' - 'A') : c;
}

/* A value quoted in a reject reason (recon_err_quote: bounded, control bytes escaped). */
static void show(const char *s, size_t len, char *buf, size_t size)
{
	char q[RECON_QUOTE_BUF];

	snprintf(buf, size, "%s", recon_err_quote(q, s, len, 0));
}

static int field_err(struct recon_err *err, enum recon_col col, const char *fmt, ...)
    RECON_PRINTF(3, 4);
static int field_err(struct recon_err *err, enum recon_col col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	recon_err_setv(err, RECON_EVALUE, recon_col_name(col), fmt, ap);
	va_end(ap);
	return RECON_EVALUE;
}

/*
 * Code points a key must not hold: invisible ones make a look-alike key (a BOM
 * or a zero-width space inside ORD-1001 is another order to a hash join, and a
 * replay would insert it next to the real one). Format characters (Cf),
 * default-ignorable ones (variation selectors, fillers), line and paragraph
 * separators; sorted, inclusive.
 */
static const struct {
	uint32_t lo, hi;
} invisible[] = {
    {0x00AD, 0x00AD},	{0x034F, 0x034F},   {0x0600, 0x0605},	{0x061C, 0x061C},
    {0x06DD, 0x06DD},	{0x070F, 0x070F},   {0x0890, 0x0891},	{0x08E2, 0x08E2},
    {0x115F, 0x1160},	{0x17B4, 0x17B5},   {0x180B, 0x180F},	{0x200B, 0x200F},
    {0x2028, 0x202E},	{0x2060, 0x206F},   {0x3164, 0x3164},	{0xFE00, 0xFE0F},
    {0xFEFF, 0xFEFF},	{0xFFA0, 0xFFA0},   {0xFFF0, 0xFFFB},	{0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
    {0xE0000, 0xE0FFF},
};

static bool is_invisible(uint32_t cp)
{
	for (size_t i = 0; i < sizeof(invisible) / sizeof(invisible[0]); i++) {
		if (cp < invisible[i].lo)
			return false;
		if (cp <= invisible[i].hi)
			return true;
	}
	return false;
}

/*
 * Decodes the UTF-8 sequence at s[0..n) strictly (no overlong forms, no
 * surrogates, nothing above U+10FFFF): its length, or 0 when invalid.
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1Fu, min = 0x80;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0Fu, min = 0x800;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07u, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3Fu);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/* Whether the 8 bytes at p are printable ASCII (0x20-0x7e). */
static inline bool printable8(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return !((((w - 0x2020202020202020ULL) | (w + 0x0101010101010101ULL)) & ~w &
		  0x8080808080808080ULL) ||
		 (w & 0x8080808080808080ULL));
}

/*
 * Refuses a key part holding a control character (C0, DEL, C1), an invisible
 * one (format, default-ignorable, separators), a noncharacter or U+FFFD (a
 * decoder's replacement: the bytes were not valid in the source's encoding),
 * or bytes that are not UTF-8, naming the code point (or byte) and its offset.
 */
static int check_key_chars(enum recon_col c, const char *s, size_t len, struct recon_err *err)
{
	const unsigned char *u = (const unsigned char *)s;
	char shown[RECON_QUOTE_BUF];
	const char *what = NULL;
	uint32_t cp = 0;
	size_t j, n;

	/* printable ASCII, 8 bytes at a time: no byte below 0x20, none above 0x7e */
	for (j = 0; j + 8 <= len; j += 8)
		if (!printable8(u + j))
			break;
	/* the last bytes: the 8 that end the key (some seen already) */
	if (j < len && len >= 8 && j + 8 > len && printable8(u + len - 8))
		return 0;
	for (; j < len; j += n) {
		if (u[j] >= 0x20 && u[j] < 0x7f) {
			n = 1;
			continue;
		}
		if (!(n = utf8_decode(u + j, len - j, &cp))) {
			recon_err_quote(shown, s, len, RECON_QUOTE_ASCII);
			return field_err(err, c,
					 "invalid UTF-8 (byte 0x%02X at offset %zu) in key '%s'",
					 u[j], j, shown);
		}
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			what = "control character";
		else if (is_invisible(cp))
			what = "invisible format character";
		else if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
			what = "noncharacter";
		else if (cp == 0xFFFD)
			what = "replacement character (undecodable input)";
		if (what)
			break;
	}
	if (!what)
		return 0;
	recon_err_quote(shown, s, len, cp < 0x80 ? 0 : RECON_QUOTE_ASCII);
	return field_err(err, c, "%s U+%04X at offset %zu in key '%s'", what, (unsigned)cp, j,
			 shown);
}

/* The key: parts trimmed, non-empty, no control characters, joined by RECON_KEY_SEP. */
static int join_key(const struct recon_side *side, const struct recon_raw_row *raw,
		    struct recon_arena *arena, struct recon_row *out, struct recon_err *err)
{
	const char *part[RECON_KEY_PARTS_MAX], *s;
	size_t plen[RECON_KEY_PARTS_MAX], len, total = 0, o = 0;
	char *key;

	for (unsigned i = 0; i < side->nkey; i++) {
		enum recon_col c = (enum recon_col)(RECON_COL_KEY0 + i);
		s = raw->val[c];
		len = raw->len[c];
		if (s)
			trim(side, &s, &len);
		if ((!s || !len) && side->key_first_of) {
			char names[200] = "";
			for (size_t k = 0; side->key_first_of[k]; k++) {
				size_t used = strlen(names);
				snprintf(names + used, sizeof(names) - used, "%s'%s'",
					 k ? ", " : "", side->key_first_of[k]);
			}
			return field_err(err, c, "empty key: none of %s holds a value", names);
		}
		if (!s || !len)
			return field_err(err, c, "empty key '%s'", side->cols[c]);
		if (check_key_chars(c, s, len, err) < 0)
			return RECON_EVALUE;
		if (len > 1024)
			return field_err(err, c, "key longer than 1024 bytes");
		part[i] = s;
		plen[i] = len;
		total += len + (i ? 1 : 0);
	}
	key = recon_arena_alloc(arena, total + 1);
	for (unsigned i = 0; i < side->nkey; i++) {
		if (i)
			key[o++] = RECON_KEY_SEP;
		recon_copy_short(key + o, part[i], plen[i]);
		o += plen[i];
	}
	key[o] = '\0';
	out->key = key;
	out->key_len = (uint32_t)o;
	return 0;
}

/*
 * The entry kind of an upstream line with an entry-type column:
 * RECON_NORM_ROW with out->entry set, RECON_NORM_SKIPPED for keyless lines (fees, payouts), or a
 * reject whose key (when readable) stays unclassified.
 */
static int norm_entry_type(const struct recon_side *side, const struct recon_raw_row *raw,
			   struct recon_arena *arena, struct recon_row *out, struct recon_err *err)
{
	const char *s = raw->val[RECON_COL_ENTRY_TYPE];
	size_t len = raw->len[RECON_COL_ENTRY_TYPE];
	char shown[RECON_QUOTE_BUF];
	int v;

	if (s)
		trim(side, &s, &len);
	if (!s || !len || (v = recon_map_get(&side->entry_types, s, len)) < 0) {
		struct recon_err ke;
		recon_err_init(&ke);
		if (join_key(side, raw, arena, out, &ke) < 0)
			out->key = NULL;
		if (!s || !len)
			return field_err(err, RECON_COL_ENTRY_TYPE, "empty entry type");
		show(s, len, shown, sizeof(shown));
		return field_err(err, RECON_COL_ENTRY_TYPE, "unknown entry type '%s'", shown);
	}
	if (v == RECON_ENTRY_KEYLESS || v == RECON_ENTRY_IGNORE)
		return RECON_NORM_SKIPPED;
	out->entry = (uint8_t)v;
	return RECON_NORM_ROW;
}

/* The row's currency (the side's default when the column is empty); its exponent in *exponent. */
static int norm_currency(const struct recon_side *side, const struct recon_raw_row *raw,
			 struct recon_row *out, int *exponent, struct recon_err *err)
{
	const char *s = raw->val[RECON_COL_CURRENCY];
	size_t len = raw->len[RECON_COL_CURRENCY];
	char shown[RECON_QUOTE_BUF];
	uint32_t code;

	if (s)
		trim(side, &s, &len);
	if (!s || !len) {
		memcpy(out->currency, side->currency, 4);
		memcpy(&code, side->currency, 4);
		*exponent = exponent_of(code);
		return 0;
	}
	if (len != 3) {
		show(s, len, shown, sizeof(shown));
		return field_err(err, RECON_COL_CURRENCY, "invalid currency '%s'", shown);
	}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	code = ascii_upper((unsigned char)s[0]) << 24 | ascii_upper((unsigned char)s[1]) << 16 |
	       ascii_upper((unsigned char)s[2]) << 8;
#else
	code = ascii_upper((unsigned char)s[0]) | ascii_upper((unsigned char)s[1]) << 8 |
	       ascii_upper((unsigned char)s[2]) << 16;
#endif
	if ((*exponent = exponent_of(code)) < 0) {
		show(s, len, shown, sizeof(shown));
		return field_err(err, RECON_COL_CURRENCY, "unknown currency '%s'", shown);
	}
	memcpy(out->currency, &code, 4);
	return 0;
}

/*
 * The amount: refunds may use their own column and are stored positive; a
 * reversal becomes a negative refund. *reversal says whether it was one.
 */
static int norm_amount(const struct recon_side *side, const struct recon_raw_row *raw, int exponent,
		       struct recon_row *out, bool *reversal, struct recon_err *err)
{
	enum recon_col col;
	struct recon_err e;

	if (out->entry == RECON_ENTRY_REFUND && side->cols[RECON_COL_REFUND_AMOUNT])
		col = RECON_COL_REFUND_AMOUNT;
	else if (side->cols[RECON_COL_AMOUNT_MINOR])
		col = RECON_COL_AMOUNT_MINOR;
	else
		col = RECON_COL_AMOUNT;
	if (!raw->val[col])
		return field_err(err, col, "empty amount");
	recon_err_init(&e);
	if (recon_money_parse(raw->val[col], raw->len[col], exponent,
			      col == RECON_COL_AMOUNT_MINOR ? RECON_MONEY_MINOR : side->money_flags,
			      &out->amount, &e) < 0)
		return field_err(err, col, "%s", e.msg);
	if (out->entry == RECON_ENTRY_REFUND && out->amount < 0) {
		if (out->amount == INT64_MIN)
			return field_err(err, col, "refund amount out of range");
		out->amount = -out->amount;
	}
	*reversal = out->entry == RECON_ENTRY_REFUND_REVERSAL;
	if (*reversal) {
		/* the money a dispute (a refund-like debit) took comes back: it offsets the
		   refunds, whatever sign the format writes it with */
		if (out->amount == INT64_MIN)
			return field_err(err, col, "amount out of range");
		out->entry = RECON_ENTRY_REFUND;
		out->amount = out->amount > 0 ? -out->amount : out->amount;
	}
	return 0;
}

/* The status of a plain row (not an upstream entry line), through the side's map. */
static int norm_status(const struct recon_side *side, const struct recon_raw_row *raw,
		       struct recon_row *out, struct recon_err *err)
{
	const char *s = raw->val[RECON_COL_STATUS];
	size_t len = raw->len[RECON_COL_STATUS];
	char shown[RECON_QUOTE_BUF];
	int v;

	if (s)
		trim(side, &s, &len);
	if (!s || !len)
		return field_err(err, RECON_COL_STATUS, "empty status");
	v = recon_map_get(&side->status_map, s, len);
	if (v < 0) {
		show(s, len, shown, sizeof(shown));
		return field_err(err, RECON_COL_STATUS,
				 "unknown status '%s' (not in the %s status map)", shown,
				 side->role);
	}
	out->status = (uint8_t)v;
	out->flags |= RECON_ROW_HAS_STATUS;
	return 0;
}

/*
 * Entry identity (DESIGN "Entry identity"): a refund is its refund id, or
 * id-less (key, amount, time): two partial refunds of one payment carry the
 * same transaction id and are still two refunds. Anything else is its
 * transaction id. The compare pairs the id with the key.
 */
static int norm_entry_id(const struct recon_side *side, const struct recon_raw_row *raw,
			 bool reversal, struct recon_arena *arena, struct recon_row *out,
			 struct recon_err *err)
{
	enum recon_col idc = RECON_COL_TXN_ID;
	const char *s;
	size_t len;

	/* a reversal names the refund it undoes (Stripe: the dispute's id): its own
	   transaction id tells it apart from that refund */
	if (out->entry == RECON_ENTRY_REFUND && !reversal && !(out->flags & RECON_ROW_HAS_STATUS))
		idc = RECON_COL_REFUND_ID;
	s = raw->val[idc];
	len = raw->len[idc];
	if (s)
		trim(side, &s, &len);
	if (s && len > 1024)
		return field_err(err, idc, "transaction id longer than 1024 bytes");
	if (s && len && !(len == 1 && s[0] == '0')) {
		out->entry_id = recon_arena_strndup(arena, s, len);
		out->entry_id_len = (uint32_t)len;
	}
	return 0;
}

int recon_normalize_row(const struct recon_side *side, const struct recon_raw_row *raw,
			struct recon_arena *arena, struct recon_row *out, struct recon_err *err)
{
	const bool upstream = side->role[0] == 'u';
	const bool entry_lines = upstream && side->cols[RECON_COL_ENTRY_TYPE];
	bool reversal = false;
	int exponent = 0, rc;
	struct recon_err e;

	memset(out, 0, sizeof(*out));
	out->line = raw->line;
	if (raw->reject)
		return recon_err_set(err, RECON_EVALUE, "row", "%s", raw->reject);

	/* entry kind first: keyless lines (fees, payouts) carry no key */
	out->entry = RECON_ENTRY_PAYMENT;
	if (entry_lines && (rc = norm_entry_type(side, raw, arena, out, err)) != RECON_NORM_ROW)
		return rc;
	if ((rc = join_key(side, raw, arena, out, err)) < 0)
		return rc;

	if (!raw->val[RECON_COL_TIME])
		return field_err(err, RECON_COL_TIME, "empty time");
	recon_err_init(&e);
	if (recon_time_parse_format(raw->val[RECON_COL_TIME], raw->len[RECON_COL_TIME],
				    side->time_format, side->tz, &out->time, &e) < 0)
		return field_err(err, RECON_COL_TIME, "%s", e.msg);
	out->flags |= RECON_ROW_TIMED; /* known even when a later field is rejected */

	if ((rc = norm_currency(side, raw, out, &exponent, err)) < 0 ||
	    (rc = norm_amount(side, raw, exponent, out, &reversal, err)) < 0 ||
	    (side->cols[RECON_COL_STATUS] && !entry_lines &&
	     (rc = norm_status(side, raw, out, err)) < 0) ||
	    (rc = norm_entry_id(side, raw, reversal, arena, out, err)) < 0)
		return rc;
	return RECON_NORM_ROW;
}

void recon_key_split(const char *key, size_t len, unsigned nkey, char *scratch, const char **parts,
		     size_t *lens)
{
	unsigned i = 0;
	size_t start = 0;

	memcpy(scratch, key, len);
	scratch[len] = '\0';
	for (size_t j = 0; j <= len && i < nkey; j++) {
		if (j == len || key[j] == RECON_KEY_SEP) {
			scratch[j] = '\0';
			parts[i] = scratch + start;
			lens[i] = j - start;
			i++;
			start = j + 1;
		}
	}
	for (; i < nkey; i++) {
		parts[i] = scratch + len;
		lens[i] = 0;
	}
}

char *recon_key_display(const char *key, size_t len, char *buf, size_t size)
{
	/*
	 * A composite key's parts may hold '|' themselves: escape it (and '\\')
	 * there, so ("A|B", "C") and ("A", "B|C") stay different tickets. A
	 * single-part key is shown as it is.
	 */
	const bool composite = memchr(key, RECON_KEY_SEP, len) != NULL;
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < size; i++) {
		char c = key[i];
		if (c == RECON_KEY_SEP) {
			buf[o++] = '|';
		} else if (composite && (c == '|' || c == '\\')) {
			if (o + 2 >= size)
				break;
			buf[o++] = '\\';
			buf[o++] = c;
		} else {
			buf[o++] = c;
		}
	}
	buf[o] = '\0';
	return buf;
}
