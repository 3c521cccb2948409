/*
 * recon_err: the error value every fallible call fills in.
 *
 * A fallible function returns 0 on success or a negative RECON_E* code, and
 * takes `struct recon_err *err` as its last parameter. The first error wins:
 * once err->code is set, later recon_err_set() calls leave it alone, so the
 * innermost, most precise message reaches the user. On success err is not
 * touched. `where` names the file, line and field ("rules/wx.json:12: 'margin'",
 * "bill.csv:88: 'amount'"); `msg` says what failed, lowercase, no final period.
 */
#ifndef RECON_ERR_H
#define RECON_ERR_H

#include <stdarg.h>

#if defined(__GNUC__) || defined(__clang__)
#define RECON_MUSTCHECK	   __attribute__((warn_unused_result))
#define RECON_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RECON_NORETURN	   __attribute__((noreturn))
#define RECON_UNUSED	   __attribute__((unused))
#else
#define RECON_MUSTCHECK
#define RECON_PRINTF(f, a)
#define RECON_NORETURN
#define RECON_UNUSED
#endif

/* Iterator results (recon_source_next and friends). */
#define RECON_ROW  1
#define RECON_DONE 0

/* Error codes: negative, each maps to one DESIGN exit code. */
#define RECON_EINTERNAL (-1) /* a bug or an unexpected system failure: exit 1 */
#define RECON_EIO	(-2) /* local file or state store I/O: exit 1 */
#define RECON_EINPUT	(-3) /* bad input data (rejects over the limit, bad totals): exit 65 */
#define RECON_EUNAVAIL	(-4) /* a source or database unavailable: exit 69 */
#define RECON_ELOCKED	(-5) /* another run holds the job lock: exit 75 */
#define RECON_ECONFIG	(-6) /* bad job file or profile: exit 78 */
#define RECON_EUSAGE	(-7) /* bad command line: exit 64 */
#define RECON_EVALUE	(-8) /* one value failed to parse (money, time, status): becomes a reject */
#define RECON_ENOTFOUND (-9) /* the thing looked up does not exist (state queries) */
/* -10 is RECON_ERETRY (recon_action.h) */
#define RECON_EPERM (-11) /* permission denied: a grant is missing: exit 77 */
#define RECON_EWRITE                                                                               \
	(-12) /* cannot write the state store or heartbeat (disk full, read-only): exit 73 */

struct recon_err {
	int code;	 /* 0 or RECON_E*; first error wins */
	char where[160]; /* "rules/wx.json:12: 'amount_minor'", "statements/x.csv:88" */
	char msg[256];
};

/* Resets err to "no error". */
void recon_err_init(struct recon_err *err);

/*
 * Records an error unless one is already recorded. `where` may be NULL.
 * Returns `code`, so callers can write `return recon_err_set(err, ...)`.
 */
int recon_err_set(struct recon_err *err, int code, const char *where, const char *fmt, ...)
    RECON_PRINTF(4, 5);
int recon_err_setv(struct recon_err *err, int code, const char *where, const char *fmt, va_list ap)
    RECON_PRINTF(4, 0);

/* Formats "where: msg" (or "msg") into buf; returns buf. */
const char *recon_err_str(const struct recon_err *err, char *buf, unsigned long size);

/*
 * Quoting input in messages: at most RECON_QUOTE_MAX input bytes (then "..."),
 * so a 1 MiB field cannot flood a log; control bytes, quote and backslash
 * escaped as \xNN, \' and \\; bytes >= 0x80 too with RECON_QUOTE_ASCII,
 * else kept (statements are UTF-8 after decoding). dst holds RECON_QUOTE_BUF.
 */
#define RECON_QUOTE_MAX	  40
#define RECON_QUOTE_BUF	  (RECON_QUOTE_MAX * 4 + 4)
#define RECON_QUOTE_ASCII 0x1u
const char *recon_err_quote(char *dst, const char *s, unsigned long len, unsigned flags);

/* DESIGN exit code for an error code (0 for 0). */
int recon_err_exit_code(int code);

#endif
