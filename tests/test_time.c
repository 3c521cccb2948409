/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recon_time.h"

#define ZONEINFO "/usr/share/zoneinfo"

/* 2024-01-16T00:00:00Z */
#define JAN16 1705363200000LL
#define H     RECON_MS_PER_HOUR
#define M     RECON_MS_PER_MIN
#define S     RECON_MS_PER_SEC

/* ---- helpers ---- */

static struct recon_tz *load(const char *name)
{
	struct recon_tz *tz = NULL;
	struct recon_err err;

	recon_err_init(&err);
	if (recon_tz_load(&tz, name, &err) < 0)
		fail_msg("cannot load '%s': %s", name, err.msg);
	return tz;
}

static bool have_zone(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", ZONEINFO, name);
	return access(path, R_OK) == 0;
}

static int64_t parse_ok(const char *s, const struct recon_tz *tz)
{
	struct recon_err err;
	int64_t ms = -1;

	recon_err_init(&err);
	if (recon_time_parse(s, strlen(s), tz, &ms, &err) < 0)
		fail_msg("'%s' rejected: %s", s, err.msg);
	assert_int_equal(err.code, 0);
	return ms;
}

/* Parses s in tz and checks the instant, as ISO text for readable failures. */
static void check_parse(const char *s, const struct recon_tz *tz, const char *want_utc)
{
	char got[32];

	recon_time_format_utc(parse_ok(s, tz), got, sizeof(got));
	assert_string_equal(got, want_utc);
}

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/recon_test_time_XXXXXX";
	char *dir = mkdtemp(tmpl);

	assert_non_null(dir);
	return strdup(dir);
}

/* Removes the flat directory made by make_tmpdir(). */
static void remove_tmpdir(char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[512];

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	free(dir);
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	if (len)
		assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static unsigned char *read_whole(const char *path, size_t *len)
{
	unsigned char *buf;
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return NULL;
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static size_t put32(unsigned char *p, int64_t v)
{
	uint32_t u = (uint32_t)v;

	p[0] = (unsigned char)(u >> 24);
	p[1] = (unsigned char)(u >> 16);
	p[2] = (unsigned char)(u >> 8);
	p[3] = (unsigned char)u;
	return 4;
}

static size_t put64(unsigned char *p, int64_t v)
{
	put32(p, (int64_t)((uint64_t)v >> 32));
	put32(p + 4, v);
	return 8;
}

struct tzif_spec {
	char version; /* 0, '2', '3' */
	size_t ntrans;
	const int64_t *trans;
	const unsigned char *types;
	size_t ntypes;
	const int32_t *offs;
	const unsigned char *isdst;
	const char *footer; /* v2+ only; NULL for none at all */
};

static size_t put_header(unsigned char *p, char version, const struct tzif_spec *z)
{
	memset(p, 0, 44);
	memcpy(p, "TZif", 4);
	p[4] = (unsigned char)version;
	put32(p + 20, 0); /* isutcnt */
	put32(p + 24, 0); /* isstdcnt */
	put32(p + 28, 0); /* leapcnt */
	put32(p + 32, (int64_t)z->ntrans);
	put32(p + 36, (int64_t)z->ntypes);
	put32(p + 40, 4); /* charcnt: "XYZ\0" */
	return 44;
}

static size_t put_block(unsigned char *p, const struct tzif_spec *z, size_t tsize)
{
	size_t i, n = 0;

	for (i = 0; i < z->ntrans; i++)
		n += tsize == 8 ? put64(p + n, z->trans[i]) : put32(p + n, z->trans[i]);
	for (i = 0; i < z->ntrans; i++)
		p[n++] = z->types[i];
	for (i = 0; i < z->ntypes; i++) {
		n += put32(p + n, z->offs[i]);
		p[n++] = z->isdst ? z->isdst[i] : 0;
		p[n++] = 0;
	}
	memcpy(p + n, "XYZ", 4);
	return n + 4;
}

/* Builds a TZif image into out (>= 4096 bytes); returns its length. */
static size_t build_tzif(unsigned char *out, const struct tzif_spec *z)
{
	size_t n = put_header(out, z->version, z);

	n += put_block(out + n, z, 4);
	if (z->version == 0)
		return n;
	n += put_header(out + n, z->version, z);
	n += put_block(out + n, z, 8);
	if (z->footer) {
		out[n++] = '\n';
		memcpy(out + n, z->footer, strlen(z->footer));
		n += strlen(z->footer);
		out[n++] = '\n';
	}
	return n;
}

/* A version 3 file with no transitions: the footer decides everything. */
static void write_footer_zone(const char *dir, const char *name, const char *footer)
{
	static const int32_t offs[] = {0};
	struct tzif_spec z = {'3', 0, NULL, NULL, 1, offs, NULL, footer};
	unsigned char buf[4096];

	write_file(dir, name, buf, build_tzif(buf, &z));
}

/* Loads name and expects RECON_ECONFIG with a message starting with want. */
static void expect_load_error(const char *name, const char *want)
{
	struct recon_tz *tz = (struct recon_tz *)&tz;
	struct recon_err err;

	recon_err_init(&err);
	assert_int_equal(recon_tz_load(&tz, name, &err), RECON_ECONFIG);
	assert_null(tz);
	assert_int_equal(err.code, RECON_ECONFIG);
	if (strncmp(err.msg, want, strlen(want)) != 0)
		fail_msg("'%s': got '%s', want '%s...'", name, err.msg, want);
}

/* ---- conversions ---- */

static void test_time_shanghai_day_boundary(void **state)
{
	struct recon_tz *tz = load("Asia/Shanghai");
	char buf[32];

	(void)state;
	assert_string_equal(recon_tz_name(tz), "Asia/Shanghai");
	check_parse("2024-01-16 00:00:00", tz, "2024-01-15T16:00:00.000Z");
	check_parse("2024-01-16 07:59:59.999", tz, "2024-01-15T23:59:59.999Z");
	check_parse("2024-01-16 08:00:00", tz, "2024-01-16T00:00:00.000Z");
	check_parse("2024-01-15T23:59:59.999", tz, "2024-01-15T15:59:59.999Z");
	check_parse("2024-01-16", tz, "2024-01-15T16:00:00.000Z");
	assert_int_equal(recon_tz_offset(tz, JAN16), 8 * 3600);
	assert_int_equal(recon_tz_to_local(tz, JAN16), JAN16 + 8 * H);
	assert_int_equal(recon_tz_to_utc(tz, JAN16 + 8 * H), JAN16);

	/* 23:59:59.999Z on the 15th is already the 16th in Shanghai. */
	assert_int_equal(recon_tz_day_of(tz, JAN16 - 1), 19738);
	assert_int_equal(recon_tz_day_of(tz, JAN16 - 8 * H - 1), 19737);
	recon_time_format_local(tz, JAN16 - 8 * H, buf, sizeof(buf));
	assert_string_equal(buf, "2024-01-16 00:00:00");
	recon_time_format_local(tz, JAN16 - 8 * H - 1, buf, sizeof(buf));
	assert_string_equal(buf, "2024-01-15 23:59:59");
	recon_tz_free(tz);
}

static void test_time_utc_day_boundary(void **state)
{
	struct recon_tz *tz = load("UTC");
	char buf[32];

	(void)state;
	check_parse("2024-01-16 00:00:00", tz, "2024-01-16T00:00:00.000Z");
	check_parse("2024-01-15 23:59:59.999", tz, "2024-01-15T23:59:59.999Z");
	assert_int_equal(parse_ok("2024-01-16", tz), JAN16);
	assert_int_equal(recon_tz_day_of(tz, JAN16), 19738);
	assert_int_equal(recon_tz_day_of(tz, JAN16 - 1), 19737);
	assert_int_equal(recon_tz_offset(tz, JAN16), 0);
	recon_time_format_local(tz, JAN16 - 1, buf, sizeof(buf));
	assert_string_equal(buf, "2024-01-15 23:59:59");
	/* A NULL zone is UTC too. */
	assert_int_equal(parse_ok("2024-01-16 00:00:00", NULL), JAN16);
	recon_tz_free(tz);
}

static void test_time_shanghai_dst_history(void **state)
{
	struct recon_tz *tz = load("Asia/Shanghai");

	(void)state;
	/* China observed DST 1986-1991. */
	check_parse("1988-07-01 12:00:00", tz, "1988-07-01T03:00:00.000Z");
	assert_int_equal(recon_tz_offset(tz, 583729200000LL), 9 * 3600);
	check_parse("1986-05-04 12:00:00", tz, "1986-05-04T03:00:00.000Z");
	check_parse("1991-09-15 12:00:00", tz, "1991-09-15T04:00:00.000Z");
	check_parse("1988-01-01 12:00:00", tz, "1988-01-01T04:00:00.000Z");
	check_parse("1992-07-01 12:00:00", tz, "1992-07-01T04:00:00.000Z");
	recon_tz_free(tz);
}

static void test_time_new_york_spring_gap(void **state)
{
	struct recon_tz *tz = load("America/New_York");

	(void)state;
	check_parse("2024-03-10 01:59:59", tz, "2024-03-10T06:59:59.000Z");
	/* 02:30 does not exist: read with EST, the offset before the gap = 03:30 EDT. */
	check_parse("2024-03-10 02:30:00", tz, "2024-03-10T07:30:00.000Z");
	check_parse("2024-03-10 02:00:00", tz, "2024-03-10T07:00:00.000Z");
	check_parse("2024-03-10 03:00:00", tz, "2024-03-10T07:00:00.000Z");
	check_parse("2024-03-10 03:30:00", tz, "2024-03-10T07:30:00.000Z");
	assert_int_equal(recon_tz_offset(tz, 1710053999999LL), -5 * 3600);
	assert_int_equal(recon_tz_offset(tz, 1710054000000LL), -4 * 3600);
	recon_tz_free(tz);
}

static void test_time_new_york_fall_overlap(void **state)
{
	struct recon_tz *tz = load("America/New_York");

	(void)state;
	check_parse("2024-11-03 00:59:59", tz, "2024-11-03T04:59:59.000Z");
	/* 01:30 happens twice: the earlier, EDT instant wins. */
	check_parse("2024-11-03 01:30:00", tz, "2024-11-03T05:30:00.000Z");
	check_parse("2024-11-03 01:59:59.999", tz, "2024-11-03T05:59:59.999Z");
	check_parse("2024-11-03 02:00:00", tz, "2024-11-03T07:00:00.000Z");
	/* The later 01:30 is still reachable with an explicit offset. */
	check_parse("2024-11-03 01:30:00-05:00", tz, "2024-11-03T06:30:00.000Z");
	recon_tz_free(tz);
}

static void test_time_footer_rule_year_2100(void **state)
{
	struct recon_tz *ny = load("America/New_York");
	struct recon_tz *london = load("Europe/London");

	(void)state;
	/* Past the last transition of fat files (2037): the footer rule. */
	check_parse("2100-07-01 12:00:00", ny, "2100-07-01T16:00:00.000Z");
	check_parse("2100-01-15 12:00:00", ny, "2100-01-15T17:00:00.000Z");
	check_parse("2100-03-14 02:30:00", ny, "2100-03-14T07:30:00.000Z");
	check_parse("2100-11-07 01:30:00", ny, "2100-11-07T05:30:00.000Z");
	check_parse("2100-07-01 12:00:00", london, "2100-07-01T11:00:00.000Z");
	check_parse("2100-01-15 12:00:00", london, "2100-01-15T12:00:00.000Z");
	assert_int_equal(recon_tz_offset(ny, 4118140800000LL), -4 * 3600);
	assert_int_equal(recon_tz_offset(london, 4103697600000LL), 0);
	recon_tz_free(ny);
	recon_tz_free(london);
}

static void test_time_lord_howe_half_hour_dst(void **state)
{
	struct recon_tz *tz;

	(void)state;
	if (!have_zone("Australia/Lord_Howe"))
		skip();
	tz = load("Australia/Lord_Howe");
	check_parse("2024-01-15 12:00:00", tz, "2024-01-15T01:00:00.000Z");
	check_parse("2024-07-15 12:00:00", tz, "2024-07-15T01:30:00.000Z");
	/* Overlap 01:30-02:00 on 2024-04-07: the +11 instant. */
	check_parse("2024-04-07 01:45:00", tz, "2024-04-06T14:45:00.000Z");
	/* Gap 02:00-02:30 on 2024-10-06: read with +10:30. */
	check_parse("2024-10-06 02:15:00", tz, "2024-10-05T15:45:00.000Z");
	check_parse("2100-01-15 12:00:00", tz, "2100-01-15T01:00:00.000Z");
	recon_tz_free(tz);
}

static void test_time_fixed_offsets(void **state)
{
	static const struct {
		const char *name;
		int32_t off;
	} ok[] = {
	    {"+08:00", 8 * 3600},
	    {"+0800", 8 * 3600},
	    {"+08", 8 * 3600},
	    {"-0530", -(5 * 3600 + 1800)},
	    {"-05:30", -19800},
	    {"-00:00", 0},
	    {"Z", 0},
	    {"UTC", 0},
	    {"Etc/UTC", 0},
	};
	static const char *const bad[] = {"+8", "+24:00", "+08:60", "+0800x", "+08:0", "-", "+"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct recon_tz *tz = load(ok[i].name);

		assert_string_equal(recon_tz_name(tz), ok[i].name);
		assert_int_equal(recon_tz_offset(tz, JAN16), ok[i].off);
		assert_int_equal(recon_tz_offset(tz, INT64_MIN), ok[i].off);
		assert_int_equal(recon_tz_to_utc(tz, JAN16), JAN16 - (int64_t)ok[i].off * S);
		assert_int_equal(parse_ok("2024-01-16", tz), JAN16 - (int64_t)ok[i].off * S);
		recon_tz_free(tz);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_load_error(bad[i], "invalid time zone offset");
}

static void test_time_suffix_overrides_zone(void **state)
{
	struct recon_tz *ny = load("America/New_York");

	(void)state;
	check_parse("2024-01-16T10:00:00+08:00", ny, "2024-01-16T02:00:00.000Z");
	check_parse("2024-01-16T10:00:00+0800", ny, "2024-01-16T02:00:00.000Z");
	check_parse("2024-01-16T10:00:00+08", ny, "2024-01-16T02:00:00.000Z");
	check_parse("2024-01-16T10:00:00Z", ny, "2024-01-16T10:00:00.000Z");
	check_parse("2024-01-16 10:00:00.250Z", ny, "2024-01-16T10:00:00.250Z");
	check_parse("2024-01-16T10:00:00-05:30", ny, "2024-01-16T15:30:00.000Z");
	check_parse("2024-01-16T10:00:00-00:00", ny, "2024-01-16T10:00:00.000Z");
	check_parse("2024-01-16T10:00:00", ny, "2024-01-16T15:00:00.000Z");
	recon_tz_free(ny);
}

static void test_time_fractions(void **state)
{
	(void)state;
	check_parse("2024-01-16 10:00:00.1", NULL, "2024-01-16T10:00:00.100Z");
	check_parse("2024-01-16 10:00:00.12", NULL, "2024-01-16T10:00:00.120Z");
	check_parse("2024-01-16 10:00:00.123", NULL, "2024-01-16T10:00:00.123Z");
	check_parse("2024-01-16 10:00:00.1239", NULL, "2024-01-16T10:00:00.123Z");
	/* Truncated, not rounded. */
	check_parse("2024-01-16 10:00:00.999999999", NULL, "2024-01-16T10:00:00.999Z");
	check_parse("2024-01-16 10:00:00.123456789", NULL, "2024-01-16T10:00:00.123Z");
	check_parse("2024-01-16 10:00:00.000", NULL, "2024-01-16T10:00:00.000Z");
	check_parse("2024-01-16T10:00:00.5+01:00", NULL, "2024-01-16T09:00:00.500Z");
}

static void test_time_parse_forms(void **state)
{
	struct recon_err err;
	int64_t ms;
	/* Length-delimited: the bytes after len are not part of the input. */
	static const char field[] = "2024-01-16 10:00:00,EXTRA";

	(void)state;
	check_parse("  2024-01-16 10:00:00  ", NULL, "2024-01-16T10:00:00.000Z");
	check_parse("\t2024-01-16T10:00:00Z\t", NULL, "2024-01-16T10:00:00.000Z");
	check_parse("2024/01/16 10:00:00", NULL, "2024-01-16T10:00:00.000Z");
	check_parse("2024/01/16", NULL, "2024-01-16T00:00:00.000Z");
	check_parse("2024-02-29 23:59:59", NULL, "2024-02-29T23:59:59.000Z");
	check_parse("2000-02-29", NULL, "2000-02-29T00:00:00.000Z");
	check_parse("0001-01-01 00:00:00", NULL, "0001-01-01T00:00:00.000Z");
	check_parse("9999-12-31 23:59:59.999", NULL, "9999-12-31T23:59:59.999Z");
	check_parse("1969-12-31 23:59:59.999", NULL, "1969-12-31T23:59:59.999Z");
	assert_int_equal(parse_ok("1969-12-31 23:59:59.999", NULL), -1);

	recon_err_init(&err);
	assert_int_equal(recon_time_parse(field, 19, NULL, &ms, &err), 0);
	assert_int_equal(ms, JAN16 + 10 * H);
	/* Failure leaves *utc_ms alone. */
	ms = 42;
	assert_int_equal(recon_time_parse(field, sizeof(field) - 1, NULL, &ms, &err), RECON_EVALUE);
	assert_int_equal(ms, 42);
}

/* time_format: a source's own timestamp form (issue 13 #2). */
static void fmt_ok(const char *s, const char *fmt, const struct recon_tz *tz, const char *want)
{
	struct recon_err err;
	int64_t ms = 42;
	char buf[32];

	recon_err_init(&err);
	if (recon_time_parse_format(s, strlen(s), fmt, tz, &ms, &err) < 0)
		fail_msg("'%s' in '%s': %s", s, fmt, err.msg);
	recon_time_format_utc(ms, buf, sizeof(buf));
	assert_string_equal(buf, want);
	assert_int_equal(err.code, 0);
}

static void fmt_bad(const char *s, const char *fmt, const char *msg)
{
	struct recon_err err;
	int64_t ms = 42;

	recon_err_init(&err);
	assert_int_equal(recon_time_parse_format(s, strlen(s), fmt, NULL, &ms, &err), RECON_EVALUE);
	assert_int_equal(ms, 42);
	if (!strstr(err.msg, msg))
		fail_msg("'%s' in '%s': got '%s', want '%s'", s, fmt, err.msg, msg);
}

static void test_time_parse_format(void **state)
{
	struct recon_tz *sh = load("Asia/Shanghai"), *ny = load("America/New_York");
	struct recon_err err;

	(void)state;
	/* Stripe's balance-history export: no seconds */
	fmt_ok("2016-07-14 07:45", "%Y-%m-%d %H:%M", NULL, "2016-07-14T07:45:00.000Z");
	fmt_ok("2016-07-14 07:45", "%Y-%m-%d %H:%M", sh, "2016-07-13T23:45:00.000Z");
	/* day first, and one-digit fields */
	fmt_ok("14/07/2016 07:45:12", "%d/%m/%Y %H:%M:%S", sh, "2016-07-13T23:45:12.000Z");
	fmt_ok("4/7/2016 7:45:12", "%d/%m/%Y %H:%M:%S", NULL, "2016-07-04T07:45:12.000Z");
	/* epoch seconds: an instant, whatever the zone */
	fmt_ok("1468482300", "%s", sh, "2016-07-14T07:45:00.000Z");
	fmt_ok("1468482300", "%s", ny, "2016-07-14T07:45:00.000Z");
	fmt_ok("1468482300.25", "%s", ny, "2016-07-14T07:45:00.250Z");
	fmt_ok("-1", "%s", NULL, "1969-12-31T23:59:59.000Z");
	/* fractions: after %S, or spelled with %f; truncated to ms */
	fmt_ok("2024-01-16 10:00:00.1239", "%Y-%m-%d %H:%M:%S", NULL, "2024-01-16T10:00:00.123Z");
	fmt_ok("2024-01-16 10:00:00,5", "%Y-%m-%d %H:%M:%S,%f", NULL, "2024-01-16T10:00:00.500Z");
	/* an offset in the value wins over the zone */
	fmt_ok("2024-01-16T10:00:00+08:00", "%Y-%m-%dT%H:%M:%S%z", ny, "2024-01-16T02:00:00.000Z");
	fmt_ok("2024-01-16T10:00:00Z", "%Y-%m-%dT%H:%M:%S%z", ny, "2024-01-16T10:00:00.000Z");
	/* compact, month names, 12-hour clock, blanks */
	fmt_ok("20240116100000", "%Y%m%d%H%M%S", NULL, "2024-01-16T10:00:00.000Z");
	fmt_ok("Jul  4 2016 12:05 AM", "%b %e %Y %I:%M %p", NULL, "2016-07-04T00:05:00.000Z");
	fmt_ok("jul 4 2016 12:05 pm", "%b %e %Y %I:%M %p", NULL, "2016-07-04T12:05:00.000Z");
	fmt_ok("  2024-01-16  ", "%Y-%m-%d", NULL, "2024-01-16T00:00:00.000Z");
	fmt_ok("100% 2024-01-16", "100%% %Y-%m-%d", NULL, "2024-01-16T00:00:00.000Z");
	/* NULL format: the default form */
	fmt_ok("2024-01-16 10:00:00", NULL, NULL, "2024-01-16T10:00:00.000Z");

	fmt_bad("2016-07-14 07:45:12", "%Y-%m-%d %H:%M",
		"unexpected ':' (format '%Y-%m-%d %H:%M')");
	fmt_bad("2016-02-30 07:45", "%Y-%m-%d %H:%M", "day 30");
	fmt_bad("2016-13-01 07:45", "%Y-%m-%d %H:%M", "expected a month 1-12");
	fmt_bad("2016-07-14 24:00", "%Y-%m-%d %H:%M", "expected an hour 0-23");
	fmt_bad("2016-07-14 07:45:60", "%Y-%m-%d %H:%M:%S", "expected a second 0-59");
	fmt_bad("14.07.2016", "%d/%m/%Y", "expected '/'");
	fmt_bad("", "%s", "empty");
	fmt_bad("1468482300000", "%s", "expected epoch seconds");
	fmt_bad("12x", "%s", "unexpected 'x'");

	recon_err_init(&err);
	assert_int_equal(recon_time_format_check("%Y-%m-%d %H:%M", &err), 0);
	assert_int_equal(recon_time_format_check("%s", &err), 0);
	assert_int_equal(recon_time_format_check("%H:%M", &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "names no date"));
	recon_err_init(&err);
	assert_int_equal(recon_time_format_check("%Y-%m-%d %Q", &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "unknown directive '%Q'"));
	recon_err_init(&err);
	assert_int_equal(recon_time_format_check("%Y-%m-%d %I:%M", &err), RECON_ECONFIG);
	recon_err_init(&err);
	assert_int_equal(recon_time_format_check("%Y-%m-%d %", &err), RECON_ECONFIG);
	recon_tz_free(sh);
	recon_tz_free(ny);
}

static void test_time_parse_malformed(void **state)
{
	static const struct {
		const char *s;
		size_t len; /* 0: strlen */
		const char *msg;
	} cases[] = {
	    {"", 0, "invalid timestamp '': empty"},
	    {"   ", 0, "invalid timestamp '   ': empty"},
	    {"2024-02-30 00:00:00", 0,
	     "invalid timestamp '2024-02-30 00:00:00': day 30 out of range for 2024-02"},
	    {"2023-02-29", 0, "invalid timestamp '2023-02-29': day 29 out of range for 2023-02"},
	    {"2024-04-31", 0, "invalid timestamp '2024-04-31': day 31 out of range for 2024-04"},
	    {"2100-02-29", 0, "invalid timestamp '2100-02-29': day 29 out of range for 2100-02"},
	    {"2024-13-01 00:00:00", 0, "invalid timestamp '2024-13-01 00:00:00': month 13"},
	    {"2024-00-10", 0, "invalid timestamp '2024-00-10': month 0"},
	    {"2024-01-00", 0, "invalid timestamp '2024-01-00': day 0 out of range for 2024-01"},
	    {"0000-01-01", 0, "invalid timestamp '0000-01-01': year 0"},
	    {"2024-1-5", 0, "invalid timestamp '2024-1-5': expected 'YYYY-MM-DD'"},
	    {"2024-01-5 10:00:00", 0,
	     "invalid timestamp '2024-01-5 10:00:00': expected 'YYYY-MM-DD'"},
	    {"24-01-01", 0, "invalid timestamp '24-01-01': expected 'YYYY-MM-DD'"},
	    {"+2024-01-16", 0, "invalid timestamp '+2024-01-16': expected 'YYYY-MM-DD'"},
	    {"20240116", 0, "invalid timestamp '20240116': expected 'YYYY-MM-DD'"},
	    {"2024-01/16", 0, "invalid timestamp '2024-01/16': expected 'YYYY-MM-DD'"},
	    {"2024.01.16", 0, "invalid timestamp '2024.01.16': expected 'YYYY-MM-DD'"},
	    {"2024-01-16x", 0,
	     "invalid timestamp '2024-01-16x': expected 'T' or ' ' after the date"},
	    {"2024-01-16Z", 0,
	     "invalid timestamp '2024-01-16Z': expected 'T' or ' ' after the date"},
	    {"2024-01-16T", 0, "invalid timestamp '2024-01-16T': expected 'HH:MM:SS'"},
	    {"2024-01-16 10:00", 0, "invalid timestamp '2024-01-16 10:00': expected 'HH:MM:SS'"},
	    {"2024-01-16 10:00Z", 0, "invalid timestamp '2024-01-16 10:00Z': expected 'HH:MM:SS'"},
	    {"2024-01-16 1:00:00", 0,
	     "invalid timestamp '2024-01-16 1:00:00': expected 'HH:MM:SS'"},
	    {"2024-01-16  10:00:00", 0,
	     "invalid timestamp '2024-01-16  10:00:00': expected 'HH:MM:SS'"},
	    {"2024-01-16 10-00-00", 0,
	     "invalid timestamp '2024-01-16 10-00-00': expected 'HH:MM:SS'"},
	    {"2024-01-16 24:00:00", 0, "invalid timestamp '2024-01-16 24:00:00': hour 24"},
	    {"2024-01-16 10:60:00", 0, "invalid timestamp '2024-01-16 10:60:00': minute 60"},
	    {"2024-01-16 23:59:60", 0, "invalid timestamp '2024-01-16 23:59:60': second 60"},
	    {"2024-01-16 10:00:00junk", 0,
	     "invalid timestamp '2024-01-16 10:00:00junk': unexpected 'j'"},
	    {"2024-01-16 10:00:00.", 0,
	     "invalid timestamp '2024-01-16 10:00:00.': expected digits after '.'"},
	    {"2024-01-16 10:00:00.1234567890", 0,
	     "invalid timestamp '2024-01-16 10:00:00.1234567890': more than 9 fraction digits"},
	    {"2024-01-16 10:00:00,123", 0,
	     "invalid timestamp '2024-01-16 10:00:00,123': unexpected ','"},
	    {"2024-01-16 10:00:00+8", 0,
	     "invalid timestamp '2024-01-16 10:00:00+8': invalid utc offset"},
	    {"2024-01-16 10:00:00+08:0", 0,
	     "invalid timestamp '2024-01-16 10:00:00+08:0': invalid utc offset"},
	    {"2024-01-16 10:00:00+24:00", 0,
	     "invalid timestamp '2024-01-16 10:00:00+24:00': invalid utc offset"},
	    {"2024-01-16 10:00:00+08:60", 0,
	     "invalid timestamp '2024-01-16 10:00:00+08:60': invalid utc offset"},
	    {"2024-01-16 10:00:00+08000", 0,
	     "invalid timestamp '2024-01-16 10:00:00+08000': invalid utc offset"},
	    {"2024-01-16 10:00:00-", 0,
	     "invalid timestamp '2024-01-16 10:00:00-': invalid utc offset"},
	    {"2024-01-16 10:00:00+08:00:00", 0,
	     "invalid timestamp '2024-01-16 10:00:00+08:00:00': unexpected ':'"},
	    {"2024-01-16 10:00:00Zjunk", 0,
	     "invalid timestamp '2024-01-16 10:00:00Zjunk': unexpected 'j'"},
	    {"2024-01-16 10:00:00 Z", 0,
	     "invalid timestamp '2024-01-16 10:00:00 Z': unexpected ' '"},
	    {"2024-01-16T10:00:00z", 0, "invalid timestamp '2024-01-16T10:00:00z': unexpected 'z'"},
	    {"2024-01-16t10:00:00", 0,
	     "invalid timestamp '2024-01-16t10:00:00': expected 'T' or ' ' after the date"},
	    {"2024-01-16 10:00:00\r", 0,
	     "invalid timestamp '2024-01-16 10:00:00\\x0d': unexpected '\\x0d'"},
	    {"2024-01-16 10:00:00\0", 20,
	     "invalid timestamp '2024-01-16 10:00:00\\x00': unexpected '\\x00'"},
	    {"\xef\xbc\x92\xef\xbc\x90\xef\xbc\x92\xef\xbc\x94", 0,
	     "invalid timestamp '\\xef\\xbc\\x92\\xef\\xbc\\x90\\xef\\xbc\\x92\\xef\\xbc\\x94': "
	     "expected 'YYYY-MM-DD'"},
	    {"'2024-01-16'", 0, "invalid timestamp '\\'2024-01-16\\'': expected 'YYYY-MM-DD'"},
	    {"2024-01-16 10:00:00 2024-01-16 10:00:00 2024", 0,
	     "invalid timestamp '2024-01-16 10:00:00 2024-01-16 10:00:00 ...': unexpected ' '"},
	};
	size_t i;

	(void)state;
	assert_true(sizeof(cases) / sizeof(cases[0]) >= 25);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_err err;
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].s);
		int64_t ms = 7;

		recon_err_init(&err);
		if (recon_time_parse(cases[i].s, len, NULL, &ms, &err) != RECON_EVALUE)
			fail_msg("case %zu '%s' accepted", i, cases[i].s);
		assert_int_equal(err.code, RECON_EVALUE);
		assert_int_equal(ms, 7);
		if (strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("case %zu: got \"%s\"\nwant \"%s\"", i, err.msg, cases[i].msg);
	}
}

static void test_time_parse_first_error_wins(void **state)
{
	struct recon_err err;
	int64_t ms;

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_time_parse("bad", 3, NULL, &ms, &err), RECON_EVALUE);
	assert_int_equal(recon_time_parse("2024-13-01", 10, NULL, &ms, &err), RECON_EVALUE);
	assert_string_equal(err.msg, "invalid timestamp 'bad': expected 'YYYY-MM-DD'");
	/* A NULL err is allowed. */
	assert_int_equal(recon_time_parse("bad", 3, NULL, &ms, NULL), RECON_EVALUE);
}

/* ---- days ---- */

static void test_time_day_bounds_shanghai(void **state)
{
	struct recon_tz *tz = load("Asia/Shanghai");
	int64_t start, end;

	(void)state;
	recon_tz_day_bounds(tz, 19738, &start, &end);
	assert_int_equal(start, JAN16 - 8 * H);
	assert_int_equal(end, JAN16 + 16 * H);
	assert_int_equal(recon_tz_day_of(tz, start), 19738);
	assert_int_equal(recon_tz_day_of(tz, end - 1), 19738);
	assert_int_equal(recon_tz_day_of(tz, end), 19739);
	assert_int_equal(recon_tz_day_of(tz, start - 1), 19737);
	recon_tz_free(tz);
}

/* Midnight inside a gap: Toronto went from 23:30 EST to 00:30 EDT on 1919-03-31. */
static void test_time_day_bounds_midnight_in_gap(void **state)
{
	struct recon_tz *tz = NULL;
	struct recon_err err;
	int64_t start, end, prev_start, prev_end;

	(void)state;
	recon_err_init(&err);
	if (recon_tz_load(&tz, "America/Toronto", &err) < 0)
		skip();
	recon_tz_day_bounds(tz, recon_days_from_civil(1919, 3, 31), &start, &end);
	recon_tz_day_bounds(tz, recon_days_from_civil(1919, 3, 30), &prev_start, &prev_end);
	/* the day starts at the transition, 04:30Z, not at midnight read as EST (05:00Z) */
	assert_int_equal(start, recon_days_from_civil(1919, 3, 31) * RECON_MS_PER_DAY +
				    4 * RECON_MS_PER_HOUR + 30 * RECON_MS_PER_MIN);
	assert_int_equal(prev_end, start);
	assert_int_equal(recon_tz_day_of(tz, start), recon_days_from_civil(1919, 3, 31));
	assert_int_equal(recon_tz_day_of(tz, start - 1), recon_days_from_civil(1919, 3, 30));
	assert_int_equal(end - start, 23 * RECON_MS_PER_HOUR + 30 * RECON_MS_PER_MIN);
	recon_tz_free(tz);
}

/*
 * Issue 12 #12 (fuzz_tzif, corpus/tzif/regress-day-reversed): a crafted zone
 * whose wall clock jumps over a whole day (+0:30 to +25:30) and then falls back
 * into it (-25:30) made that day end 2 h before it started. Days now start at
 * the first instant whose wall clock reaches their midnight: never reversed,
 * contiguous, and the day jumped over is empty (where the jump is).
 */
static void test_time_day_bounds_never_reversed(void **state)
{
	static const int64_t m = 1705276800; /* 2024-01-15 00:00 as wall clock seconds */
	static const int64_t trans[] = {m - 3600, m, m + 48 * 3600};
	static const unsigned char types[] = {1, 2, 1};
	static const int32_t offs[] = {1800, 91800, -91800};
	struct tzif_spec z = {0, 3, trans, types, 3, offs, NULL, NULL};
	unsigned char buf[4096];
	char *dir = make_tmpdir();
	struct recon_tz *tz;
	int64_t d0 = recon_days_from_civil(2024, 1, 15), start, end, prev_end = 0;

	(void)state;
	write_file(dir, "Crafted", buf, build_tzif(buf, &z));
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	tz = load("Crafted");
	for (int64_t d = d0 - 2; d <= d0 + 3; d++) {
		recon_tz_day_bounds(tz, d, &start, &end);
		assert_true(end >= start);
		if (d > d0 - 2)
			assert_int_equal(start, prev_end);
		prev_end = end;
	}
	/* 2024-01-15 is jumped over at its transition, 2024-01-14T23:00Z */
	recon_tz_day_bounds(tz, d0, &start, &end);
	assert_int_equal(start, (m - 3600) * RECON_MS_PER_SEC);
	assert_int_equal(end, start);
	recon_tz_free(tz);
	assert_int_equal(unsetenv("TZDIR"), 0);
	remove_tmpdir(dir);

	/* the real skipped day: Pacific/Apia went from 2011-12-29 to 2011-12-31 */
	if (recon_tz_load(&tz, "Pacific/Apia", &(struct recon_err){0}) == 0) {
		recon_tz_day_bounds(tz, recon_days_from_civil(2011, 12, 30), &start, &end);
		assert_int_equal(start, end);
		assert_int_equal(start, parse_ok("2011-12-30T10:00:00Z", NULL));
		recon_tz_day_bounds(tz, recon_days_from_civil(2011, 12, 29), &start, &end);
		assert_int_equal(end - start, 24 * H);
		recon_tz_free(tz);
	}
}

static void test_time_day_bounds_new_york_dst(void **state)
{
	struct recon_tz *tz = load("America/New_York");
	int64_t start, end, day;

	(void)state;
	day = recon_days_from_civil(2024, 3, 10);
	recon_tz_day_bounds(tz, day, &start, &end);
	assert_int_equal(end - start, 23 * H);
	assert_int_equal(start, parse_ok("2024-03-10T05:00:00Z", NULL));
	assert_int_equal(recon_tz_day_of(tz, start), day);
	assert_int_equal(recon_tz_day_of(tz, end - 1), day);
	assert_int_equal(recon_tz_day_of(tz, end), day + 1);

	day = recon_days_from_civil(2024, 11, 3);
	recon_tz_day_bounds(tz, day, &start, &end);
	assert_int_equal(end - start, 25 * H);
	assert_int_equal(start, parse_ok("2024-11-03T04:00:00Z", NULL));
	assert_int_equal(end, parse_ok("2024-11-04T05:00:00Z", NULL));

	day = recon_days_from_civil(2024, 1, 16);
	recon_tz_day_bounds(tz, day, &start, &end);
	assert_int_equal(end - start, 24 * H);
	/* The footer rule gives the same DST days in 2100. */
	recon_tz_day_bounds(tz, recon_days_from_civil(2100, 3, 14), &start, &end);
	assert_int_equal(end - start, 23 * H);
	recon_tz_day_bounds(tz, recon_days_from_civil(2100, 11, 7), &start, &end);
	assert_int_equal(end - start, 25 * H);
	recon_tz_free(tz);
}

static void test_time_civil_days(void **state)
{
	static const struct {
		int y;
		unsigned m, d;
		int64_t days;
	} cases[] = {
	    {1970, 1, 1, 0},	 {1969, 12, 31, -1},   {2000, 2, 29, 11016},
	    {2000, 3, 1, 11017}, {2024, 1, 16, 19738}, {2100, 2, 28, 47540},
	    {2100, 3, 1, 47541}, {1, 1, 1, -719162},   {9999, 12, 31, 2932896},
	};
	int64_t day;
	int py = 0;
	unsigned pm = 12, pd = 31;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int y;
		unsigned m, d;

		assert_int_equal(recon_days_from_civil(cases[i].y, cases[i].m, cases[i].d),
				 cases[i].days);
		recon_civil_from_days(cases[i].days, &y, &m, &d);
		assert_int_equal(y, cases[i].y);
		assert_int_equal(m, cases[i].m);
		assert_int_equal(d, cases[i].d);
	}
	/* Every day of years 1..9999 round-trips and follows its predecessor. */
	for (day = -719162; day <= 2932896; day++) {
		int y;
		unsigned m, d;

		recon_civil_from_days(day, &y, &m, &d);
		if (recon_days_from_civil(y, m, d) != day)
			fail_msg("day %lld does not round-trip", (long long)day);
		if (!(d == pd + 1 && m == pm && y == py) &&
		    !(d == 1 && ((m == pm + 1 && y == py) || (m == 1 && pm == 12 && y == py + 1))))
			fail_msg("day %lld: %d-%u-%u after %d-%u-%u", (long long)day, y, m, d, py,
				 pm, pd);
		py = y;
		pm = m;
		pd = d;
	}
}

static void test_time_date_parse_format(void **state)
{
	static const char *const good[] = {"1970-01-01", "2000-02-29", "2024-01-16",
					   "2100-03-01", "0001-01-01", "9999-12-31"};
	static const struct {
		const char *s;
		const char *msg;
	} bad[] = {
	    {"", "invalid date '': empty"},
	    {"2024-02-30", "invalid date '2024-02-30': day 30 out of range for 2024-02"},
	    {"2024/01/16", "invalid date '2024/01/16': expected 'YYYY-MM-DD'"},
	    {"2024-01-16 00:00:00", "invalid date '2024-01-16 00:00:00': expected 'YYYY-MM-DD'"},
	    {" 2024-01-16", "invalid date ' 2024-01-16': expected 'YYYY-MM-DD'"},
	    {"2024-1-16", "invalid date '2024-1-16': expected 'YYYY-MM-DD'"},
	    {"2024-13-16", "invalid date '2024-13-16': month 13"},
	    {"0000-12-16", "invalid date '0000-12-16': year 0"},
	};
	char buf[16];
	int64_t day;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct recon_err err;

		recon_err_init(&err);
		assert_int_equal(recon_date_parse(good[i], &day, &err), 0);
		recon_date_format(day, buf, sizeof(buf));
		assert_string_equal(buf, good[i]);
	}
	assert_int_equal(recon_date_parse("2024-01-16", &day, NULL), 0);
	assert_int_equal(day, 19738);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct recon_err err;

		recon_err_init(&err);
		day = 5;
		assert_int_equal(recon_date_parse(bad[i].s, &day, &err), RECON_EVALUE);
		assert_int_equal(day, 5);
		assert_string_equal(err.msg, bad[i].msg);
	}
}

static void test_time_format_utc(void **state)
{
	char buf[32];

	(void)state;
	recon_time_format_utc(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
	recon_time_format_utc(-1, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
	recon_time_format_utc(JAN16 + 2 * H + 5, buf, sizeof(buf));
	assert_string_equal(buf, "2024-01-16T02:00:00.005Z");
	/* Truncates safely. */
	recon_time_format_utc(0, buf, 5);
	assert_string_equal(buf, "1970");
}

/* ---- durations ---- */

static void test_time_duration_parse(void **state)
{
	static const struct {
		const char *s;
		int64_t ms; /* when msg is NULL */
		const char *msg;
	} cases[] = {
	    {"0", 0, NULL},
	    {"0s", 0, NULL},
	    {"0ms", 0, NULL},
	    {"500ms", 500, NULL},
	    {"90s", 90 * S, NULL},
	    {"5m", 5 * M, NULL},
	    {"05m", 5 * M, NULL},
	    {"2h", 2 * H, NULL},
	    {"1d", RECON_MS_PER_DAY, NULL},
	    {"1h30m", 90 * M, NULL},
	    {"1d2h3m4s5ms", RECON_MS_PER_DAY + 2 * H + 3 * M + 4 * S + 5, NULL},
	    {"1m500ms", M + 500, NULL},
	    {"9223372036854775807ms", INT64_MAX, NULL},
	    {"106751991167d7h", 106751991167LL * RECON_MS_PER_DAY + 7 * H, NULL},
	    {"", 0, "invalid duration '': empty"},
	    {"5", 0, "invalid duration '5': missing unit (d, h, m, s or ms)"},
	    {"00", 0, "invalid duration '00': missing unit (d, h, m, s or ms)"},
	    {"1h30", 0, "invalid duration '1h30': missing unit (d, h, m, s or ms)"},
	    {"-5m", 0, "invalid duration '-5m': expected a number at '-'"},
	    {"+5m", 0, "invalid duration '+5m': expected a number at '+'"},
	    {"m", 0, "invalid duration 'm': expected a number at 'm'"},
	    {"5 m", 0, "invalid duration '5 m': unknown unit at ' '"},
	    {" 5m", 0, "invalid duration ' 5m': expected a number at ' '"},
	    {"5m ", 0, "invalid duration '5m ': expected a number at ' '"},
	    {"5x", 0, "invalid duration '5x': unknown unit at 'x'"},
	    {"5M", 0, "invalid duration '5M': unknown unit at 'M'"},
	    {"1.5h", 0, "invalid duration '1.5h': unknown unit at '.'"},
	    {"5mm", 0, "invalid duration '5mm': expected a number at 'm'"},
	    {"5m5m", 0,
	     "invalid duration '5m5m': units must appear at most once, in the order d, h, m, s, "
	     "ms"},
	    {"5s1m", 0,
	     "invalid duration '5s1m': units must appear at most once, in the order d, h, m, s, "
	     "ms"},
	    {"1ms1s", 0,
	     "invalid duration '1ms1s': units must appear at most once, in the order d, h, m, s, "
	     "ms"},
	    {"9999999999999999d", 0, "invalid duration '9999999999999999d': too large"},
	    {"106751991168d", 0, "invalid duration '106751991168d': too large"},
	    {"106751991167d8h", 0, "invalid duration '106751991167d8h': too large"},
	    {"9223372036854775808ms", 0, "invalid duration '9223372036854775808ms': too large"},
	    {"99999999999999999999999s", 0,
	     "invalid duration '99999999999999999999999s': too large"},
	};
	size_t i;

	(void)state;
	assert_true(sizeof(cases) / sizeof(cases[0]) >= 20);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_err err;
		int64_t ms = -7;
		int rc;

		recon_err_init(&err);
		rc = recon_duration_parse(cases[i].s, &ms, &err);
		if (!cases[i].msg) {
			if (rc != 0)
				fail_msg("'%s' rejected: %s", cases[i].s, err.msg);
			assert_int_equal(ms, cases[i].ms);
			continue;
		}
		if (rc != RECON_EVALUE)
			fail_msg("'%s' accepted", cases[i].s);
		assert_int_equal(ms, -7);
		if (strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("'%s': got \"%s\"\nwant \"%s\"", cases[i].s, err.msg,
				 cases[i].msg);
	}
}

static void test_time_duration_format(void **state)
{
	static const struct {
		int64_t ms;
		const char *s;
	} cases[] = {
	    {0, "0s"},
	    {1, "1ms"},
	    {500, "500ms"},
	    {1000, "1s"},
	    {1500, "1s500ms"},
	    {90 * S, "1m30s"},
	    {15 * M, "15m"},
	    {90 * M, "1h30m"},
	    {RECON_MS_PER_DAY, "1d"},
	    {RECON_MS_PER_DAY + 2 * H + 3 * M + 4 * S + 5, "1d2h3m4s5ms"},
	    {INT64_MAX, "106751991167d7h12m55s807ms"},
	    {-5 * M, "-5m"},
	};
	char buf[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct recon_err err;
		int64_t back;

		recon_duration_format(cases[i].ms, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].s);
		if (cases[i].ms < 0)
			continue;
		recon_err_init(&err);
		assert_int_equal(recon_duration_parse(buf, &back, &err), 0);
		assert_int_equal(back, cases[i].ms);
	}
	recon_duration_format(INT64_MIN, buf, sizeof(buf));
	assert_string_equal(buf, "-106751991167d7h12m55s808ms");
	recon_duration_format(90 * M, buf, 3);
	assert_string_equal(buf, "1h");
}

/* ---- now ---- */

static void test_time_now(void **state)
{
	struct recon_err err;
	int64_t now = 0;
	char buf[256];

	(void)state;
	assert_int_equal(setenv("RECON_NOW", "2024-01-16T02:00:00Z", 1), 0);
	recon_err_init(&err);
	assert_int_equal(recon_time_now(&now, &err), 0);
	assert_int_equal(now, JAN16 + 2 * H);

	assert_int_equal(setenv("RECON_NOW", "2024-01-16 10:00:00.5+08:00", 1), 0);
	assert_int_equal(recon_time_now(&now, &err), 0);
	assert_int_equal(now, JAN16 + 2 * H + 500);

	/* No suffix: UTC. */
	assert_int_equal(setenv("RECON_NOW", "2024-01-16 02:00:00", 1), 0);
	assert_int_equal(recon_time_now(&now, &err), 0);
	assert_int_equal(now, JAN16 + 2 * H);

	assert_int_equal(setenv("RECON_NOW", "yesterday", 1), 0);
	now = 1;
	assert_int_equal(recon_time_now(&now, &err), RECON_ECONFIG);
	assert_int_equal(now, 1);
	assert_int_equal(err.code, RECON_ECONFIG);
	assert_string_equal(recon_err_str(&err, buf, sizeof(buf)),
			    "RECON_NOW: invalid timestamp 'yesterday': expected 'YYYY-MM-DD'");

	/* Unset (or empty): the system clock. */
	assert_int_equal(setenv("RECON_NOW", "", 1), 0);
	recon_err_init(&err);
	assert_int_equal(recon_time_now(&now, &err), 0);
	assert_true(llabs(now - (int64_t)time(NULL) * S) < 5 * S);
	assert_int_equal(unsetenv("RECON_NOW"), 0);
	assert_int_equal(recon_time_now(&now, &err), 0);
	assert_true(llabs(now - (int64_t)time(NULL) * S) < 5 * S);
}

/* ---- loading ---- */

static void test_time_unknown_zone(void **state)
{
	char longname[300];

	(void)state;
	assert_int_equal(unsetenv("TZDIR"), 0);
	expect_load_error("Mars/Base", "unknown time zone 'Mars/Base'");
	expect_load_error("America", "unknown time zone 'America'");
	expect_load_error("../etc/passwd", "invalid time zone name '../etc/passwd'");
	expect_load_error("/etc/passwd", "invalid time zone name '/etc/passwd'");
	expect_load_error("Asia/../../etc/passwd", "invalid time zone name");
	expect_load_error("Asia//Shanghai", "invalid time zone name");
	expect_load_error("Asia/Shanghai/", "invalid time zone name");
	expect_load_error("Asia/Shang hai", "invalid time zone name");
	expect_load_error("", "invalid time zone name ''");
	memset(longname, 'A', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	expect_load_error(longname, "invalid time zone name");
	/* 255 characters is allowed (and simply unknown). */
	longname[255] = '\0';
	expect_load_error(longname, "unknown time zone");
}

static void test_time_utc_without_tzdata(void **state)
{
	char *dir = make_tmpdir();
	struct recon_tz *tz;

	(void)state;
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	tz = load("UTC");
	assert_int_equal(recon_tz_offset(tz, JAN16), 0);
	recon_tz_free(tz);
	tz = load("Etc/UTC");
	assert_string_equal(recon_tz_name(tz), "Etc/UTC");
	recon_tz_free(tz);
	tz = load("Z");
	recon_tz_free(tz);
	expect_load_error("Asia/Shanghai", "unknown time zone 'Asia/Shanghai'");
	assert_int_equal(unsetenv("TZDIR"), 0);
	recon_tz_free(NULL);
	remove_tmpdir(dir);
}

static void test_time_corrupt_tzif(void **state)
{
	static const int64_t trans[] = {1000, 500};
	static const unsigned char types[] = {0, 1};
	static const unsigned char badtypes[] = {0, 7};
	static const int32_t offs[] = {3600, 7200};
	static const int32_t badoffs[] = {3600, INT32_MIN};
	unsigned char buf[4096];
	char *dir = make_tmpdir();
	char want[600];
	size_t n;

	(void)state;
	assert_int_equal(setenv("TZDIR", dir, 1), 0);

	write_file(dir, "Text", "hello, world\n", 13);
	snprintf(want, sizeof(want), "time zone file '%s/Text' is not a TZif file", dir);
	expect_load_error("Text", want);
	write_file(dir, "Empty", "", 0);
	expect_load_error("Empty", "time zone file");

	/* Counts far beyond the file. */
	{
		struct tzif_spec z = {'2', 0, NULL, NULL, 1, offs, NULL, "UTC0"};

		n = build_tzif(buf, &z);
		put32(buf + 32, 0x7fffffff);
		write_file(dir, "Huge", buf, n);
		expect_load_error("Huge", "time zone file");
		put32(buf + 32, 3);
		write_file(dir, "Short", buf, n);
		expect_load_error("Short", "time zone file");
	}
	{
		struct tzif_spec z = {'2', 2, trans, types, 2, offs, NULL, "UTC0"};

		write_file(dir, "Order", buf, build_tzif(buf, &z));
		expect_load_error("Order", "time zone file");
	}
	{
		static const int64_t ok_trans[] = {500, 1000};
		struct tzif_spec z = {'2', 2, ok_trans, badtypes, 2, offs, NULL, "UTC0"};

		write_file(dir, "Type", buf, build_tzif(buf, &z));
		expect_load_error("Type", "time zone file");
		z.types = types;
		z.offs = badoffs;
		write_file(dir, "Offset", buf, build_tzif(buf, &z));
		expect_load_error("Offset", "time zone file");
	}
	write_footer_zone(dir, "Footer", "EST5EDT,M3");
	expect_load_error("Footer", "time zone file");
	write_footer_zone(dir, "Footer2", "EST5EDT,M13.1.0,M11.1.0");
	expect_load_error("Footer2", "time zone file");
	write_footer_zone(dir, "Footer3", "EST99");
	expect_load_error("Footer3", "time zone file");
	{
		/* Footer without its closing newline. */
		struct tzif_spec z = {'2', 0, NULL, NULL, 1, offs, NULL, "UTC0"};

		n = build_tzif(buf, &z);
		write_file(dir, "Unterminated", buf, n - 1);
		expect_load_error("Unterminated", "time zone file");
	}
	{
		/* Too large to be a zone. */
		unsigned char *big = calloc(1, 1024 * 1024 + 1);

		assert_non_null(big);
		memcpy(big, "TZif2", 5);
		write_file(dir, "Big", big, 1024 * 1024 + 1);
		free(big);
		expect_load_error("Big", "time zone file");
	}
	assert_int_equal(unsetenv("TZDIR"), 0);
	remove_tmpdir(dir);
}

/* Every truncation and many random byte flips of a real file: errors, never crashes. */
static void test_time_fuzzed_tzif(void **state)
{
	char *dir;
	unsigned char *orig, *buf;
	size_t len = 0, i, cut;
	uint32_t seed = 12345;
	int loaded = 0;

	(void)state;
	orig = read_whole(ZONEINFO "/America/New_York", &len);
	if (!orig)
		skip();
	dir = make_tmpdir();
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	buf = malloc(len);
	assert_non_null(buf);
	for (i = 0; i < 1500; i++) {
		struct recon_tz *tz = NULL;
		struct recon_err err;
		size_t n = len, k;

		memcpy(buf, orig, len);
		if (i < 700) {
			/* Truncations at spread-out lengths, including inside the footer. */
			cut = i < 100 ? len - i : (i * 7919) % len;
			n = cut;
		} else {
			for (k = 0; k < 1 + i % 4; k++) {
				seed = seed * 1103515245 + 12345;
				buf[(seed >> 8) % len] = (unsigned char)(seed >> 3);
			}
		}
		write_file(dir, "Fuzz", buf, n);
		recon_err_init(&err);
		if (recon_tz_load(&tz, "Fuzz", &err) == 0) {
			int64_t t;

			loaded++;
			for (t = -4000000000000LL; t < 5000000000000LL; t += 123456789012LL) {
				int64_t day = recon_tz_day_of(tz, t);
				int64_t start, end;

				(void)recon_tz_to_utc(tz, recon_tz_to_local(tz, t));
				recon_tz_day_bounds(tz, day, &start, &end);
			}
			(void)recon_tz_offset(tz, INT64_MIN);
			(void)recon_tz_offset(tz, INT64_MAX);
			(void)recon_tz_to_utc(tz, INT64_MIN);
			(void)recon_tz_to_utc(tz, INT64_MAX);
			recon_tz_free(tz);
		} else {
			assert_int_equal(err.code, RECON_ECONFIG);
			assert_null(tz);
		}
	}
	/* Cutting the footer's last newline is detected; some flips are harmless. */
	assert_true(loaded > 0);
	free(buf);
	free(orig);
	assert_int_equal(unsetenv("TZDIR"), 0);
	remove_tmpdir(dir);
}

/* Footer-only files: POSIX TZ rule forms, values checked against glibc. */
static void test_time_footer_forms(void **state)
{
	char *dir = make_tmpdir();
	struct recon_tz *tz;

	(void)state;
	assert_int_equal(setenv("TZDIR", dir, 1), 0);

	write_footer_zone(dir, "Us", "EST5EDT,M3.2.0,M11.1.0");
	tz = load("Us");
	check_parse("2030-03-10 01:59:59", tz, "2030-03-10T06:59:59.000Z");
	check_parse("2030-03-10 03:00:00", tz, "2030-03-10T07:00:00.000Z");
	check_parse("2030-11-03 01:30:00", tz, "2030-11-03T05:30:00.000Z");
	check_parse("1975-07-01 12:00:00", tz, "1975-07-01T16:00:00.000Z");
	recon_tz_free(tz);

	write_footer_zone(dir, "Tehran", "<+0330>-3:30");
	tz = load("Tehran");
	assert_int_equal(recon_tz_offset(tz, JAN16), 3 * 3600 + 1800);
	check_parse("2024-01-16 03:30:00", tz, "2024-01-16T00:00:00.000Z");
	recon_tz_free(tz);

	/* J60 is March 1 even in leap years; /-1 is 23:00 the day before. */
	write_footer_zone(dir, "Julian", "AAA3BBB,J60/2,J300/-1");
	tz = load("Julian");
	check_parse("2024-03-01 01:59:59", tz, "2024-03-01T04:59:59.000Z");
	check_parse("2024-03-01 03:00:00", tz, "2024-03-01T05:00:00.000Z");
	/* J300 = Oct 27; ends at Oct 26 23:00 BBB. */
	check_parse("2024-10-26 21:59:59", tz, "2024-10-26T23:59:59.000Z");
	/* 22:00-23:00 happens twice: the earlier, BBB instant. */
	check_parse("2024-10-26 22:30:00", tz, "2024-10-27T00:30:00.000Z");
	check_parse("2024-10-26 23:30:00", tz, "2024-10-27T02:30:00.000Z");
	recon_tz_free(tz);

	/* Zero-based days count Feb 29: day 59 is Feb 29 in 2024, Mar 1 in 2023; /25 is 01:00 next
	 * day. */
	write_footer_zone(dir, "Zero", "AAA-2BBB,59/25,299/-1:30");
	tz = load("Zero");
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-03-01T00:59:59+02:00", NULL)), 7200);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-03-01T01:00:00+02:00", NULL)), 10800);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2023-03-01T23:59:59+02:00", NULL)), 7200);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2023-03-02T01:00:00+02:00", NULL)), 10800);
	/* Day 299 of 2023 is Oct 27; the end is Oct 26 22:30 DST. */
	assert_int_equal(recon_tz_offset(tz, parse_ok("2023-10-26T22:29:59+03:00", NULL)), 10800);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2023-10-26T22:30:00+03:00", NULL)), 7200);
	recon_tz_free(tz);

	/* Southern hemisphere, transitions at 24:00. */
	write_footer_zone(dir, "Santiago", "<-04>4<-03>,M9.1.6/24,M4.1.6/24");
	tz = load("Santiago");
	assert_int_equal(recon_tz_offset(tz, JAN16), -3 * 3600);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-07-01", NULL)), -4 * 3600);
	recon_tz_free(tz);

	/* Transition times beyond a day (RFC 8536 version 3). */
	write_footer_zone(dir, "Ext", "XXX-1YYY,M3.5.0/-2,M10.5.0/167");
	tz = load("Ext");
	/* Last Sunday of March 2024 is the 31st: DST from Mar 30 22:00 local. */
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-03-30T20:59:59Z", NULL)), 3600);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-03-30T21:00:00Z", NULL)), 7200);
	/* Last Sunday of October is the 27th: +167h = Nov 2 23:00 DST. */
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-11-02T20:59:59Z", NULL)), 7200);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-11-02T21:00:00Z", NULL)), 3600);
	recon_tz_free(tz);

	/* All-year DST, as tzfile(5) documents it. */
	write_footer_zone(dir, "Always", "EST5EDT,0/0,J365/25");
	tz = load("Always");
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-01-01T04:30:00Z", NULL)), -4 * 3600);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-12-31T23:30:00Z", NULL)), -4 * 3600);
	assert_int_equal(recon_tz_offset(tz, JAN16), -4 * 3600);
	recon_tz_free(tz);

	/* Negative DST (Ireland): standard time is summer. */
	write_footer_zone(dir, "Dublin", "IST-1GMT0,M10.5.0,M3.5.0/1");
	tz = load("Dublin");
	assert_int_equal(recon_tz_offset(tz, JAN16), 0);
	assert_int_equal(recon_tz_offset(tz, parse_ok("2024-07-01", NULL)), 3600);
	recon_tz_free(tz);

	/* An empty footer: the last time type rules. */
	write_footer_zone(dir, "Empty", "");
	tz = load("Empty");
	assert_int_equal(recon_tz_offset(tz, JAN16), 0);
	recon_tz_free(tz);

	assert_int_equal(unsetenv("TZDIR"), 0);
	remove_tmpdir(dir);
}

/* Version 1 files (32-bit data, no footer) and the before-first-transition rule. */
static void test_time_tzif_versions(void **state)
{
	static const int64_t trans[] = {1000000000, 1100000000};
	static const unsigned char types[] = {1, 2};
	static const int32_t offs[] = {3600, 7200, 10800};
	static const unsigned char isdst[] = {1, 0, 0};
	unsigned char buf[4096];
	char *dir = make_tmpdir();
	struct recon_tz *tz;
	char version[3] = {0, '2', '3'};
	size_t i;

	(void)state;
	assert_int_equal(setenv("TZDIR", dir, 1), 0);
	for (i = 0; i < 3; i++) {
		struct tzif_spec z = {version[i], 2, trans, types, 3, offs, isdst, ""};

		write_file(dir, "V", buf, build_tzif(buf, &z));
		tz = load("V");
		/* Before the first transition: time type 0 (RFC 8536 3.2). */
		assert_int_equal(recon_tz_offset(tz, 999999999999LL), 3600);
		assert_int_equal(recon_tz_offset(tz, 1000000000000LL), 7200);
		assert_int_equal(recon_tz_offset(tz, 1099999999999LL), 7200);
		assert_int_equal(recon_tz_offset(tz, 1100000000000LL), 10800);
		/* After the last one without a footer rule: the last type. */
		assert_int_equal(recon_tz_offset(tz, INT64_MAX), 10800);
		assert_int_equal(recon_tz_offset(tz, INT64_MIN), 3600);
		/* The 1h jump at 1e9 s: local [1e9+3600, 1e9+7200) is a gap. */
		assert_int_equal(recon_tz_to_utc(tz, (1000000000LL + 5400) * S),
				 (1000000000LL + 1800) * S);
		recon_tz_free(tz);
	}
	assert_int_equal(unsetenv("TZDIR"), 0);
	remove_tmpdir(dir);
}

/* Every wall time of a DST year round-trips, or is a gap/overlap time. */
static void test_time_round_trip_new_york(void **state)
{
	struct recon_tz *tz = load("America/New_York");
	int64_t start = parse_ok("2024-01-01", NULL), local;

	(void)state;
	for (local = start; local < start + 366 * RECON_MS_PER_DAY; local += 15 * M) {
		int64_t utc = recon_tz_to_utc(tz, local);
		int64_t back = recon_tz_to_local(tz, utc);

		if (back != local && back != local + H)
			fail_msg("local %lld -> %lld -> %lld", (long long)local, (long long)utc,
				 (long long)back);
		assert_int_equal(recon_tz_to_local(tz, recon_tz_to_utc(tz, back)), back);
	}
	recon_tz_free(tz);
}

/*
 * The parser's fast path ("YYYY-MM-DD HH:MM:SS", its day kept per thread)
 * against its full path: a leading blank sends a timestamp down the full
 * path. Random edits of real timestamps (digits, separators), in one zone
 * with DST and without one: the same instant, or a reject on both.
 */
static void test_time_plain_matches_full(void **state)
{
	static const char edits[] = "0123456789 -:T/x";
	static const char *const bases[] = {"2024-03-01 08:53:59", "2024-02-29T23:59:59",
					    "2023-02-28 00:00:00", "2024-03-10 02:30:00",
					    "2024-11-03 01:30:00", "1999-12-31 23:59:59"};
	struct recon_tz *zones[2] = {NULL, NULL};
	uint64_t seed = 0x2545f4914f6cdd1dULL;
	char s[24], b[25];

	(void)state;
	if (have_zone("America/New_York"))
		zones[1] = load("America/New_York");
	for (int i = 0; i < 300000; i++) {
		const struct recon_tz *tz = zones[i % 2];
		size_t len = 19;
		int edits_n;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		memcpy(s, bases[(seed >> 50) % 6], 19);
		edits_n = (int)((seed >> 40) % 4); /* a quarter stay as they are */
		for (int k = 0; k < edits_n; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			s[(seed >> 33) % 19] = edits[(seed >> 20) % (sizeof(edits) - 1)];
		}
		if ((seed >> 10) % 16 == 0)
			len = 18 + (size_t)((seed >> 5) % 3); /* 18 or 20 bytes */
		if (len == 20)
			s[19] = 'Z';
		b[0] = ' ';
		memcpy(b + 1, s, len);
		{
			struct recon_err e1, e2;
			int64_t t1 = 7, t2 = 7;
			int r1, r2;

			recon_err_init(&e1);
			recon_err_init(&e2);
			r1 = recon_time_parse(s, len, tz, &t1, &e1);
			r2 = recon_time_parse(b, len + 1, tz, &t2, &e2);
			if (r1 != r2 || (!r1 && t1 != t2))
				fail_msg("'%.*s': %d %lld (%s) against %d %lld (%s)", (int)len, s,
					 r1, (long long)t1, e1.msg, r2, (long long)t2, e2.msg);
		}
	}
	recon_tz_free(zones[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time_plain_matches_full),
	    cmocka_unit_test(test_time_shanghai_day_boundary),
	    cmocka_unit_test(test_time_utc_day_boundary),
	    cmocka_unit_test(test_time_shanghai_dst_history),
	    cmocka_unit_test(test_time_new_york_spring_gap),
	    cmocka_unit_test(test_time_new_york_fall_overlap),
	    cmocka_unit_test(test_time_footer_rule_year_2100),
	    cmocka_unit_test(test_time_lord_howe_half_hour_dst),
	    cmocka_unit_test(test_time_fixed_offsets),
	    cmocka_unit_test(test_time_suffix_overrides_zone),
	    cmocka_unit_test(test_time_fractions),
	    cmocka_unit_test(test_time_parse_forms),
	    cmocka_unit_test(test_time_parse_format),
	    cmocka_unit_test(test_time_parse_malformed),
	    cmocka_unit_test(test_time_parse_first_error_wins),
	    cmocka_unit_test(test_time_day_bounds_shanghai),
	    cmocka_unit_test(test_time_day_bounds_midnight_in_gap),
	    cmocka_unit_test(test_time_day_bounds_new_york_dst),
	    cmocka_unit_test(test_time_day_bounds_never_reversed),
	    cmocka_unit_test(test_time_civil_days),
	    cmocka_unit_test(test_time_date_parse_format),
	    cmocka_unit_test(test_time_format_utc),
	    cmocka_unit_test(test_time_duration_parse),
	    cmocka_unit_test(test_time_duration_format),
	    cmocka_unit_test(test_time_now),
	    cmocka_unit_test(test_time_unknown_zone),
	    cmocka_unit_test(test_time_utc_without_tzdata),
	    cmocka_unit_test(test_time_corrupt_tzif),
	    cmocka_unit_test(test_time_fuzzed_tzif),
	    cmocka_unit_test(test_time_footer_forms),
	    cmocka_unit_test(test_time_tzif_versions),
	    cmocka_unit_test(test_time_round_trip_new_york),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
