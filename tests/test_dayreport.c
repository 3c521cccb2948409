/*
 * Tests for src/recon_dayreport.c that need no runs: format names, the next
 * steps, an empty state store (a fresh one, as recon creates it), ranges that
 * are refused, and a write that fails. The facts of real reports are checked
 * end to end by tests/sh/test_report*.sh over stores built through real runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recon_dayreport.h"
#include "recon_err.h"
#include "recon_state.h"
#include "recon_time.h"
#include "support_jobs.h"

struct fixture {
	char dir[64];
	char path[96];
	struct recon_job *job;
	struct recon_state *st;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct recon_err err;

	recon_err_init(&err);
	snprintf(f->dir, sizeof(f->dir), "/tmp/recon-dayreport.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/recon.db", f->dir);
	f->job = support_job_new();
	assert_int_equal(recon_state_open(&f->st, f->path, true, &err), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char p[128];

	recon_state_close(f->st);
	recon_job_free(f->job);
	for (size_t i = 0; i < 3; i++) {
		static const char *const suffix[] = {"", "-wal", "-shm"};
		snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

static void test_dayreport_format_names(void **state)
{
	(void)state;
	assert_int_equal(recon_dayreport_format_from_name("html"), RECON_DAYREPORT_HTML);
	assert_int_equal(recon_dayreport_format_from_name("md"), RECON_DAYREPORT_MD);
	assert_int_equal(recon_dayreport_format_from_name("csv"), RECON_DAYREPORT_CSV);
	assert_int_equal(recon_dayreport_format_from_name("pdf"), -1);
	assert_string_equal(recon_dayreport_next_step("nonsense"), "");
	assert_non_null(strstr(recon_dayreport_next_step("amount_mismatch"), "provider"));
}

/* Renders r in fmt into a string; caller frees. */
static char *render(const struct recon_dayreport *r, enum recon_dayreport_format fmt, bool bom)
{
	struct recon_err err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	recon_err_init(&err);
	assert_non_null(f);
	assert_int_equal(recon_dayreport_write(f, r, fmt, bom, &err), 0);
	fclose(f);
	return text;
}

static void test_dayreport_empty_store(void **state)
{
	struct fixture *f = *state;
	struct recon_dayreport *r = NULL;
	struct recon_err err;
	int64_t now = 1709258400000LL; /* 2024-03-01T02:00:00Z: 10:00 in Shanghai */
	int64_t from = INT64_MIN, to = INT64_MIN, day;
	char *html, *md, *csv;
	int lines;

	recon_err_init(&err);
	assert_int_equal(recon_date_parse("2024-03-01", &day, &err), 0);
	assert_int_equal(recon_dayreport_load(&r, f->st, f->job, "t1", &from, &to, now, &err), 0);
	/* no run yet: the day is today in the job's zone, the range the 30 days up to it */
	assert_true(to == day);
	assert_true(from == day - 29);
	html = render(r, RECON_DAYREPORT_HTML, false);
	assert_non_null(strstr(html, "2024-03-01 is not reconciled: no t1 run of that day"));
	for (int i = 0; i < 4; i++) {
		static const char *const ids[] = {"chart-differences", "chart-money", "chart-open",
						  "chart-runs"};
		char want[64];
		snprintf(want, sizeof(want), "<figure class=\"chart\" id=\"%s\">", ids[i]);
		assert_non_null(strstr(html, want));
	}
	assert_non_null(strstr(html, "no open difference"));
	assert_null(strstr(html, "<script"));
	md = render(r, RECON_DAYREPORT_MD, false);
	assert_non_null(strstr(md, "**ACTION NEEDED**"));
	csv = render(r, RECON_DAYREPORT_CSV, true);
	assert_memory_equal(csv, "\xef\xbb\xbfreport_date,mode,key,", 23);
	lines = 0;
	for (const char *p = csv; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 1); /* the header alone */
	free(html);
	free(md);
	free(csv);
	recon_dayreport_free(r);
}

static void test_dayreport_ranges_refused(void **state)
{
	struct fixture *f = *state;
	struct recon_dayreport *r = NULL;
	struct recon_err err;
	int64_t from, to;

	recon_err_init(&err);
	assert_int_equal(recon_date_parse("2024-03-01", &from, &err), 0);
	to = from - 1;
	assert_int_equal(recon_dayreport_load(&r, f->st, f->job, "t1", &from, &to, 0, &err),
			 RECON_EUSAGE);
	assert_null(r);
	recon_err_init(&err);
	to = from + RECON_DAYREPORT_MAX_DAYS;
	assert_int_equal(recon_dayreport_load(&r, f->st, f->job, "t1", &from, &to, 0, &err),
			 RECON_EUSAGE);
	assert_non_null(strstr(err.msg, "a report covers 1 to 366 days"));
	recon_err_init(&err);
	to = from + RECON_DAYREPORT_MAX_DAYS - 1;
	assert_int_equal(recon_dayreport_load(&r, f->st, f->job, "t1", &from, &to, 0, &err), 0);
	recon_dayreport_free(r);
}

static void test_dayreport_write_fails(void **state)
{
	struct fixture *f = *state;
	struct recon_dayreport *r = NULL;
	struct recon_err err;
	int64_t from = INT64_MIN, to = INT64_MIN;
	FILE *full = fopen("/dev/full", "w");

	recon_err_init(&err);
	if (!full)
		skip();
	assert_int_equal(recon_dayreport_load(&r, f->st, f->job, "t1", &from, &to, 0, &err), 0);
	assert_int_equal(recon_dayreport_write(full, r, RECON_DAYREPORT_HTML, false, &err),
			 RECON_EIO);
	assert_string_equal(err.msg, "cannot write the report");
	fclose(full);
	recon_dayreport_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dayreport_format_names),
	    cmocka_unit_test_setup_teardown(test_dayreport_empty_store, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dayreport_ranges_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dayreport_write_fails, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
