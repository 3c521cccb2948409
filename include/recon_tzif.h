/*
 * recon_tzif: the time zone file reader.
 *
 * Finds a zone by IANA name under $TZDIR (else /usr/share/zoneinfo), reads
 * its TZif file (RFC 8536, versions 1-4) and the POSIX TZ rule of its footer
 * into a struct recon_tzif: what the file says, checked, and nothing more.
 * recon_time evaluates it (offsets, wall clocks, days); this module has no
 * clock, no calendar and no global state.
 *
 * Invariants of a loaded struct recon_tzif: trans[] strictly increasing;
 * every offset in it (first_off, trans_off[], the rule's) strictly within
 * +-RECON_TZIF_OFFSET_LIMIT; leap-second records ignored (instants are POSIX
 * time, as everywhere in recon). Files over 1 MiB or with any inconsistency
 * are refused, never trusted.
 */
#ifndef RECON_TZIF_H
#define RECON_TZIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

/*
 * Bound on any UTC offset a zone holds, in seconds (exclusive). Real offsets
 * stay within +-16h; POSIX TZ strings allow up to 24:59:59 (and DST one hour
 * more). So every solution of local = utc + offset lies within it of local.
 */
#define RECON_TZIF_OFFSET_LIMIT (26 * 3600)

/* One end of a DST period in a POSIX TZ rule: "Jn", "n" or "Mm.w.d", then "/time". */
struct recon_tzif_rule_date {
	char kind;    /* 'J' (1..365, no Feb 29), 'D' (0..365, zero-based), 'M' */
	int n;	      /* J and D: the day */
	int mon;      /* M: month 1..12 */
	int week;     /* M: week 1..5, 5 = last */
	int wday;     /* M: weekday 0..6, 0 = Sunday */
	int32_t time; /* local time of day in seconds, -167h..167h (RFC 8536 v3) */
};

/* A POSIX TZ string ("CST-8", "EST5EDT,M3.2.0,M11.1.0"), offsets east-positive. */
struct recon_tzif_rule {
	int32_t std_off;
	int32_t dst_off;
	bool has_dst;
	struct recon_tzif_rule_date start; /* DST begins; time is standard local time */
	struct recon_tzif_rule_date end;   /* DST ends; time is daylight local time */
};

/* A zone file's content. Initialise with {0}; release with recon_tzif_release(). */
struct recon_tzif {
	size_t ntrans;
	int64_t *trans;	    /* transition instants in seconds, strictly increasing */
	int32_t *trans_off; /* offset in force from trans[i] on */
	int32_t first_off;  /* before trans[0]: time type 0 (RFC 8536 3.2) */
	bool has_rule;	    /* the footer's rule governs instants >= the last transition */
	struct recon_tzif_rule rule;
};

/*
 * Loads the zone `name` into *z (zeroed by the caller). A name is at most
 * 255 characters of [A-Za-z0-9_+-] components joined by single '/': so ".."
 * or a leading '/' are refused. 0, or RECON_ECONFIG with err set: "invalid
 * time zone name '...'", "unknown time zone 'Mars/Base'" (no such file, or a
 * folder), "time zone file '...' is not a TZif file: ...", or the system's
 * reason it cannot be read. *z holds nothing to release on failure.
 */
RECON_MUSTCHECK int recon_tzif_load(struct recon_tzif *z, const char *name, struct recon_err *err);

/* Frees z's arrays and zeroes it; NULL-safe. */
void recon_tzif_release(struct recon_tzif *z);

#endif
