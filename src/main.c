/*
 * recon: the command table and the process exit. Only this file calls exit().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_cmd.h"
#include "recon_git_commit.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_state.h"

static const char usage[] =
    "usage: recon <command> [options]\n"
    "\n"
    "Reconciles a payment provider's statement (upstream) against the merchant's\n"
    "own payment flow (local), read-only, and classifies every difference.\n"
    "\n"
    "commands:\n"
    "  run      reconcile a window (t1: one business day)\n"
    "  rerun    recompute a range of business days\n"
    "  diff     print the differences a run found\n"
    "  status   show watermarks, last runs and the open items\n"
    "  check    monitoring-plugin check of the watermark and last success\n"
    "  tickets  list the open tickets (--all: every one); 'tickets close' for a person\n"
    "  rejects  list the rows a run could not read\n"
    "  report   the daily report: verdict, money at stake, charts (html, md, csv)\n"
    "  validate check a job before it runs (files, connections, grants, paths)\n"
    "\n"
    "  version  the version, git commit, drivers built in and data folder (-V)\n"
    "  help     recon help CMD: that command's usage, with an example\n"
    "\n"
    "Every command takes --job FILE (-j), --quiet (-q) and --help (-h);\n"
    "'recon help CMD' or 'recon CMD --help' shows its options. Manual: recon(1),\n"
    "the job file: recon-job(5).\n";

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct command commands[] = {
    {"run", recon_cmd_run},	    {"rerun", recon_cmd_run},	  {"diff", recon_cmd_diff},
    {"status", recon_cmd_status},   {"check", recon_cmd_check},	  {"tickets", recon_cmd_tickets},
    {"rejects", recon_cmd_rejects}, {"report", recon_cmd_report}, {"validate", recon_cmd_validate},
};

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* The version, the commit it was built from, the drivers built in and the data folder. */
static void version(void)
{
	char datadir[4096];

	recon_job_datadir(datadir, sizeof(datadir));
	printf("recon %s (git %s)\n", RECON_VERSION, RECON_GIT_COMMIT);
	printf("drivers: csv sqlite"
#ifdef RECON_HAVE_POSTGRES
	       " postgres"
#endif
#ifdef RECON_HAVE_MYSQL
	       " mysql"
#endif
	       "\n");
	printf("data: %s\n", datadir);
}

/* An unknown command: one line, the nearest command when one is close, and where help is. */
static void unknown_command(const char *name)
{
	const char *best = NULL;
	size_t best_d = 3;

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		size_t d = recon_opt_distance(name, commands[i].name);
		if (d < best_d) {
			best_d = d;
			best = commands[i].name;
		}
	}
	if (best)
		fprintf(stderr, "recon: unknown command '%s'; did you mean '%s'?\n", name, best);
	else
		fprintf(stderr, "recon: unknown command '%s'\n", name);
	fputs("try 'recon --help'\n", stderr);
}

/* stdout is flushed and checked: a full disk or a closed pipe is an error, not a silent 0. */
static int finish(int code)
{
	errno = 0;
	if (fflush(stdout) != 0) {
		fprintf(stderr, "recon: cannot write the output: %s\n", strerror(errno));
		return code ? code : 1;
	}
	if (ferror(stdout)) {
		/* an earlier write failed; its errno is long gone */
		fputs("recon: cannot write the output: a write failed\n", stderr);
		return code ? code : 1;
	}
	return code;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	char help_opt[] = "--help";
	char *help_argv[3] = {NULL, help_opt, NULL};

	recon_state_memory_setup(); /* before SQLite's first use */
	if (argc < 2) {
		fputs(usage, stderr);
		exit(64);
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		fputs(usage, stdout);
		exit(finish(0));
	}
	if (!strcmp(argv[1], "help")) {
		/* recon help CMD: that command's own usage */
		if (!(cmd = find(argv[2]))) {
			unknown_command(argv[2]);
			exit(64);
		}
		help_argv[0] = argv[2];
		exit(finish(cmd->fn(2, help_argv)));
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		version();
		exit(finish(0));
	}
	if (!(cmd = find(argv[1]))) {
		unknown_command(argv[1]);
		exit(64);
	}
	exit(finish(cmd->fn(argc - 1, argv + 1)));
}
