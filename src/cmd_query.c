/*
 * recon diff / recon status: read-only queries of the state store.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include "recon_action.h"
#include "recon_cmd.h"
#include "recon_compare.h"
#include "recon_dayreport.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_mem.h"
#include "recon_money.h"
#include "recon_partition.h"
#include "recon_report.h"
#include "recon_state.h"
#include "recon_time.h"

static const char diff_usage[] =
    "usage: recon diff --job FILE [--run ID|latest | --date YYYY-MM-DD [--mode t1|hot] | "
    "--open]\n"
    "                  [--class C] [--format table|jsonl|csv] [--quiet]\n"
    "\n"
    "Prints the differences one run found, in key order (default: the latest run that\n"
    "completed; --date: the latest run of that business day). --open prints every open\n"
    "item of the job instead, whatever day found it, as last evaluated. Classes: missing,\n"
    "extra, stuck, amount_mismatch, status_mismatch, duplicate (with --open also awaiting\n"
    "and in_flight).\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

static const char status_usage[] =
    "usage: recon status --job FILE [--json] [--quiet]\n"
    "\n"
    "Shows the job's watermarks, last runs, and open differences.\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

static int fail(const struct recon_err *err)
{
	char buf[512];

	recon_log(RECON_LOG_ERROR, "%s", recon_err_str(err, buf, sizeof(buf)));
	if (err->code == RECON_ENOTFOUND)
		return 1;
	return recon_err_exit_code(err->code);
}

static int db_fail(sqlite3 *db, const char *what)
{
	recon_log(RECON_LOG_ERROR, "%s: %s", what, sqlite3_errmsg(db));
	return 1;
}

/* --format table|jsonl|csv: 0 with *fmt set, or 64 after saying why. */
static int parse_format(const char *cmd, const char *format, int *fmt)
{
	*fmt = recon_report_format_from_name(format);
	if (*fmt >= 0)
		return 0;
	fprintf(stderr, "recon %s: unknown format '%s' (table, jsonl or csv)\n", cmd, format);
	return 64;
}

/* --run ID|latest: 0 with *run_id set (0: latest), or 64 after saying why. */
static int parse_run(const char *cmd, const char *run, int64_t *run_id)
{
	char *end;

	*run_id = 0;
	if (!run || !strcmp(run, "latest"))
		return 0;
	*run_id = strtoll(run, &end, 10);
	if (!*end && *run_id > 0)
		return 0;
	fprintf(stderr, "recon %s: --run takes a run id or 'latest'\n", cmd);
	return 64;
}

int recon_cmd_diff(int argc, char **argv)
{
	const char *job_path = NULL, *run = NULL, *klass = NULL, *format = "table", *date = NULL,
		   *mode = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false, open_items = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	   {"run", true, &run, NULL},
	    {"class", true, &klass, NULL},	   {"format", true, &format, NULL},
	    {"date", true, &date, NULL},	   {"mode", true, &mode, NULL},
	    {"open", false, NULL, &open_items},	   {"quiet", false, NULL, &quiet},
	    {"partition", true, &partition, NULL}, {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	sqlite3 *db;
	sqlite3_stmt *q = NULL;
	char **lines = NULL;
	size_t n = 0, alloc = 0;
	int64_t run_id = 0;
	int fmt, code = 0, s;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, diff_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("diff", "--job FILE");
	if (parse_format("diff", format, &fmt))
		return 64;
	if ((run != NULL) + (date != NULL) + open_items > 1 || (mode && !date && !open_items) ||
	    (mode && strcmp(mode, "t1") && strcmp(mode, "hot"))) {
		fputs(diff_usage, stderr);
		return 64;
	}
	if (klass && (recon_class_from_name(klass) < 0 ||
		      recon_class_from_name(klass) == RECON_CLASS_MATCHED ||
		      (!open_items && recon_class_from_name(klass) > RECON_CLASS_MATCHED))) {
		fprintf(stderr, "recon diff: unknown class '%s'\n", klass);
		return 64;
	}
	if (parse_run("diff", run, &run_id))
		return 64;
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0 ||
	    recon_state_open(&st, job->state_path, false, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	db = recon_state_db(st);
	if (open_items) {
		/* every open item, as last evaluated (the same lines as a run's) */
		if (sqlite3_prepare_v2(
			db,
			"SELECT json FROM items WHERE job = ?1 AND state = 'open' AND "
			"(?2 IS NULL OR mode = ?2) AND (?3 IS NULL AND severity <> "
			"'info' OR class = ?3) ORDER BY key, mode",
			-1, &q, NULL) != SQLITE_OK) {
			code = db_fail(db, "cannot read open items");
			goto out;
		}
		sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
		if (mode)
			sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
		if (klass)
			sqlite3_bind_text(q, 3, klass, -1, SQLITE_STATIC);
		goto print;
	}
	if (!run_id) {
		/* the latest completed run (of the day, with --date) */
		if (sqlite3_prepare_v2(
			db,
			"SELECT max(id) FROM runs WHERE job = ?1 AND outcome = "
			"'success' AND (?2 IS NULL OR (business_date = ?2 AND mode = "
			"?3))",
			-1, &q, NULL) != SQLITE_OK) {
			code = db_fail(db, "cannot read runs");
			goto out;
		}
		sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
		if (date) {
			sqlite3_bind_text(q, 2, date, -1, SQLITE_STATIC);
			sqlite3_bind_text(q, 3, mode ? mode : "t1", -1, SQLITE_STATIC);
		}
		if (sqlite3_step(q) == SQLITE_ROW)
			run_id = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
		q = NULL;
		if (!run_id) {
			if (date)
				recon_log(RECON_LOG_ERROR, "job '%s' has no completed %s run of %s",
					  job->name, mode ? mode : "t1", date);
			else
				recon_log(RECON_LOG_ERROR, "job '%s' has no completed run",
					  job->name);
			code = 1;
			goto out;
		}
	} else {
		if (sqlite3_prepare_v2(db, "SELECT outcome FROM runs WHERE id = ? AND job = ?", -1,
				       &q, NULL) != SQLITE_OK) {
			code = db_fail(db, "cannot read runs");
			goto out;
		}
		sqlite3_bind_int64(q, 1, run_id);
		sqlite3_bind_text(q, 2, job->name, -1, SQLITE_STATIC);
		s = sqlite3_step(q);
		if (s != SQLITE_ROW) {
			recon_log(RECON_LOG_ERROR, "job '%s' has no run %" PRId64, job->name,
				  run_id);
			code = 1;
			goto out;
		}
		if (strcmp((const char *)sqlite3_column_text(q, 0), "success"))
			recon_log(RECON_LOG_WARN,
				  "run %" PRId64 " did not complete (%s): its "
				  "differences may be partial",
				  run_id, (const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
		q = NULL;
	}
	if (sqlite3_prepare_v2(db,
			       "SELECT json FROM run_differences WHERE run_id = ?1 AND "
			       "(?2 IS NULL OR class = ?2) ORDER BY key, class",
			       -1, &q, NULL) != SQLITE_OK) {
		code = db_fail(db, "cannot read differences");
		goto out;
	}
	sqlite3_bind_int64(q, 1, run_id);
	if (klass)
		sqlite3_bind_text(q, 2, klass, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, 2);
print:
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		recon_grow((void **)&lines, &alloc, n + 1, sizeof(*lines));
		lines[n++] = recon_xstrdup((const char *)sqlite3_column_text(q, 0));
	}
	if (s != SQLITE_DONE) {
		code = db_fail(db, "cannot read differences");
		goto out;
	}
	if (recon_report_print(stdout, (enum recon_report_format)fmt, job, lines, n, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	if (fflush(stdout) != 0)
		code = 1;
out:
	sqlite3_finalize(q);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}

/* status ------------------------------------------------------------------ */

static void fmt_time(int64_t ms, char *buf, size_t size)
{
	recon_time_format_utc(ms, buf, size);
}

int recon_cmd_status(int argc, char **argv)
{
	const char *job_path = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool json = false, quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL}, {"json", false, NULL, &json},
	    {"quiet", false, NULL, &quiet}, {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	sqlite3 *db;
	sqlite3_stmt *q = NULL;
	json_t *out = NULL, *modes, *open, *recent;
	int code = 0, s;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, status_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("status", "--job FILE");
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	if (recon_state_open(&st, job->state_path, false, &err) < 0) {
		/* a job that never ran is a state, not an error */
		code = err.code == RECON_ENOTFOUND ? 0 : fail(&err);
		if (!code)
			printf(json ? "{\"job\":\"%s\",\"never_run\":true}\n"
				    : "job '%s' has never run (no state store yet)\n",
			       job->name);
		goto out;
	}
	db = recon_state_db(st);
	out = json_object();
	json_object_set_new(out, "job", json_string(job->name));
	json_object_set_new(out, "state", json_string(job->state_path));
	modes = json_object();
	json_object_set_new(out, "modes", modes);
	/* per mode: watermark, last success, last run */
	if (sqlite3_prepare_v2(
		db,
		"SELECT m.mode, w.reconciled_until_ms, h.last_success_ms, r.id, r.outcome, "
		"r.business_date, r.window_start_ms, r.window_end_ms, r.dry_run, r.error, "
		"r.rows_upstream, r.rows_local, r.rows_rejected, r.rows_skipped, "
		"r.n_missing + r.n_extra + r.n_stuck + r.n_amount_mismatch + r.n_status_mismatch "
		"+ r.n_duplicate, r.upstream_sha256, r.local_sha256, r.config_sha256 "
		"FROM (SELECT DISTINCT mode FROM runs WHERE job = ?1) m "
		"LEFT JOIN watermarks w ON w.job = ?1 AND w.mode = m.mode "
		"LEFT JOIN heartbeats h ON h.job = ?1 AND h.mode = m.mode "
		"JOIN runs r ON r.id = (SELECT max(id) FROM runs WHERE job = ?1 AND mode = m.mode) "
		"ORDER BY m.mode",
		-1, &q, NULL) != SQLITE_OK) {
		code = db_fail(db, "cannot read runs");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		json_t *m = json_object(), *last = json_object();
		char t[40];
		const char *mode = (const char *)sqlite3_column_text(q, 0);
		if (sqlite3_column_type(q, 1) != SQLITE_NULL) {
			fmt_time(sqlite3_column_int64(q, 1), t, sizeof(t));
			json_object_set_new(m, "watermark", json_string(t));
		} else {
			json_object_set_new(m, "watermark", json_null());
		}
		if (sqlite3_column_type(q, 2) != SQLITE_NULL) {
			fmt_time(sqlite3_column_int64(q, 2), t, sizeof(t));
			json_object_set_new(m, "last_success", json_string(t));
		} else {
			json_object_set_new(m, "last_success", json_null());
		}
		json_object_set_new(last, "run_id", json_integer(sqlite3_column_int64(q, 3)));
		json_object_set_new(last, "outcome",
				    json_string((const char *)sqlite3_column_text(q, 4)));
		json_object_set_new(last, "date",
				    json_string((const char *)sqlite3_column_text(q, 5)));
		fmt_time(sqlite3_column_int64(q, 6), t, sizeof(t));
		json_object_set_new(last, "window_start", json_string(t));
		fmt_time(sqlite3_column_int64(q, 7), t, sizeof(t));
		json_object_set_new(last, "window_end", json_string(t));
		json_object_set_new(last, "dry_run", json_boolean(sqlite3_column_int(q, 8)));
		json_object_set_new(last, "error",
				    sqlite3_column_type(q, 9) == SQLITE_NULL
					? json_null()
					: json_string((const char *)sqlite3_column_text(q, 9)));
		json_object_set_new(last, "rows_upstream",
				    json_integer(sqlite3_column_int64(q, 10)));
		json_object_set_new(last, "rows_local", json_integer(sqlite3_column_int64(q, 11)));
		json_object_set_new(last, "rows_rejected",
				    json_integer(sqlite3_column_int64(q, 12)));
		json_object_set_new(last, "rows_skipped",
				    json_integer(sqlite3_column_int64(q, 13)));
		json_object_set_new(last, "differences", json_integer(sqlite3_column_int64(q, 14)));
		for (int i = 0; i < 3; i++) {
			static const char *const names[] = {"upstream_sha256", "local_sha256",
							    "config_sha256"};
			json_object_set_new(
			    last, names[i],
			    sqlite3_column_type(q, 15 + i) == SQLITE_NULL
				? json_null()
				: json_string((const char *)sqlite3_column_text(q, 15 + i)));
		}
		json_object_set_new(m, "last_run", last);
		json_object_set_new(modes, mode, m);
	}
	sqlite3_finalize(q);
	q = NULL;
	if (s != SQLITE_DONE) {
		code = db_fail(db, "cannot read runs");
		goto out;
	}
	open = json_object();
	for (int c = 0; c <= RECON_CLASS_IN_FLIGHT; c++)
		if (c != RECON_CLASS_MATCHED)
			json_object_set_new(open, recon_class_name((enum recon_class)c),
					    json_integer(0));
	if (sqlite3_prepare_v2(db,
			       "SELECT class, count(*) FROM items WHERE job = ? AND state = 'open' "
			       "GROUP BY class",
			       -1, &q, NULL) != SQLITE_OK) {
		json_decref(open);
		code = db_fail(db, "cannot read differences");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	while (sqlite3_step(q) == SQLITE_ROW)
		json_object_set_new(open, (const char *)sqlite3_column_text(q, 0),
				    json_integer(sqlite3_column_int64(q, 1)));
	json_object_set_new(out, "open_differences", open);
	recon_dayreport_stake_json(st, job->name, 0, out);
	sqlite3_finalize(q);
	q = NULL;
	/* recent runs with the hashes of what they read: identical inputs show as equal */
	recent = json_array();
	json_object_set_new(out, "recent_runs", recent);
	if (sqlite3_prepare_v2(db,
			       "SELECT id, mode, business_date, outcome, dry_run, upstream_sha256, "
			       "local_sha256, config_sha256 FROM runs WHERE job = ? "
			       "ORDER BY id DESC LIMIT 10",
			       -1, &q, NULL) != SQLITE_OK) {
		code = db_fail(db, "cannot read runs");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	while (sqlite3_step(q) == SQLITE_ROW) {
		json_t *r = json_object();
		json_object_set_new(r, "run_id", json_integer(sqlite3_column_int64(q, 0)));
		json_object_set_new(r, "mode",
				    json_string((const char *)sqlite3_column_text(q, 1)));
		json_object_set_new(r, "date",
				    json_string((const char *)sqlite3_column_text(q, 2)));
		json_object_set_new(r, "outcome",
				    json_string((const char *)sqlite3_column_text(q, 3)));
		json_object_set_new(r, "dry_run", json_boolean(sqlite3_column_int(q, 4)));
		for (int i = 0; i < 3; i++) {
			static const char *const names[] = {"upstream_sha256", "local_sha256",
							    "config_sha256"};
			json_object_set_new(
			    r, names[i],
			    sqlite3_column_type(q, 5 + i) == SQLITE_NULL
				? json_null()
				: json_string((const char *)sqlite3_column_text(q, 5 + i)));
		}
		json_array_append_new(recent, r);
	}

	if (json) {
		char *text = json_dumps(out, JSON_PRESERVE_ORDER | JSON_COMPACT);
		printf("%s\n", text ? text : "{}");
		free(text);
	} else {
		const char *mode;
		json_t *m;
		printf("job        %s\nstate      %s\n", job->name, job->state_path);
		json_object_foreach(modes, mode, m)
		{
			json_t *last = json_object_get(m, "last_run");
			json_t *wm = json_object_get(m, "watermark");
			json_t *ls = json_object_get(m, "last_success");
			json_t *e = json_object_get(last, "error");
			printf("%-4s       watermark %s, last success %s\n", mode,
			       json_is_string(wm) ? json_string_value(wm) : "none",
			       json_is_string(ls) ? json_string_value(ls) : "never");
			printf(
			    "           last run %lld (%s%s) for %s: %lld upstream, %lld local, "
			    "%lld rejected, %lld differences\n",
			    (long long)json_integer_value(json_object_get(last, "run_id")),
			    json_string_value(json_object_get(last, "outcome")),
			    json_is_true(json_object_get(last, "dry_run")) ? ", dry run" : "",
			    json_string_value(json_object_get(last, "date")),
			    (long long)json_integer_value(json_object_get(last, "rows_upstream")),
			    (long long)json_integer_value(json_object_get(last, "rows_local")),
			    (long long)json_integer_value(json_object_get(last, "rows_rejected")),
			    (long long)json_integer_value(json_object_get(last, "differences")));
			if (json_is_string(e))
				printf("           error: %s\n", json_string_value(e));
			for (int i = 0; i < 3; i++) {
				static const char *const names[] = {
				    "upstream_sha256", "local_sha256", "config_sha256"};
				json_t *h = json_object_get(last, names[i]);
				if (json_is_string(h))
					printf("           %-15s %s\n", names[i],
					       json_string_value(h));
			}
		}
		printf("open       ");
		for (int c = 0; c < RECON_CLASS__COUNT; c++)
			printf("%s %lld%s", recon_class_name((enum recon_class)c),
			       (long long)json_integer_value(
				   json_object_get(open, recon_class_name((enum recon_class)c))),
			       c + 1 < RECON_CLASS__COUNT ? ", " : "\n");
		{
			char stake[1024];
			recon_dayreport_stake_line(st, job->name, 0, stake, sizeof(stake));
			if (stake[0])
				printf("at stake   %s\n", stake);
		}
		printf("recent runs (input SHA-256, first 12 hex digits)\n");
		printf("  %6s %-4s %-10s %-9s %-12s %-12s %-12s\n", "RUN", "MODE", "DATE",
		       "OUTCOME", "UPSTREAM", "LOCAL", "CONFIG");
		for (size_t i = 0; i < json_array_size(recent); i++) {
			json_t *r = json_array_get(recent, i);
			char h[3][13];
			for (int k = 0; k < 3; k++) {
				static const char *const names[] = {
				    "upstream_sha256", "local_sha256", "config_sha256"};
				json_t *v = json_object_get(r, names[k]);
				snprintf(h[k], sizeof(h[k]), "%.12s",
					 json_is_string(v) ? json_string_value(v) : "-");
			}
			printf("  %6lld %-4s %-10s %-9s %-12s %-12s %-12s%s\n",
			       (long long)json_integer_value(json_object_get(r, "run_id")),
			       json_string_value(json_object_get(r, "mode")),
			       json_string_value(json_object_get(r, "date")),
			       json_string_value(json_object_get(r, "outcome")), h[0], h[1], h[2],
			       json_is_true(json_object_get(r, "dry_run")) ? " (dry run)" : "");
		}
	}
	if (fflush(stdout) != 0)
		code = 1;
out:
	sqlite3_finalize(q);
	json_decref(out);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}

/* check -------------------------------------------------------------------- */

static const char check_usage[] =
    "usage: recon check --job FILE [--mode t1|hot] [--max-lag DURATION] [--max-age DURATION]\n"
    "\n"
    "Monitoring-plugin check: one line, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n"
    "WARNING when the watermark lags more than --max-lag or the last success is older\n"
    "than --max-age (or the last run failed); CRITICAL beyond twice those. Defaults come\n"
    "from the job's \"check\" section (t1: 36h lag, 26h age; hot: 15m, 15m).\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

#define CHECK_OK       0
#define CHECK_WARNING  1
#define CHECK_CRITICAL 2
#define CHECK_UNKNOWN  3

static int check_unknown(const char *fmt, ...) RECON_PRINTF(1, 2);
static int check_unknown(const char *fmt, ...)
{
	va_list ap;

	printf("RECON UNKNOWN - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return CHECK_UNKNOWN;
}

static int level(int64_t value, int64_t max)
{
	if (value > max && max <= INT64_MAX / 2 && value > 2 * max)
		return CHECK_CRITICAL;
	return value > max ? CHECK_WARNING : CHECK_OK;
}

int recon_cmd_check(int argc, char **argv)
{
	static const char *const names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};
	const char *job_path = NULL, *mode = "t1", *max_lag_s = NULL, *max_age_s = NULL;
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	 {"mode", true, &mode, NULL},
	    {"max-lag", true, &max_lag_s, NULL}, {"max-age", true, &max_age_s, NULL},
	    {"quiet", false, NULL, &quiet},	 {"partition", true, &partition, NULL},
	    {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	sqlite3_stmt *q = NULL;
	int64_t now, wm, last_ok, max_lag, max_age, lag, age;
	int code, m, lv_lag, lv_age, failed = 0;
	char buf[512], lagb[32], ageb[32], maxl[32], maxa[32], last_err[300] = "";
	long long last_id = 0;

	recon_err_init(&err);
	/* a plugin's errors are UNKNOWN (3), whatever went wrong */
	if ((code = recon_opt_start(argc, argv, opts, check_usage)) >= 0)
		return code ? CHECK_UNKNOWN : 0;
	code = 0;
	if (!job_path) {
		recon_opt_missing("check", "--job FILE");
		return CHECK_UNKNOWN;
	}
	if (strcmp(mode, "t1") && strcmp(mode, "hot"))
		return check_unknown("unknown mode '%s' (t1 or hot)", mode);
	m = !strcmp(mode, "hot");
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0) {
		code = check_unknown("%s", recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	max_lag = job->check_max_lag_ms[m];
	max_age = job->check_max_age_ms[m];
	if ((max_lag_s && recon_duration_parse(max_lag_s, &max_lag, &err) < 0) ||
	    (max_age_s && recon_duration_parse(max_age_s, &max_age, &err) < 0) ||
	    recon_time_now(&now, &err) < 0) {
		code = check_unknown("%s", recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	if (recon_state_open(&st, job->state_path, false, &err) < 0) {
		code = check_unknown("%s", recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	if (sqlite3_prepare_v2(
		recon_state_db(st),
		"SELECT w.reconciled_until_ms, h.last_success_ms, "
		"(SELECT id FROM runs WHERE job = ?1 AND mode = ?2 AND dry_run = 0 "
		" ORDER BY id DESC LIMIT 1), "
		"(SELECT outcome = 'failed' FROM runs WHERE job = ?1 AND mode = ?2 "
		" AND dry_run = 0 ORDER BY id DESC LIMIT 1), "
		"(SELECT error FROM runs WHERE job = ?1 AND mode = ?2 AND dry_run = 0 "
		" ORDER BY id DESC LIMIT 1) "
		"FROM watermarks w JOIN heartbeats h ON h.job = w.job AND h.mode = w.mode "
		"WHERE w.job = ?1 AND w.mode = ?2",
		-1, &q, NULL) != SQLITE_OK) {
		code = check_unknown("cannot read the state store '%s': %s", job->state_path,
				     sqlite3_errmsg(recon_state_db(st)));
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, mode, -1, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_ROW) {
		code = check_unknown("job '%s' has no successful %s run in '%s'", job->name, mode,
				     job->state_path);
		goto out;
	}
	wm = sqlite3_column_int64(q, 0);
	last_ok = sqlite3_column_int64(q, 1);
	last_id = sqlite3_column_int64(q, 2);
	failed = sqlite3_column_int(q, 3);
	if (failed && sqlite3_column_type(q, 4) != SQLITE_NULL)
		snprintf(last_err, sizeof(last_err), "%s", (const char *)sqlite3_column_text(q, 4));
	lag = now - wm;
	age = now - last_ok;
	lv_lag = level(lag, max_lag);
	lv_age = level(age, max_age);
	code = lv_lag > lv_age ? lv_lag : lv_age;
	if (failed && code < CHECK_WARNING)
		code = CHECK_WARNING;
	/*
	 * A watermark ahead of now (beyond clock skew) means a day was taken for
	 * reconciled before it was over: never "0 s behind", always critical.
	 */
	if (wm > now + 5 * RECON_MS_PER_MIN) {
		char t[40];
		recon_time_format_utc(wm, t, sizeof(t));
		printf("RECON CRITICAL - %s watermark %s is in the future: a window was reconciled "
		       "before it was over; rerun it once it is due\n",
		       mode, t);
		code = CHECK_CRITICAL;
		goto out;
	}
	/* whole seconds are enough for people and perfdata; clocks may disagree: clamp at 0 */
	lag = lag < 0 ? 0 : lag / 1000 * 1000;
	age = age < 0 ? 0 : age / 1000 * 1000;
	recon_duration_format(lag, lagb, sizeof(lagb));
	recon_duration_format(age, ageb, sizeof(ageb));
	recon_duration_format(max_lag, maxl, sizeof(maxl));
	recon_duration_format(max_age, maxa, sizeof(maxa));
	printf("RECON %s - %s watermark %s behind (max %s), last success %s ago (max %s)",
	       names[code], mode, lagb, maxl, ageb, maxa);
	if (failed)
		printf("; last run %lld failed: %s", last_id, last_err);
	printf(" | lag=%llds;%lld;%lld age=%llds;%lld;%lld\n", (long long)(lag / 1000),
	       (long long)(max_lag / 1000), (long long)(2 * max_lag / 1000),
	       (long long)(age / 1000), (long long)(max_age / 1000),
	       (long long)(2 * max_age / 1000));
	fflush(stdout);
out:
	sqlite3_finalize(q);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}

/* tickets ------------------------------------------------------------------ */

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

/* What a person does next about a difference of class c. */
static const char *next_step(const char *c)
{
	static const struct {
		const char *klass, *step;
	} steps[] = {
	    {"missing", "refund without its payment: find the order, replay it by hand"},
	    {"extra", "ask the provider; reverse the local order only once it confirms"},
	    {"amount_mismatch", "compare with the provider's record; correct the side in error"},
	    {"status_mismatch", "align the local status with the provider's (refund, revocation)"},
	    {"duplicate",
	     "ask the provider about the repeated entry, or remove the extra local row"},
	    {"stuck", "re-push the payment event; check the app's callback"},
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (!strcmp(c, steps[i].klass))
			return steps[i].step;
	return "";
}

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
		code = fail(&err);
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
	sqlite3_stmt *q = NULL;
	int fmt, code = 0, s;

	if (argc > 1 && !strcmp(argv[1], "close"))
		return tickets_close(argc - 1, argv + 1);
	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, tickets_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("tickets", "--job FILE");
	if (parse_format("tickets", format, &fmt))
		return 64;
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0 ||
	    recon_state_open(&st, job->state_path, false, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	if (sqlite3_prepare_v2(recon_state_db(st),
			       "SELECT key, class, severity, status, opened_run, opened_at_ms, "
			       "last_seen_run, json, resolved_run, note FROM tickets WHERE job = ? "
			       "AND (? OR status = 'open') ORDER BY key, class",
			       -1, &q, NULL) != SQLITE_OK) {
		code = db_fail(recon_state_db(st), "cannot read tickets");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 2, all);
	if (fmt == RECON_REPORT_TABLE)
		printf("%-24s %-16s %-8s %-8s %5s %-20s %16s %16s  %s\n", "KEY", "CLASS",
		       "SEVERITY", "STATUS", "RUN", "OPENED", "UPSTREAM", "LOCAL", "NEXT STEP");
	else if (fmt == RECON_REPORT_CSV)
		printf(
		    "key,class,severity,status,opened_run,opened_at,last_seen_run,upstream,local,"
		    "resolved_run,note,next_step\n");
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(q, 0);
		const char *klass = (const char *)sqlite3_column_text(q, 1);
		const char *sev = (const char *)sqlite3_column_text(q, 2);
		const char *status = (const char *)sqlite3_column_text(q, 3);
		long long run = sqlite3_column_int64(q, 4), seen = sqlite3_column_int64(q, 6);
		long long resolved = sqlite3_column_int64(q, 8);
		const char *note = (const char *)sqlite3_column_text(q, 9);
		json_t *d = json_loads((const char *)sqlite3_column_text(q, 7), 0, NULL);
		const char *step = strcmp(status, "open") ? "" : next_step(klass);
		char when[40], up[64], lo[64];

		recon_time_format_utc(sqlite3_column_int64(q, 5), when, sizeof(when));
		side_amount(d, "upstream", up, sizeof(up));
		side_amount(d, "local", lo, sizeof(lo));
		if (fmt == RECON_REPORT_TABLE) {
			printf("%-24s %-16s %-8s %-8s %5lld %-20.20s %16s %16s  %s\n", key, klass,
			       sev, status, run, when, up, lo, step);
		} else if (fmt == RECON_REPORT_CSV) {
			recon_report_csv_field(stdout, key);
			printf(",%s,%s,%s,%lld,%s,%lld,%s,%s,", klass, sev, status, run, when, seen,
			       up, lo);
			if (resolved)
				printf("%lld", resolved);
			printf(",");
			recon_report_csv_field(stdout, note ? note : "");
			printf(",");
			recon_report_csv_field(stdout, step);
			printf("\n");
		} else {
			json_t *o = json_object();
			char *text;
			json_object_set_new(o, "key", json_string(key));
			json_object_set_new(o, "class", json_string(klass));
			json_object_set_new(o, "severity", json_string(sev));
			json_object_set_new(o, "status", json_string(status));
			json_object_set_new(o, "opened_run", json_integer(run));
			json_object_set_new(o, "opened_at", json_string(when));
			json_object_set_new(o, "last_seen_run", json_integer(seen));
			json_object_set_new(o, "resolved_run",
					    resolved ? json_integer(resolved) : json_null());
			json_object_set_new(o, "note", note ? json_string(note) : json_null());
			json_object_set_new(o, "next_step", json_string(step));
			json_object_set_new(o, "difference", d ? json_incref(d) : json_null());
			text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
			printf("%s\n", text ? text : "{}");
			free(text);
			json_decref(o);
		}
		json_decref(d);
	}
	if (s != SQLITE_DONE)
		code = db_fail(recon_state_db(st), "cannot read tickets");
	if (fflush(stdout) != 0)
		code = 1;
out:
	sqlite3_finalize(q);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}

/* rejects ------------------------------------------------------------------ */

static const char rejects_usage[] =
    "usage: recon rejects --job FILE [--run ID|latest] [--format table|jsonl|csv] [--quiet]\n"
    "\n"
    "Lists the rows a run could not read (default: the latest run that has any), with\n"
    "their origin (file:line or table), the field and the reason.\n"
    "--partition I/N: the store of key-hash partition I of N (a partitioned job needs it).\n";

int recon_cmd_rejects(int argc, char **argv)
{
	const char *job_path = NULL, *run = NULL, *format = "table";
	const char *partition = NULL; /* --partition I/N: that partition's store */
	bool quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},	   {"run", true, &run, NULL},
	    {"format", true, &format, NULL},	   {"quiet", false, NULL, &quiet},
	    {"partition", true, &partition, NULL}, {NULL, false, NULL, NULL},
	};
	struct recon_job *job = NULL;
	struct recon_state *st = NULL;
	struct recon_err err;
	sqlite3_stmt *q = NULL;
	int64_t run_id = 0;
	int fmt, code = 0, s;

	recon_err_init(&err);
	if ((code = recon_opt_start(argc, argv, opts, rejects_usage)) >= 0)
		return code;
	code = 0;
	if (!job_path)
		return recon_opt_missing("rejects", "--job FILE");
	if (parse_format("rejects", format, &fmt))
		return 64;
	if (parse_run("rejects", run, &run_id))
		return 64;
	if (recon_job_load(&job, job_path, &err) < 0 ||
	    recon_partition_select(job, partition, &err) < 0 ||
	    recon_state_open(&st, job->state_path, false, &err) < 0) {
		code = fail(&err);
		goto out;
	}
	if (sqlite3_prepare_v2(
		recon_state_db(st),
		"SELECT x.run_id, x.side, x.origin, x.field, x.reason, x.raw FROM "
		"rejects x JOIN runs r ON r.id = x.run_id WHERE r.job = ?1 AND "
		"x.run_id = CASE WHEN ?2 > 0 THEN ?2 ELSE (SELECT max(y.run_id) FROM "
		"rejects y JOIN runs z ON z.id = y.run_id WHERE z.job = ?1) END "
		"ORDER BY x.rowid",
		-1, &q, NULL) != SQLITE_OK) {
		code = db_fail(recon_state_db(st), "cannot read rejects");
		goto out;
	}
	sqlite3_bind_text(q, 1, job->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, run_id);
	if (fmt == RECON_REPORT_TABLE)
		printf("%5s %-8s %-32s %-16s %s\n", "RUN", "SIDE", "ORIGIN", "FIELD", "REASON");
	else if (fmt == RECON_REPORT_CSV)
		printf("run_id,side,origin,field,reason,raw\n");
	while ((s = sqlite3_step(q)) == SQLITE_ROW) {
		const char *col[5];
		long long r = sqlite3_column_int64(q, 0);
		for (int i = 0; i < 5; i++)
			col[i] = sqlite3_column_type(q, i + 1) == SQLITE_NULL
				     ? ""
				     : (const char *)sqlite3_column_text(q, i + 1);
		if (fmt == RECON_REPORT_TABLE) {
			printf("%5lld %-8s %-32s %-16s %s\n", r, col[0], col[1], col[2], col[3]);
		} else if (fmt == RECON_REPORT_CSV) {
			printf("%lld", r);
			for (int i = 0; i < 5; i++) {
				printf(",");
				recon_report_csv_field(stdout, col[i]);
			}
			printf("\n");
		} else {
			static const char *const names[] = {"side", "origin", "field", "reason",
							    "raw"};
			json_t *o = json_object();
			char *text;
			json_object_set_new(o, "run_id", json_integer(r));
			for (int i = 0; i < 5; i++)
				json_object_set_new(o, names[i], json_string(col[i]));
			text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
			printf("%s\n", text ? text : "{}");
			free(text);
			json_decref(o);
		}
	}
	if (s != SQLITE_DONE)
		code = db_fail(recon_state_db(st), "cannot read rejects");
	if (fflush(stdout) != 0)
		code = 1;
out:
	sqlite3_finalize(q);
	recon_state_close(st);
	recon_job_free(job);
	return code;
}
