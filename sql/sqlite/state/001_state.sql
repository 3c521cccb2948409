-- recon state store, schema version 1 (PRAGMA user_version = 1).
-- Applied by recon itself (src/recon_state.c embeds this file at build time);
-- kept here so operators can read and query the store with the sqlite3 CLI.

CREATE TABLE runs (
	id              INTEGER PRIMARY KEY,
	job             TEXT    NOT NULL,
	mode            TEXT    NOT NULL,            -- t1 | hot
	window_start_ms INTEGER NOT NULL,            -- [start, end) UTC ms
	window_end_ms   INTEGER NOT NULL,
	business_date   TEXT    NOT NULL,            -- YYYY-MM-DD in the job's zone
	dry_run         INTEGER NOT NULL DEFAULT 0,
	started_at_ms   INTEGER NOT NULL,
	finished_at_ms  INTEGER,
	outcome         TEXT    NOT NULL DEFAULT 'running', -- running | success | failed
	exit_code       INTEGER,
	error           TEXT,
	rows_upstream   INTEGER NOT NULL DEFAULT 0,  -- rows read
	rows_local      INTEGER NOT NULL DEFAULT 0,
	rows_rejected   INTEGER NOT NULL DEFAULT 0,
	rows_skipped    INTEGER NOT NULL DEFAULT 0,  -- keyless statement lines (fees, payouts)
	rows_other      INTEGER NOT NULL DEFAULT 0,  -- read for context, owned by a neighbouring window
	keys_compared   INTEGER NOT NULL DEFAULT 0,
	matched         INTEGER NOT NULL DEFAULT 0,
	in_flight       INTEGER NOT NULL DEFAULT 0,
	n_missing         INTEGER NOT NULL DEFAULT 0,
	n_extra           INTEGER NOT NULL DEFAULT 0,
	n_stuck           INTEGER NOT NULL DEFAULT 0,
	n_amount_mismatch INTEGER NOT NULL DEFAULT 0,
	n_status_mismatch INTEGER NOT NULL DEFAULT 0,
	n_duplicate       INTEGER NOT NULL DEFAULT 0,
	resolved        INTEGER NOT NULL DEFAULT 0,  -- earlier differences this run found matched
	upstream_sha256 TEXT,                        -- input files as read (NULL: a database)
	local_sha256    TEXT,
	config_sha256   TEXT    NOT NULL
);
CREATE INDEX runs_job ON runs (job, mode, id);

-- The differences one run found, as printed by `recon diff` (one JSON object each).
CREATE TABLE run_differences (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	key    TEXT    NOT NULL,
	class  TEXT    NOT NULL,
	json   TEXT    NOT NULL,
	PRIMARY KEY (run_id, key, class)
) WITHOUT ROWID;

-- The ledger: one row per (job, key, class) ever found; resolved when a later
-- run finds the key matched (or in another class).
CREATE TABLE differences (
	job              TEXT    NOT NULL,
	key              TEXT    NOT NULL,
	class            TEXT    NOT NULL,
	first_seen_run   INTEGER NOT NULL,
	last_seen_run    INTEGER NOT NULL,
	first_seen_at_ms INTEGER NOT NULL,
	last_seen_at_ms  INTEGER NOT NULL,
	resolved_run     INTEGER,
	resolved_at_ms   INTEGER,
	json             TEXT    NOT NULL,           -- as last seen
	PRIMARY KEY (job, key, class)
) WITHOUT ROWID;
CREATE INDEX differences_open ON differences (job, resolved_at_ms);

CREATE TABLE rejects (
	run_id INTEGER NOT NULL REFERENCES runs (id),
	side   TEXT    NOT NULL,                     -- upstream | local
	origin TEXT    NOT NULL,                     -- file:line or table
	field  TEXT    NOT NULL,
	reason TEXT    NOT NULL,
	raw    TEXT
);
CREATE INDEX rejects_run ON rejects (run_id);

CREATE TABLE watermarks (
	job                  TEXT    NOT NULL,
	mode                 TEXT    NOT NULL,
	reconciled_until_ms  INTEGER NOT NULL,
	run_id               INTEGER NOT NULL,
	updated_at_ms        INTEGER NOT NULL,
	PRIMARY KEY (job, mode)
) WITHOUT ROWID;

CREATE TABLE heartbeats (
	job              TEXT    NOT NULL,
	mode             TEXT    NOT NULL,
	last_success_ms  INTEGER NOT NULL,
	run_id           INTEGER NOT NULL,
	duration_ms      INTEGER NOT NULL,
	PRIMARY KEY (job, mode)
) WITHOUT ROWID;
