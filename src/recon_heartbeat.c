#include "recon_heartbeat.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recon_buf.h"
#include "recon_compare.h"
#include "recon_mem.h"
#include "recon_partition.h"
#include "recon_state.h"

/* ms -> "S.mmm" seconds, exactly. */
static void add_seconds(struct recon_buf *b, int64_t ms)
{
	const char *sign = ms < 0 ? "-" : "";
	uint64_t u = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;

	recon_buf_addf(b, "%s%" PRIu64 ".%03" PRIu64, sign, u / 1000, u % 1000);
}

/* Label values: backslash, quote and newline escaped (Prometheus text format). */
static void add_label(struct recon_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			recon_buf_addc(b, '\\');
		if (*s == '\n') {
			recon_buf_adds(b, "\\n");
			continue;
		}
		recon_buf_addc(b, *s);
	}
}

static void head(struct recon_buf *b, const char *name, const char *type, const char *help)
{
	recon_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{recon_job="...",mode="..."[,k="v"...]} : the job is `recon_job` (a scrape renames `job`). */
static void series(struct recon_buf *b, const char *name, const char *job, const char *mode,
		   const char *extra)
{
	recon_buf_addf(b, "%s{recon_job=\"", name);
	add_label(b, job);
	recon_buf_addf(b, "\",mode=\"%s\"%s%s} ", mode, extra ? "," : "", extra ? extra : "");
}

struct mode_stats {
	char mode[8];
	int64_t last_success, watermark, duration;
	int64_t rows_total[2];
	int64_t found_total[RECON_CLASS__COUNT]; /* over successful non-dry runs: only grows */
	int64_t rejected_total, rejects;
	int64_t open[RECON_CLASS__COUNT];
	int64_t oldest_open; /* first seen, UTC ms; 0: none open */
};

/* The modes read so far (recon_state_totals): *v[0..n). */
struct modes {
	struct mode_stats *v;
	size_t n, alloc;
};

static int add_mode(void *arg, const struct recon_state_totals *t)
{
	struct modes *ms = arg;
	struct mode_stats *m;

	recon_grow((void **)&ms->v, &ms->alloc, ms->n + 1, sizeof(*ms->v));
	m = &ms->v[ms->n++];
	memset(m, 0, sizeof(*m));
	snprintf(m->mode, sizeof(m->mode), "%s", t->mode);
	m->last_success = t->last_success;
	m->watermark = t->watermark;
	m->duration = t->duration_ms;
	m->rows_total[0] = t->rows_upstream;
	m->rows_total[1] = t->rows_local;
	memcpy(m->found_total, t->found, sizeof(m->found_total));
	m->rejected_total = t->rejected;
	m->rejects = t->rejects;
	return 0;
}

/*
 * The open items per mode and class, and the oldest one's first-seen time
 * (awaiting and in flight are not differences yet, and are left out).
 */
static int add_open(void *arg, const char *mode, const char *klass, int64_t n, int64_t oldest)
{
	struct modes *ms = arg;
	int c = recon_class_from_name(klass);

	for (size_t i = 0; i < ms->n; i++) {
		struct mode_stats *m = &ms->v[i];
		if (strcmp(m->mode, mode) || c < 0 || c >= RECON_CLASS__COUNT)
			continue;
		m->open[c] += n;
		if (!m->oldest_open || oldest < m->oldest_open)
			m->oldest_open = oldest;
	}
	return 0;
}

/* One gauge or counter per mode: name{recon_job,mode} value. */
static void render_per_mode(struct recon_buf *b, const char *job, const struct mode_stats *m,
			    size_t n, const char *name, const char *type, const char *help,
			    size_t field, bool seconds)
{
	head(b, name, type, help);
	for (size_t i = 0; i < n; i++) {
		int64_t v;
		memcpy(&v, (const char *)&m[i] + field, sizeof(v));
		series(b, name, job, m[i].mode, NULL);
		if (seconds)
			add_seconds(b, v);
		else
			recon_buf_addf(b, "%" PRId64, v);
		recon_buf_addc(b, '\n');
	}
}

static void render(struct recon_buf *b, const char *job, const struct mode_stats *m, size_t n)
{
	char extra[96];

	render_per_mode(b, job, m, n, "recon_last_success_timestamp_seconds", "gauge",
			"Unix time of the job's last successful run.",
			offsetof(struct mode_stats, last_success), true);
	render_per_mode(b, job, m, n, "recon_watermark_timestamp_seconds", "gauge",
			"End of the last window fully reconciled (compare and actions committed).",
			offsetof(struct mode_stats, watermark), true);
	render_per_mode(b, job, m, n, "recon_run_duration_seconds", "gauge",
			"Wall time of the last successful run.",
			offsetof(struct mode_stats, duration), true);
	head(b, "recon_rows_read_total", "counter", "Rows read by successful runs, per side.");
	for (size_t i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++) {
			series(b, "recon_rows_read_total", job, m[i].mode,
			       s ? "side=\"local\"" : "side=\"upstream\"");
			recon_buf_addf(b, "%" PRId64 "\n", m[i].rows_total[s]);
		}
	}
	head(b, "recon_differences_found_total", "counter",
	     "Differences found by successful runs, per class (alert on increase()).");
	for (size_t i = 0; i < n; i++) {
		for (int c = 0; c < RECON_CLASS__COUNT; c++) {
			snprintf(extra, sizeof(extra), "class=\"%s\"",
				 recon_class_name((enum recon_class)c));
			series(b, "recon_differences_found_total", job, m[i].mode, extra);
			recon_buf_addf(b, "%" PRId64 "\n", m[i].found_total[c]);
		}
	}
	head(b, "recon_open_items", "gauge",
	     "Differences still open (not yet matched by a later run), per class and severity.");
	for (size_t i = 0; i < n; i++) {
		for (int c = 0; c < RECON_CLASS__COUNT; c++) {
			snprintf(extra, sizeof(extra), "class=\"%s\",severity=\"%s\"",
				 recon_class_name((enum recon_class)c),
				 c == RECON_CLASS_AMOUNT_MISMATCH ? "critical" : "warning");
			series(b, "recon_open_items", job, m[i].mode, extra);
			recon_buf_addf(b, "%" PRId64 "\n", m[i].open[c]);
		}
	}
	head(b, "recon_open_item_oldest_timestamp_seconds", "gauge",
	     "Unix time the oldest open item was first seen (its age: time() minus this).");
	for (size_t i = 0; i < n; i++) {
		if (!m[i].oldest_open)
			continue;
		series(b, "recon_open_item_oldest_timestamp_seconds", job, m[i].mode, NULL);
		add_seconds(b, m[i].oldest_open);
		recon_buf_addc(b, '\n');
	}
	render_per_mode(b, job, m, n, "recon_rows_rejected_total", "counter",
			"Rows rejected by successful runs (within max_rejects).",
			offsetof(struct mode_stats, rejected_total), false);
	render_per_mode(b, job, m, n, "recon_rejects", "gauge",
			"Rows rejected by the last successful run.",
			offsetof(struct mode_stats, rejects), false);
}

static int write_atomic(const char *path, const struct recon_buf *b, struct recon_err *err)
{
	struct recon_buf tmp;
	int fd = -1, rc = 0;
	size_t off = 0;

	recon_buf_init(&tmp);
	recon_buf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp.s, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	/* node_exporter reads it as another user; the units' UMask=0077 is for the state */
	if (fd < 0 || fchmod(fd, 0644) < 0) {
		rc = recon_err_set(err, RECON_EWRITE, NULL, "cannot write heartbeat '%s': %s",
				   tmp.s, strerror(errno));
		goto out;
	}
	while (off < b->len) {
		ssize_t w = write(fd, b->s + off, b->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = recon_err_set(err, RECON_EWRITE, NULL,
					   "cannot write heartbeat '%s': %s", tmp.s,
					   strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		rc = recon_err_set(err, RECON_EWRITE, NULL, "cannot sync heartbeat '%s': %s", tmp.s,
				   strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp.s, path) < 0)
		rc = recon_err_set(err, RECON_EWRITE, NULL, "cannot rename '%s' to '%s': %s", tmp.s,
				   path, strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		unlink(tmp.s);
	recon_buf_release(&tmp);
	return rc;
}

/* recon_actions_total{action,outcome}: every action of real (non-dry) runs, per mode. */
struct actions {
	struct recon_buf *b;
	const char *job;
};

static int add_action(void *arg, const char *mode, const char *action, const char *outcome,
		      int64_t n)
{
	const struct actions *a = arg;

	recon_buf_addf(a->b, "recon_actions_total{recon_job=\"");
	add_label(a->b, a->job);
	recon_buf_addf(a->b, "\",mode=\"%s\",action=\"%s\",outcome=\"%s\"} %lld\n", mode, action,
		       outcome, (long long)n);
	return 0;
}

/* Every series of b with `labels,` first in its label set (b's lines all have one). */
static void add_labels(struct recon_buf *b, const char *labels)
{
	struct recon_buf o;
	const char *p = b->s, *end = b->s + b->len;

	recon_buf_init(&o);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *brace =
		    *p != '#' ? memchr(p, '{', (size_t)(nl ? nl - p : end - p)) : NULL;
		size_t len = (size_t)((nl ? nl + 1 : end) - p);
		if (brace) {
			recon_buf_add(&o, p, (size_t)(brace + 1 - p));
			recon_buf_addf(&o, "%s,", labels);
			recon_buf_add(&o, brace + 1, len - (size_t)(brace + 1 - p));
		} else {
			recon_buf_add(&o, p, len);
		}
		p += len;
	}
	recon_buf_release(b);
	*b = o;
}

int recon_heartbeat_write(struct recon_state *st, const char *job, const char *path,
			  struct recon_err *err)
{
	const struct recon_partition whole = {0, 0};

	return recon_heartbeat_write_partition(st, job, &whole, path, err);
}

int recon_heartbeat_write_partition(struct recon_state *st, const char *job,
				    const struct recon_partition *p, const char *path,
				    struct recon_err *err)
{
	struct modes ms = {NULL, 0, 0};
	struct recon_buf b;
	struct actions a = {&b, job};
	char labels[64];
	int rc;

	recon_buf_init(&b);
	if ((rc = recon_state_totals(st, job, add_mode, &ms, err)) < 0 ||
	    (rc = recon_state_open_by_mode(st, job, add_open, &ms, err)) < 0)
		goto out;
	render(&b, job, ms.v, ms.n);
	head(&b, "recon_actions_total", "counter",
	     "Actions taken by runs (replay, ticket, repush, transition, alert) by outcome.");
	if ((rc = recon_state_action_counts(st, job, add_action, &a, err)) < 0)
		goto out;
	if (p->count) {
		/* alert rules count the partitions reporting against this */
		head(&b, "recon_partitions", "gauge",
		     "Key-hash partitions the job splits into (this file is one of them).");
		series(&b, "recon_partitions", job, "all", NULL);
		recon_buf_addf(&b, "%u\n", p->count);
		add_labels(&b, recon_partition_labels(p, labels, sizeof(labels)));
	}
	rc = write_atomic(path, &b, err);
out:
	free(ms.v);
	recon_buf_release(&b);
	return rc;
}
