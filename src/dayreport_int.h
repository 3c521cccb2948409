/*
 * The daily report's family, internal: the report as loaded (recon_dayreport.c
 * gathers the day's facts from the state module) and the helpers its renderers
 * share (dayreport_render.c); each format renders in a file of its own
 * (dayreport_html.c, dayreport_md.c, dayreport_csv.c). Only these files
 * include it.
 */
#ifndef RECON_DAYREPORT_INT_H
#define RECON_DAYREPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "recon_buf.h"
#include "recon_dayreport.h"

#define NO_DAY INT64_MAX

struct item {
	int64_t id;
	char *key;
	char klass[24];
	char sev[12];
	int64_t amount; /* money at stake, minor units of cur */
	char cur[4];
	int exp;
	int64_t opened_day, opened_ms;
	char *ticket; /* the ticket's status, NULL when none */
	char *json;   /* the difference as last evaluated */
	bool info;    /* awaiting / in flight: not a difference yet */
};

/* Money at stake of one class (klass "" = every difference) in one currency. */
struct stake {
	char klass[24];
	char cur[4];
	int exp;
	bool info;
	int64_t count;
	int64_t sum;
	bool over; /* beyond int64: shown as such */
};

struct day {
	int64_t found;	   /* differences opened by the day's runs */
	int64_t open;	   /* differences open at the end of the day */
	int64_t open_info; /* awaiting / in flight open at the end of the day */
	int64_t stake;	   /* money at stake at the end of the day, chart currency */
	bool stake_over;
	int64_t runs, failed;
	int64_t max_ms; /* longest run's duration */
};

struct run {
	int64_t id, day, started, finished, exit_code;
	int64_t n[10]; /* rows_upstream .. resolved, see run_sql */
	char outcome[12];
	char *error;
};

struct reject {
	int64_t run;
	char *side, *origin, *field, *reason;
};

struct recon_dayreport {
	const struct recon_job *job;
	char mode[4];
	int64_t from, to, now;
	struct day *days; /* to - from + 1 */
	size_t ndays;
	struct run *runs; /* the range's runs, by id */
	size_t nruns;
	const struct run *main; /* the day's latest successful run, else its latest; NULL: none */
	const struct run *last; /* the day's latest run */
	struct item *items;	/* open at the end of the day: differences by stake, then info */
	size_t nitems, ndiff;
	struct stake *stakes;
	size_t nstakes;
	int64_t age[3]; /* differences opened today, 1-3 days ago, earlier */
	int64_t tickets_open;
	char cur[4]; /* the charts' currency: the job's */
	int exp;
	bool other_cur; /* some differences are in other currencies */
	struct reject *rejects;
	size_t nrejects;
	int64_t rejects_total;
};

/* The output: one buffer spilled to the FILE every 64 KiB. */
struct w {
	FILE *f;
	struct recon_buf b;
	bool failed;
};

/* One side of a difference, as text ready to show. */
struct side {
	bool present;
	char amount[80]; /* "100.00 CNY" */
	char decimal[48];
	char cur[4];
	char status[24];
	char time[40]; /* local, with offset */
	char origin[256];
};

/* Writes out w's buffer when it holds 64 KiB (all: whatever it holds). */
void recon_dayreport_spill(struct w *w, bool all);
/* Adds v to *acc, or sets *over when the sum leaves int64. */
void recon_dayreport_add_ck(int64_t *acc, int64_t v, bool *over);

/* Minor units as decimal text; `group`: thousands separated by ','. */
void recon_dayreport_money(int64_t v, int exp, bool group, char *buf, size_t size);
/* A count with thousands separated by ','; buf holds 64 bytes. Returns buf. */
char *recon_dayreport_count(int64_t v, char *buf);
/* A stake's sum, or "beyond int64". */
void recon_dayreport_stake_text(const struct stake *s, bool group, char *buf, size_t size);
/* "2024-03-01 10:00:00+08:00": wall clock in the job's zone with its offset. */
void recon_dayreport_local_time(const struct recon_dayreport *r, int64_t ms, char *buf,
				size_t size);
/* Side `name` ("upstream", "local") of difference d. */
void recon_dayreport_side(const struct recon_dayreport *r, json_t *d, const char *name,
			  struct side *s);
/* s made safe for the page: HTML (md false) or Markdown. */
void recon_dayreport_add_text(struct recon_buf *b, const char *s, bool md);
/* s as a CSV field (RFC 4180). */
void recon_dayreport_add_csv(struct recon_buf *b, const char *s);
/* "190.00 CNY, 5.00 USD": every currency's total of open differences ("" when none). */
void recon_dayreport_totals_text(const struct recon_dayreport *r, bool group, char *buf,
				 size_t size);
/* The verdict in one line; *level 0 ok, 1 attention, 2 bad. */
void recon_dayreport_verdict(const struct recon_dayreport *r, bool group, char *buf, size_t size,
			     int *level);
/* An item's age at the report's day: "today", "3 days". */
void recon_dayreport_age(const struct recon_dayreport *r, const struct item *it, char *buf,
			 size_t size);
/* The oldest open difference; NULL when none. */
const struct item *recon_dayreport_oldest(const struct recon_dayreport *r);
/* The control totals line: verified, failed, or why they were not checked. */
void recon_dayreport_totals_line(const struct recon_dayreport *r, char *buf, size_t size);
/* The labels of struct run's n[]. */
extern const char *const recon_dayreport_run_labels[10];

/* The report in each format, into w. */
void recon_dayreport_html(struct w *w, const struct recon_dayreport *r);
void recon_dayreport_md(struct w *w, const struct recon_dayreport *r);
void recon_dayreport_csv(struct w *w, const struct recon_dayreport *r);

#endif
