/*
 * recon tickets: the job's tickets from the state store (a table, JSON lines
 * or CSV), and `tickets close`, a person's end to one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "recon_action.h"
#include "recon_cmd.h"
#include "recon_dayreport.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_money.h"
#include "recon_partition.h"
#include "recon_report.h"
#include "recon_state.h"
#include "recon_time.h"

static const char tickets_usage[] =
    "usage: recon tickets --job FILE [--all] [--format table|jsonl|csv] [--quiet]\n"
    "       recon tickets close --job FILE --key KEY --class C --note TEXT\n"
    "\n"
    "Lists the open tickets (--all: every one, resolved and closed too), one per key and\n"
    "class, with both sides' amounts, the run that opened it, and the next step. A\n"
    "ticket follows its open item: a run that finds the key matched (or in another\n"
    "class) resolves it in the state store and in the merchant's recon_ticket. 'close'\n"
    "is for a person: the ticket and its items end with the note.\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

/* "123.45 CNY" from a difference's side ("-" when absent). */
static void side_amount(json_t *diff, const char *side, char *buf, size_t size)
{
	json_t *o = json_object_get(diff, side);
	json_t *a = json_object_get(o, "amount_minor"), *c = json_object_get(o, "currency");
	const char *cur = json_is_string(c) ? json_string_value(c) : "";
	int e = recon_money_exponent(cur);
	char m[40];

	if (!json_is_integer(a)) {
		snprintf(buf, size, "-");
		return;
	}
	recon_money_format((int64_t)json_integer_value(a), e < 0 ? 0 : e, m, sizeof(m));
	snprintf(buf, size, "%s %s", m, cur);
}

static int tickets_close(int argc, char **argv)
{
	const char *job_path = NULL, *key = NULL, *klass = NULL, *note = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL}, {"key", true, &key, NULL},
	    {"class", true, &klass, NULL},  {"note", true, &note, NULL},
	    {"quiet", false, NULL, &quiet}, {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	int64_t now;
	int code = 0, lock = -1;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, tickets_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path || !key || !klass || !note || !*note)
		return recon_opt_missing("tickets close", "--job, --key, --class and --note");
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0 || recon_time_now(&now, &err) < 0 ||
	    recon_state_lock(job->state_path, job->name, now, job->lock_wait_ms, &lock, &err) < 0 ||
	    recon_state_open(&st, job->state_path, true, &err) < 0 ||
	    recon_state_ticket_close(st, job->name, key, klass, note, now, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	/* the merchant's copy hears of it now (else at the next run) */
	if (recon_actions_sync_tickets(job, st, &err) < 0) {
		char buf[512];
		recon_log(RECON_LOG_WARN,
			  "closed in the state store; the merchant's recon_ticket follows at the "
			  "next run: %s",
			  recon_err_str(&err, buf, sizeof(buf)));
	}
	if (!quiet)
		printf("recon tickets: closed %s '%s' of job '%s'\n", klass, key, job->name);
out:
	recon_state_close(st);
	recon_state_unlock(lock);
	recon_job_free(job);
	return code;
}

/* One ticket as a JSON line. */
static void ticket_jsonl(const struct recon_ticket_row *t, const char *when, const char *step,
			 json_t *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "key", json_string(t->key));
	json_object_set_new(o, "class", json_string(t->klass));
	json_object_set_new(o, "severity", json_string(t->severity));
	json_object_set_new(o, "status", json_string(t->status));
	json_object_set_new(o, "opened_run", json_integer(t->opened_run));
	json_object_set_new(o, "opened_at", json_string(when));
	json_object_set_new(o, "last_seen_run", json_integer(t->last_seen_run));
	json_object_set_new(o, "resolved_run",
			    t->resolved_run ? json_integer(t->resolved_run) : json_null());
	json_object_set_new(o, "note", t->note ? json_string(t->note) : json_null());
	json_object_set_new(o, "next_step", json_string(step));
	json_object_set_new(o, "difference", d ? json_incref(d) : json_null());
	recon_cmd_json_line(o);
}

static void tickets_head(int fmt)
{
	if (fmt == RECON_REPORT_TABLE)
		printf("%-24s %-16s %-8s %-8s %5s %-20s %16s %16s  %s\n", "KEY", "CLASS",
		       "SEVERITY", "STATUS", "RUN", "OPENED", "UPSTREAM", "LOCAL", "NEXT STEP");
	else if (fmt == RECON_REPORT_CSV)
		printf(
		    "key,class,severity,status,opened_run,opened_at,last_seen_run,upstream,local,"
		    "resolved_run,note,next_step\n");
}

/* One ticket in the listing's format. */
static int ticket_print(void *arg, const struct recon_ticket_row *t)
{
	int fmt = ((struct recon_listing *)arg)->fmt;
	json_t *d = json_loads(t->json, 0, NULL);
	const char *step = strcmp(t->status, "open") ? "" : recon_dayreport_next_step(t->klass);
	char when[40], up[64], lo[64];

	recon_listing_head(arg);
	recon_time_format_utc(t->opened_at, when, sizeof(when));
	side_amount(d, "upstream", up, sizeof(up));
	side_amount(d, "local", lo, sizeof(lo));
	if (fmt == RECON_REPORT_TABLE) {
		printf("%-24s %-16s %-8s %-8s %5lld %-20.20s %16s %16s  %s\n", t->key, t->klass,
		       t->severity, t->status, (long long)t->opened_run, when, up, lo, step);
	} else if (fmt == RECON_REPORT_CSV) {
		recon_report_csv_field(stdout, t->key);
		printf(",%s,%s,%s,%lld,%s,%lld,%s,%s,", t->klass, t->severity, t->status,
		       (long long)t->opened_run, when, (long long)t->last_seen_run, up, lo);
		if (t->resolved_run)
			printf("%lld", (long long)t->resolved_run);
		printf(",");
		recon_report_csv_field(stdout, t->note ? t->note : "");
		printf(",");
		recon_report_csv_field(stdout, step);
		printf("\n");
	} else {
		ticket_jsonl(t, when, step, d);
	}
	json_decref(d);
	return 0;
}

int recon_cmd_tickets(int argc, char **argv)
{
	const char *job_path = NULL, *format = "table";
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false, all = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},
	    {"format", true, &format, NULL},
	    {"all", false, NULL, &all},
	    {"quiet", false, NULL, &quiet},
	    {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	struct recon_listing out = {0, false, tickets_head};
	int code = 0;

	if (argc > 1 && !strcmp(argv[1], "close"))
		return tickets_close(argc - 1, argv + 1);
	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, tickets_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("tickets", "--job FILE");
	if (recon_cmd_parse_format("tickets", format, &out.fmt))
		return 64;
	if (recon_cmd_open(job_path, partition, &job, &st, &err) < 0) {
		code = recon_cmd_fail(&err);
		goto out;
	}
	if (recon_state_tickets_list(st, job->name, all, ticket_print, &out, &err) < 0)
		code = recon_cmd_fail(&err);
	else
		recon_listing_head(&out);
	if (fflush(stdout) != 0)
		code = 1;
out:
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
