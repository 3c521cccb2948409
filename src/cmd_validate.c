/*
 * recon validate: the preflight an operator runs before enabling a job's
 * timers. One line per check on stdout ("ok", "warn" or "FAIL", what, detail):
 * the job file and its format profiles, every environment variable it names,
 * each source (a CSV folder, a SQLite file, or a database connection: the
 * table readable, and the reader read-only), the writer's grants (INSERT and
 * SELECT on the flow table and the merchant tables, USAGE on their
 * sequences), and that the state store and heartbeat can be written. Exit 0,
 * or the exit code of the first failure. Nothing is recorded: the state store
 * is not opened, no transaction writes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recon_buf.h"
#include "recon_cmd.h"
#include "recon_dsn.h"
#include "recon_job.h"
#include "recon_log.h"
#include "recon_source.h"

static const char validate_usage[] =
    "usage: recon validate --job FILE [--quiet]\n"
    "\n"
    "Checks a job before it runs: the job file and its format profiles, the\n"
    "environment variables it names, each source (files, connections, the\n"
    "reader's read-only grants), the writer's grants, and that the state store\n"
    "and heartbeat can be written. One line per check; exit 0, or the exit code\n"
    "of the first failure (78 job, 69 connection, 77 grant, 73 path). Records\n"
    "nothing.\n"
    "\n"
    "example: recon validate --job /etc/recon/wechatpay_payments.json\n";

/* The tables a writer touches besides the flow table (sql/<engine>/merchant.sql). */
static const char *const merchant_tables[] = {"idempotency_record", "recon_ticket", "recon_outbox",
					      NULL};

struct report {
	int code; /* the first failure's exit code, 0 so far */
	bool quiet;
};

static void say(struct report *r, int code, const char *what, const char *fmt, ...)
    RECON_PRINTF(4, 5);
static void say(struct report *r, int code, const char *what, const char *fmt, ...)
{
	va_list ap;

	/* code < 0: a warning, not a failure */
	if (code > 0 && !r->code)
		r->code = code;
	if (r->quiet && code == 0)
		return;
	printf("%-4s %-10s ", code > 0 ? "FAIL" : code < 0 ? "warn" : "ok", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The deepest existing folder on the way to path's parent (what mkdir -p starts from). */
static void existing_parent(const char *path, struct recon_buf *dir)
{
	struct stat st;
	char *slash;

	recon_buf_reset(dir);
	recon_buf_adds(dir, path);
	for (;;) {
		slash = strrchr(dir->s, '/');
		if (!slash) {
			recon_buf_reset(dir);
			recon_buf_adds(dir, ".");
			return;
		}
		*slash = '\0';
		dir->len = (size_t)(slash - dir->s);
		if (!dir->len) {
			recon_buf_adds(dir, "/");
			return;
		}
		if (stat(dir->s, &st) == 0)
			return;
	}
}

/* A file recon writes (state store, heartbeat): it, or the folder that will hold it. */
static void check_writable(struct report *r, const char *what, const char *path)
{
	struct recon_buf dir;
	struct stat st;

	recon_buf_init(&dir);
	existing_parent(path, &dir);
	if (stat(dir.s, &st) == 0 && !S_ISDIR(st.st_mode))
		say(r, 73, what, "'%s': '%s' is not a folder", path, dir.s);
	else if (access(dir.s, W_OK | X_OK) != 0)
		say(r, 73, what, "'%s': cannot write in '%s': %s", path, dir.s, strerror(errno));
	else if (access(path, F_OK) == 0 && access(path, W_OK) != 0)
		say(r, 73, what, "'%s' is not writable: %s", path, strerror(errno));
	else
		say(r, 0, what, "'%s' writable", path);
	recon_buf_release(&dir);
}

/* A statement file: its folder (when the folder itself holds no {date}) is readable. */
static void check_folder(struct report *r, const struct recon_side *s)
{
	struct recon_buf dir;
	const char *slash = strrchr(s->path, '/');

	recon_buf_init(&dir);
	if (slash)
		recon_buf_add(&dir, s->path, (size_t)(slash - s->path));
	else
		recon_buf_adds(&dir, ".");
	if (!dir.len)
		recon_buf_adds(&dir, "/");
	if (strchr(dir.s, '{'))
		say(r, -1, s->role, "%s '%s': the folder is named by date, not checked",
		    s->backend->name, s->path);
	else if (access(dir.s, R_OK | X_OK) != 0)
		say(r, 69, s->role, "%s '%s': cannot read folder '%s': %s", s->backend->name,
		    s->path, dir.s, strerror(errno));
	else
		say(r, 0, s->role, "%s '%s' (folder readable)", s->backend->name, s->path);
	recon_buf_release(&dir);
}

/* A database file: readable (it is opened read-only). */
static void check_file(struct report *r, const struct recon_side *s)
{
	if (access(s->path, R_OK) != 0)
		say(r, 69, s->role, "%s '%s': %s", s->backend->name, s->path, strerror(errno));
	else
		say(r, 0, s->role, "%s '%s' readable (opened read-only)", s->backend->name,
		    s->path);
}

struct probe_arg {
	struct report *r;
	const char *what;
};

static void probe_say(void *arg, int code, const char *fmt, va_list ap) RECON_PRINTF(3, 0);
static void probe_say(void *arg, int code, const char *fmt, va_list ap)
{
	struct probe_arg *pa = arg;
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	say(pa->r, code, pa->what, "%s", line);
}

/* A database side (reader) or the writer: its variable set, then the connection and grants. */
static void check_db(struct report *r, const struct recon_job *job, const struct recon_side *s,
		     const char *what, const char *env, const char *field, bool writer)
{
	const char *dsn = env ? getenv(env) : NULL;

	if (!dsn || !*dsn) {
		say(r, 78, "env", "'%s' (%s) is not set", env ? env : "", field);
		return;
	}
	say(r, 0, "env", "'%s' (%s) is set", env, field);
	if (!s->backend->probe) {
		say(r, 69, what, "%s: this recon was built without its driver", s->role);
		return;
	}
	s->backend->probe(job, s,
			  &(struct recon_probe){.env = env,
						.writer = writer,
						.tables = merchant_tables,
						.say = probe_say,
						.arg = &(struct probe_arg){r, what}});
}

static void check_side(struct report *r, const struct recon_job *job, const struct recon_side *s)
{
	char field[32];

	if (s->csv.format)
		say(r, 0, "profile", "%s: '%s'", s->role, s->csv.format);
	if (recon_source_has(s, RECON_SOURCE_FILE)) {
		check_folder(r, s);
	} else if (recon_source_has(s, RECON_SOURCE_PATH)) {
		check_file(r, s);
	} else {
		snprintf(field, sizeof(field), "%s.dsn_env", s->role);
		check_db(r, job, s, s->role, s->dsn_env, field, false);
	}
}

/* The writer of replays, tickets and events: the local database, read-write. */
static void check_writer(struct report *r, const struct recon_job *job)
{
	const struct recon_side *s = &job->local;

	if (!job->actions.enabled) {
		say(r, 0, "writer", "actions are off: no writer");
		return;
	}
	if (recon_source_has(s, RECON_SOURCE_FILE))
		say(r, 0, "writer", "the local side is a CSV file: actions write nothing there");
	else if (recon_source_has(s, RECON_SOURCE_PATH) && access(s->path, W_OK) != 0)
		say(r, 77, "writer", "%s '%s' is not writable: %s", s->backend->name, s->path,
		    strerror(errno));
	else if (recon_source_has(s, RECON_SOURCE_PATH))
		check_writable(r, "writer", s->path);
	else if (job->actions.writer_dsn_env)
		check_db(r, job, s, "writer", job->actions.writer_dsn_env, "actions.writer_dsn_env",
			 true);
	else
		check_db(r, job, s, "writer", s->dsn_env, "local.dsn_env", true);
}

int recon_cmd_validate(int argc, char **argv)
{
	const char *job_path = NULL;
	bool help = false, quiet = false;
	struct recon_opt opts[] = {
	    {"job", true, &job_path, NULL},
	    {"quiet", false, NULL, &quiet},
	    {NULL, false, NULL, NULL},
	};
	struct report r = {0, false};
	struct recon_job *job = NULL;
	struct recon_err err;
	char buf[512];

	recon_err_init(&err);
	if (recon_opt_parse(argc, argv, opts, &help) < 0)
		return 64; /* it said what was wrong, in one line */
	if (!help && !job_path) {
		fputs(validate_usage, stderr);
		return 64;
	}
	if (help) {
		fputs(validate_usage, stdout);
		return 0;
	}
	r.quiet = quiet;
	if (recon_job_load(&job, job_path, &err) < 0) {
		say(&r, recon_err_exit_code(err.code), "job", "%s",
		    recon_err_str(&err, buf, sizeof(buf)));
		goto out;
	}
	say(&r, 0, "job", "'%s' from '%s'", job->name, job_path);
	check_side(&r, job, &job->upstream);
	check_side(&r, job, &job->local);
	check_writer(&r, job);
	check_writable(&r, "state", job->state_path);
	if (job->heartbeat_path)
		check_writable(&r, "heartbeat", job->heartbeat_path);
out:
	recon_job_free(job);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		recon_log(RECON_LOG_ERROR, "cannot write the report: %s", strerror(errno));
		return r.code ? r.code : 1;
	}
	return r.code;
}
