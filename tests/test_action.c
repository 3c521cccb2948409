/*
 * Retries of transient writer failures: exponential backoff from 100 ms,
 * doubling to a 5 s cap, with jitter in [d/2, d], at most 5 attempts; other
 * errors are not retried. The replay guard: a missing order is replayed only
 * when its upstream side is one currency, without overflow, positive, and not
 * refunded beyond its payment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "recon_action.h"
#include "recon_normalize.h"

struct fake {
	int transient_left; /* RECON_ERETRY this many times first */
	int final_rc;	    /* then this */
	int calls;
	int64_t slept[16];
	int nsleep;
};

static int fake_fn(void *arg, struct recon_err *err)
{
	struct fake *f = arg;

	f->calls++;
	if (f->transient_left > 0) {
		f->transient_left--;
		return recon_err_set(err, RECON_ERETRY, NULL, "deadlock detected");
	}
	if (f->final_rc < 0)
		return recon_err_set(err, f->final_rc, NULL, "null value in column \"status\"");
	return f->final_rc;
}

static void fake_sleep(int64_t ms, void *arg)
{
	struct fake *f = arg;

	if (f->nsleep < 16)
		f->slept[f->nsleep++] = ms;
}

static void policy(struct recon_retry_policy *p, struct fake *f)
{
	recon_retry_policy_init(p, 42);
	p->sleep_ms = fake_sleep;
	p->sleep_arg = f;
}

static void test_action_retry_succeeds_after_transient(void **state)
{
	struct fake f = {.transient_left = 2, .final_rc = 0};
	struct recon_retry_policy p;
	struct recon_err err;
	int attempts = 0;

	(void)state;
	recon_err_init(&err);
	policy(&p, &f);
	assert_int_equal(recon_retry(&p, fake_fn, &f, &attempts, &err), 0);
	assert_int_equal(attempts, 3);
	assert_int_equal(f.calls, 3);
	assert_int_equal(f.nsleep, 2);
	assert_int_equal(err.code, 0);
	/* 100 ms then 200 ms, each with jitter in [d/2, d] */
	assert_in_range(f.slept[0], 50, 100);
	assert_in_range(f.slept[1], 100, 200);
}

static void test_action_retry_gives_up_after_five(void **state)
{
	struct fake f = {.transient_left = 100, .final_rc = 0};
	struct recon_retry_policy p;
	struct recon_err err;
	int attempts = 0;

	(void)state;
	recon_err_init(&err);
	policy(&p, &f);
	assert_int_equal(recon_retry(&p, fake_fn, &f, &attempts, &err), RECON_EUNAVAIL);
	assert_int_equal(attempts, 5);
	assert_int_equal(f.calls, 5);
	assert_int_equal(f.nsleep, 4);
	assert_non_null(strstr(err.msg, "gave up after 5 attempts: deadlock detected"));
	assert_in_range(f.slept[2], 200, 400);
	assert_in_range(f.slept[3], 400, 800);
}

static void test_action_retry_other_errors_not_retried(void **state)
{
	struct fake f = {.transient_left = 0, .final_rc = RECON_EINPUT};
	struct recon_retry_policy p;
	struct recon_err err;
	int attempts = 0;

	(void)state;
	recon_err_init(&err);
	policy(&p, &f);
	assert_int_equal(recon_retry(&p, fake_fn, &f, &attempts, &err), RECON_EINPUT);
	assert_int_equal(attempts, 1);
	assert_int_equal(f.nsleep, 0);
	assert_int_equal(err.code, RECON_EINPUT);
	assert_non_null(strstr(err.msg, "null value"));
}

static void test_action_retry_delay_capped(void **state)
{
	struct recon_retry_policy p;

	(void)state;
	recon_retry_policy_init(&p, 7);
	for (int n = 2; n < 40; n++) {
		int64_t d = recon_retry_delay(&p, n);
		int64_t full = 100;
		for (int i = 2; i < n && full < 5000; i++)
			full *= 2;
		if (full > 5000)
			full = 5000;
		assert_in_range(d, full / 2, full);
	}
}

static void test_action_names(void **state)
{
	(void)state;
	assert_string_equal(recon_action_name(RECON_ACT_REPLAY), "replay");
	assert_string_equal(recon_action_name(RECON_ACT_TRANSITION), "transition");
	assert_string_equal(recon_action_outcome_name(RECON_OUT_ALREADY), "already");
	assert_string_equal(recon_action_outcome_name(RECON_OUT_WOULD), "would");
}

/* A missing order: `amount` paid, `refunded` refunded, in CNY. */
static struct recon_diff missing(int64_t amount, int64_t refunded)
{
	struct recon_diff d;

	memset(&d, 0, sizeof(d));
	d.key = "ORD-1";
	d.key_len = 5;
	d.klass = RECON_CLASS_MISSING;
	d.up.present = true;
	d.up.status = refunded >= amount && amount > 0 ? RECON_ST_REFUNDED : RECON_ST_SUCCESS;
	memcpy(d.up.currency, "CNY", 4);
	d.up.amount = amount;
	d.up.refunded = refunded;
	d.up.rows = 1;
	return d;
}

static void test_action_replay_refusal(void **state)
{
	struct recon_diff d;

	(void)state;
	d = missing(5000, 0);
	assert_null(recon_action_replay_refusal(&d));
	d = missing(5000, 5000); /* fully refunded: replayed as refunded */
	assert_null(recon_action_replay_refusal(&d));
	d = missing(5000, 1000);
	assert_null(recon_action_replay_refusal(&d));
	/* 50.00 CNY + 10.00 USD, or a sum beyond int64 */
	d = missing(6000, 0);
	d.up.conflict = true;
	assert_non_null(strstr(recon_action_replay_refusal(&d), "mixed currencies"));
	d = missing(0, 0);
	assert_non_null(strstr(recon_action_replay_refusal(&d), "zero or less"));
	d = missing(-5000, 0);
	assert_non_null(strstr(recon_action_replay_refusal(&d), "zero or less"));
	d = missing(INT64_MIN, 0);
	assert_non_null(strstr(recon_action_replay_refusal(&d), "zero or less"));
	d = missing(3000, 4000);
	assert_non_null(strstr(recon_action_replay_refusal(&d), "more than was paid"));
	d = missing(3000, -100);
	assert_non_null(strstr(recon_action_replay_refusal(&d), "less than zero"));
	assert_string_equal(recon_action_outcome_name(RECON_OUT_REFUSED), "refused");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_action_retry_succeeds_after_transient),
	    cmocka_unit_test(test_action_retry_gives_up_after_five),
	    cmocka_unit_test(test_action_retry_other_errors_not_retried),
	    cmocka_unit_test(test_action_retry_delay_capped),
	    cmocka_unit_test(test_action_names),
	    cmocka_unit_test(test_action_replay_refusal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
