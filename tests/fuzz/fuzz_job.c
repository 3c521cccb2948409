/*
 * fuzz_job: recon_job_load() (src/recon_job.c) on a job file.
 *
 * The input is the job file's text: the harness writes it to
 * <scratch>/jobs/job.json and loads it. Profiles named by "format" are found
 * in $RECON_FORMATS_DIR (default: the source tree's rules/formats, compiled
 * in) and in <scratch>/jobs/formats/, which holds "fuzz-profile": a copy of
 * the test stand-in for the WeChat profile, so a job can pull in a profile
 * even before rules/formats has any.
 *
 * Checked beyond the sanitizers (and LeakSanitizer, which sees every path
 * that forgets to free): failures are RECON_ECONFIG with a message and no
 * job; a loaded job has the invariants recon_job.h promises (valid name,
 * zones loaded, a known currency, 1..4 key parts, both sides mapped, the
 * effective configuration serialised).
 *
 * RECON_FUZZ_VERBOSE=1 prints the loader's verdict on each input (to check seeds:
 * `RECON_FUZZ_VERBOSE=1 fuzz_job tests/fuzz/corpus/job/NAME`).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_money.h"
#include "recon_source.h"
#include "recon_time.h"

#ifndef RECON_FUZZ_FORMATS_DIR
#define RECON_FUZZ_FORMATS_DIR "rules/formats"
#endif

static const char stand_in_profile[] =
    "{\n"
    "  \"description\": \"fuzz stand-in for a provider profile\",\n"
    "  \"strip\": \"`\",\n"
    "  \"stop_prefixes\": [\"\xE6\x80\xBB\xE4\xBA\xA4\xE6\x98\x93\xE5\x8D\x95\xE6\x95\xB0\"],\n"
    "  \"comment_prefixes\": [\"#\"],\n"
    "  \"columns\": { \"key\": \"out_trade_no\", \"amount\": \"amount\",\n"
    "               \"refund_amount\": \"refund\", \"currency\": \"currency\",\n"
    "               \"status\": \"state\", \"time\": \"trade_time\", \"txn_id\": \"txn\" },\n"
    "  \"status_map\": { \"SUCCESS\": \"success\", \"REFUND\": \"refunded\" }\n"
    "}\n";

static char *job_path;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("RECON_FORMATS_DIR");
	char *profile;

	(void)argc;
	(void)argv;
	if (!dir || !dir[0])
		setenv("RECON_FORMATS_DIR", RECON_FUZZ_FORMATS_DIR, 1);
	profile = fuzz_scratch_path("jobs/formats/fuzz-profile.json");
	fuzz_write_file(profile, stand_in_profile, strlen(stand_in_profile));
	free(profile);
	job_path = fuzz_scratch_path("jobs/job.json");
	return 0;
}

static void check(bool ok, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_job: %s\n", what);
	abort();
}

static void check_side(const struct recon_side *s)
{
	check(s->role && s->tz && s->tz_name, "side without role or zone");
	check(s->currency && recon_money_exponent(s->currency) >= 0, "side without a currency");
	check(s->nkey >= 1 && s->nkey <= RECON_KEY_PARTS_MAX, "key part count out of range");
	for (unsigned i = 0; i < s->nkey; i++)
		check(s->cols[RECON_COL_KEY0 + i] != NULL, "key part not mapped");
	check(s->cols[RECON_COL_TIME] != NULL, "time not mapped");
	check(s->cols[RECON_COL_AMOUNT] || s->cols[RECON_COL_AMOUNT_MINOR], "amount not mapped");
	check(!(s->cols[RECON_COL_AMOUNT] && s->cols[RECON_COL_AMOUNT_MINOR]),
	      "both amount roles mapped");
	check(s->cols[RECON_COL_STATUS] || s->cols[RECON_COL_ENTRY_TYPE],
	      "neither status nor entry type mapped");
	check(s->backend != NULL, "side without a backend");
	if (recon_source_has(s, RECON_SOURCE_PATH))
		check(s->path != NULL, "file source without a path");
	else
		check(s->table && recon_job_ident_ok(s->table) && s->dsn_env,
		      "database source without a valid table or DSN variable");
	for (size_t i = 0; i < s->status_map.n; i++)
		check(s->status_map.v[i].value >= 0 && s->status_map.v[i].value < RECON_ST__COUNT,
		      "status map value out of range");
	for (size_t i = 0; i < s->entry_types.n; i++)
		check(s->entry_types.v[i].value >= 0 &&
			  s->entry_types.v[i].value <= RECON_ENTRY_REFUND_REVERSAL,
		      "entry type value out of range");
	check(s->csv.skip_lines <= 1000, "skip_lines over its limit");
	if (s->key_first_of) {
		size_t n = 0;
		while (s->key_first_of[n])
			n++;
		check(s->nkey == 1 && n >= 2 && n <= RECON_FIRST_OF_MAX &&
			  !strcmp(s->cols[RECON_COL_KEY0], s->key_first_of[0]),
		      "first_of key: one part, 2 to 8 columns, the first one mapped");
	}
	if (s->time_format) {
		struct recon_err e;
		recon_err_init(&e);
		check(recon_time_format_check(s->time_format, &e) == 0,
		      "a time_format loaded that its check refuses");
	}
}

/* actions.replay_values: identifiers, none a mapped local column, known variables. */
static void check_replay(const struct recon_job *job)
{
	const struct recon_actions_cfg *a = &job->actions;

	check(a->replay == RECON_REPLAY_INSERT || a->replay == RECON_REPLAY_OUTBOX,
	      "replay mode out of range");
	check(a->nreplay_values <= RECON_REPLAY_VALUES_MAX, "too many replay_values");
	for (size_t i = 0; i < a->nreplay_values; i++) {
		const struct recon_replay_value *x = &a->replay_values[i];
		check(recon_job_ident_ok(x->column), "replay_values column not an identifier");
		for (int c = 0; c < RECON_COL__COUNT; c++)
			check(!job->local.cols[c] || strcmp(job->local.cols[c], x->column),
			      "replay_values names a mapped local column");
		for (const char *p = x->text ? strchr(x->text, '{') : NULL; p;
		     p = strchr(p + 1, '{')) {
			const char *e = strchr(p, '}');
			check(e && recon_job_tvar(p + 1, (size_t)(e - p - 1)) >= 0,
			      "replay template with an unknown variable");
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dummy;
	struct recon_job *job =
	    (struct recon_job *)(void *)&dummy; /* must become NULL on failure */
	struct recon_err err;
	int rc;

	fuzz_write_file(job_path, data, size);
	recon_err_init(&err);
	rc = recon_job_load(&job, job_path, &err);
	if (getenv("RECON_FUZZ_VERBOSE")) {
		char msg[512];

		fprintf(stderr, "fuzz_job: %s\n",
			rc < 0 ? recon_err_str(&err, msg, sizeof(msg)) : "loaded");
	}
	if (rc < 0) {
		check(rc == RECON_ECONFIG && err.code == rc && err.msg[0],
		      "load failed without RECON_ECONFIG and a message");
		check(job == NULL, "failed load left *out set");
		return 0;
	}
	check(err.code == 0 && !err.msg[0], "success touched err");
	check(job->name && job->name[0] && strlen(job->name) <= RECON_NAME_MAX, "bad job name");
	check(job->tz && job->exponent == recon_money_exponent(job->currency),
	      "job zone or currency missing");
	check(job->tolerance_minor >= 0 && job->max_rejects >= 0, "negative count");
	check(job->hot_size_ms > 0 && job->hot_max_windows >= 1, "bad hot settings");
	check(job->margin_ms >= 0 && job->margin_ms <= RECON_MS_PER_DAY, "margin out of range");
	check(job->state_path && job->config_text && job->config_text[0] == '{',
	      "no state path or effective configuration");
	check_side(&job->upstream);
	check_side(&job->local);
	check_replay(job);
	recon_job_free(job);
	return 0;
}
