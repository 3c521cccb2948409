/*
 * Tests for the provider format profiles (rules/formats/NAME.json) through the
 * job loader and the csv reader: the WeChat Pay bill in both layouts (header
 * alternatives, the ",`" guarded delimiter), the Alipay bill as CSV and as
 * zip (src/recon_zip.c), Stripe with a job-named metadata key, the input
 * SHA-256, and the profile keys' validation. Fixtures: tests/cases/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_sha256.h"
#include "recon_source.h"
#include "recon_time.h"
#include "recon_zip.h"

static char dir[64];
static char src_dir[512];

static int setup(void **state)
{
	const char *s = getenv("RECON_SOURCE_DIR");
	char p[600];

	(void)state;
	snprintf(src_dir, sizeof(src_dir), "%s", s ? s : ".");
	snprintf(dir, sizeof(dir), "/tmp/recon_fmt_XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(p, sizeof(p), "%s/rules/formats", src_dir);
	setenv("RECON_FORMATS_DIR", p, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes a job whose upstream is `upstream` (a JSON object's members); loads it. */
static int load(const char *upstream, struct recon_job **job, struct recon_err *err)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/job.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"job\": \"fmt\", \"timezone\": \"Asia/Shanghai\", \"currency\": \"CNY\",\n"
		" \"upstream\": {\"kind\": \"csv\", %s},\n"
		" \"local\": {\"kind\": \"sqlite\", \"path\": \"flow.db\", \"table\": \"t\",\n"
		"   \"columns\": {\"key\": \"k\", \"amount_minor\": \"a\", \"status\": \"s\", "
		"\"time\": \"t\"}},\n"
		" \"status_map\": {\"local\": {\"PAID\": \"success\"}}}\n",
		upstream);
	assert_int_equal(fclose(f), 0);
	recon_err_init(err);
	return recon_job_load(job, path, err);
}

static struct recon_job *load_ok(const char *fmt, const char *fixture, const char *extra)
{
	char up[1400];
	struct recon_job *job = NULL;
	struct recon_err err;
	char buf[600];

	snprintf(up, sizeof(up), "\"format\": \"%s\", \"path\": \"%s/tests/cases/%s\"%s", fmt,
		 src_dir, fixture, extra ? extra : "");
	if (load(up, &job, &err) < 0)
		fail_msg("load: %s", recon_err_str(&err, buf, sizeof(buf)));
	return job;
}

static struct recon_source *open_up(const struct recon_job *job)
{
	struct recon_window w;
	struct recon_source *src = NULL;
	struct recon_err err;
	char buf[600];

	memset(&w, 0, sizeof(w));
	w.day = recon_days_from_civil(2024, 1, 16);
	recon_err_init(&err);
	if (recon_source_open(&src, &job->upstream, &w, &err) < 0)
		fail_msg("open: %s", recon_err_str(&err, buf, sizeof(buf)));
	return src;
}

static bool val_is(const struct recon_raw_row *row, enum recon_col c, const char *s)
{
	return row->val[c] && row->len[c] == strlen(s) && !memcmp(row->val[c], s, row->len[c]);
}

/* Reads every row; returns the count; *found set when a row's key is `key` and its amount `amt`. */
static int read_all(struct recon_source *src, const char *key, const char *amt, bool *found,
		    struct recon_err *err)
{
	const struct recon_raw_row *row;
	int n = 0, rc;

	recon_err_init(err);
	*found = false;
	while ((rc = recon_source_next(src, &row, err)) == RECON_ROW) {
		n++;
		assert_null(row->reject);
		if (val_is(row, RECON_COL_KEY0, key) && val_is(row, RECON_COL_AMOUNT, amt))
			*found = true;
	}
	return rc < 0 ? rc : n;
}

static void test_formats_wechat_27(void **state)
{
	struct recon_job *job =
	    load_ok("wechatpay-trade-bill", "wechatpay_bill/statements/{date}.csv", NULL);
	struct recon_source *src = open_up(job);
	struct recon_err err;
	char hex[65], want[65], path[700];
	bool found;

	(void)state;
	assert_int_equal(recon_source_csv_sha256(src, hex), -1); /* not read yet */
	/* COUP-1: a product name with raw commas; 订单金额 10.00 (settled 8.00) */
	assert_int_equal(read_all(src, "COUP-1", "10.00", &found, &err), 20);
	assert_true(found);
	assert_int_equal(recon_source_csv_sha256(src, hex), 0);
	snprintf(path, sizeof(path), "%s/tests/cases/wechatpay_bill/statements/2024-01-16.csv",
		 src_dir);
	assert_int_equal(recon_sha256_file(path, want, &err), 0);
	assert_string_equal(hex, want);
	recon_source_close(src);
	recon_job_free(job);
}

static void test_formats_wechat_24(void **state)
{
	struct recon_job *job =
	    load_ok("wechatpay-trade-bill", "wechatpay_bill_v24/statements/{date}.csv", NULL);
	struct recon_source *src = open_up(job);
	struct recon_err err;
	bool found;

	(void)state;
	/* 总金额 stands in for 订单金额; the 5-total summary checks out */
	assert_int_equal(read_all(src, "OLD-2", "2.00", &found, &err), 4);
	assert_true(found);
	recon_source_close(src);
	recon_job_free(job);
}

static void test_formats_alipay_csv_and_zip(void **state)
{
	struct recon_job *job =
	    load_ok("alipay-trade-bill", "alipay_bill/statements/{date}.csv", NULL);
	struct recon_source *src = open_up(job);
	struct recon_err err;
	char hex[65], want[65];
	bool found;

	(void)state;
	assert_int_equal(read_all(src, "000777", "100000000.00", &found, &err), 10);
	assert_true(found);
	recon_source_close(src);
	recon_job_free(job);

	job = load_ok("alipay-trade-bill", "alipay_bill_zip/statements/2088_{yyyymmdd}.zip", NULL);
	src = open_up(job);
	assert_int_equal(read_all(src, "A-REF", "-20.00", &found, &err), 10);
	assert_true(found);
	/* the hash is of the archive as downloaded */
	assert_int_equal(recon_source_csv_sha256(src, hex), 0);
	recon_source_close(src);
	recon_job_free(job);
	job = load_ok("alipay-trade-bill", "alipay_bill_zip/statements/2088_20240116.zip", NULL);
	assert_int_equal(recon_sha256_file(job->upstream.path, want, &err), 0);
	assert_string_equal(hex, want);
	recon_job_free(job);
}

static void test_formats_zip_members(void **state)
{
	char path[700];
	struct recon_zip *z = NULL;
	struct recon_err err;
	char buf[64];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/cases/alipay_bill_zip/statements/2088_20240116.zip",
		 src_dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	recon_err_init(&err);
	/* GBK names decode; the summary file is the one excluded */
	assert_int_equal(recon_zip_open(&z, fd, path, "GBK", "业务明细", "汇总", NULL, &err), 0);
	assert_string_equal(recon_zip_member(z), "20880211096256330156_20240116_业务明细.csv");
	assert_true(recon_zip_read(z, buf, sizeof(buf), &err) > 0);
	recon_zip_close(z);
	/* two members match without the exclusion */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, path, "GBK", "业务明细", NULL, NULL, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, "more than one member"));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, path, "GBK", "账务明细", NULL, NULL, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, "no member"));
	close(fd);
	/* not a zip at all */
	snprintf(path, sizeof(path), "%s/tests/cases/generic_csv/job.json", src_dir);
	fd = open(path, O_RDONLY);
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, path, NULL, NULL, NULL, NULL, &err), RECON_EINPUT);
	close(fd);
	assert_true(recon_zip_magic("PK\x03\x04", 4));
	assert_false(recon_zip_magic("PK", 2));
}

static void test_formats_stripe_key_override(void **state)
{
	struct recon_job *job =
	    load_ok("stripe-itemized", "stripe_itemized/statements/{date}.csv",
		    ", \"columns\": {\"key\": \"payment_metadata[merchant_order]\"}");
	struct recon_source *src = open_up(job);
	struct recon_err err;
	bool found;

	(void)state;
	assert_string_equal(job->upstream.tz_name, "UTC");
	assert_int_equal(read_all(src, "S-MAX", "999999.99", &found, &err), 11);
	assert_true(found);
	recon_source_close(src);
	recon_job_free(job);
	/* the profile's default key column is not in this report */
	job = load_ok("stripe-itemized", "stripe_itemized/statements/{date}.csv", NULL);
	{
		struct recon_window w;
		struct recon_source *s2 = NULL;
		memset(&w, 0, sizeof(w));
		w.day = recon_days_from_civil(2024, 1, 16);
		recon_err_init(&err);
		assert_int_equal(recon_source_open(&s2, &job->upstream, &w, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "payment_metadata[order_id]"));
	}
	recon_job_free(job);
}

static void test_formats_profile_keys_validated(void **state)
{
	struct recon_job *job = NULL;
	struct recon_err err;

	(void)state;
	assert_int_equal(
	    load("\"path\": \"x.csv\", \"columns\": {\"key\": \"k\", \"amount\": \"a\", "
		 "\"time\": \"t\", \"status\": \"s\"}, \"status_map\": {\"A\": "
		 "\"success\"}, \"totals\": {\"in\": \"trailer\", \"groups\": "
		 "[{\"count\": \"N\"}]}",
		 &job, &err),
	    RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "stop_prefixes"));
	assert_int_equal(
	    load("\"path\": \"x.csv\", \"columns\": {\"key\": \"k\", \"amount\": \"a\", "
		 "\"time\": \"t\", \"status\": \"s\"}, \"status_map\": {\"A\": "
		 "\"success\"}, \"delimiter_guard\": \"`\"",
		 &job, &err),
	    RECON_ECONFIG);
	assert_non_null(strstr(err.where, "delimiter_guard"));
	assert_int_equal(
	    load("\"path\": \"x.csv\", \"columns\": {\"key\": \"k\", \"amount\": \"a\", "
		 "\"time\": \"t\", \"status\": \"s\"}, \"status_map\": {\"A\": "
		 "\"success\"}, \"alt_columns\": {\"currency\": [\"c\"]}",
		 &job, &err),
	    RECON_ECONFIG);
	assert_non_null(strstr(err.where, "alt_columns.currency"));
	assert_int_equal(
	    load("\"path\": \"x.csv\", \"columns\": {\"key\": \"k\", \"amount\": \"a\", "
		 "\"time\": \"t\", \"status\": \"s\"}, \"status_map\": {\"A\": "
		 "\"success\"}, \"totals\": {\"in\": \"side\", \"groups\": []}",
		 &job, &err),
	    RECON_ECONFIG);
	assert_non_null(strstr(err.where, "totals.in"));
	/* a job may drop a profile's totals */
	job = load_ok("wechatpay-trade-bill", "wechatpay_bill/statements/{date}.csv",
		      ", \"totals\": null");
	assert_int_equal(job->upstream.csv.totals.in, RECON_TOTALS_NONE);
	recon_job_free(job);
	/* a job mapping a role drops the profile's alternatives for it */
	job = load_ok("wechatpay-trade-bill", "wechatpay_bill/statements/{date}.csv",
		      ", \"columns\": {\"amount\": \"应结订单金额\"}");
	assert_null(job->upstream.alt_cols[RECON_COL_AMOUNT]);
	recon_job_free(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_formats_wechat_27),
	    cmocka_unit_test(test_formats_wechat_24),
	    cmocka_unit_test(test_formats_alipay_csv_and_zip),
	    cmocka_unit_test(test_formats_zip_members),
	    cmocka_unit_test(test_formats_stripe_key_override),
	    cmocka_unit_test(test_formats_profile_keys_validated),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
