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
 * offset ("+08:00", "-0530", "Z"). Names with ".." or a leading '/' are
 * refused. Caller frees *out with recon_tz_free(). RECON_ECONFIG on an unknown
 * or unreadable zone.
 */
RECON_MUSTCHECK int recon_tz_load(struct recon_tz **out, const char *name, struct recon_err *err);
void recon_tz_free(struct recon_tz *tz);
const char *recon_tz_name(const struct recon_tz *tz);

/* UTC offset in seconds in force at instant utc_ms (east positive: Shanghai +28800). */
int32_t recon_tz_offset(const struct recon_tz *tz, int64_t utc_ms);

/*
 * Converts a wall-clock time (local_ms: the local fields encoded as if they
 * were UTC) to an instant. In a DST gap the time is read with the offset in
 * force before the gap (so 02:30 in a spring-forward gap maps past it); in an
 * overlap the earlier instant is chosen.
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
 * local time in `tz`. Fields are range-checked (Feb 30 is an error).
 * RECON_EVALUE with a reason on any defect.
 */
RECON_MUSTCHECK int recon_time_parse(const char *s, size_t len, const struct recon_tz *tz,
				     int64_t *utc_ms, struct recon_err *err);

/* "YYYY-MM-DD" -> day number. RECON_EVALUE on junk or an impossible date. */
RECON_MUSTCHECK int recon_date_parse(const char *s, int64_t *day, struct recon_err *err);
/* day -> "YYYY-MM-DD" (buf >= 11 bytes). */
void recon_date_format(int64_t day, char *buf, size_t size);

/*
 * Durations: one or more <integer><unit> groups, units ms, s, m, h, d
 * ("500ms", "90s", "5m", "2h", "1d", "1h30m"); "0" alone is zero. No
 * negatives, no overflow. RECON_EVALUE otherwise.
 */
RECON_MUSTCHECK int recon_duration_parse(const char *s, int64_t *ms, struct recon_err *err);
/* Shortest exact form: 900000 -> "15m", 5400000 -> "1h30m", 0 -> "0s". */
void recon_duration_format(int64_t ms, char *buf, size_t size);

/* Instant -> "2024-01-16T02:00:00.000Z" (buf >= 25 bytes). */
void recon_time_format_utc(int64_t utc_ms, char *buf, size_t size);
/* Instant -> "2024-01-16 10:00:00" wall clock in tz (buf >= 20 bytes). */
void recon_time_format_local(const struct recon_tz *tz, int64_t utc_ms, char *buf, size_t size);

/* The day (in tz) that holds instant utc_ms. */
int64_t recon_tz_day_of(const struct recon_tz *tz, int64_t utc_ms);
/* [start, end) of calendar day `day` in tz (23 or 25 hours long on DST days). */
void recon_tz_day_bounds(const struct recon_tz *tz, int64_t day, int64_t *start, int64_t *end);

/*
 * The current instant: $RECON_NOW (an ISO-8601 instant, a testing aid) when
 * set, else the system clock. RECON_ECONFIG when RECON_NOW is malformed.
 */
RECON_MUSTCHECK int recon_time_now(int64_t *now_ms, struct recon_err *err);

#endif
