-- recon state store, schema version 2: tickets and the actions runs took.

-- One ticket per (job, key, class); opening it again is a no-op.
CREATE TABLE tickets (
	job            TEXT    NOT NULL,
	key            TEXT    NOT NULL,
	class          TEXT    NOT NULL,
	severity       TEXT    NOT NULL,            -- normal | critical
	status         TEXT    NOT NULL DEFAULT 'open',
	opened_run     INTEGER NOT NULL,
	opened_at_ms   INTEGER NOT NULL,
	last_seen_run  INTEGER NOT NULL,
	json           TEXT    NOT NULL,            -- both sides' values when opened
	PRIMARY KEY (job, key, class)
) WITHOUT ROWID;

-- Every action a run took (or would have taken, on a dry run), with its outcome.
CREATE TABLE actions (
	run_id   INTEGER NOT NULL REFERENCES runs (id),
	key      TEXT    NOT NULL,
	class    TEXT    NOT NULL,
	action   TEXT    NOT NULL,                  -- replay | ticket | repush | transition | alert
	outcome  TEXT    NOT NULL,                  -- done | already | skipped | would | failed
	attempts INTEGER NOT NULL DEFAULT 1,
	error    TEXT
);
CREATE INDEX actions_run ON actions (run_id);

ALTER TABLE runs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN actions_json TEXT;   -- counts per action and outcome
