/*
 * recon_cmd: the subcommands. Each takes its own argv (argv[0] is the
 * subcommand's name) and returns the process exit code; main.c calls exit().
 * Results go to stdout, messages to stderr.
 */
#ifndef RECON_CMD_H
#define RECON_CMD_H

#include <stdbool.h>

int recon_cmd_run(int argc, char **argv);      /* run, rerun */
int recon_cmd_diff(int argc, char **argv);     /* diff */
int recon_cmd_status(int argc, char **argv);   /* status */
int recon_cmd_check(int argc, char **argv);    /* check: monitoring-plugin exit codes */
int recon_cmd_tickets(int argc, char **argv);  /* tickets */
int recon_cmd_validate(int argc, char **argv); /* validate: preflight, records nothing */

/* A tiny option parser shared by the commands (POSIX has no getopt_long). */
struct recon_opt {
	const char *name; /* "job" for --job */
	bool takes_value;
	const char **value; /* where the value goes (takes_value) */
	bool *flag;	    /* set to true (flags) */
};

/*
 * Parses argv[1..] against opts (NULL-named terminator). --name VALUE and
 * --name=VALUE both work; --help sets *help. Unknown options and stray
 * arguments print a message naming them and return -1.
 */
int recon_opt_parse(int argc, char **argv, const struct recon_opt *opts, bool *help);

#endif
