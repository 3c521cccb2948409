/*
 * recon_cmd: the subcommands. Each takes its own argv (argv[0] is the
 * subcommand's name) and returns the process exit code; main.c calls exit().
 * Results go to stdout, messages to stderr.
 */
#ifndef RECON_CMD_H
#define RECON_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

struct json_t;
struct recon_job;
struct recon_state;

int recon_cmd_run(int argc, char **argv);      /* run, rerun */
int recon_cmd_diff(int argc, char **argv);     /* diff */
int recon_cmd_status(int argc, char **argv);   /* status */
int recon_cmd_check(int argc, char **argv);    /* check: monitoring-plugin exit codes */
int recon_cmd_tickets(int argc, char **argv);  /* tickets, tickets close */
int recon_cmd_rejects(int argc, char **argv);  /* rejects */
int recon_cmd_report(int argc, char **argv);   /* report: the daily report */
int recon_cmd_validate(int argc, char **argv); /* validate: preflight, records nothing */

/* The commands' option parser (getopt_long underneath). */
struct recon_opt {
	const char *name; /* "job" for --job */
	bool takes_value;
	const char **value; /* where the value goes (takes_value) */
	bool *flag;	    /* set to true (flags) */
};

/*
 * Parses argv[1..] against opts (NULL-named terminator). --name VALUE,
 * --name=VALUE and the shared short forms (-j job, -d date, -m mode, -q quiet,
 * -v verbose) work, options and arguments in any order, `--` ends the
 * options; -h/--help sets *help. An unknown option prints one line naming it
 * and the nearest valid option, then "try 'recon CMD --help'"; stray
 * arguments and missing values print one line too. Returns 0 or -1.
 */
int recon_opt_parse(int argc, char **argv, const struct recon_opt *opts, bool *help);

/*
 * The start every command shares: parses argv against opts; on a bad option
 * returns 64 (recon_opt_parse said why, in one line); on --help prints usage
 * to stdout and returns 0; else returns -1 and the command goes on.
 */
int recon_opt_start(int argc, char **argv, const struct recon_opt *opts, const char *usage);
/* "recon CMD: needs WHAT; try 'recon CMD --help'" on stderr; returns 64. */
int recon_opt_missing(const char *cmd, const char *what);

/* Edit distance between two words of at most 64 bytes ((size_t)-1 beyond). */
size_t recon_opt_distance(const char *a, const char *b);

/* Logs err (one line, stderr) and returns its exit code. */
int recon_cmd_fail(const struct recon_err *err);
/* --format table|jsonl|csv: 0 with *fmt set, or 64 after saying why. */
int recon_cmd_parse_format(const char *cmd, const char *format, int *fmt);
/*
 * A listing (tickets, rejects) in its --format: the header goes out once,
 * before the first row, or after the store answered when there is none.
 */
struct recon_listing {
	int fmt;
	bool head; /* out already */
	void (*print_head)(int fmt);
};
void recon_listing_head(struct recon_listing *l);
/* Prints o as one compact JSON line ("{}" when it cannot be dumped), then releases it. */
void recon_cmd_json_line(struct json_t *o);
/* --run ID|latest: 0 with *run_id set (0: latest), or 64 after saying why. */
int recon_cmd_parse_run(const char *cmd, const char *run, int64_t *run_id);
/*
 * Loads the job, applies --partition (may be NULL) and opens its state store
 * read-only. On failure *job stays set when the job itself loaded (the store
 * is then what failed: RECON_ENOTFOUND when it does not exist). Caller frees
 * both, whatever the outcome.
 */
RECON_MUSTCHECK int recon_cmd_open(const char *job_path, const char *partition,
				   struct recon_job **job, struct recon_state **st,
				   struct recon_err *err);

#endif
