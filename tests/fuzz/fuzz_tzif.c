/*
 * fuzz_tzif: the TZif reader (src/recon_tzif.c) and the zone arithmetic of
 * src/recon_time.c. The input is a zone file: the harness writes it to
 * $TZDIR/Fuzz/Zone (TZDIR is a scratch folder), loads "Fuzz/Zone" with
 * recon_tz_load(), and when it loads asks it for offsets, local times,
 * instants and day bounds at a fixed set of instants (extremes, 1901, 1970,
 * 2024, 2038, 9999 and so on).
 *
 * The zones the jobs use come from the system's tzdata, so this is defence
 * in depth: a corrupt or crafted file must be refused or give bounded
 * answers, never crash or hang. Checked beyond the sanitizers: failures are
 * RECON_ECONFIG with *out NULL; offsets stay within +-26 h (the bound
 * recon_tzif.h promises, RECON_TZIF_OFFSET_LIMIT); to_local(t) = t + offset(t); to_utc() of a
 * wall clock stays within 26 h of it; days are contiguous, never reversed,
 * and start at the first instant whose wall clock reaches their midnight (a
 * day the zone skips is empty); an instant never precedes its day.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_time.h"

#define LIMIT_MS (26 * RECON_MS_PER_HOUR)

static char *zone_path;
static int64_t min_ms, max_ms;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	zone_path = fuzz_scratch_path("Fuzz/Zone");
	setenv("TZDIR", fuzz_scratch_dir(), 1);
	min_ms = (recon_days_from_civil(1, 1, 1) + 2) * RECON_MS_PER_DAY;
	max_ms = (recon_days_from_civil(9999, 12, 31) - 1) * RECON_MS_PER_DAY;
	return 0;
}

static void fail(const char *what, int64_t t)
{
	fprintf(stderr, "fuzz_tzif: %s (instant %lld ms)\n", what, (long long)t);
	abort();
}

static void probe(const struct recon_tz *tz, int64_t t)
{
	int32_t off = recon_tz_offset(tz, t);
	int64_t local, u, start, end, day;
	char buf[64];

	if (off <= -26 * 3600 || off >= 26 * 3600)
		fail("offset out of range", t);
	if (t < min_ms || t > max_ms) {
		/* extremes: only that nothing overflows (UBSan) or loops */
		(void)recon_tz_to_utc(tz, recon_tz_to_local(tz, t));
		return;
	}
	local = recon_tz_to_local(tz, t);
	if (local != t + (int64_t)off * RECON_MS_PER_SEC)
		fail("to_local is not t + offset", t);
	u = recon_tz_to_utc(tz, local);
	if (u <= local - LIMIT_MS || u >= local + LIMIT_MS)
		fail("to_utc more than 26 h from the wall clock", t);
	day = recon_tz_day_of(tz, t);
	for (int64_t d = day - 1; d <= day + 1; d++) {
		int64_t m = d * RECON_MS_PER_DAY, next_start, next_end;
		recon_tz_day_bounds(tz, d, &start, &end);
		recon_tz_day_bounds(tz, d + 1, &next_start, &next_end);
		/*
		 * Days are never reversed (corpus/tzif/regress-day-reversed: a wall
		 * clock that jumped over a whole day, then fell back into it) and
		 * contiguous; each starts at the first instant whose wall clock
		 * reaches its midnight, even inside a gap (corpus/tzif/
		 * regress-day-bounds-gap-midnight: the transition). So an empty day
		 * is one the wall clock jumps over, as Pacific/Apia's 2011-12-30.
		 */
		if (end < start)
			fail("day bounds reversed", t);
		if (next_start != end)
			fail("consecutive days not contiguous", t);
		if (recon_tz_to_local(tz, start) < m || recon_tz_to_local(tz, start - 1) >= m)
			fail("a day does not start where its midnight is first reached", t);
	}
	recon_tz_day_bounds(tz, day, &start, &end);
	/* the day of t holds t unless the zone's wall clock came back into it later */
	if (start > t)
		fail("an instant before its day starts", t);
	recon_time_format_local(tz, t, buf, sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t at[] = {
	    INT64_MIN,
	    INT64_MIN + 1,
	    -62135596800000LL - 1, /* 0001-01-01T00:00:00Z - 1 ms */
	    -62135596800000LL + 3 * RECON_MS_PER_DAY,
	    -2208988800000LL, /* 1900-01-01 */
	    -2147483648000LL, /* the 32-bit TZif limit */
	    -1,
	    0,
	    1705370400000LL,   /* 2024-01-16T02:00:00Z */
	    1710054000000LL,   /* 2024-03-10T07:00:00Z: New York springs forward */
	    1730613600000LL,   /* 2024-11-03T06:00:00Z: New York falls back */
	    2147483647000LL,   /* 2038 */
	    4102444800000LL,   /* 2100 */
	    253402214400000LL, /* 9999-12-31 */
	    INT64_MAX - 1,
	    INT64_MAX,
	};
	struct recon_tz *tz = NULL;
	struct recon_err err;
	int rc;

	fuzz_write_file(zone_path, data, size);
	recon_err_init(&err);
	rc = recon_tz_load(&tz, "Fuzz/Zone", &err);
	if (rc < 0) {
		if (rc != RECON_ECONFIG || err.code != rc || !err.msg[0] || tz)
			fail("load failed without RECON_ECONFIG and a message, or left *out", 0);
		return 0;
	}
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		probe(tz, at[i]);
		/* a second around each, for the transition edges */
		if (at[i] > INT64_MIN + RECON_MS_PER_SEC && at[i] < INT64_MAX - RECON_MS_PER_SEC) {
			probe(tz, at[i] - RECON_MS_PER_SEC);
			probe(tz, at[i] + RECON_MS_PER_SEC);
		}
	}
	recon_tz_free(tz);
	return 0;
}
