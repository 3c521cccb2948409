/*
 * recon_dsn: connection strings of database sources.
 *
 * A source's DSN comes from the environment variable its job names
 * (`"dsn_env"`), never from the job file. This module fetches it and parses
 * the MySQL/MariaDB URI form (PostgreSQL DSNs are handed to libpq whole, so
 * .pgpass, PGSERVICE and the keyword form keep working):
 *
 *   mysql://user:password@host:port/db?socket=/path/to.sock&connect_timeout=10
 *       &read_timeout=600&write_timeout=60
 *   mariadb://...   (same)
 *
 * Every part is optional ("mysql:///db?socket=..." reads user and password
 * from the option files); user, password, host, db and query values are
 * percent-decoded. Invariant: no error message from this module quotes the
 * DSN or any part of it, so a password can never leak through one.
 */
#ifndef RECON_DSN_H
#define RECON_DSN_H

#include "recon_err.h"
#include "recon_job.h"

/*
 * The DSN in side->dsn_env, borrowed from the environment. RECON_ECONFIG
 * "environment variable 'X' (upstream.dsn_env) is not set" when it is unset
 * or empty.
 */
RECON_MUSTCHECK int recon_dsn_get(const struct recon_side *side, const char **dsn,
				  struct recon_err *err);

/* A parsed mysql:// URI. Each string is NULL when absent; owned by the struct. */
struct recon_dsn_mysql {
	char *user;
	char *password;
	char *host; /* "[::1]" brackets removed */
	char *db;
	char *socket;		  /* ?socket= */
	unsigned port;		  /* 0: default */
	unsigned connect_timeout; /* seconds; 0: the caller's default */
	unsigned read_timeout; /* seconds a read may wait for the server; 0: the caller's default */
	unsigned write_timeout; /* seconds a write may wait; 0: the caller's default */
};

void recon_dsn_mysql_init(struct recon_dsn_mysql *d);
void recon_dsn_mysql_release(struct recon_dsn_mysql *d); /* NULL-safe */

/*
 * Parses a mysql:// or mariadb:// URI into d (initialised by the caller;
 * release it even on failure). `env` names the variable for messages.
 * RECON_ECONFIG on a malformed URI, naming the part that is wrong (never its
 * value).
 */
RECON_MUSTCHECK int recon_dsn_mysql_parse(const char *dsn, const char *env,
					  struct recon_dsn_mysql *d, struct recon_err *err);

/*
 * Copies the first line of a server or client message into out (at most
 * size - 1 bytes, NUL-terminated), dropping a leading "ERROR:  " / "FATAL:  "
 * and trailing blanks, and replacing every occurrence of `secret` (when
 * non-empty) with "***". Returns out.
 */
char *recon_dsn_first_line(const char *msg, const char *secret, char *out, size_t size);

#endif
