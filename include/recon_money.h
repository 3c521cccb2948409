/*
 * recon_money: exact money. Decimal text <-> int64 minor units.
 *
 * Invariants: no floating point anywhere; every accepted input maps to
 * exactly one int64 value; anything else (overflow, more decimals than the
 * currency's exponent, junk, empty) is rejected with a reason, never rounded.
 */
#ifndef RECON_MONEY_H
#define RECON_MONEY_H

#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

/* Flags for recon_money_parse(). */
#define RECON_MONEY_THOUSANDS	  0x1u /* accept ',' groups of three digits: "1,234.56" */
#define RECON_MONEY_DECIMAL_COMMA 0x2u /* ',' is the decimal mark (MT940 "11,8"); no grouping */
#define RECON_MONEY_MINOR	  0x4u /* input is integer minor units ("1234"): no decimal mark */

/*
 * ISO 4217 minor-unit exponent of a three-letter code, case-insensitive
 * ("CNY" 2, "JPY" 0, "KWD" 3, "usd" 2). Returns -1 for an unknown code.
 */
int recon_money_exponent(const char *currency);

/*
 * Parses s[0..len) into minor units of a currency with `exponent` decimals.
 * Accepted: optional surrounding ASCII blanks, one optional leading '+' or
 * '-', at least one digit before the decimal mark, and when a mark is present
 * 1..exponent digits after it ("12.3" = 1230 for exponent 2). "-0" is 0.
 * Rejected (RECON_EVALUE, reason in err->msg, err->where untouched): empty or
 * blank, junk anywhere ("12.3O", "N/A", "1e5", "0x10", "1 000"), more decimals
 * than `exponent` ("1.234" at 2, even "1.230"), a bare "." or "12." or ".5",
 * misplaced grouping, a value outside int64.
 */
RECON_MUSTCHECK int recon_money_parse(const char *s, size_t len, int exponent, unsigned flags,
				      int64_t *out, struct recon_err *err);

/*
 * Formats minor units as decimal text with exactly `exponent` decimals:
 * (123456, 2) -> "1234.56", (-5, 2) -> "-0.05", (7, 0) -> "7". INT64_MIN works.
 * Always NUL-terminates (when size > 0); returns the length it needed,
 * snprintf-style. 32 bytes are always enough.
 */
size_t recon_money_format(int64_t minor, int exponent, char *buf, size_t size);

#endif
