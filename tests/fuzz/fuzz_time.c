/*
 * fuzz_time: the text parsers of src/recon_time.c: recon_time_parse() in the
 * zones UTC, Asia/Shanghai, America/New_York and NULL (UTC),
 * recon_duration_parse(), recon_date_parse(), and recon_tz_load() on short
 * texts (fixed offsets, name validation). The input is the text itself.
 *
 * Checked beyond the sanitizers, against recon_time.h:
 *   - failures are RECON_EVALUE (RECON_ECONFIG for zones) with a message and
 *     leave the output alone; successes leave err alone;
 *   - a timestamp reads the same in the zone "UTC" and in the NULL zone;
 *   - format_utc(t) parses back to t, and format_local(tz, t) parses back in
 *     tz to an instant with the same wall clock (to the second);
 *   - t lies within the bounds of its own local day;
 *   - a duration formats and parses back to itself; a date formats back to
 *     the very text it was parsed from;
 *   - recon_time_parse_format() under a set of real exports' time_formats
 *     (no seconds, d/m/Y, epoch seconds, compact, month names, 12-hour,
 *     offsets, fractions) fails cleanly or gives an instant whose local
 *     wall clock parses back; under "%Y-%m-%d %H:%M:%S" it agrees with
 *     recon_time_parse() on the default form; and the input taken as a
 *     format is either refused by recon_time_format_check() or usable.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_time.h"

#define SENTINEL ((int64_t)0x5A5A5A5A5A5A5A5A)
#define NZONES	 4

static const char *const zone_names[NZONES] = {"UTC", "Asia/Shanghai", "America/New_York", NULL};
static struct recon_tz *zones[NZONES];
static int64_t min_ms,
    max_ms; /* instants whose text form has a year 0001..9999, with a day spare */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct recon_err err;

	(void)argc;
	(void)argv;
	for (int i = 0; i < NZONES; i++) {
		if (!zone_names[i])
			continue;
		recon_err_init(&err);
		if (recon_tz_load(&zones[i], zone_names[i], &err) < 0) {
			fprintf(stderr,
				"fuzz_time: cannot load zone '%s': %s (tzdata installed?)\n",
				zone_names[i], err.msg);
			abort();
		}
	}
	min_ms = (recon_days_from_civil(1, 1, 1) + 1) * RECON_MS_PER_DAY;
	max_ms = recon_days_from_civil(9999, 12, 31) * RECON_MS_PER_DAY;
	return 0;
}

static void fail(const char *what, const char *zone, const uint8_t *s, size_t len)
{
	fprintf(stderr, "fuzz_time: %s (zone %s, input '", what, zone ? zone : "NULL");
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, s[i] >= 0x20 && s[i] < 0x7f ? "%c" : "\\x%02x", s[i]);
	fprintf(stderr, "')\n");
	abort();
}

static void check_err(int rc, int code, const struct recon_err *err, const char *what,
		      const uint8_t *s, size_t len)
{
	if (rc != code || err->code != code || !err->msg[0] || strlen(err->msg) >= sizeof(err->msg))
		fail(what, "-", s, len);
}

static int64_t floor_sec(int64_t ms)
{
	int64_t r = ms % RECON_MS_PER_SEC;

	return ms - (r < 0 ? r + RECON_MS_PER_SEC : r);
}

/* recon_time_parse() in zone i; returns whether it accepted, *out the instant. */
static bool timestamp(const uint8_t *s, size_t len, int i, int64_t *out)
{
	const struct recon_tz *tz = zones[i];
	const char *zn = zone_names[i];
	char *copy = malloc(len ? len : 1); /* exact size: no NUL to lean on */
	struct recon_err err;
	int64_t t = SENTINEL, back = SENTINEL, start, end;
	char buf[64];
	int rc;

	if (!copy)
		abort();
	memcpy(copy, s, len);
	recon_err_init(&err);
	rc = recon_time_parse(copy, len, tz, &t, &err);
	free(copy);
	if (rc < 0) {
		check_err(rc, RECON_EVALUE, &err, "timestamp: bad failure", s, len);
		if (t != SENTINEL)
			fail("timestamp: failure changed *utc_ms", zn, s, len);
		return false;
	}
	if (err.code || err.msg[0] || err.where[0])
		fail("timestamp: success touched err", zn, s, len);
	*out = t;
	if (t < min_ms || t > max_ms)
		return true; /* "+14:00" on 0001-01-01 leaves the printable range */

	recon_time_format_utc(t, buf, sizeof(buf));
	recon_err_init(&err);
	if (recon_time_parse(buf, strlen(buf), NULL, &back, &err) < 0 || back != t)
		fail("timestamp: format_utc does not parse back", zn, s, len);

	recon_time_format_local(tz, t, buf, sizeof(buf));
	back = SENTINEL;
	recon_err_init(&err);
	if (recon_time_parse(buf, strlen(buf), tz, &back, &err) < 0)
		fail("timestamp: format_local does not parse", zn, s, len);
	if (recon_tz_to_local(tz, back) != floor_sec(recon_tz_to_local(tz, t)))
		fail("timestamp: format_local parses back to another wall clock", zn, s, len);

	recon_tz_day_bounds(tz, recon_tz_day_of(tz, t), &start, &end);
	if (!(start <= t && t < end))
		fail("timestamp: instant outside its own day", zn, s, len);
	return true;
}

static void duration(const uint8_t *s, size_t len)
{
	char *text = fuzz_strndup(s, len);
	struct recon_err err;
	int64_t ms = SENTINEL, back = SENTINEL;
	char buf[128];
	int rc;

	recon_err_init(&err);
	rc = recon_duration_parse(text, &ms, &err);
	if (rc < 0) {
		check_err(rc, RECON_EVALUE, &err, "duration: bad failure", s, len);
		if (ms != SENTINEL)
			fail("duration: failure changed *ms", "-", s, len);
	} else {
		if (err.code || err.msg[0])
			fail("duration: success touched err", "-", s, len);
		if (ms < 0)
			fail("duration: negative", "-", s, len);
		if (strspn(text, "0123456789dhms") != strlen(text))
			fail("duration: accepted a character outside [0-9dhms]", "-", s, len);
		recon_duration_format(ms, buf, sizeof(buf));
		recon_err_init(&err);
		if (recon_duration_parse(buf, &back, &err) < 0 || back != ms)
			fail("duration: format does not parse back", "-", s, len);
	}
	free(text);
}

static void date(const uint8_t *s, size_t len)
{
	char *text = fuzz_strndup(s, len);
	struct recon_err err;
	int64_t day = SENTINEL;
	char buf[32];
	int rc;

	recon_err_init(&err);
	rc = recon_date_parse(text, &day, &err);
	if (rc < 0) {
		check_err(rc, RECON_EVALUE, &err, "date: bad failure", s, len);
		if (day != SENTINEL)
			fail("date: failure changed *day", "-", s, len);
	} else {
		recon_date_format(day, buf, sizeof(buf));
		if (strcmp(buf, text))
			fail("date: does not format back to its text", "-", s, len);
	}
	free(text);
}

/* Zone names and fixed offsets; real names read real tzdata files. */
static void zone(const uint8_t *s, size_t len)
{
	char *name = fuzz_strndup(s, len);
	static char dummy;
	struct recon_tz *tz = (struct recon_tz *)&dummy; /* must become NULL on failure */
	struct recon_err err;
	int rc;

	recon_err_init(&err);
	rc = recon_tz_load(&tz, name, &err);
	if (rc < 0) {
		check_err(rc, RECON_ECONFIG, &err, "zone: bad failure", s, len);
		if (tz)
			fail("zone: failure left *out set", "-", s, len);
	} else {
		int64_t t = 1705370400000LL; /* 2024-01-16T02:00:00Z */
		int32_t off = recon_tz_offset(tz, t);

		if (strcmp(recon_tz_name(tz), name))
			fail("zone: name differs", "-", s, len);
		if (off <= -26 * 3600 || off >= 26 * 3600)
			fail("zone: offset out of range", "-", s, len);
		(void)recon_tz_to_utc(tz, recon_tz_to_local(tz, t));
	}
	recon_tz_free(tz);
	free(name);
}

/* The input under real exports' time_formats (Asia/Shanghai). */
static void formatted(const uint8_t *s, size_t len)
{
	static const char *const formats[] = {
	    "%Y-%m-%d %H:%M",	    "%d/%m/%Y %H:%M:%S", "%s",
	    "%Y%m%d%H%M%S",	    "%b %e %Y %I:%M %p", "%Y-%m-%dT%H:%M:%S%z",
	    "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S",
	};
	const struct recon_tz *tz = zones[1];
	char *text = fuzz_strndup(s, len), buf[64];
	struct recon_err err;
	int64_t t, back;
	int rc;

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		t = SENTINEL;
		recon_err_init(&err);
		rc = recon_time_parse_format(text, len, formats[i], tz, &t, &err);
		if (rc < 0) {
			check_err(rc, RECON_EVALUE, &err, "time_format: bad failure", s, len);
			if (t != SENTINEL)
				fail("time_format: failure changed *utc_ms", formats[i], s, len);
			continue;
		}
		if (err.code || err.msg[0])
			fail("time_format: success touched err", formats[i], s, len);
		if (t < min_ms || t > max_ms)
			continue;
		recon_time_format_local(tz, t, buf, sizeof(buf));
		back = SENTINEL;
		recon_err_init(&err);
		if (recon_time_parse(buf, strlen(buf), tz, &back, &err) < 0 ||
		    recon_tz_to_local(tz, back) != floor_sec(recon_tz_to_local(tz, t)))
			fail("time_format: local wall clock does not parse back", formats[i], s,
			     len);
		/* the default form without fraction or suffix: whatever recon_time_parse()
		   accepts, the format reads the same (it also takes 1-digit fields) */
		if (i == 7 && len == 19 && strlen(text) == 19) {
			back = SENTINEL;
			recon_err_init(&err);
			if (recon_time_parse(text, len, tz, &back, &err) == 0 && back != t)
				fail("time_format: disagrees with recon_time_parse", formats[i], s,
				     len);
		}
	}
	if (len == 19 && strlen(text) == 19 && text[4] == '-' && text[7] == '-' &&
	    text[10] == ' ' && text[13] == ':' && text[16] == ':') {
		recon_err_init(&err);
		if (recon_time_parse(text, len, tz, &back, &err) == 0) {
			recon_err_init(&err);
			if (recon_time_parse_format(text, len, "%Y-%m-%d %H:%M:%S", tz, &t, &err) <
				0 ||
			    t != back)
				fail("time_format: refuses what recon_time_parse reads", "-", s,
				     len);
		}
	}
	/* the input as a format */
	recon_err_init(&err);
	if (recon_time_format_check(text, &err) == 0) {
		t = SENTINEL;
		recon_err_init(&err);
		rc = recon_time_parse_format("2024-01-16 10:00:00", 19, text, tz, &t, &err);
		if (rc < 0)
			check_err(rc, RECON_EVALUE, &err, "time_format: bad failure (as format)", s,
				  len);
	} else if (err.code != RECON_ECONFIG || !err.msg[0]) {
		fail("time_format: bad check failure", "-", s, len);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t t[NZONES] = {0};
	bool ok[NZONES];

	for (int i = 0; i < NZONES; i++)
		ok[i] = timestamp(data, size, i, &t[i]);
	/* the zone "UTC" and the NULL zone are the same zone */
	if (ok[0] != ok[3] || (ok[0] && t[0] != t[3]))
		fail("timestamp: zone UTC and NULL zone differ", "UTC", data, size);
	for (int i = 1; i < NZONES; i++)
		if (ok[i] != ok[0])
			fail("timestamp: accepted in one zone only", zone_names[i], data, size);
	duration(data, size);
	date(data, size);
	formatted(data, size);
	if (size <= 300)
		zone(data, size);
	return 0;
}
