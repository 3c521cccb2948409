/*
 * recon_time: instants, time zones, durations, dates and windows.
 *
 * An instant is int64 milliseconds since 1970-01-01T00:00:00Z (UTC), ms for
 * short. Local ("wall clock") times are converted with real tz database rules,
 * read from the system's TZif files (/usr/share/zoneinfo, or $TZDIR), so
 * Asia/Shanghai, UTC and DST zones all work; fixed offsets ("+08:00") too.
 * A day is the number of days since 1970-01-01 (proleptic Gregorian).
 * A window is half-open: [start, end).
 */
#ifndef RECON_TIME_H
#define RECON_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

#define RECON_MS_PER_SEC  1000LL
#define RECON_MS_PER_MIN  (60LL * RECON_MS_PER_SEC)
#define RECON_MS_PER_HOUR (60LL * RECON_MS_PER_MIN)
#define RECON_MS_PER_DAY  (24LL * RECON_MS_PER_HOUR)

struct recon_tz;

/*
 * Loads a zone by IANA name ("Asia/Shanghai", "UTC", "Etc/GMT-8") or fixed
 * offset ("+08:00", "-0530", "+08", "Z"; hh 00-23, mm 00-59). Names are read
 * as TZif files (versions 1-4, leap-second records ignored) from $TZDIR, else
 * /usr/share/zoneinfo; "UTC", "Z" and "Etc/UTC" are built in and need no
 * tzdata. A name is at most 255 characters of [A-Za-z0-9_+-] components
 * joined by single '/': so ".." or a leading '/' are refused. Files over
 * 1 MiB or with any inconsistency are refused, never trusted. The zone is
 * immutable: share it freely. Caller frees *out with recon_tz_free(); *out
 * is NULL on failure. RECON_ECONFIG on an invalid name, an unknown,
 * unreadable or corrupt zone ("unknown time zone 'Mars/Base'",
 * "time zone file '...' is not a TZif file: ...").
 */
RECON_MUSTCHECK int recon_tz_load(struct recon_tz **out, const char *name, struct recon_err *err);
void recon_tz_free(struct recon_tz *tz); /* NULL-safe */
/* The name given to recon_tz_load(), borrowed until recon_tz_free(). */
const char *recon_tz_name(const struct recon_tz *tz);

/*
 * UTC offset in seconds in force at instant utc_ms (east positive: Shanghai
 * +28800). Before the file's first transition: time type 0 (RFC 8536 3.2);
 * after its last: the footer's POSIX TZ rule, else the last time type.
 * Here and below a NULL tz means UTC.
 */
int32_t recon_tz_offset(const struct recon_tz *tz, int64_t utc_ms);

/*
 * Converts a wall-clock time (local_ms: the local fields encoded as if they
 * were UTC) to an instant. In a DST gap the time is read with the offset in
 * force before the gap (so 02:30 in a spring-forward gap maps past it); in an
 * overlap the earlier instant is chosen. Examines the offset segments within
 * 26 hours of local_ms: two binary searches for zones without DST.
 */
int64_t recon_tz_to_utc(const struct recon_tz *tz, int64_t local_ms);
/* Instant -> wall clock encoded as if UTC. */
int64_t recon_tz_to_local(const struct recon_tz *tz, int64_t utc_ms);

/* Calendar <-> day numbers (valid for years 1..9999). */
int64_t recon_days_from_civil(int y, unsigned m, unsigned d);
void recon_civil_from_days(int64_t days, int *y, unsigned *m, unsigned *d);

/*
 * Parses a timestamp: "YYYY-MM-DD HH:MM:SS" with optional ".f" to ".fffffffff"
 * fraction (truncated to ms), 'T' or ' ' separator, optional "Z" or "+hh:mm" /
 * "+hhmm" / "+hh" suffix; surrounding blanks ignored; also "YYYY/MM/DD ..."
 * and a date alone ("YYYY-MM-DD" = midnight). Without a suffix the fields are
 * local time in `tz` (NULL: UTC). Fields are range-checked (Feb 30 is an
 * error). Strict on purpose: exactly two digits per field, years 0001-9999,
 * seconds required ("10:00" is rejected), second 60 rejected (no leap seconds
 * in statements), at most 9 fraction digits, uppercase 'T' and 'Z' only, no
 * blank before the suffix; blanks are ' ' and '\t'. s need not be
 * NUL-terminated. *utc_ms is untouched on failure. RECON_EVALUE with a reason
 * on any defect: "invalid timestamp '2024-13-01': month 13", the input cut to
 * 40 bytes + "..." and escaped.
 */
RECON_MUSTCHECK int recon_time_parse(const char *s, size_t len, const struct recon_tz *tz,
				     int64_t *utc_ms, struct recon_err *err);

/*
 * As recon_time_parse(), for a source whose timestamps have their own form
 * (a side's "time_format", strftime-style): %Y (4 digits), %m, %d, %H, %M,
 * %S (1 or 2 digits; %S may carry a ".fff" fraction unless the format spells
 * it), %e (day, blank-padded), %b (Jan-Dec), %I with %p (12-hour clock,
 * AM/PM), %f (1-9 fraction digits, truncated to ms), %s (epoch seconds,
 * an instant: the zone plays no part), %z (+hh:mm, +hhmm, +hh or Z: then the
 * zone plays no part), %% (a percent sign). A blank in the format matches one
 * or more blanks; other characters match themselves. Fields not in the
 * format are zero (no seconds: :00; no time: midnight). fmt NULL: the
 * default form (recon_time_parse). RECON_EVALUE with the reason and the
 * format on any mismatch; *utc_ms untouched then.
 */
RECON_MUSTCHECK int recon_time_parse_format(const char *s, size_t len, const char *fmt,
					    const struct recon_tz *tz, int64_t *utc_ms,
					    struct recon_err *err);
/*
 * Checks a time_format before use: known directives only, a date (%Y, %m or
 * %b, and %d) or %s, %I only with %p. RECON_ECONFIG naming the defect.
 */
RECON_MUSTCHECK int recon_time_format_check(const char *fmt, struct recon_err *err);

/* "YYYY-MM-DD" -> day number. RECON_EVALUE on junk or an impossible date. */
RECON_MUSTCHECK int recon_date_parse(const char *s, int64_t *day, struct recon_err *err);
/* day -> "YYYY-MM-DD" (buf >= 11 bytes). */
void recon_date_format(int64_t day, char *buf, size_t size);

/*
 * Durations: one or more <integer><unit> groups, units ms, s, m, h, d
 * ("500ms", "90s", "5m", "2h", "1d", "1h30m"); "0" alone is zero. Each unit
 * at most once, in the order d, h, m, s, ms ("5m5m" and "30s1m" are errors);
 * no blanks, no signs, no fractions, no overflow. RECON_EVALUE otherwise,
 * *ms untouched.
 */
RECON_MUSTCHECK int recon_duration_parse(const char *s, int64_t *ms, struct recon_err *err);
/*
 * Canonical exact form, largest units first: 900000 -> "15m", 5400000 ->
 * "1h30m", 0 -> "0s"; negative values get a '-'. Parses back to ms.
 */
void recon_duration_format(int64_t ms, char *buf, size_t size);

/* Instant -> "2024-01-16T02:00:00.000Z" (buf >= 25 bytes). */
void recon_time_format_utc(int64_t utc_ms, char *buf, size_t size);
/* Instant -> "2024-01-16 10:00:00" wall clock in tz (buf >= 20 bytes). */
void recon_time_format_local(const struct recon_tz *tz, int64_t utc_ms, char *buf, size_t size);

/* The day (in tz) that holds instant utc_ms. */
int64_t recon_tz_day_of(const struct recon_tz *tz, int64_t utc_ms);
/*
 * [start, end) of calendar day `day` in tz (23 or 25 hours long on DST days):
 * from the first instant whose wall clock reaches the day's midnight to the
 * first that reaches the next one. Consecutive days are contiguous and never
 * reversed; a day the zone skips entirely (Pacific/Apia 2011-12-30) is empty
 * (start == end, where the wall clock jumps over it).
 */
void recon_tz_day_bounds(const struct recon_tz *tz, int64_t day, int64_t *start, int64_t *end);

/*
 * The current instant: $RECON_NOW (a testing aid, parsed by
 * recon_time_parse(); without a suffix it is UTC) when set and non-empty,
 * else the system clock. RECON_ECONFIG when RECON_NOW is malformed, with
 * where = "RECON_NOW".
 */
RECON_MUSTCHECK int recon_time_now(int64_t *now_ms, struct recon_err *err);
/* Milliseconds of the monotonic clock: for durations (never $RECON_NOW, never stepped). */
int64_t recon_monotonic_ms(void);

#endif
