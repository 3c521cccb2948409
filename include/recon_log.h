/*
 * recon_log: leveled messages on stderr, and DSN redaction.
 *
 * Results go to stdout from main.c and cmd_*.c only; everything else speaks
 * through here. The level is process-wide and set once by main.c before any
 * work starts (the one piece of process state, like git's verbosity).
 */
#ifndef RECON_LOG_H
#define RECON_LOG_H

#include <stddef.h>

#include "recon_err.h"

enum recon_log_level {
	RECON_LOG_ERROR = 0,
	RECON_LOG_WARN = 1,
	RECON_LOG_INFO = 2,
	RECON_LOG_DEBUG = 3,
};

void recon_log_set_level(enum recon_log_level level);
enum recon_log_level recon_log_get_level(void);
void recon_log(enum recon_log_level level, const char *fmt, ...) RECON_PRINTF(2, 3);
/*
 * A deliberate alert of a successful run (DESIGN: "recon: ALERT ...", never
 * "error:"): shown at the warning level, so --quiet keeps it.
 */
void recon_log_alert(const char *fmt, ...) RECON_PRINTF(1, 2);

/*
 * Copies a connection string into out with any password removed:
 * URI userinfo passwords ("postgresql://u:secret@h/db" -> "postgresql://u:***@h/db"),
 * `password=` keyword values and `password=` query parameters. Always
 * NUL-terminates; returns out.
 */
char *recon_log_redact(const char *dsn, char *out, size_t size);

#endif
