/*
 * recon_job: the job file (and the CSV format profiles it names) loaded into
 * an immutable `struct recon_job`.
 *
 * Loading is strict (jansson JSON_REJECT_DUPLICATES, unknown keys and wrong
 * types are errors naming file, line and key; RECON_ECONFIG, exit 78). After
 * recon_job_load() returns, nothing in the job changes: every module reads it,
 * none writes it. Paths are already resolved against the job file's folder.
 * The struct is an open aggregate on purpose: it is configuration, read by
 * every stage.
 *
 * A side's "kind" names its backend (recon_source.h): the loader reads the
 * keys every side takes (columns, maps, zone, currency, and path, table or
 * dsn_env as the backend's capabilities say) and leaves the backend's own
 * keys to its validator (the csv backend's: src/source_csv_job.c, into
 * side->csv). The JSON readers both use are recon_cfg.h.
 */
#ifndef RECON_JOB_H
#define RECON_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"
#include "recon_partition.h"

struct recon_tz;

#define RECON_KEY_PARTS_MAX 4
#define RECON_FIRST_OF_MAX  8  /* columns a {"first_of": [...]} key may name */
#define RECON_NAME_MAX	    64 /* identifiers: job, table and column names */

/* Canonical statuses. Order matters: it is the on-disk and output order. */
enum recon_status {
	RECON_ST_SUCCESS = 0,
	RECON_ST_REFUNDED = 1,
	RECON_ST_CLOSED = 2,
	RECON_ST_PENDING = 3,
};
#define RECON_ST__COUNT 4

/* Kinds of upstream statement entries (DESIGN "Entries fold into orders"). */
enum recon_entry {
	RECON_ENTRY_PAYMENT = 0,
	RECON_ENTRY_REFUND = 1,
	RECON_ENTRY_REVOKE = 2,
	RECON_ENTRY_KEYLESS = 3, /* fee, payout, adjustment: skipped and counted */
	RECON_ENTRY_IGNORE = 4,	 /* rows the profile says carry no money movement */
	/* money a refund-like entry took comes back (Stripe dispute_reversal, refund_failure):
	   normalized to a RECON_ENTRY_REFUND with a negative amount, so it offsets the refund */
	RECON_ENTRY_REFUND_REVERSAL = 5,
};

/* Column roles: what a source column means. A side maps each role to a column name. */
enum recon_col {
	RECON_COL_KEY0 = 0, /* key parts: KEY0 .. KEY0 + nkey - 1 */
	RECON_COL_KEY1,
	RECON_COL_KEY2,
	RECON_COL_KEY3,
	RECON_COL_AMOUNT,	 /* decimal text, major units ("12.34") */
	RECON_COL_AMOUNT_MINOR,	 /* integer minor units */
	RECON_COL_REFUND_AMOUNT, /* a separate column for refund entries (WeChat) */
	RECON_COL_CURRENCY,
	RECON_COL_STATUS,
	RECON_COL_TIME,
	RECON_COL_TXN_ID,     /* provider transaction id: with entry type, the entry's identity */
	RECON_COL_REFUND_ID,  /* provider refund id: identity of a refund entry */
	RECON_COL_ENTRY_TYPE, /* the column telling payment/refund/revoke/fee apart */
	RECON_COL__COUNT
};

/* Role name as written in job files ("key", "amount_minor", ...). */
const char *recon_col_name(enum recon_col col);
const char *recon_status_name(enum recon_status st);

/* A word -> value map (status words, entry-type words). Exact, case-sensitive. */
struct recon_map_entry {
	char *word;
	size_t len;
	int value;
};
struct recon_map {
	struct recon_map_entry *v;
	size_t n;
};
/* Value for s[0..len), or -1 when the word is not in the map. */
int recon_map_get(const struct recon_map *m, const char *s, size_t len);
/* Sets word's value, adding the word (copied) when it is new. */
void recon_map_put(struct recon_map *m, const char *word, int value);

/*
 * Control totals a statement carries (DESIGN "Entries fold into orders"),
 * checked by recon_totals against the records read. All of it borrowed from
 * the job.
 */
enum recon_totals_in {
	RECON_TOTALS_NONE = 0,
	RECON_TOTALS_TRAILER, /* a names line and a values line after the data (WeChat) */
	RECON_TOTALS_FOOTER,  /* comment lines "LABELN笔，NAME共X元，..." (Alipay) */
};
struct recon_totals_sum {
	char *label;  /* trailer: the total's name; footer: the text before "共" */
	char *column; /* the detail column it sums (header name) */
};
struct recon_totals_group {
	char *count; /* trailer: the count's name ("总交易单数"); footer: the line's prefix */
	char *entry_type; /* only records whose entry-type cell is this word; NULL: all records */
	struct recon_totals_sum *sums;
	size_t nsums;
};
struct recon_totals_rule {
	enum recon_totals_in in; /* RECON_TOTALS_NONE: the statement carries none */
	bool required;		 /* a file without them is truncated: bad input */
	char **informational;	 /* NULL-terminated labels the layouts carry that are not checked
				    (every other label is a count or a sum, or fails the run) */
	struct recon_totals_group *groups;
	size_t ngroups;
};

/*
 * The csv backend's layout of a statement file ("format" profiles and the csv
 * keys of a side; src/source_csv_job.c reads them, src/source_csv.c and
 * recon_totals use them). Zero on sides of other kinds.
 */
struct recon_side_csv {
	char *format; /* profile name, or NULL for inline configuration */
	char delimiter;
	char quote;		 /* 0: no quoting (WeChat) */
	bool header;		 /* first data line (after skip_lines/comments) names the columns */
	unsigned skip_lines;	 /* physical lines to drop before the header */
	char *encoding;		 /* "UTF-8" (default) or an iconv name */
	char *strip;		 /* guard characters stripped from both ends of cells ("`\t") */
	char **comment_prefixes; /* NULL-terminated; lines starting with one are skipped */
	char **stop_prefixes; /* NULL-terminated; the first line starting with one ends the data */
	char delim_guard;     /* data cells split only on the delimiter followed by this character
				 (WeChat ",`": names may hold raw commas); the header splits plainly */
	bool reject_empty;    /* a file without a header line is bad input */
	bool allow_empty;  /* a statement without entries is expected (a job's "allow_empty"); else
			      one is bad input unless its control totals state 0 rows */
	char *zip_entry;   /* a .zip input: the member whose name holds this (NULL: the only one) */
	char *zip_exclude; /* ... and does not contain this */
	struct recon_totals_rule totals;
	char **totals_ignore; /* NULL-terminated: labels the job marks as not to be checked */
};

struct recon_source_backend;

struct recon_side {
	const char *role;			    /* "upstream" or "local" (static string) */
	const struct recon_source_backend *backend; /* what reads it (recon_source.h) */
	char *path;    /* RECON_SOURCE_PATH: absolute or job-relative resolved; may hold {date} */
	char *table;   /* RECON_SOURCE_TABLE: validated identifier */
	char *dsn_env; /* RECON_SOURCE_DSN: environment variable holding the DSN */
	char *cols[RECON_COL__COUNT];	   /* column name per role; NULL when not mapped */
	char **alt_cols[RECON_COL__COUNT]; /* header names tried in order when cols[r] is absent
					      (older layouts); NULL-terminated, or NULL */
	unsigned nkey;			   /* number of key parts, >= 1 */
	char **key_first_of; /* {"first_of": [...]}: NULL-terminated columns whose first
				non-empty one is the key (cols[KEY0] is the first; nkey 1),
				or NULL */
	char *tz_name;	     /* how this side writes its timestamps */
	char *time_format;   /* strftime-style form of its timestamps (recon_time_parse_format), or
				NULL: the default YYYY-MM-DD HH:MM:SS[.fff] */
	struct recon_tz *tz; /* loaded from tz_name (or the job's zone) */
	char *currency;	     /* default currency for rows without one (upper case) */
	struct recon_map status_map;  /* word -> enum recon_status */
	struct recon_map entry_types; /* word -> enum recon_entry (needs cols[ENTRY_TYPE]) */
	unsigned money_flags;	      /* RECON_MONEY_* for the amount columns */
	int64_t idle_timeout_ms;      /* a read waiting this long for input fails: a FIFO statement
					 (0: 5 min), a PostgreSQL server's next answer (0: 10 min) */

	struct recon_side_csv csv; /* the csv backend's layout (zero for other kinds) */
	void *backend_data; /* a backend's own settings, made by its validate() and freed by its
			       release() (NULL: none) */

	struct recon_partition part; /* the key-hash partition this run reads (recon_partition.h) */
};

/* How a missing order is replayed (actions.replay). */
enum recon_replay_mode {
	RECON_REPLAY_INSERT = 0, /* a row in the local flow table (the default) */
	RECON_REPLAY_OUTBOX,	 /* a "replay" event in recon_outbox for the merchant's consumer */
};

#define RECON_REPLAY_VALUES_MAX 32

/*
 * One column a replay fills besides the mapped roles (actions.replay_values):
 * text is a template ({key}, {amount_minor}, {amount}, {currency}, {status},
 * {time}, {now}, {txn_id}, {job}, {run_id}; anything else is literal), a JSON
 * integer's decimal text, or NULL for SQL NULL.
 */
struct recon_replay_value {
	char *column; /* validated identifier, not a column of a mapped role */
	char *text;
	bool number; /* text is a JSON integer's: a number in a replay event's JSON */
};

/* What a run does about its differences ("actions" in the job file). */
struct recon_actions_cfg {
	bool enabled;	      /* default true; --dry-run still wins */
	char *writer_dsn_env; /* postgres/mysql local: the read-write DSN's variable */
	char *replay_status[RECON_ST__COUNT]; /* local word written by a replay, per status */
	char *repush_event;		      /* outbox event name for stuck orders */
	char *transition_to;		      /* optional guarded transition of stuck orders */
	char **transition_from;		      /* NULL-terminated; the words it may move from */
	int64_t attempts;   /* tries per action on transient failures (1-10, default 5) */
	int64_t breaker;    /* consecutive actions failed on an unavailable writer before the
			       action phase stops, the rest left for the rerun (default 3; 0: never) */
	int64_t timeout_ms; /* writer lock wait / I/O timeout (0: the engine's default) */
	enum recon_replay_mode replay;
	struct recon_replay_value *replay_values; /* nreplay_values of them, in file order */
	size_t nreplay_values;
};

/*
 * The value of template variable name[0..len) of a replay ("key", "now", ...)
 * as an index into the table below, or -1 when there is no such variable.
 */
enum recon_tvar {
	RECON_TVAR_KEY = 0,
	RECON_TVAR_AMOUNT_MINOR,
	RECON_TVAR_AMOUNT,
	RECON_TVAR_CURRENCY,
	RECON_TVAR_STATUS,
	RECON_TVAR_TIME,
	RECON_TVAR_NOW,
	RECON_TVAR_TXN_ID,
	RECON_TVAR_JOB,
	RECON_TVAR_RUN_ID,
	RECON_TVAR__COUNT
};
int recon_job_tvar(const char *name, size_t len);

struct recon_job {
	char *name; /* validated: [A-Za-z0-9_.-]{1,64} */
	char *file; /* the job file's path as given */
	char *dir;  /* its folder: relative paths resolve here */
	char *tz_name;
	struct recon_tz *tz; /* the business day's zone */
	char currency[4];    /* ISO 4217, upper case */
	int exponent;	     /* the job currency's minor-unit exponent */
	struct recon_side upstream;
	struct recon_side local;
	int64_t tolerance_minor; /* amount_tolerance_minor, >= 0 */
	int64_t stuck_after_ms;
	int64_t margin_ms;
	int64_t hot_size_ms;
	int64_t hot_lag_ms;
	bool hot_start_set;	 /* hot.start given: the first hot window starts there */
	int64_t hot_start;	 /* else: the start of today in the job's zone */
	int64_t hot_max_windows; /* windows one invocation may catch up (default 12) */
	int64_t t1_max_days;	 /* days one t1 invocation may catch up (default 31) */
	int64_t t1_after_ms;	 /* t1.after: a day is due this long after its end (default 0) */
	int64_t settle_after_ms; /* a local-only key is extra once its time + this is reconciled */
	int64_t
	    refund_after_ms;  /* a local refund upstream does not show (yet) is awaited this long */
	int64_t lock_wait_ms; /* how long a run waits for the job's lock (default 10m) */
	int64_t ledger_retention_ms; /* ledger.retention: partially refunded keys (400d) */
	int64_t ledger_settled_ms;   /* ledger.settled: settled keys kept for reruns (7d) */
	int64_t
	    check_max_lag_ms[2]; /* per mode (RECON_MODE_T1, _HOT): WARNING beyond, CRITICAL 2x */
	int64_t check_max_age_ms[2];
	int64_t max_rejects; /* >= 0 */
	struct recon_actions_cfg actions;
	char *state_path;
	char *heartbeat_path;
	char *config_text; /* the effective configuration, canonical JSON (for hashing) */

	int64_t partition_count; /* "partition": {"count": N}; 0 when absent (recon_partition.h) */
};

/*
 * Loads and validates the job file at `path` (and any format profile it
 * names, searched in $RECON_FORMATS_DIR, <job dir>/formats, <job dir>/../rules/formats,
 * <job dir>/../../rules/formats and the installed data folder). On success
 * *out is the job; caller frees with recon_job_free(). RECON_ECONFIG with
 * file:line: 'key' on any defect.
 */
RECON_MUSTCHECK int recon_job_load(struct recon_job **out, const char *path, struct recon_err *err);
void recon_job_free(struct recon_job *job);

/*
 * The data folder (format profiles, SQL, examples): PREFIX/share/recon beside
 * the running binary when it exists, else the compiled-in one. Writes a
 * NUL-terminated path into buf (truncated to size).
 */
void recon_job_datadir(char *buf, size_t size);

/*
 * Expands {date} (YYYY-MM-DD) and {yyyymmdd} in a side's path for business
 * day `day`. Caller frees the result with free().
 */
char *recon_job_expand_path(const char *tmpl, int64_t day);

/*
 * `run --upstream FILE|-`: the statement of this one run is FILE ('-':
 * standard input) instead of the job's path. The one change made to a job
 * after loading, by the command line before any window runs. RECON_EUSAGE
 * when the upstream is not a statement file (RECON_SOURCE_FILE).
 */
RECON_MUSTCHECK int recon_job_override_upstream(struct recon_job *job, const char *path,
						struct recon_err *err);

/* True when s is a safe SQL identifier: [A-Za-z_][A-Za-z0-9_$]{0,63} (no quoting tricks). */
bool recon_job_ident_ok(const char *s);

#endif
