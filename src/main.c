/*
 * recon: the command table and the process exit. Only this file calls exit().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_cmd.h"
#include "recon_log.h"

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
    "  status   show watermarks, last runs and open differences\n"
    "  check    monitoring-plugin check of the watermark and last success\n"
    "  tickets  list the tickets runs opened\n"
    "  validate check a job before it runs (files, connections, grants, paths)\n"
    "\n"
    "Every command takes --job FILE, --quiet and --help.\n";

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct command commands[] = {
    {"run", recon_cmd_run},	      {"rerun", recon_cmd_run},	  {"diff", recon_cmd_diff},
    {"status", recon_cmd_status},     {"check", recon_cmd_check}, {"tickets", recon_cmd_tickets},
    {"validate", recon_cmd_validate},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		exit(64);
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		exit(0);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("recon %s\n", RECON_VERSION);
		exit(0);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			exit(commands[i].fn(argc - 1, argv + 1));
	fprintf(stderr, "recon: unknown command '%s'\n\n%s", argv[1], usage);
	exit(64);
}
