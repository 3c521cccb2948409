/*
 * Tests for src/recon_normalize.c: raw row -> canonical row (DESIGN "Canonical
 * row"), or a reject naming the role and the reason. Sides are built in memory
 * (tests/support_jobs.c): the upstream is a statement of entries with a type
 * column and "`" guards, the local side a flow table with a status map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <stdlib.h>
#include <string.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_source.h"
#include "recon_time.h"
#include "support_jobs.h"

#define SEP "\037" /* RECON_KEY_SEP as a string literal */

/* 2024-01-16 00:00:00 Asia/Shanghai */
#define SH_MIDNIGHT 1705334400000LL

struct fixture {
	struct recon_job *job;
	struct recon_arena arena;
	struct recon_raw_row raw;
	struct recon_row row;
	struct recon_err err;
};

static int setup(void **state)
{
	struct fixture *fx = recon_xcalloc(1, sizeof(*fx));

	fx->job = support_job_new();
	recon_arena_init(&fx->arena);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	recon_arena_release(&fx->arena);
	recon_job_free(fx->job);
	free(fx);
	return 0;
}

static void set(struct fixture *fx, enum recon_col col, const char *v)
{
	fx->raw.val[col] = v;
	fx->raw.len[col] = v ? strlen(v) : 0;
}

/* A valid upstream payment entry. */
static void up_payment(struct fixture *fx)
{
	memset(&fx->raw, 0, sizeof(fx->raw));
	set(fx, RECON_COL_ENTRY_TYPE, "payment");
	set(fx, RECON_COL_KEY0, "ORD-1");
	set(fx, RECON_COL_AMOUNT, "10.00");
	set(fx, RECON_COL_TIME, "2024-01-16 00:00:00");
	set(fx, RECON_COL_TXN_ID, "4200001");
	fx->raw.line = 7;
}

/* A valid local flow row. */
static void local_row(struct fixture *fx)
{
	memset(&fx->raw, 0, sizeof(fx->raw));
	set(fx, RECON_COL_KEY0, "ORD-1");
	set(fx, RECON_COL_AMOUNT_MINOR, "1000");
	set(fx, RECON_COL_CURRENCY, "CNY");
	set(fx, RECON_COL_STATUS, "PAID");
	set(fx, RECON_COL_TIME, "2024-01-16 00:00:00");
}

static int norm(struct fixture *fx, const struct recon_side *side)
{
	recon_err_init(&fx->err);
	return recon_normalize_row(side, &fx->raw, &fx->arena, &fx->row, &fx->err);
}

static void norm_ok(struct fixture *fx, const struct recon_side *side)
{
	char buf[512];
	int rc = norm(fx, side);

	if (rc != RECON_NORM_ROW)
		fail_msg("normalize returned %d: %s", rc,
			 recon_err_str(&fx->err, buf, sizeof(buf)));
	assert_int_equal(fx->err.code, 0);
}

/* Expects a reject of role `where` whose message equals (or contains, when sub) msg. */
static void norm_reject(struct fixture *fx, const struct recon_side *side, const char *where,
			const char *msg, int sub)
{
	int rc = norm(fx, side);

	assert_int_equal(rc, RECON_EVALUE);
	assert_int_equal(fx->err.code, RECON_EVALUE);
	assert_string_equal(fx->err.where, where);
	if (sub) {
		if (!strstr(fx->err.msg, msg))
			fail_msg("message '%s' does not contain '%s'", fx->err.msg, msg);
	} else {
		assert_string_equal(fx->err.msg, msg);
	}
}

static void assert_key(const struct recon_row *row, const char *want)
{
	assert_int_equal(row->key_len, strlen(want));
	assert_memory_equal(row->key, want, row->key_len);
	assert_int_equal(row->key[row->key_len], '\0');
}

/* A statement payment entry: every field of the canonical row. */
static void test_normalize_payment_entry(void **state)
{
	struct fixture *fx = *state;

	up_payment(fx);
	norm_ok(fx, &fx->job->upstream);
	assert_key(&fx->row, "ORD-1");
	assert_int_equal(fx->row.entry, RECON_ENTRY_PAYMENT);
	assert_int_equal(fx->row.amount, 1000);
	assert_string_equal(fx->row.currency, "CNY"); /* no currency column: the side's */
	assert_int_equal(fx->row.time, SH_MIDNIGHT);
	assert_int_equal(fx->row.flags & RECON_ROW_HAS_STATUS, 0);
	assert_non_null(fx->row.entry_id);
	assert_int_equal(fx->row.entry_id_len, 7);
	assert_string_equal(fx->row.entry_id, "4200001");
	assert_int_equal(fx->row.line, 7);
}

/* Keys lose surrounding blanks and the side's guard characters, nothing inside. */
static void test_normalize_key_trimmed(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"  ORD-1  ", "ORD-1"},
	    {"`ORD-1", "ORD-1"},
	    {"\t`ORD-1`\r\n", "ORD-1"},
	    {"` ORD-1 `", "ORD-1"},
	    {"ORD 1", "ORD 1"},
	    {"OR`D", "OR`D"},
	    {"``A``", "A"},
	    {"ORD-1`", "ORD-1"}, /* a guard at the end only */
	    {"ORD-1 ", "ORD-1"},
	    {"\xe8\xae\xa2 1", "\xe8\xae\xa2 1"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		up_payment(fx);
		set(fx, RECON_COL_KEY0, cases[i].in);
		norm_ok(fx, &fx->job->upstream);
		assert_key(&fx->row, cases[i].want);
	}
	/* the local side has no guard characters: a backtick there is data */
	local_row(fx);
	set(fx, RECON_COL_KEY0, " `L1 ");
	norm_ok(fx, &fx->job->local);
	assert_key(&fx->row, "`L1");
}

/* Composite keys: parts trimmed, joined by RECON_KEY_SEP, displayed with '|'. */
static void test_normalize_composite_key(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *lo = &fx->job->local;
	char buf[64], small[4];

	lo->nkey = 2;
	support_side_col(lo, RECON_COL_KEY1, "biz_type");
	local_row(fx);
	set(fx, RECON_COL_KEY0, " A1 ");
	set(fx, RECON_COL_KEY1, "\tpay");
	norm_ok(fx, lo);
	assert_int_equal(SEP[0], RECON_KEY_SEP);
	assert_key(&fx->row, "A1" SEP "pay");
	assert_string_equal(recon_key_display(fx->row.key, fx->row.key_len, buf, sizeof(buf)),
			    "A1|pay");
	/* truncated to the buffer, always terminated */
	assert_string_equal(recon_key_display(fx->row.key, fx->row.key_len, small, sizeof(small)),
			    "A1|");
	/* a '|' inside a part is escaped, so two different keys never display alike */
	assert_string_equal(recon_key_display("A|B" SEP "C", 5, buf, sizeof(buf)), "A\\|B|C");
	assert_string_equal(recon_key_display("A" SEP "B|C", 5, buf, sizeof(buf)), "A|B\\|C");
	assert_string_equal(recon_key_display("A|B", 3, buf, sizeof(buf)), "A|B");

	set(fx, RECON_COL_KEY1, "  ");
	norm_reject(fx, lo, "key[1]", "empty key 'biz_type'", 0);
}

/* An empty key (after trimming) is a reject naming the role "key". */
static void test_normalize_empty_key(void **state)
{
	struct fixture *fx = *state;
	static const char *const empties[] = {"", "   ", "`", "` `\t", NULL};

	for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
		up_payment(fx);
		set(fx, RECON_COL_KEY0, empties[i]);
		norm_reject(fx, &fx->job->upstream, "key", "empty key 'out_trade_no'", 0);
		assert_int_equal(fx->row.line, 7); /* the origin line survives a reject */
	}
}

/* Control characters inside a key are refused, named by code point, shown escaped. */
static void test_normalize_key_control_char(void **state)
{
	struct fixture *fx = *state;

	up_payment(fx);
	set(fx, RECON_COL_KEY0,
	    "A\x01"
	    "B");
	norm_reject(fx, &fx->job->upstream, "key",
		    "control character U+0001 at offset 1 in key 'A\\x01B'", 0);
	set(fx, RECON_COL_KEY0, "A\nB");
	norm_reject(fx, &fx->job->upstream, "key", "control character U+000A", 1);
	set(fx, RECON_COL_KEY0, "A\x7f");
	norm_reject(fx, &fx->job->upstream, "key",
		    "control character U+007F at offset 1 in key 'A\\x7f'", 0);
	set(fx, RECON_COL_KEY0, "A" SEP "B"); /* the composite separator itself */
	norm_reject(fx, &fx->job->upstream, "key", "control character U+001F", 1);
	set(fx, RECON_COL_KEY0, "A\xc2\x85"); /* C1: NEL */
	norm_reject(fx, &fx->job->upstream, "key", "control character U+0085 at offset 1", 1);
}

/*
 * Issue 12 #5: invisible characters make look-alike keys (a BOM or a
 * zero-width space inside ORD-1001 is another order, which a replay would
 * insert next to the real one): refused, named by code point. So are bytes
 * that are not UTF-8, noncharacters and U+FFFD. Visible non-ASCII text stays.
 */
static void test_normalize_key_invisible_or_invalid(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *key, *msg;
	} bad[] = {
	    {"ORD-\xef\xbb\xbf"
	     "1001",
	     "invisible format character U+FEFF at offset 4 in key "
	     "'ORD-\\xef\\xbb\\xbf1001'"},
	    {"ORD-1\xe2\x80\x8b"
	     "001",
	     "invisible format character U+200B at offset 5"},
	    {"ORD\xe2\x80\x8d-1001", "invisible format character U+200D"},
	    {"ORD-1001\xe2\x81\xa0", "invisible format character U+2060"},
	    {"\xe2\x80\xaeORD-1001", "invisible format character U+202E at offset 0"},
	    {"ORD\xc2\xad-1001", "invisible format character U+00AD"},
	    {"ORD-1001\xef\xb8\x8f", "invisible format character U+FE0F"},
	    {"ORD-\xf3\xa0\x80\x81"
	     "1",
	     "invisible format character U+E0001"},
	    {"ORD-\xe2\x80\xa8"
	     "1",
	     "invisible format character U+2028"},
	    {"ORD-\xef\xbf\xbd", "replacement character (undecodable input) U+FFFD"},
	    {"ORD-\xef\xbf\xbe", "noncharacter U+FFFE"},
	    {"ORD-\xb6\xa9", "invalid UTF-8 (byte 0xB6 at offset 4) in key 'ORD-\\xb6\\xa9'"},
	    {"ORD-\xc0\xaf", "invalid UTF-8 (byte 0xC0 at offset 4)"},	       /* overlong '/' */
	    {"ORD-\xed\xa0\x80", "invalid UTF-8 (byte 0xED at offset 4)"},     /* a surrogate */
	    {"ORD-\xe5\xbe", "invalid UTF-8 (byte 0xE5 at offset 4)"},	       /* cut short */
	    {"ORD-\xf4\x90\x80\x80", "invalid UTF-8 (byte 0xF4 at offset 4)"}, /* > U+10FFFF */
	};

	up_payment(fx);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set(fx, RECON_COL_KEY0, bad[i].key);
		norm_reject(fx, &fx->job->upstream, "key", bad[i].msg, 1);
	}
	/* visible non-ASCII keys and an inner ASCII space are fine */
	set(fx, RECON_COL_KEY0, "\xe8\xae\xa2\xe5\x8d\x95-1001 A\xf0\x9f\x98\x80");
	assert_int_equal(norm(fx, &fx->job->upstream), RECON_NORM_ROW);
	assert_key(&fx->row, "\xe8\xae\xa2\xe5\x8d\x95-1001 A\xf0\x9f\x98\x80");
}

/* Keys up to 1024 bytes are kept; longer ones are refused. */
static void test_normalize_key_length_limit(void **state)
{
	struct fixture *fx = *state;
	char *key = recon_xmalloc(1026);

	memset(key, 'k', 1025);
	key[1024] = '\0';
	up_payment(fx);
	set(fx, RECON_COL_KEY0, key);
	norm_ok(fx, &fx->job->upstream);
	assert_int_equal(fx->row.key_len, 1024);
	key[1024] = 'k';
	key[1025] = '\0';
	set(fx, RECON_COL_KEY0, key);
	norm_reject(fx, &fx->job->upstream, "key", "key longer than 1024 bytes", 0);
	free(key);
}

/* Decimal amounts in major units, exact. */
static void test_normalize_amount_decimal(void **state)
{
	struct fixture *fx = *state;

	up_payment(fx);
	set(fx, RECON_COL_AMOUNT, "12.34");
	norm_ok(fx, &fx->job->upstream);
	assert_int_equal(fx->row.amount, 1234);
	set(fx, RECON_COL_AMOUNT, " 0.01 ");
	norm_ok(fx, &fx->job->upstream);
	assert_int_equal(fx->row.amount, 1);
	set(fx, RECON_COL_AMOUNT, "12.345");
	norm_reject(fx, &fx->job->upstream, "amount", "", 1);
	assert_true(fx->err.msg[0] != '\0');
	set(fx, RECON_COL_AMOUNT, "N/A");
	norm_reject(fx, &fx->job->upstream, "amount", "", 1);
	set(fx, RECON_COL_AMOUNT, NULL);
	norm_reject(fx, &fx->job->upstream, "amount", "empty amount", 0);
}

/* amount_minor is integer minor units and wins over a decimal amount column. */
static void test_normalize_amount_minor(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *lo = &fx->job->local;

	local_row(fx);
	set(fx, RECON_COL_AMOUNT_MINOR, "1234");
	norm_ok(fx, lo);
	assert_int_equal(fx->row.amount, 1234);
	set(fx, RECON_COL_AMOUNT_MINOR, "12.34");
	norm_reject(fx, lo, "amount_minor", "", 1);

	support_side_col(lo, RECON_COL_AMOUNT, "amount_yuan");
	set(fx, RECON_COL_AMOUNT_MINOR, "1234");
	set(fx, RECON_COL_AMOUNT, "99.99");
	norm_ok(fx, lo);
	assert_int_equal(fx->row.amount, 1234);
	/* a decimal amount column alone */
	support_side_col(lo, RECON_COL_AMOUNT_MINOR, NULL);
	set(fx, RECON_COL_AMOUNT_MINOR, NULL);
	norm_ok(fx, lo);
	assert_int_equal(fx->row.amount, 9999);
}

/* Refund entries use the refund_amount column when the profile maps one (WeChat). */
static void test_normalize_refund_amount_column(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	support_side_col(up, RECON_COL_REFUND_AMOUNT, "refund_amount");
	up_payment(fx);
	set(fx, RECON_COL_REFUND_AMOUNT, "0.00");
	norm_ok(fx, up);
	assert_int_equal(fx->row.entry, RECON_ENTRY_PAYMENT);
	assert_int_equal(fx->row.amount, 1000);

	set(fx, RECON_COL_ENTRY_TYPE, "refund");
	set(fx, RECON_COL_REFUND_AMOUNT, "3.00");
	set(fx, RECON_COL_REFUND_ID, "503000");
	norm_ok(fx, up);
	assert_int_equal(fx->row.entry, RECON_ENTRY_REFUND);
	assert_int_equal(fx->row.amount, 300);

	set(fx, RECON_COL_REFUND_AMOUNT, "3.001");
	norm_reject(fx, up, "refund_amount", "", 1);
	set(fx, RECON_COL_REFUND_AMOUNT, NULL);
	norm_reject(fx, up, "refund_amount", "empty amount", 0);
}

/* Refunds are positive whatever sign the format uses (Alipay writes -0.01). */
static void test_normalize_refund_positive(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	up_payment(fx);
	set(fx, RECON_COL_ENTRY_TYPE, "refund");
	set(fx, RECON_COL_AMOUNT, "-0.01");
	norm_ok(fx, up);
	assert_int_equal(fx->row.entry, RECON_ENTRY_REFUND);
	assert_int_equal(fx->row.amount, 1);
	set(fx, RECON_COL_AMOUNT, "0.01");
	norm_ok(fx, up);
	assert_int_equal(fx->row.amount, 1);
	set(fx, RECON_COL_AMOUNT, "-10.00");
	norm_ok(fx, up);
	assert_int_equal(fx->row.amount, 1000);
	/* a payment keeps its sign */
	set(fx, RECON_COL_ENTRY_TYPE, "payment");
	set(fx, RECON_COL_AMOUNT, "-0.01");
	norm_ok(fx, up);
	assert_int_equal(fx->row.amount, -1);
	/* revocations are entries too */
	set(fx, RECON_COL_ENTRY_TYPE, " `revoke` ");
	set(fx, RECON_COL_AMOUNT, "10.00");
	norm_ok(fx, up);
	assert_int_equal(fx->row.entry, RECON_ENTRY_REVOKE);
}

/* Status words map through the side's status map; unknown words are rejects naming them. */
static void test_normalize_status_map(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *lo = &fx->job->local;
	static const struct {
		const char *word;
		int st;
	} cases[] = {
	    {"PAID", RECON_ST_SUCCESS},
	    {"REFUNDED", RECON_ST_REFUNDED},
	    {"FAILED", RECON_ST_CLOSED},
	    {" PENDING ", RECON_ST_PENDING},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		local_row(fx);
		set(fx, RECON_COL_STATUS, cases[i].word);
		norm_ok(fx, lo);
		assert_int_equal(fx->row.status, cases[i].st);
		assert_true(fx->row.flags & RECON_ROW_HAS_STATUS);
		assert_int_equal(fx->row.entry, RECON_ENTRY_PAYMENT);
		assert_null(fx->row.entry_id);
	}
	set(fx, RECON_COL_STATUS, "SHIPPED");
	norm_reject(fx, lo, "status", "unknown status 'SHIPPED' (not in the local status map)", 0);
	set(fx, RECON_COL_STATUS, "paid"); /* maps are exact */
	norm_reject(fx, lo, "status", "unknown status 'paid'", 1);
	set(fx, RECON_COL_STATUS, "");
	norm_reject(fx, lo, "status", "empty status", 0);
	set(fx, RECON_COL_STATUS, NULL);
	norm_reject(fx, lo, "status", "empty status", 0);
}

/* An upstream without an entry type column has plain rows with a status (database upstream). */
static void test_normalize_upstream_plain_status(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	support_side_col(up, RECON_COL_ENTRY_TYPE, NULL);
	support_side_col(up, RECON_COL_STATUS, "trade_state");
	up_payment(fx);
	set(fx, RECON_COL_ENTRY_TYPE, "refund"); /* not mapped: ignored */
	set(fx, RECON_COL_STATUS, "REFUND");
	norm_ok(fx, up);
	assert_int_equal(fx->row.entry, RECON_ENTRY_PAYMENT);
	assert_int_equal(fx->row.status, RECON_ST_REFUNDED);
	assert_true(fx->row.flags & RECON_ROW_HAS_STATUS);
	set(fx, RECON_COL_STATUS, "PAID"); /* a local word */
	norm_reject(fx, up, "status", "unknown status 'PAID' (not in the upstream status map)", 0);
}

/* Keyless entries (fees, payouts) are skipped, even without a key or amount. */
static void test_normalize_keyless_skipped(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	support_map_put(&up->entry_types, "note", RECON_ENTRY_IGNORE);
	memset(&fx->raw, 0, sizeof(fx->raw));
	set(fx, RECON_COL_ENTRY_TYPE, "fee");
	assert_int_equal(norm(fx, up), RECON_NORM_SKIPPED);
	assert_int_equal(fx->err.code, 0);
	set(fx, RECON_COL_ENTRY_TYPE, "`fee`");
	set(fx, RECON_COL_KEY0, "");
	set(fx, RECON_COL_AMOUNT, "junk");
	assert_int_equal(norm(fx, up), RECON_NORM_SKIPPED);
	set(fx, RECON_COL_ENTRY_TYPE, "note");
	assert_int_equal(norm(fx, up), RECON_NORM_SKIPPED);
	assert_int_equal(fx->err.code, 0);
}

/* An entry type the profile does not know is a reject, never a guess. */
static void test_normalize_unknown_entry_type(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	up_payment(fx);
	set(fx, RECON_COL_ENTRY_TYPE, "bonus");
	norm_reject(fx, up, "entry_type", "unknown entry type 'bonus'", 0);
	set(fx, RECON_COL_ENTRY_TYPE, "Payment");
	norm_reject(fx, up, "entry_type", "unknown entry type 'Payment'", 0);
	set(fx, RECON_COL_ENTRY_TYPE, " ` ");
	norm_reject(fx, up, "entry_type", "empty entry type", 0);
	set(fx, RECON_COL_ENTRY_TYPE, NULL);
	norm_reject(fx, up, "entry_type", "empty entry type", 0);
	/* the rejected row still names its key, so the compare leaves that key unclassified */
	set(fx, RECON_COL_ENTRY_TYPE, "dispute");
	norm_reject(fx, up, "entry_type", "unknown entry type 'dispute'", 0);
	assert_non_null(fx->row.key);
	assert_key(&fx->row, "ORD-1");
}

/* A currency column: case-insensitive ISO code, its exponent applies; unknown ones are rejects. */
static void test_normalize_currency(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	support_side_col(up, RECON_COL_CURRENCY, "currency");
	up_payment(fx);
	set(fx, RECON_COL_CURRENCY, "usd");
	set(fx, RECON_COL_AMOUNT, "12.34");
	norm_ok(fx, up);
	assert_string_equal(fx->row.currency, "USD");
	assert_int_equal(fx->row.amount, 1234);

	set(fx, RECON_COL_CURRENCY, "JPY");
	set(fx, RECON_COL_AMOUNT, "100");
	norm_ok(fx, up);
	assert_string_equal(fx->row.currency, "JPY");
	assert_int_equal(fx->row.amount, 100);
	set(fx, RECON_COL_AMOUNT, "100.5"); /* yen have no decimals */
	norm_reject(fx, up, "amount", "", 1);

	set(fx, RECON_COL_CURRENCY, "KWD");
	set(fx, RECON_COL_AMOUNT, "1.234");
	norm_ok(fx, up);
	assert_int_equal(fx->row.amount, 1234);

	set(fx, RECON_COL_CURRENCY, "XYZ");
	set(fx, RECON_COL_AMOUNT, "1.00");
	norm_reject(fx, up, "currency", "unknown currency 'XYZ'", 0);
	set(fx, RECON_COL_CURRENCY, "US");
	norm_reject(fx, up, "currency", "invalid currency 'US'", 0);
	set(fx, RECON_COL_CURRENCY, "USDT");
	norm_reject(fx, up, "currency", "invalid currency 'USDT'", 0);
	/* any case, after another code (the last one's exponent is kept) */
	set(fx, RECON_COL_CURRENCY, "kWd");
	set(fx, RECON_COL_AMOUNT, "1.5");
	norm_ok(fx, up);
	assert_string_equal(fx->row.currency, "KWD");
	assert_int_equal(fx->row.amount, 1500);
	/* only ASCII letters change case: a Latin-1 e-acute stays, and is no code */
	set(fx, RECON_COL_CURRENCY, "\xe9ur");
	norm_reject(fx, up, "currency", "unknown currency", 1);
	set(fx, RECON_COL_AMOUNT, "1.00");

	/* an empty cell means the side's default */
	set(fx, RECON_COL_CURRENCY, " ");
	norm_ok(fx, up);
	assert_string_equal(fx->row.currency, "CNY");
	assert_int_equal(fx->row.amount, 100);
}

/* Times are wall clock in the side's zone, converted to UTC ms. */
static void test_normalize_time_zone(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;
	struct recon_err err;

	up_payment(fx);
	set(fx, RECON_COL_TIME, "2024-01-16 00:00:00");
	norm_ok(fx, up);
	assert_int_equal(fx->row.time, SH_MIDNIGHT);
	set(fx, RECON_COL_TIME, "2024-01-15 23:59:59.999");
	norm_ok(fx, up);
	assert_int_equal(fx->row.time, SH_MIDNIGHT - 1);
	set(fx, RECON_COL_TIME, "2024-01-16T00:00:00Z"); /* an explicit offset wins */
	norm_ok(fx, up);
	assert_int_equal(fx->row.time, SH_MIDNIGHT + 8 * RECON_MS_PER_HOUR);

	/* the same text on a UTC side is eight hours later */
	recon_tz_free(up->tz);
	up->tz = NULL;
	recon_err_init(&err);
	assert_int_equal(recon_tz_load(&up->tz, "UTC", &err), 0);
	set(fx, RECON_COL_TIME, "2024-01-16 00:00:00");
	norm_ok(fx, up);
	assert_int_equal(fx->row.time, SH_MIDNIGHT + 8 * RECON_MS_PER_HOUR);

	set(fx, RECON_COL_TIME, "2024-02-30 00:00:00");
	norm_reject(fx, up, "time", "", 1);
	assert_true(fx->err.msg[0] != '\0');
	set(fx, RECON_COL_TIME, "yesterday");
	norm_reject(fx, up, "time", "", 1);
	set(fx, RECON_COL_TIME, NULL);
	norm_reject(fx, up, "time", "empty time", 0);
}

/* A record the reader already found malformed is a reject carrying the reader's reason. */
static void test_normalize_reader_reject(void **state)
{
	struct fixture *fx = *state;

	up_payment(fx);
	fx->raw.reject = "short row: 3 fields, expected 5";
	fx->raw.line = 42;
	norm_reject(fx, &fx->job->upstream, "row", "short row: 3 fields, expected 5", 0);
	assert_int_equal(fx->row.line, 42);
	/* even a keyless line: the reader's verdict comes first */
	set(fx, RECON_COL_ENTRY_TYPE, "fee");
	norm_reject(fx, &fx->job->upstream, "row", "short row: 3 fields, expected 5", 0);
}

/* Entry identity: refund id for refunds (else none), transaction id otherwise; "0" is no id. */
static void test_normalize_entry_id(void **state)
{
	struct fixture *fx = *state;
	struct recon_side *up = &fx->job->upstream;

	up_payment(fx);
	set(fx, RECON_COL_TXN_ID, "`4200001`");
	set(fx, RECON_COL_REFUND_ID, "503000");
	norm_ok(fx, up);
	assert_string_equal(fx->row.entry_id, "4200001"); /* a payment: the transaction id */
	assert_int_equal(fx->row.entry_id_len, 7);

	set(fx, RECON_COL_ENTRY_TYPE, "refund");
	norm_ok(fx, up);
	assert_string_equal(fx->row.entry_id, "503000");
	assert_int_equal(fx->row.entry_id_len, 6);

	/* no refund id: id-less (two partial refunds share the transaction id) */
	set(fx, RECON_COL_REFUND_ID, NULL);
	norm_ok(fx, up);
	assert_null(fx->row.entry_id);

	set(fx, RECON_COL_ENTRY_TYPE, "payment");
	set(fx, RECON_COL_TXN_ID, "0");
	norm_ok(fx, up);
	assert_null(fx->row.entry_id);
	assert_int_equal(fx->row.entry_id_len, 0);
	set(fx, RECON_COL_TXN_ID, "`0");
	norm_ok(fx, up);
	assert_null(fx->row.entry_id);
	set(fx, RECON_COL_TXN_ID, "");
	norm_ok(fx, up);
	assert_null(fx->row.entry_id);
	set(fx, RECON_COL_TXN_ID, "00");
	norm_ok(fx, up);
	assert_string_equal(fx->row.entry_id, "00");
}

/* The row's strings live in the arena: the reader may reuse its buffers. */
static void test_normalize_copies_into_arena(void **state)
{
	struct fixture *fx = *state;
	char key[] = "`ORD-9`", txn[] = "T-9";

	up_payment(fx);
	set(fx, RECON_COL_KEY0, key);
	set(fx, RECON_COL_TXN_ID, txn);
	norm_ok(fx, &fx->job->upstream);
	memset(key, 'x', sizeof(key) - 1);
	memset(txn, 'y', sizeof(txn) - 1);
	assert_key(&fx->row, "ORD-9");
	assert_string_equal(fx->row.entry_id, "T-9");
	assert_true(fx->row.key < key || fx->row.key >= key + sizeof(key));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_normalize_payment_entry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_key_trimmed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_composite_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_empty_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_key_invisible_or_invalid, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_key_control_char, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_key_length_limit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_amount_decimal, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_amount_minor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_refund_amount_column, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_refund_positive, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_status_map, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_upstream_plain_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_keyless_skipped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_unknown_entry_type, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_currency, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_time_zone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_reader_reject, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_entry_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_normalize_copies_into_arena, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
