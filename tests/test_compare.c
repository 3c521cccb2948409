/*
 * Tests for src/recon_compare.c: the hash join of one window. Rows are built
 * directly as canonical rows (no source, no normalize), one test per row of
 * DESIGN's classification table, the entry fold (partial and full refunds,
 * revocations, refunds of an earlier statement's payment), duplicates, the
 * ownership rules at the window edges, the lookup lists and the key order.
 *
 * Every test uses the t1 window of 2024-01-16 in Asia/Shanghai
 * [2024-01-15T16:00Z, 2024-01-16T16:00Z), margin 10m, stuck_after 15m.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_compare.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_time.h"
#include "support_jobs.h"

#define SEP "\037" /* RECON_KEY_SEP as a string literal */

#define MIN  RECON_MS_PER_MIN
#define HOUR RECON_MS_PER_HOUR

/* 2024-01-16 00:00 Asia/Shanghai */
#define DAY_START 1705334400000LL
#define DAY_END	  (DAY_START + RECON_MS_PER_DAY)

struct fixture {
	struct recon_job *job;
	struct recon_window win;
	struct recon_compare *cmp;
	uint64_t line;
};

static int setup(void **state)
{
	struct fixture *fx = recon_xcalloc(1, sizeof(*fx));

	fx->job = support_job_new();
	support_window_day(fx->job, 2024, 1, 16, &fx->win);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	recon_compare_free(fx->cmp);
	recon_job_free(fx->job);
	free(fx);
	return 0;
}

/* A compare of the fixture's window; `now` is the next morning unless given. */
static struct recon_compare *start_at(struct fixture *fx, bool statement, int64_t now)
{
	recon_compare_free(fx->cmp);
	fx->cmp = recon_compare_new(fx->job, &fx->win, now, statement);
	fx->line = 0;
	return fx->cmp;
}

static struct recon_compare *start(struct fixture *fx, bool statement)
{
	return start_at(fx, statement, DAY_END + 9 * HOUR);
}

/* Copies key (and id) into the compare's arena, as recon_normalize_row() would. */
static void add_row(struct fixture *fx, int side, const char *key, const char *cur, int64_t amount,
		    int64_t t, int status, int entry, const char *id, unsigned flags)
{
	struct recon_arena *a = recon_compare_arena(fx->cmp);
	struct recon_row row;

	memset(&row, 0, sizeof(row));
	row.key = recon_arena_strndup(a, key, strlen(key));
	row.key_len = (uint32_t)strlen(key);
	memcpy(row.currency, cur, 4);
	row.amount = amount;
	row.time = t;
	row.status = (uint8_t)status;
	row.entry = (uint8_t)entry;
	row.flags = (uint8_t)flags;
	if (id) {
		row.entry_id = recon_arena_strndup(a, id, strlen(id));
		row.entry_id_len = (uint32_t)strlen(id);
	}
	row.line = ++fx->line;
	recon_compare_add(fx->cmp, side, &row);
}

/* An upstream statement entry (payment / refund / revoke), currency CNY. */
static void entry(struct fixture *fx, const char *key, int type, int64_t amount, int64_t t,
		  const char *id)
{
	add_row(fx, RECON_SIDE_UPSTREAM, key, "CNY", amount, t, 0, type, id, 0);
}

/* A plain upstream row (database upstream): an order in a status. */
static void up_plain(struct fixture *fx, const char *key, int status, int64_t amount, int64_t t)
{
	add_row(fx, RECON_SIDE_UPSTREAM, key, "CNY", amount, t, status, RECON_ENTRY_PAYMENT, NULL,
		RECON_ROW_HAS_STATUS);
}

/* A local flow row, currency CNY. */
static void local(struct fixture *fx, const char *key, int status, int64_t amount, int64_t t)
{
	add_row(fx, RECON_SIDE_LOCAL, key, "CNY", amount, t, status, RECON_ENTRY_PAYMENT, NULL,
		RECON_ROW_HAS_STATUS);
}

static int klass(struct fixture *fx, const char *key)
{
	return recon_compare_key_class(fx->cmp, key, strlen(key));
}

static const struct recon_diff *only_diff(struct fixture *fx)
{
	size_t n;
	const struct recon_diff *d = recon_compare_diffs(fx->cmp, &n);

	assert_int_equal(n, 1);
	return d;
}

/* Class names and back. */
static void test_compare_class_names(void **state)
{
	(void)state;
	assert_string_equal(recon_class_name(RECON_CLASS_MISSING), "missing");
	assert_string_equal(recon_class_name(RECON_CLASS_AMOUNT_MISMATCH), "amount_mismatch");
	assert_string_equal(recon_class_name(RECON_CLASS_MATCHED), "matched");
	for (int c = 0; c <= RECON_CLASS_MATCHED; c++)
		assert_int_equal(recon_class_from_name(recon_class_name((enum recon_class)c)), c);
	assert_int_equal(recon_class_from_name("nope"), -1);
}

/* missing: upstream success, no local row. */
static void test_compare_missing_success(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "M1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_MISSING);
	assert_int_equal(d->key_len, 2);
	assert_memory_equal(d->key, "M1", 2);
	assert_true(d->up.present);
	assert_false(d->local.present);
	assert_int_equal(d->up.status, RECON_ST_SUCCESS);
	assert_int_equal(d->up.amount, 1000);
	assert_int_equal(d->up.refunded, 0);
	assert_int_equal(d->up.time, DAY_START + HOUR);
	assert_int_equal(d->up.line, 1);
	assert_int_equal(d->up.rows, 1);
	assert_string_equal(d->up.currency, "CNY");
	assert_int_equal(klass(fx, "M1"), RECON_CLASS_MISSING);
	assert_int_equal(recon_compare_counts(fx->cmp)->classes[RECON_CLASS_MISSING], 1);
	assert_int_equal(recon_compare_counts(fx->cmp)->keys_owned, 1);
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 0);
}

/* missing: upstream refunded (paid, then refunded in full), no local row. */
static void test_compare_missing_refunded(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "M2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	entry(fx, "M2", RECON_ENTRY_REFUND, 1000, DAY_START + 2 * HOUR, "R2");
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_MISSING);
	assert_int_equal(d->up.status, RECON_ST_REFUNDED);
	assert_int_equal(d->up.amount, 1000);
	assert_int_equal(d->up.refunded, 1000);
	assert_int_equal(d->up.rows, 2);
	assert_int_equal(recon_compare_counts(fx->cmp)->rows_owned[RECON_SIDE_UPSTREAM], 2);
}

/* Upstream closed or pending with no local row is not "missing": nothing to replay. */
static void test_compare_missing_not_for_unpaid(void **state)
{
	struct fixture *fx = *state;
	size_t n;

	start(fx, false);
	up_plain(fx, "C1", RECON_ST_CLOSED, 1000, DAY_START + HOUR);
	up_plain(fx, "P1", RECON_ST_PENDING, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 0);
	assert_int_equal(klass(fx, "C1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "P1"), RECON_CLASS_MATCHED);
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 2);
}

/* extra: local success / refunded, no upstream row, owned by local time + margin. */
static void test_compare_extra(void **state)
{
	struct fixture *fx = *state;
	size_t n;
	const struct recon_diff *d;

	start(fx, true);
	local(fx, "E1", RECON_ST_SUCCESS, 500, DAY_START + HOUR);
	local(fx, "E2", RECON_ST_REFUNDED, 700, DAY_START + 2 * HOUR);
	local(fx, "E3", RECON_ST_CLOSED, 700, DAY_START + 2 * HOUR);
	recon_compare_classify(fx->cmp);
	d = recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 2);
	assert_memory_equal(d[0].key, "E1", 2);
	assert_int_equal(d[0].klass, RECON_CLASS_EXTRA);
	assert_false(d[0].up.present);
	assert_true(d[0].local.present);
	assert_int_equal(d[0].local.amount, 500);
	assert_int_equal(d[0].local.status, RECON_ST_SUCCESS);
	assert_int_equal(d[0].local.rows, 1);
	assert_memory_equal(d[1].key, "E2", 2);
	assert_int_equal(d[1].klass, RECON_CLASS_EXTRA);
	assert_int_equal(d[1].local.status, RECON_ST_REFUNDED);
	assert_int_equal(klass(fx, "E3"), RECON_CLASS_MATCHED); /* closed locally: no money */
	assert_int_equal(recon_compare_counts(fx->cmp)->classes[RECON_CLASS_EXTRA], 2);
}

/* stuck: same amount, upstream paid, local pending older than stuck_after. */
static void test_compare_stuck(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "S1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "S1", RECON_ST_PENDING, 1000, DAY_START + HOUR - 1000);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_STUCK);
	assert_true(d->up.present);
	assert_true(d->local.present);
	assert_int_equal(d->local.status, RECON_ST_PENDING);
	assert_int_equal(recon_compare_counts(fx->cmp)->classes[RECON_CLASS_STUCK], 1);
	assert_int_equal(recon_compare_counts(fx->cmp)->in_flight, 0);
}

/* A local pending younger than stuck_after is in flight: matched, counted in in_flight. */
static void test_compare_stuck_younger_is_in_flight(void **state)
{
	struct fixture *fx = *state;
	const int64_t t = DAY_START + 20 * HOUR;
	size_t n;

	/* now - time = 15m exactly: not older than stuck_after yet */
	start_at(fx, true, t + 15 * MIN);
	entry(fx, "F1", RECON_ENTRY_PAYMENT, 1000, t, "T1");
	local(fx, "F1", RECON_ST_PENDING, 1000, t);
	/* stuck_after counts from the upstream's terminal entry, not the local creation */
	entry(fx, "F2", RECON_ENTRY_PAYMENT, 1000, t - 1, "T2"); /* 1 ms older than the limit */
	local(fx, "F2", RECON_ST_PENDING, 1000, t);
	entry(fx, "F3", RECON_ENTRY_PAYMENT, 1000, t, "T3");
	local(fx, "F3", RECON_ST_PENDING, 1000, t - 2 * HOUR); /* created long before paid */
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 1);
	assert_int_equal(klass(fx, "F1"), RECON_CLASS_IN_FLIGHT);
	assert_int_equal(klass(fx, "F3"), RECON_CLASS_IN_FLIGHT);
	{
		size_t np;
		const struct recon_diff *p = recon_compare_pending(fx->cmp, &np);
		assert_int_equal(np, 2);
		assert_int_equal(p[0].due, t + 15 * MIN); /* F1: a difference after this */
	}
	assert_int_equal(klass(fx, "F2"), RECON_CLASS_STUCK);
	assert_int_equal(recon_compare_counts(fx->cmp)->in_flight, 2);
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 0);
}

/* amount_mismatch: both present, amounts differ. */
static void test_compare_amount_mismatch(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "A1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "A1", RECON_ST_SUCCESS, 999, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(d->up.amount, 1000);
	assert_int_equal(d->local.amount, 999);
}

/* amount_mismatch: same number, different currency. */
static void test_compare_amount_mismatch_currency(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "A2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	add_row(fx, RECON_SIDE_LOCAL, "A2", "USD", 1000, DAY_START + HOUR, RECON_ST_SUCCESS, 0,
		NULL, RECON_ROW_HAS_STATUS);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_AMOUNT_MISMATCH);
	assert_string_equal(d->up.currency, "CNY");
	assert_string_equal(d->local.currency, "USD");
}

/* Entries of one order in two currencies: no honest comparison, amount_mismatch. */
static void test_compare_amount_mismatch_mixed_upstream_currency(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "A3", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	add_row(fx, RECON_SIDE_UPSTREAM, "A3", "USD", 100, DAY_START + 2 * HOUR, 0,
		RECON_ENTRY_REFUND, "R1", 0);
	local(fx, "A3", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "A3"), RECON_CLASS_AMOUNT_MISMATCH);
}

/* Tolerance: a difference up to amount_tolerance_minor is matched, beyond it is not. */
static void test_compare_amount_tolerance(void **state)
{
	struct fixture *fx = *state;

	fx->job->tolerance_minor = 5;
	start(fx, true);
	entry(fx, "T_EQ", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "T_EQ", RECON_ST_SUCCESS, 1005, DAY_START + HOUR);
	entry(fx, "T_LO", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	local(fx, "T_LO", RECON_ST_SUCCESS, 995, DAY_START + HOUR);
	entry(fx, "T_OVER", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T3");
	local(fx, "T_OVER", RECON_ST_SUCCESS, 1006, DAY_START + HOUR);
	entry(fx, "T_UNDER", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T4");
	local(fx, "T_UNDER", RECON_ST_SUCCESS, 994, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "T_EQ"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "T_LO"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "T_OVER"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(klass(fx, "T_UNDER"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 2);
}

/* status_mismatch: local closed while upstream says paid. */
static void test_compare_status_mismatch_closed_vs_paid(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "X1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "X1", RECON_ST_CLOSED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_STATUS_MISMATCH);
	assert_int_equal(d->up.status, RECON_ST_SUCCESS);
	assert_int_equal(d->local.status, RECON_ST_CLOSED);
}

/* status_mismatch: local success while upstream refunded the order in full. */
static void test_compare_status_mismatch_success_vs_refunded(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "X2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "X2", RECON_ENTRY_REFUND, 1000, DAY_START + 3 * HOUR, "R1");
	local(fx, "X2", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_STATUS_MISMATCH);
	assert_int_equal(d->up.status, RECON_ST_REFUNDED);
	assert_int_equal(d->up.refunded, 1000);
	assert_int_equal(d->local.status, RECON_ST_SUCCESS);
}

/* duplicate: the same provider entry (entry type + transaction id) listed twice. */
static void test_compare_duplicate_same_entry_id(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "D1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "D1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "D1", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_DUPLICATE);
	assert_int_equal(d->up.rows, 2);
	assert_int_equal(d->up.amount, 1000); /* the repeated line is not summed twice */
	assert_int_equal(recon_compare_counts(fx->cmp)->classes[RECON_CLASS_DUPLICATE], 1);
}

/* duplicate: no entry id, identical key, amount and time. */
static void test_compare_duplicate_without_id(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "D2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, NULL);
	entry(fx, "D2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, NULL);
	/* same key, no id, but another time: a different entry */
	entry(fx, "D3", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, NULL);
	entry(fx, "D3", RECON_ENTRY_REFUND, 1000, DAY_START + HOUR, NULL); /* other type */
	local(fx, "D2", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	local(fx, "D3", RECON_ST_REFUNDED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "D2"), RECON_CLASS_DUPLICATE);
	assert_int_equal(klass(fx, "D3"), RECON_CLASS_MATCHED);
}

/* duplicate: the same key twice in the local flow. */
static void test_compare_duplicate_local(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "D4", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "D4", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	local(fx, "D4", RECON_ST_SUCCESS, 1000, DAY_START + HOUR + 5);
	local(fx, "D5", RECON_ST_SUCCESS, 300, DAY_START + HOUR); /* local only, twice */
	local(fx, "D5", RECON_ST_PENDING, 300, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "D4"), RECON_CLASS_DUPLICATE);
	assert_int_equal(klass(fx, "D5"), RECON_CLASS_DUPLICATE);
	d = recon_compare_diffs(fx->cmp, &(size_t){0});
	assert_int_equal(d[0].local.rows, 2);
	assert_int_equal(recon_compare_counts(fx->cmp)->rows_owned[RECON_SIDE_LOCAL], 4);
}

/* matched: same amount, same terminal status; nothing listed. */
static void test_compare_matched(void **state)
{
	struct fixture *fx = *state;
	const struct recon_compare_counts *c;
	size_t n;

	start(fx, true);
	entry(fx, "OK1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "OK1", RECON_ST_SUCCESS, 1000, DAY_START + HOUR - 2000);
	up_plain(fx, "OK2", RECON_ST_SUCCESS, 250, DAY_START + HOUR);
	local(fx, "OK2", RECON_ST_SUCCESS, 250, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 0);
	c = recon_compare_counts(fx->cmp);
	assert_int_equal(c->matched, 2);
	assert_int_equal(c->keys_owned, 2);
	assert_int_equal(c->rows_owned[0], 2);
	assert_int_equal(c->rows_owned[1], 2);
	for (int i = 0; i < RECON_CLASS__COUNT; i++)
		assert_int_equal(c->classes[i], 0);
	assert_int_equal(klass(fx, "OK1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "nope"), -1);
}

/* amount_mismatch wins over status (and over stuck). */
static void test_compare_amount_wins_over_status(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "W1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	local(fx, "W1", RECON_ST_CLOSED, 900, DAY_START + HOUR);
	entry(fx, "W2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	local(fx, "W2", RECON_ST_PENDING, 900, DAY_START + HOUR - 2 * HOUR);
	entry(fx, "W3", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T3");
	entry(fx, "W3", RECON_ENTRY_REFUND, 1000, DAY_START + HOUR, "R3");
	local(fx, "W3", RECON_ST_SUCCESS, 1100, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "W1"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(klass(fx, "W2"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(klass(fx, "W3"), RECON_CLASS_AMOUNT_MISMATCH);
}

/* A local pending row with no upstream row is not a difference. */
static void test_compare_local_pending_without_upstream(void **state)
{
	struct fixture *fx = *state;
	size_t n;

	start(fx, true);
	local(fx, "LP1", RECON_ST_PENDING, 1000, DAY_START + HOUR); /* old: still not stuck */
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 0);
	assert_int_equal(klass(fx, "LP1"), RECON_CLASS_MATCHED);
	assert_int_equal(recon_compare_counts(fx->cmp)->keys_owned, 1);
}

/* Payment 10.00 + refund 3.00: the order stays success, 3.00 refunded. */
static void test_compare_partial_refund_is_success(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "PR1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "PR1", RECON_ENTRY_REFUND, 300, DAY_START + 2 * HOUR, "R1");
	local(fx, "PR1", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	entry(fx, "PR2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	entry(fx, "PR2", RECON_ENTRY_REFUND, 300, DAY_START + 2 * HOUR, "R2");
	local(fx, "PR2", RECON_ST_REFUNDED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "PR1"), RECON_CLASS_MATCHED);
	/* the local flow refunded more than upstream shows yet: awaited, not asserted */
	{
		size_t n, np;
		recon_compare_diffs(fx->cmp, &n);
		assert_int_equal(n, 0);
		d = recon_compare_pending(fx->cmp, &np);
		assert_int_equal(np, 1);
		assert_int_equal(d->due, DAY_END + 9 * HOUR + fx->job->refund_after_ms);
	}
	assert_memory_equal(d->key, "PR2", 3);
	assert_int_equal(d->klass, RECON_CLASS_AWAITING);
	assert_int_equal(d->up.status, RECON_ST_SUCCESS);
	assert_int_equal(d->up.amount, 1000); /* the order amount, not net of refunds */
	assert_int_equal(d->up.refunded, 300);
	assert_int_equal(d->up.time, DAY_START + HOUR);
	assert_int_equal(d->up.line, 4); /* the first entry's line */
}

/* Payment + refunds adding up to the payment: refunded. */
static void test_compare_full_refund_is_refunded(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "FR1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "FR1", RECON_ENTRY_REFUND, 600, DAY_START + 2 * HOUR, "R1");
	entry(fx, "FR1", RECON_ENTRY_REFUND, 400, DAY_START + 3 * HOUR, "R2");
	local(fx, "FR1", RECON_ST_REFUNDED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "FR1"), RECON_CLASS_MATCHED);
	assert_int_equal(recon_compare_counts(fx->cmp)->rows_owned[0], 3);
}

/* Refunds beyond the payment: an amount problem, never matched. */
static void test_compare_over_refund_is_amount_mismatch(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "OR1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "OR1", RECON_ENTRY_REFUND, 1200, DAY_START + 2 * HOUR, "R1");
	local(fx, "OR1", RECON_ST_REFUNDED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "OR1"), RECON_CLASS_AMOUNT_MISMATCH);
}

/* Payment then revocation: closed. */
static void test_compare_revoke_is_closed(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "RV1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "RV1", RECON_ENTRY_REVOKE, 1000, DAY_START + 2 * HOUR, "T1");
	local(fx, "RV1", RECON_ST_CLOSED, 1000, DAY_START + HOUR);
	entry(fx, "RV2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	entry(fx, "RV2", RECON_ENTRY_REVOKE, 1000, DAY_START + 2 * HOUR, "T2");
	local(fx, "RV2", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	entry(fx, "RV3", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T3");
	entry(fx, "RV3", RECON_ENTRY_REVOKE, 1000, DAY_START + 2 * HOUR, "T3");
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "RV1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "RV3"), RECON_CLASS_MATCHED); /* closed: nothing to replay */
	d = only_diff(fx);
	assert_memory_equal(d->key, "RV2", 3);
	assert_int_equal(d->klass, RECON_CLASS_STATUS_MISMATCH);
	assert_int_equal(d->up.status, RECON_ST_CLOSED);
}

/*
 * A revocation whose payment lies in an earlier statement (paid 23:59:59, revoked
 * after midnight) folds like a refund-only key: closed, for the revoked amount.
 */
static void test_compare_revoke_only_matches_local_closed(void **state)
{
	struct fixture *fx = *state;
	size_t n;

	start(fx, true);
	entry(fx, "RVO1", RECON_ENTRY_REVOKE, 1000, DAY_START + 30 * 1000, "T1");
	add_row(fx, RECON_SIDE_LOCAL, "RVO1", "CNY", 1000, DAY_START - 1000, RECON_ST_CLOSED, 0,
		NULL, RECON_ROW_HAS_STATUS | RECON_ROW_LOOKED_UP);
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(klass(fx, "RVO1"), RECON_CLASS_MATCHED);
	assert_int_equal(n, 0);
}

/* A refund whose payment lies in an earlier statement vs a local refunded order. */
static void test_compare_refund_only_matches_local_refunded(void **state)
{
	struct fixture *fx = *state;
	size_t n;

	start(fx, true);
	entry(fx, "RO1", RECON_ENTRY_REFUND, 1000, DAY_START + HOUR, "R1");
	/* the order was written the day before and found by the key lookup */
	add_row(fx, RECON_SIDE_LOCAL, "RO1", "CNY", 1000, DAY_START - 20 * HOUR, RECON_ST_REFUNDED,
		0, NULL, RECON_ROW_HAS_STATUS | RECON_ROW_LOOKED_UP);
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 0);
	assert_int_equal(klass(fx, "RO1"), RECON_CLASS_MATCHED);
}

/* Refund-only upstream key vs a local order still marked success. */
static void test_compare_refund_only_vs_local_success(void **state)
{
	struct fixture *fx = *state;
	const struct recon_diff *d;

	start(fx, true);
	entry(fx, "RO2", RECON_ENTRY_REFUND, 1000, DAY_START + HOUR, "R1");
	add_row(fx, RECON_SIDE_LOCAL, "RO2", "CNY", 1000, DAY_START - 20 * HOUR, RECON_ST_SUCCESS,
		0, NULL, RECON_ROW_HAS_STATUS | RECON_ROW_LOOKED_UP);
	recon_compare_classify(fx->cmp);
	d = only_diff(fx);
	assert_int_equal(d->klass, RECON_CLASS_STATUS_MISMATCH);
	assert_true(d->local.looked_up);
	assert_false(d->up.looked_up);
}

/* Refund-only upstream key refunding more than the local order's amount. */
static void test_compare_refund_only_larger_than_local(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "RO3", RECON_ENTRY_REFUND, 1500, DAY_START + HOUR, "R1");
	local(fx, "RO3", RECON_ST_REFUNDED, 1000, DAY_START - 20 * HOUR);
	/* a partial refund of an earlier payment: the order stays success */
	entry(fx, "RO4", RECON_ENTRY_REFUND, 300, DAY_START + HOUR, "R2");
	local(fx, "RO4", RECON_ST_SUCCESS, 1000, DAY_START - 20 * HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "RO3"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(klass(fx, "RO4"), RECON_CLASS_MATCHED);
}

/* Two partial refunds with different refund ids are two entries, not a duplicate. */
static void test_compare_two_partial_refunds_not_duplicates(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "TR1", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T1");
	entry(fx, "TR1", RECON_ENTRY_REFUND, 300, DAY_START + 2 * HOUR, "R1");
	entry(fx, "TR1", RECON_ENTRY_REFUND, 300, DAY_START + 2 * HOUR, "R2");
	local(fx, "TR1", RECON_ST_SUCCESS, 1000, DAY_START + HOUR);
	/* a refund carrying the payment's transaction id is another entry type */
	entry(fx, "TR2", RECON_ENTRY_PAYMENT, 1000, DAY_START + HOUR, "T2");
	entry(fx, "TR2", RECON_ENTRY_REFUND, 1000, DAY_START + 2 * HOUR, "T2");
	local(fx, "TR2", RECON_ST_REFUNDED, 1000, DAY_START + HOUR);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "TR1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "TR2"), RECON_CLASS_MATCHED);
	assert_int_equal(recon_compare_counts(fx->cmp)->classes[RECON_CLASS_DUPLICATE], 0);
}

/*
 * Which keys a window evaluates (DESIGN "Entries belong to windows"): those
 * with an upstream entry of the window (the reader passes a database
 * upstream's in-window entries only), and local-only keys whose time lies in
 * [start, end); a local row read through the margins is its own window's.
 */
static void test_compare_window_local_edges(void **state)
{
	struct fixture *fx = *state;
	const int64_t margin = fx->job->margin_ms;
	const struct recon_compare_counts *c;
	size_t n;
	const struct recon_diff *d;

	start(fx, true);
	local(fx, "L_FIRST", RECON_ST_SUCCESS, 100, DAY_START);
	local(fx, "L_LAST", RECON_ST_SUCCESS, 100, DAY_END - margin);
	local(fx, "L_LATE", RECON_ST_SUCCESS, 100, DAY_END - margin + 1); /* horizon not passed */
	local(fx, "L_NEXT", RECON_ST_SUCCESS, 100, DAY_END);		  /* the next window's */
	local(fx, "L_PREV", RECON_ST_SUCCESS, 100, DAY_START - 1);	  /* the previous one's */
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "L_FIRST"), RECON_CLASS_EXTRA);
	assert_int_equal(klass(fx, "L_LAST"), RECON_CLASS_EXTRA);
	assert_int_equal(klass(fx, "L_LATE"), RECON_CLASS_AWAITING);
	assert_int_equal(klass(fx, "L_NEXT"), -1);
	assert_int_equal(klass(fx, "L_PREV"), -1);
	c = recon_compare_counts(fx->cmp);
	assert_int_equal(c->keys_owned, 3);
	assert_int_equal(c->awaiting, 1);
	assert_int_equal(c->rows_other[RECON_SIDE_LOCAL], 2);
	d = recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 2);
	assert_memory_equal(d[0].key, "L_FIRST", 7);
	assert_memory_equal(d[1].key, "L_LAST", 6);
	/* a later window whose end passes the horizon asserts it */
	recon_compare_horizon(fx->cmp, DAY_START, DAY_END + 1);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "L_LATE"), RECON_CLASS_EXTRA);
}

/* A key with an upstream entry of the window is evaluated whatever its local time. */
static void test_compare_window_upstream_rule_wins(void **state)
{
	struct fixture *fx = *state;

	start(fx, false);
	up_plain(fx, "B1", RECON_ST_SUCCESS, 100, DAY_END - 1);
	local(fx, "B1", RECON_ST_SUCCESS, 100, DAY_END + 5 * MIN); /* read through the margin */
	local(fx, "B2", RECON_ST_SUCCESS, 100, DAY_END + HOUR);	   /* the next window's */
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "B1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "B2"), -1);
	assert_int_equal(recon_compare_counts(fx->cmp)->rows_other[1], 1);
}

/*
 * The ledger: carried contributions of earlier windows join the view (a
 * refund today of a payment matched yesterday; a revocation the next day);
 * an open item is evaluated though the window holds nothing of its key.
 */
static void test_compare_carry_and_items(void **state)
{
	struct fixture *fx = *state;
	struct recon_carry c = {0};
	size_t n;
	const struct recon_diff *d;

	start(fx, true);
	/* R1: 100.00 paid yesterday (carried), 30.00 + 70.00 refunded today: refunded */
	c.paid = 10000;
	c.payments = 1;
	c.entries = 1;
	memcpy(c.currency, "CNY", 4);
	c.first = c.last = DAY_START - HOUR;
	entry(fx, "R1", RECON_ENTRY_REFUND, 3000, DAY_START + HOUR, "RF1");
	entry(fx, "R1", RECON_ENTRY_REFUND, 7000, DAY_START + 2 * HOUR, "RF2");
	local(fx, "R1", RECON_ST_REFUNDED, 10000, DAY_START - HOUR);
	recon_compare_carry(fx->cmp, "R1", 2, &c);
	/* R2: a 0.00 revocation the day after a 45.00 payment that matched (no ledger row) */
	entry(fx, "R2", RECON_ENTRY_REVOKE, 0, DAY_START + HOUR, "RV1");
	local(fx, "R2", RECON_ST_CLOSED, 4500, DAY_START - HOUR);
	/* R3: 100.00 carried, 120.00 refunded today: more than was paid */
	entry(fx, "R3", RECON_ENTRY_REFUND, 12000, DAY_START + HOUR, "RF3");
	local(fx, "R3", RECON_ST_REFUNDED, 10000, DAY_START - HOUR);
	recon_compare_carry(fx->cmp, "R3", 2, &c);
	/* R4: carried history of a key this window does not touch: ignored */
	recon_compare_carry(fx->cmp, "R4", 2, &c);
	/* I1: an open item; the window holds nothing of it, its local row came late */
	recon_compare_item(fx->cmp, "I1", 2, RECON_CLASS_MISSING, 0);
	recon_compare_carry(fx->cmp, "I1", 2, &c);
	add_row(fx, RECON_SIDE_LOCAL, "I1", "CNY", 10000, DAY_START - 2 * HOUR, RECON_ST_SUCCESS, 0,
		NULL, RECON_ROW_HAS_STATUS | RECON_ROW_LOOKED_UP);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "R1"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "R2"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "R3"), RECON_CLASS_AMOUNT_MISMATCH);
	assert_int_equal(klass(fx, "R4"), -1);
	assert_int_equal(klass(fx, "I1"), RECON_CLASS_MATCHED);
	d = recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 1);
	assert_int_equal(d->up.amount, 10000);
	assert_int_equal(d->up.refunded, 12000);
	assert_true(d->up.carried);
	assert_int_equal(recon_compare_counts(fx->cmp)->carried, 3);
}

/*
 * Plain order rows (a notification table) are snapshots, not entries: a row
 * updated from paid yesterday to refunded today is one refunded order.
 */
static void test_compare_carry_plain_snapshots(void **state)
{
	struct fixture *fx = *state;
	struct recon_carry c = {0};

	start(fx, false);
	c.paid = 100;
	c.payments = 1;
	c.entries = 1;
	c.plain = true;
	c.window = DAY_START - 24 * HOUR;
	memcpy(c.currency, "CNY", 4);
	c.first = c.last = DAY_START - 20 * HOUR;
	up_plain(fx, "P1", RECON_ST_REFUNDED, 100, DAY_START + HOUR);
	local(fx, "P1", RECON_ST_REFUNDED, 100, DAY_START - 20 * HOUR);
	recon_compare_carry(fx->cmp, "P1", 2, &c);
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "P1"), RECON_CLASS_MATCHED);
}

/* A statement upstream: every key it lists belongs to the window, whatever its time. */
static void test_compare_statement_owns_every_upstream_key(void **state)
{
	struct fixture *fx = *state;

	start(fx, true);
	entry(fx, "ST1", RECON_ENTRY_PAYMENT, 100, DAY_END + 5 * MIN, "T1");
	entry(fx, "ST2", RECON_ENTRY_PAYMENT, 100, DAY_START - 23 * HOUR, "T2");
	entry(fx, "ST3", RECON_ENTRY_PAYMENT, 100, DAY_END, "T3");
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "ST1"), RECON_CLASS_MISSING);
	assert_int_equal(klass(fx, "ST2"), RECON_CLASS_MISSING);
	assert_int_equal(klass(fx, "ST3"), RECON_CLASS_MISSING);
	assert_int_equal(recon_compare_counts(fx->cmp)->rows_other[0], 0);
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Copies n lookup keys into NUL-terminated strings, sorted, joined by ',' into buf. */
static const char *lookup_list(struct fixture *fx, int side, char *buf, size_t size)
{
	const char **keys;
	const uint32_t *lens;
	size_t n = recon_compare_pending_lookups(fx->cmp, side, &keys, &lens);
	char **copy = recon_xcalloc(n ? n : 1, sizeof(*copy));

	for (size_t i = 0; i < n; i++)
		copy[i] = recon_xstrndup(keys[i], lens[i]);
	qsort(copy, n, sizeof(*copy), cmp_cstr);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i)
			strncat(buf, ",", size - strlen(buf) - 1);
		strncat(buf, copy[i], size - strlen(buf) - 1);
		free(copy[i]);
	}
	free(copy);
	return buf;
}

/*
 * Lookups: LOCAL lists owned upstream keys without a local row; UPSTREAM lists
 * owned local-only success/refunded keys.
 */
static void test_compare_pending_lookups(void **state)
{
	struct fixture *fx = *state;
	char buf[256];

	start(fx, false);
	up_plain(fx, "UP_ONLY", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	up_plain(fx, "UP_CLOSED", RECON_ST_CLOSED, 100, DAY_START + HOUR);
	up_plain(fx, "BOTH", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	local(fx, "BOTH", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	local(fx, "LO_PAID", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	local(fx, "LO_REFUNDED", RECON_ST_REFUNDED, 100, DAY_START + HOUR);
	local(fx, "LO_PENDING", RECON_ST_PENDING, 100, DAY_START + HOUR);
	local(fx, "LO_CLOSED", RECON_ST_CLOSED, 100, DAY_START + HOUR);
	local(fx, "LO_NEXT", RECON_ST_SUCCESS, 100, DAY_END); /* tomorrow's */
	local(fx, "LO_DUP", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	local(fx, "LO_DUP", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	assert_string_equal(lookup_list(fx, RECON_SIDE_LOCAL, buf, sizeof(buf)),
			    "UP_CLOSED,UP_ONLY");
	assert_string_equal(lookup_list(fx, RECON_SIDE_UPSTREAM, buf, sizeof(buf)),
			    "LO_PAID,LO_REFUNDED");

	/* a lookup that finds the local row turns "missing" into matched */
	add_row(fx, RECON_SIDE_LOCAL, "UP_ONLY", "CNY", 100, DAY_START - 30 * HOUR,
		RECON_ST_SUCCESS, 0, NULL, RECON_ROW_HAS_STATUS | RECON_ROW_LOOKED_UP);
	assert_string_equal(lookup_list(fx, RECON_SIDE_LOCAL, buf, sizeof(buf)), "UP_CLOSED");
	recon_compare_classify(fx->cmp);
	assert_int_equal(klass(fx, "UP_ONLY"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "LO_PAID"), RECON_CLASS_EXTRA);
	assert_int_equal(klass(fx, "LO_NEXT"), -1);
}

/* With a statement upstream, every statement key without a local row is looked up. */
static void test_compare_pending_lookups_statement(void **state)
{
	struct fixture *fx = *state;
	char buf[256];

	start(fx, true);
	entry(fx, "K_LATE", RECON_ENTRY_PAYMENT, 100, DAY_END + MIN, "T1");
	entry(fx, "K_REFUND", RECON_ENTRY_REFUND, 100, DAY_START + HOUR, "R1");
	entry(fx, "K_BOTH", RECON_ENTRY_PAYMENT, 100, DAY_START + HOUR, "T2");
	local(fx, "K_BOTH", RECON_ST_SUCCESS, 100, DAY_START + HOUR);
	assert_string_equal(lookup_list(fx, RECON_SIDE_LOCAL, buf, sizeof(buf)), "K_LATE,K_REFUND");
	assert_string_equal(lookup_list(fx, RECON_SIDE_UPSTREAM, buf, sizeof(buf)), "");
}

struct spec {
	int side;
	const char *key;
	int64_t amount;
	int status; /* local */
	int entry;  /* upstream */
	const char *id;
};

static const struct spec mixed[] = {
    {RECON_SIDE_UPSTREAM, "b", 100, 0, RECON_ENTRY_PAYMENT, "T1"},
    {RECON_SIDE_UPSTREAM, "B", 100, 0, RECON_ENTRY_PAYMENT, "T2"},
    {RECON_SIDE_LOCAL, "B", 90, RECON_ST_SUCCESS, 0, NULL},
    {RECON_SIDE_LOCAL, "a", 100, RECON_ST_SUCCESS, 0, NULL},
    {RECON_SIDE_UPSTREAM, "A10", 100, 0, RECON_ENTRY_PAYMENT, "T3"},
    {RECON_SIDE_UPSTREAM, "A9", 100, 0, RECON_ENTRY_PAYMENT, "T4"},
    {RECON_SIDE_LOCAL, "A9", 100, RECON_ST_CLOSED, 0, NULL},
    {RECON_SIDE_UPSTREAM, "A", 100, 0, RECON_ENTRY_PAYMENT, "T5"},
    {RECON_SIDE_UPSTREAM, "A", 100, 0, RECON_ENTRY_PAYMENT, "T5"},
    {RECON_SIDE_UPSTREAM, "A1", 100, 0, RECON_ENTRY_PAYMENT, "T6"},
    {RECON_SIDE_LOCAL, "A1", 100, RECON_ST_SUCCESS, 0, NULL},
    {RECON_SIDE_UPSTREAM, "A" SEP "2", 100, 0, RECON_ENTRY_PAYMENT, "T7"},
    {RECON_SIDE_UPSTREAM, "\xe8\xae\xa2\xe5\x8d\x95", 100, 0, RECON_ENTRY_PAYMENT, "T8"},
    {RECON_SIDE_UPSTREAM, "Z", 100, 0, RECON_ENTRY_PAYMENT, "T9"},
    {RECON_SIDE_UPSTREAM, "Z", 100, 0, RECON_ENTRY_REFUND, "R9"},
    {RECON_SIDE_LOCAL, "Z", 100, RECON_ST_SUCCESS, 0, NULL},
};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

static void add_spec(struct fixture *fx, const struct spec *s)
{
	if (s->side == RECON_SIDE_UPSTREAM)
		entry(fx, s->key, s->entry, s->amount, DAY_START + HOUR, s->id);
	else
		local(fx, s->key, s->status, s->amount, DAY_START + HOUR);
}

/*
 * Thousands of differences, in bytewise key order: keys alike in 16 bytes
 * (the sort's words) and apart after, keys that begin others, keys one byte
 * longer than others, bytes above 0x7F and the composite separator, added in
 * a shuffled order; then the same keys behind a prefix all of them share
 * (the sort's words start past it), then behind two long prefixes (runs of
 * ties on the sort's words). Each key once; each before the next.
 */
static void test_compare_order_many(void **state)
{
	enum { N = 12000 }; /* past MERGE_SPLIT: the lists merge in two halves */
	struct fixture *fx = *state;
	static char keys[N][96];
	static const char *const stem[] = {"ORD2024030100102",		"ORD2024030100102X", "K",
					   "\xe8\xae\xa2\xe5\x8d\x95-", "A" SEP "B",	     "z"};
	/* none; one all share; two, long and alike past 16 bytes (ties: a run for qsort) */
	static const char *const prefix[][2] = {
	    {"", ""},
	    {"MCH-0001-2024-03-01-", "MCH-0001-2024-03-01-"},
	    {"A" SEP "merchant-alike-past-16-", "B" SEP "merchant-alike-past-16-"}};
	size_t order[N], nd;
	uint64_t x = 0x2545F4914F6CDD1DULL;
	const struct recon_diff *d;

	for (size_t i = 0; i < N; i++)
		order[i] = i;
	for (size_t i = N; i > 1; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		const size_t j = (size_t)(x % i), t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	for (size_t pf = 0; pf < 3; pf++) {
		for (size_t i = 0; i < N; i++) {
			const char *st = stem[i % 6];
			if (i % 6 == 2 && i / 6 < 40) /* K, KA, KAA, ...: each begins the next */
				snprintf(keys[i], sizeof(keys[i]), "%s%s%.*s", prefix[pf][i % 2],
					 st, (int)(i / 6),
					 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
			else if (i % 6 == 2) /* KAA1, KAAA1, ...: and one byte more */
				snprintf(keys[i], sizeof(keys[i]), "%s%s%.*s%zu", prefix[pf][i % 2],
					 st, (int)(i / 6 % 40),
					 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", i / 6 / 40);
			else
				snprintf(keys[i], sizeof(keys[i]), "%s%s%zu", prefix[pf][i % 2], st,
					 i / 6 * 7919 % 100003);
		}
		start(fx, true);
		for (size_t i = 0; i < N; i++)
			entry(fx, keys[order[i]], RECON_ENTRY_PAYMENT, 100, DAY_START + HOUR, NULL);
		recon_compare_classify(fx->cmp);
		d = recon_compare_diffs(fx->cmp, &nd);
		assert_int_equal(nd, N); /* every key a difference (missing) */
		for (size_t i = 1; i < nd; i++) {
			const size_t n =
			    d[i - 1].key_len < d[i].key_len ? d[i - 1].key_len : d[i].key_len;
			const int c = memcmp(d[i - 1].key, d[i].key, n);
			if (!(c < 0 || (c == 0 && d[i - 1].key_len < d[i].key_len)))
				fail_msg("differences %zu and %zu out of key order: '%.*s', '%.*s'",
					 i - 1, i, (int)d[i - 1].key_len, d[i - 1].key,
					 (int)d[i].key_len, d[i].key);
		}
	}
}

/* Differences come out in bytewise key order, whatever the order rows were added in. */
static void test_compare_deterministic_order(void **state)
{
	struct fixture *fx = *state;
	static const char *const want[] = {
	    "A", "A" SEP "2", "A10", "A9", "B", "Z", "a", "b", "\xe8\xae\xa2\xe5\x8d\x95",
	};
	static const int want_class[] = {
	    RECON_CLASS_DUPLICATE,	 RECON_CLASS_MISSING,	      RECON_CLASS_MISSING,
	    RECON_CLASS_STATUS_MISMATCH, RECON_CLASS_AMOUNT_MISMATCH, RECON_CLASS_STATUS_MISMATCH,
	    RECON_CLASS_EXTRA,		 RECON_CLASS_MISSING,	      RECON_CLASS_MISSING,
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	struct recon_compare *forward;
	const struct recon_diff *a, *b;
	size_t na, nb;

	start(fx, true);
	for (size_t i = 0; i < NMIXED; i++)
		add_spec(fx, &mixed[i]);
	recon_compare_classify(fx->cmp);
	a = recon_compare_diffs(fx->cmp, &na);
	assert_int_equal(na, nwant);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].key_len, strlen(want[i]));
		assert_memory_equal(a[i].key, want[i], a[i].key_len);
		assert_int_equal(a[i].klass, want_class[i]);
	}
	assert_int_equal(klass(fx, "A1"), RECON_CLASS_MATCHED);

	/* the same rows backwards, into a second compare: the same list, field by field */
	forward = fx->cmp;
	fx->cmp = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	for (size_t i = NMIXED; i-- > 0;)
		add_spec(fx, &mixed[i]);
	recon_compare_classify(fx->cmp);
	b = recon_compare_diffs(fx->cmp, &nb);
	assert_int_equal(nb, na);
	for (size_t i = 0; i < nb; i++) {
		assert_int_equal(b[i].key_len, a[i].key_len);
		assert_memory_equal(b[i].key, a[i].key, a[i].key_len);
		assert_int_equal(b[i].klass, a[i].klass);
		assert_int_equal(b[i].up.present, a[i].up.present);
		assert_int_equal(b[i].up.status, a[i].up.status);
		assert_string_equal(b[i].up.currency, a[i].up.currency);
		assert_int_equal(b[i].up.amount, a[i].up.amount);
		assert_int_equal(b[i].up.refunded, a[i].up.refunded);
		assert_int_equal(b[i].up.time, a[i].up.time);
		assert_int_equal(b[i].up.rows, a[i].up.rows);
		assert_int_equal(b[i].local.present, a[i].local.present);
		assert_int_equal(b[i].local.status, a[i].local.status);
		assert_int_equal(b[i].local.amount, a[i].local.amount);
		assert_int_equal(b[i].local.time, a[i].local.time);
		assert_int_equal(b[i].local.rows, a[i].local.rows);
	}
	assert_memory_equal(recon_compare_counts(fx->cmp), recon_compare_counts(forward),
			    sizeof(struct recon_compare_counts));
	recon_compare_free(forward);
}

/* classify twice gives the same counts (no accumulation). */
static void test_compare_classify_idempotent(void **state)
{
	struct fixture *fx = *state;
	struct recon_compare_counts c1;
	size_t n1, n2;

	start(fx, true);
	for (size_t i = 0; i < NMIXED; i++)
		add_spec(fx, &mixed[i]);
	local(fx, "INFLIGHT", RECON_ST_PENDING, 100, DAY_END + 9 * HOUR - MIN);
	entry(fx, "INFLIGHT", RECON_ENTRY_PAYMENT, 100, DAY_END + 9 * HOUR - 2 * MIN, "TI");
	recon_compare_classify(fx->cmp);
	c1 = *recon_compare_counts(fx->cmp);
	recon_compare_diffs(fx->cmp, &n1);
	recon_compare_classify(fx->cmp);
	recon_compare_diffs(fx->cmp, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(&c1, recon_compare_counts(fx->cmp), sizeof(c1));
	assert_int_equal(c1.in_flight, 1);
}

/* Many keys: the tables grow and every key keeps its class. */
static void test_compare_many_keys(void **state)
{
	struct fixture *fx = *state;
	char key[32];
	size_t n;
	const struct recon_diff *d;

	start(fx, true);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "K%05d", i);
		entry(fx, key, RECON_ENTRY_PAYMENT, 100 + i, DAY_START + i, NULL);
		if (i % 3)
			local(fx, key, RECON_ST_SUCCESS, 100 + i, DAY_START + i);
	}
	recon_compare_classify(fx->cmp);
	d = recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 1667);
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 5000 - 1667);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "K%05zu", i * 3);
		assert_int_equal(d[i].key_len, 6);
		assert_memory_equal(d[i].key, key, 6);
		assert_int_equal(d[i].klass, RECON_CLASS_MISSING);
	}
}

/* ---- two feeders on two threads give what recon_compare_add() gives ---- */

struct trow {
	char key[320];
	char id[24]; /* "" for none */
	char cur[4];
	int64_t amount, time;
	uint64_t line;
	uint8_t status, entry, flags;
	bool rejected;
};

struct tfeed {
	struct recon_compare_feeder *f;
	const struct trow *rows;
	size_t n;
};

static uint64_t tmix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void trow_to_row(const struct trow *t, struct recon_row *row)
{
	memset(row, 0, sizeof(*row));
	row->key = t->key;
	row->key_len = (uint32_t)strlen(t->key);
	memcpy(row->currency, t->cur, 4);
	row->amount = t->amount;
	row->time = t->time;
	row->line = t->line;
	row->status = t->status;
	row->entry = t->entry;
	row->flags = t->flags;
	if (t->id[0]) {
		row->entry_id = t->id;
		row->entry_id_len = (uint32_t)strlen(t->id);
	}
}

static void *tfeed_run(void *arg)
{
	struct tfeed *tf = arg;
	struct recon_row row;

	for (size_t i = 0; i < tf->n; i++) {
		trow_to_row(&tf->rows[i], &row);
		if (tf->rows[i].rejected)
			recon_compare_feeder_add_rejected(tf->f, &row);
		else
			recon_compare_feeder_add(tf->f, &row);
	}
	recon_compare_feeder_free(tf->f);
	return NULL;
}

static struct trow *tpush(struct trow **v, size_t *n, size_t *a)
{
	recon_grow((void **)v, a, *n + 1, sizeof(**v));
	memset(&(*v)[*n], 0, sizeof(**v));
	return &(*v)[(*n)++];
}

/* Every case of the fold and of the compact records, many times over, both sides shuffled. */
static void build_rows(struct trow **up, size_t *nup, struct trow **lo, size_t *nlo)
{
	size_t aup = 0, alo = 0;
	const size_t nkeys = 40000;

	*up = *lo = NULL;
	*nup = *nlo = 0;
	for (size_t i = 0; i < nkeys; i++) {
		uint64_t h = tmix(i);
		int c = (int)(h % 22);
		char key[320];
		int64_t t = DAY_START + (int64_t)(h >> 20) % (20 * HOUR),
			amt = 100 + (int64_t)(h % 9999);
		struct trow *r;

		if (i % 7 == 0)
			snprintf(key, sizeof(key), "K%zu" SEP "refund-type-%zu", i, i % 3);
		else if (i % 5 == 0)
			snprintf(key, sizeof(key), "a-long-order-number-%020zu", i);
		else if (c == 18) /* longer than a staged row's buffer (compare_feed.c) */
			snprintf(key, sizeof(key), "long-%0300zu", i);
		else
			snprintf(key, sizeof(key), "k%zu", i);
#define UP(entry_, amount_, time_, id_, flags_, status_)                                           \
	do {                                                                                       \
		r = tpush(up, nup, &aup);                                                          \
		snprintf(r->key, sizeof(r->key), "%s", key);                                       \
		snprintf(r->id, sizeof(r->id), "%s", (id_));                                       \
		memcpy(r->cur, "CNY", 4);                                                          \
		r->amount = (amount_);                                                             \
		r->time = (time_);                                                                 \
		r->entry = (uint8_t)(entry_);                                                      \
		r->flags = (uint8_t)(flags_);                                                      \
		r->status = (uint8_t)(status_);                                                    \
	} while (0)
#define LO(status_, amount_, time_)                                                                \
	do {                                                                                       \
		r = tpush(lo, nlo, &alo);                                                          \
		snprintf(r->key, sizeof(r->key), "%s", key);                                       \
		memcpy(r->cur, "CNY", 4);                                                          \
		r->amount = (amount_);                                                             \
		r->time = (time_);                                                                 \
		r->status = (uint8_t)(status_);                                                    \
		r->flags = RECON_ROW_HAS_STATUS;                                                   \
	} while (0)
		char id[24], id2[24];
		snprintf(id, sizeof(id), "42000%zu", i);
		snprintf(id2, sizeof(id2), "R%zu", i);
		switch (c) {
		case 0: /* matched */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t - 5000);
			break;
		case 1: /* payment + refund: widened */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			UP(RECON_ENTRY_REFUND, amt, t + HOUR, id2, 0, 0);
			LO(RECON_ST_REFUNDED, amt, t);
			break;
		case 2: /* missing */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			break;
		case 3: /* extra */
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 4: /* local duplicate, the later row earlier in time */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			LO(RECON_ST_PENDING, amt, t - HOUR);
			break;
		case 5: /* the same entry listed twice */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 6: /* an id another key used (cross-key, likely another partition) */
			snprintf(id, sizeof(id), "42000%zu", i - 1);
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 7: /* no id, the same entry twice */
			UP(RECON_ENTRY_PAYMENT, amt, t, "", 0, 0);
			UP(RECON_ENTRY_PAYMENT, amt, t, "", 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 8: /* no id, two entries */
			UP(RECON_ENTRY_PAYMENT, amt, t, "", 0, 0);
			UP(RECON_ENTRY_REFUND, 1, t + 1, "", 0, 0);
			UP(RECON_ENTRY_PAYMENT, amt, t, "", 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 9: /* times far from the window: wide records, lookups */
			UP(RECON_ENTRY_PAYMENT, amt, DAY_START - 40 * RECON_MS_PER_DAY, id, 0, 0);
			LO(RECON_ST_PENDING, amt, DAY_START - 30 * RECON_MS_PER_DAY);
			break;
		case 10: /* a currency code the compact record cannot hold */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			memcpy(r->cur, "usd", 4);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 11: /* lines beyond 2^32 */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			r->line = ((uint64_t)1 << 33) + i;
			LO(RECON_ST_SUCCESS, amt, t);
			r->line = ((uint64_t)1 << 32) + i;
			break;
		case 12: /* a rejected upstream row */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			r->rejected = true;
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 13: /* plain rows */
			UP(RECON_ENTRY_PAYMENT, amt, t, "", RECON_ROW_HAS_STATUS, RECON_ST_CLOSED);
			LO(RECON_ST_CLOSED, amt, t);
			break;
		case 14: /* a lone revocation, looked up */
			UP(RECON_ENTRY_REVOKE, amt, t, id, RECON_ROW_LOOKED_UP, 0);
			LO(RECON_ST_CLOSED, amt, t);
			r->flags |= RECON_ROW_LOOKED_UP;
			break;
		case 15: /* amount mismatch */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt + 1, t);
			break;
		case 16: /* a rejected local row */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			r->rejected = true;
			break;
		case 17: /* amounts beyond 32 bits (a wide staged row), one of them negative */
			UP(RECON_ENTRY_PAYMENT, amt + ((int64_t)1 << 33), t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt + ((int64_t)1 << 33), t);
			if (i % 2)
				r->amount = -r->amount;
			break;
		case 18: /* a long key, the same entry listed twice */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		case 19: /* a second currency: staged narrow only in the side's usual one */
			UP(RECON_ENTRY_PAYMENT, amt, t, id, 0, 0);
			memcpy(r->cur, "USD", 4);
			LO(RECON_ST_SUCCESS, amt, t);
			memcpy(r->cur, "USD", 4);
			break;
		case 20: /* every flag bit a staged row packs, the highest status */
			UP(RECON_ENTRY_PAYMENT, amt, t, "",
			   RECON_ROW_HAS_STATUS | RECON_ROW_TIMED | RECON_ROW_LOOKED_UP,
			   RECON_ST_PENDING);
			LO(RECON_ST_PENDING, amt, t - 20 * 60000);
			r->flags |= RECON_ROW_TIMED | RECON_ROW_LOOKED_UP;
			break;
		default: /* matched, plain */
			UP(RECON_ENTRY_PAYMENT, amt, t, "", RECON_ROW_HAS_STATUS, RECON_ST_SUCCESS);
			LO(RECON_ST_SUCCESS, amt, t);
			break;
		}
#undef UP
#undef LO
	}
	/* read order: each side shuffled, then numbered (lines) unless set above */
	for (int side = 0; side < 2; side++) {
		struct trow *v = side ? *lo : *up;
		size_t n = side ? *nlo : *nup;
		for (size_t i = n; i > 1; i--) {
			size_t j = tmix(i * 2 + (size_t)side) % i;
			struct trow x = v[i - 1];
			v[i - 1] = v[j];
			v[j] = x;
		}
		for (size_t i = 0; i < n; i++)
			if (!v[i].line)
				v[i].line = i + 2;
	}
}

static void assert_same_compare(struct recon_compare *a, struct recon_compare *b,
				const struct trow *rows, size_t nrows)
{
	size_t na, nb;
	const struct recon_diff *da = recon_compare_diffs(a, &na),
				*db = recon_compare_diffs(b, &nb);
	const char **ka, **kb;
	const uint32_t *la, *lb;

	assert_memory_equal(recon_compare_counts(a), recon_compare_counts(b),
			    sizeof(struct recon_compare_counts));
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(da[i].key_len, db[i].key_len);
		assert_memory_equal(da[i].key, db[i].key, da[i].key_len);
		assert_int_equal(da[i].klass, db[i].klass);
		assert_memory_equal(&da[i].up, &db[i].up, sizeof(da[i].up));
		assert_memory_equal(&da[i].local, &db[i].local, sizeof(da[i].local));
	}
	for (size_t i = 0; i < nrows; i++) {
		size_t len = strlen(rows[i].key);
		assert_int_equal(recon_compare_key_class(a, rows[i].key, len),
				 recon_compare_key_class(b, rows[i].key, len));
	}
	for (int side = 0; side < 2; side++) {
		na = recon_compare_pending_lookups(a, side, &ka, &la);
		nb = recon_compare_pending_lookups(b, side, &kb, &lb);
		assert_int_equal(na, nb);
		for (size_t i = 0; i < na; i++) {
			assert_int_equal(la[i], lb[i]);
			assert_memory_equal(ka[i], kb[i], la[i]);
		}
	}
}

/* Feeds both sides on two threads, as recon_run does. */
static void feed_par(struct recon_compare *par, const struct trow *up, size_t nup,
		     const struct trow *lo, size_t nlo)
{
	struct tfeed tf[2];
	pthread_t th[2];

	tf[0] = (struct tfeed){recon_compare_feeder_new(par, RECON_SIDE_UPSTREAM), up, nup};
	tf[1] = (struct tfeed){recon_compare_feeder_new(par, RECON_SIDE_LOCAL), lo, nlo};
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, tfeed_run, &tf[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
}

static void feed_seq(struct recon_compare *seq, const struct trow *up, size_t nup,
		     const struct trow *lo, size_t nlo)
{
	struct recon_row row;

	for (int side = 0; side < 2; side++) {
		const struct trow *v = side ? lo : up;
		size_t n = side ? nlo : nup;
		for (size_t i = 0; i < n; i++) {
			trow_to_row(&v[i], &row);
			if (v[i].rejected)
				recon_compare_add_rejected(seq, side, &row);
			else
				recon_compare_add(seq, side, &row);
		}
	}
}

/* Takes every block the compare lends to arenas and writes over it; returns how many. */
static size_t poison_lent(struct recon_compare *cmp)
{
	const struct recon_donor *d = recon_compare_donor(cmp);
	size_t taken = 0;

	for (void *b; (b = d->take(d->arg)) != NULL; taken++)
		memset(b, 0xa5, d->size);
	return taken;
}

static void test_compare_feeders_match_sequential(void **state)
{
	struct fixture *fx = *state;
	struct trow *up, *lo;
	size_t nup, nlo;
	struct recon_compare *seq, *par;

	build_rows(&up, &nup, &lo, &nlo);
	for (int statement = 0; statement < 3; statement++) {
		seq = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, statement > 0);
		par = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, statement > 0);
		/* sizing changes nothing either: sized for these rows, then for 10M
		   (a thousand partitions, most of them near empty) */
		if (statement)
			recon_compare_reserve(par, statement == 1 ? nup : 10000000, nup);
		feed_seq(seq, up, nup, lo, nlo);
		feed_par(par, up, nup, lo, nlo);
		/*
		 * The blocks the builds left unused go to the arenas filled after the
		 * read: every one of them written over changes nothing (none holds a
		 * record, a table or a key's state still in use)
		 */
		assert_true(poison_lent(par) > 0);
		/* lookups work on both alike */
		assert_same_compare(seq, par, up, 0);
		recon_compare_classify(seq);
		recon_compare_classify(par);
		/* so do the classification's lists once merged (these rows make few
		   differences: less than a block, kept) */
		(void)poison_lent(par);
		assert_true(recon_compare_counts(seq)->classes[RECON_CLASS_DUPLICATE] > 0);
		assert_true(recon_compare_counts(seq)->keys_rejected > 0);
		assert_same_compare(seq, par, up, nup);
		assert_same_compare(seq, par, lo, nlo);
		recon_compare_free(seq);
		recon_compare_free(par);
	}
	free(up);
	free(lo);
}

/* A key's contribution as collected for the comparison below (its key copied). */
struct tcontrib {
	char key[320];
	struct recon_contrib c;
};

struct tcontribs {
	struct tcontrib *v;
	size_t n, alloc;
};

static void tcontrib_one(void *arg, const struct recon_contrib *c)
{
	struct tcontribs *l = arg;

	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 256;
		l->v = realloc(l->v, l->alloc * sizeof(*l->v));
		assert_non_null(l->v);
	}
	memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
	assert_true(c->key_len < sizeof(l->v[l->n].key));
	memcpy(l->v[l->n].key, c->key, c->key_len);
	l->v[l->n].c = *c;
	l->v[l->n].c.key = NULL;
	l->n++;
}

static int tcontrib_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tcontrib *)a)->key, ((const struct tcontrib *)b)->key);
}

static void assert_same_contributions(struct recon_compare *a, struct recon_compare *b)
{
	struct tcontribs ca = {0}, cb = {0};

	recon_compare_contributions(a, tcontrib_one, &ca);
	recon_compare_contributions(b, tcontrib_one, &cb);
	assert_int_equal(ca.n, cb.n);
	assert_true(ca.n > 0);
	qsort(ca.v, ca.n, sizeof(*ca.v), tcontrib_cmp);
	qsort(cb.v, cb.n, sizeof(*cb.v), tcontrib_cmp);
	for (size_t i = 0; i < ca.n; i++)
		assert_memory_equal(&ca.v[i], &cb.v[i], sizeof(ca.v[i]));
	free(ca.v);
	free(cb.v);
}

/*
 * The feeders' builds mark most matched keys matched at once (prematched),
 * and the classification, the lookups and the contributions skip them: a key
 * changed after the read (carried history, an open item, a lookup's row, a
 * rejected row, a key only a lookup brings) is evaluated anew, as when the
 * rows were added one by one. Plain matched keys (and some with entry ids)
 * each get one of those changes.
 */
static void test_compare_feeders_changed_after_build(void **state)
{
	struct fixture *fx = *state;
	struct trow *up, *lo;
	size_t nup, nlo, changed = 0;
	struct recon_compare *cmp[2];

	build_rows(&up, &nup, &lo, &nlo);
	for (int i = 0; i < 2; i++) {
		cmp[i] = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
		recon_compare_reserve(cmp[i], nup, nup);
	}
	feed_seq(cmp[0], up, nup, lo, nlo);
	feed_par(cmp[1], up, nup, lo, nlo);
	for (size_t j = 0; j < nlo; j++) {
		const struct trow *t = &lo[j];
		const size_t len = strlen(t->key);
		struct recon_carry c;
		struct recon_row row;
		/* a key the build prematched (its class is set before any classification) */
		if (recon_compare_key_class(cmp[1], t->key, len) != RECON_CLASS_MATCHED ||
		    tmix(j) % 5)
			continue;
		memset(&c, 0, sizeof(c));
		c.paid = t->amount;
		c.payments = 1;
		c.entries = 1;
		memcpy(c.currency, "CNY", 4);
		c.first = c.last = DAY_START - HOUR;
		for (int i = 0; i < 2; i++) {
			switch (changed % 5) {
			case 0: /* paid yesterday too: a carried payment */
				recon_compare_carry(cmp[i], t->key, len, &c);
				break;
			case 1: /* an open item of an earlier run */
				recon_compare_item(cmp[i], t->key, len, RECON_CLASS_MISSING,
						   DAY_START - HOUR);
				break;
			case 2: /* a lookup finds a second local row */
				trow_to_row(t, &row);
				row.status = RECON_ST_PENDING;
				row.flags |= RECON_ROW_LOOKED_UP;
				recon_compare_add(cmp[i], RECON_SIDE_LOCAL, &row);
				break;
			case 3: /* a statement row of the key that cannot be read */
				trow_to_row(t, &row);
				recon_compare_add_rejected(cmp[i], RECON_SIDE_UPSTREAM, &row);
				break;
			default: { /* a lookup brings a key the window does not hold */
				char key[340];
				snprintf(key, sizeof(key), "looked-up-%s", t->key);
				trow_to_row(t, &row);
				row.key = key;
				row.key_len = (uint32_t)strlen(key);
				row.flags |= RECON_ROW_LOOKED_UP;
				recon_compare_add(cmp[i], RECON_SIDE_UPSTREAM, &row);
				break;
			}
			}
		}
		changed++;
	}
	assert_true(changed > 500);
	for (int i = 0; i < 2; i++)
		recon_compare_classify(cmp[i]);
	assert_same_compare(cmp[0], cmp[1], up, nup);
	assert_same_compare(cmp[0], cmp[1], lo, nlo);
	assert_same_contributions(cmp[0], cmp[1]);
	/* classified again: the same (nothing counted twice) */
	recon_compare_classify(cmp[1]);
	assert_same_compare(cmp[0], cmp[1], lo, nlo);
	for (int i = 0; i < 2; i++)
		recon_compare_free(cmp[i]);
	free(up);
	free(lo);
}

/*
 * Speculating that no entry is listed twice: with distinct ids the result is
 * the exact compare's; with an entry listed twice (same key or another key)
 * the speculation reports it failed, fed on threads or not.
 */
static void test_compare_speculated_ids(void **state)
{
	struct fixture *fx = *state;
	struct trow *up, *lo;
	size_t nup, nlo;
	struct recon_compare *exact, *spec, *spec_seq;

	build_rows(&up, &nup, &lo, &nlo);
	/* as built: entries listed twice under one key (case 5) and across keys (case 6) */
	spec = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	recon_compare_speculate_ids(spec);
	feed_par(spec, up, nup, lo, nlo);
	assert_false(recon_compare_ids_distinct(spec));
	recon_compare_free(spec);
	spec_seq = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	recon_compare_speculate_ids(spec_seq);
	feed_seq(spec_seq, up, nup, lo, nlo);
	assert_false(recon_compare_ids_distinct(spec_seq));
	recon_compare_free(spec_seq);

	/* every id made distinct: the speculation holds and changes nothing */
	for (size_t i = 0; i < nup; i++) {
		if (up[i].id[0]) {
			char id[48];
			snprintf(id, sizeof(id), "%s-%zu", up[i].id, i);
			assert_true(strlen(id) < sizeof(up[i].id));
			memcpy(up[i].id, id, sizeof(up[i].id));
		}
	}
	exact = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	spec = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	spec_seq = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	recon_compare_speculate_ids(spec);
	recon_compare_speculate_ids(spec_seq);
	recon_compare_reserve(spec, nup, nup);
	feed_seq(exact, up, nup, lo, nlo);
	feed_par(spec, up, nup, lo, nlo);
	feed_seq(spec_seq, up, nup, lo, nlo);
	assert_true(recon_compare_ids_distinct(exact));
	assert_true(recon_compare_ids_distinct(spec));
	assert_true(recon_compare_ids_distinct(spec_seq));
	recon_compare_classify(exact);
	recon_compare_classify(spec);
	recon_compare_classify(spec_seq);
	/* the same entry without an id is still a duplicate (case 7) */
	assert_true(recon_compare_counts(exact)->classes[RECON_CLASS_DUPLICATE] > 0);
	assert_same_compare(exact, spec, up, nup);
	assert_same_compare(exact, spec, lo, nlo);
	assert_same_compare(exact, spec_seq, up, nup);
	recon_compare_free(exact);
	recon_compare_free(spec);
	recon_compare_free(spec_seq);
	free(up);
	free(lo);
}

/* Whether a speculating compare fed these rows (on threads or not) finds its ids distinct. */
static bool speculation_holds(const struct fixture *fx, const struct trow *up, size_t nup,
			      const struct trow *lo, size_t nlo, bool threaded)
{
	struct recon_compare *spec = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	bool distinct;

	recon_compare_speculate_ids(spec);
	if (threaded)
		feed_par(spec, up, nup, lo, nlo);
	else
		feed_seq(spec, up, nup, lo, nlo);
	distinct = recon_compare_ids_distinct(spec);
	recon_compare_free(spec);
	return distinct;
}

/*
 * An entry listed twice with a row without an id between the two copies: the
 * row in between widens the key's record, and the first copy's fingerprint
 * must survive it (speculating, fed on threads or not, the repeat is found).
 */
static void test_compare_speculated_ids_between(void **state)
{
	struct fixture *fx = *state;
	struct trow up[3 * 50], lo[50];
	size_t nup = 0;

	memset(up, 0, sizeof(up));
	memset(lo, 0, sizeof(lo));
	for (size_t k = 0; k < 50; k++) {
		for (int j = 0; j < 3; j++) {
			struct trow *r = &up[nup++];
			snprintf(r->key, sizeof(r->key), "K%zu", k);
			/* payment X, a refund without an id, payment X again (only key 7) */
			snprintf(r->id, sizeof(r->id), "%s",
				 j == 1 ? "" : (j == 2 && k != 7 ? "Y" : "X"));
			memcpy(r->cur, "CNY", 4);
			r->amount = j == 1 ? 100 : 1000;
			r->time = DAY_START + (int64_t)(k * 3 + (size_t)j) * 1000;
			r->entry = (uint8_t)(j == 1 ? RECON_ENTRY_REFUND : RECON_ENTRY_PAYMENT);
			r->line = nup + 1;
		}
		snprintf(lo[k].key, sizeof(lo[k].key), "K%zu", k);
		memcpy(lo[k].cur, "CNY", 4);
		lo[k].amount = 1000;
		lo[k].time = DAY_START;
		lo[k].status = RECON_ST_SUCCESS;
		lo[k].flags = RECON_ROW_HAS_STATUS;
		lo[k].line = k + 2;
	}
	for (int threaded = 0; threaded < 2; threaded++)
		assert_false(speculation_holds(fx, up, nup, lo, 50, threaded));
	/* without the repeat the speculation holds */
	snprintf(up[7 * 3 + 2].id, sizeof(up[7 * 3 + 2].id), "Y");
	for (int threaded = 0; threaded < 2; threaded++)
		assert_true(speculation_holds(fx, up, nup, lo, 50, threaded));
}

/* Rows with an empty key (the API takes them; normalize never makes them), fed on threads. */
/* Whether the lookups of `side` are exactly the n keys of want (any order). */
static void assert_lookups(struct fixture *fx, int side, const char *const *want, size_t n)
{
	const char **keys;
	const uint32_t *lens;
	size_t got = recon_compare_pending_lookups(fx->cmp, side, &keys, &lens);

	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < n && !(lens[j] == strlen(want[i]) && !memcmp(keys[j], want[i], lens[j])))
			j++;
		assert_true(j < n);
	}
}

/*
 * Keys are kept inside the compare as their common prefix's length with the
 * first key seen, then the rest (compare_internal.h, struct kref). Keys that
 * differ only in how much of that reference they share, keys that are a
 * prefix of it or extend it, and keys sharing more of it than a byte can
 * count, are all told apart, and every key leaves the compare whole: in the
 * differences (in byte order), the lookups, the contributions and the
 * classes asked by key.
 */
static void test_compare_key_forms(void **state)
{
	struct fixture *fx = *state;
	char ref[301], past[302], before[301], none[301];
	size_t n;

	memset(ref, 'R', 300);
	ref[300] = '\0';
	memset(none, 'Z', 300); /* shares nothing: a form longer than a record's length byte */
	none[300] = '\0';
	snprintf(past, sizeof(past), "%sT", ref);	  /* shares all 300 bytes */
	snprintf(before, sizeof(before), "%.299sS", ref); /* shares 299 */
	const char *matched[] = {ref, "R"};
	const char *missing[] = {past, "RB", "A"};
	const char *extra[] = {before, "B", "RR", none};
	/* in byte order: what the differences list */
	const char *order[] = {"A", "B", "RB", "RR", past, before, none};

	start(fx, true);
	entry(fx, ref, RECON_ENTRY_PAYMENT, 100, DAY_START + HOUR, "T0"); /* the reference */
	entry(fx, "R", RECON_ENTRY_PAYMENT, 100, DAY_START + HOUR, "TR");
	for (size_t i = 0; i < 3; i++) {
		char id[8];
		snprintf(id, sizeof(id), "T%zu", i + 1);
		entry(fx, missing[i], RECON_ENTRY_PAYMENT, 100, DAY_START + HOUR, id);
	}
	for (size_t i = 0; i < 4; i++)
		local(fx, extra[i], RECON_ST_SUCCESS, 100, DAY_START + 2 * HOUR);
	for (size_t i = 0; i < 2; i++)
		local(fx, matched[i], RECON_ST_SUCCESS, 100, DAY_START + 2 * HOUR);
	assert_lookups(fx, RECON_SIDE_LOCAL, missing, 3);
	recon_compare_classify(fx->cmp);
	const struct recon_diff *d = recon_compare_diffs(fx->cmp, &n);
	assert_int_equal(n, 7);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(d[i].key_len, strlen(order[i]));
		assert_memory_equal(d[i].key, order[i], d[i].key_len);
		assert_int_equal(d[i].key[d[i].key_len], '\0');
	}
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(klass(fx, missing[i]), RECON_CLASS_MISSING);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(klass(fx, extra[i]), RECON_CLASS_EXTRA);
	assert_int_equal(klass(fx, ref), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "R"), RECON_CLASS_MATCHED);
	assert_int_equal(klass(fx, "RRR"), -1); /* never seen */
	assert_int_equal(recon_compare_counts(fx->cmp)->matched, 2);

	struct tcontribs c = {0};
	recon_compare_contributions(fx->cmp, tcontrib_one, &c);
	assert_int_equal(c.n, 3); /* the upstream entries that are differences */
	for (size_t i = 0; i < 3; i++) {
		size_t j = 0;
		while (j < c.n && strcmp(c.v[j].key, missing[i]))
			j++;
		assert_true(j < c.n);
		assert_int_equal(c.v[j].c.key_len, strlen(missing[i]));
	}
	free(c.v);
}

static void test_compare_feeders_empty_keys(void **state)
{
	struct fixture *fx = *state;
	const size_t n = 3000;
	struct trow *up = recon_xcalloc(n, sizeof(*up)), lo[1];
	struct recon_compare *seq, *par;

	for (size_t i = 0; i < n; i++) {
		memcpy(up[i].cur, "CNY", 4);
		up[i].amount = 100;
		up[i].time = DAY_START + (int64_t)i;
		up[i].line = i + 2;
	}
	memset(lo, 0, sizeof(lo));
	memcpy(lo[0].cur, "CNY", 4);
	lo[0].amount = 100 * (int64_t)n;
	lo[0].time = DAY_START;
	lo[0].status = RECON_ST_SUCCESS;
	lo[0].flags = RECON_ROW_HAS_STATUS;
	lo[0].line = 2;
	seq = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	par = recon_compare_new(fx->job, &fx->win, DAY_END + 9 * HOUR, true);
	feed_seq(seq, up, n, lo, 1);
	feed_par(par, up, n, lo, 1);
	recon_compare_classify(seq);
	recon_compare_classify(par);
	assert_same_compare(seq, par, up, 1);
	recon_compare_free(seq);
	recon_compare_free(par);
	free(up);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_compare_class_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_speculated_ids, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_speculated_ids_between, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_feeders_empty_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_key_forms, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_missing_success, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_missing_refunded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_missing_not_for_unpaid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_extra, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_stuck, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_stuck_younger_is_in_flight, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_amount_mismatch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_amount_mismatch_currency, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_amount_mismatch_mixed_upstream_currency,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_amount_tolerance, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_status_mismatch_closed_vs_paid, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_status_mismatch_success_vs_refunded, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_duplicate_same_entry_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_duplicate_without_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_duplicate_local, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_matched, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_amount_wins_over_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_local_pending_without_upstream, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_partial_refund_is_success, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_full_refund_is_refunded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_over_refund_is_amount_mismatch, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_revoke_is_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_revoke_only_matches_local_closed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_refund_only_matches_local_refunded, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_refund_only_vs_local_success, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_refund_only_larger_than_local, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_two_partial_refunds_not_duplicates, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_carry_and_items, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_carry_plain_snapshots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_window_local_edges, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_window_upstream_rule_wins, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_statement_owns_every_upstream_key, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_pending_lookups, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_pending_lookups_statement, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_compare_deterministic_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_order_many, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_classify_idempotent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_many_keys, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_feeders_match_sequential, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_compare_feeders_changed_after_build, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
