-- recon state store, schema version 4: the open-items ledger (DESIGN "Keys
-- across windows: the open-items ledger").
--
-- ledger: what each reconciled window's upstream entries contributed to a key,
-- kept only where it matters for a later window (refunds, revocations, open
-- items, local rows beyond the window, replays). A key's cumulative upstream
-- view is the sum of its rows (of plain order rows, which are snapshots of the
-- order, the latest window's); a rerun replaces its window's rows.
CREATE TABLE ledger (
	job             TEXT    NOT NULL,
	mode            TEXT    NOT NULL,            -- t1 | hot
	key             TEXT    NOT NULL,
	window_start_ms INTEGER NOT NULL,            -- the window that owns these entries
	window_end_ms   INTEGER NOT NULL,
	paid            INTEGER NOT NULL,            -- minor units: payment entries
	refunded        INTEGER NOT NULL,            -- refund entries, positive
	payments        INTEGER NOT NULL,            -- payment entries
	entries         INTEGER NOT NULL,            -- all entries
	revoked         INTEGER NOT NULL,            -- 1: a revocation (or a closed plain row)
	pending         INTEGER NOT NULL,            -- 1: a plain pending row
	conflict        INTEGER NOT NULL,            -- 1: mixed currencies or a sum beyond int64
	duplicate       INTEGER NOT NULL,            -- 1: the same provider entry twice
	plain           INTEGER NOT NULL,            -- 1: order rows in their status (snapshots: the latest wins)
	assumed         INTEGER NOT NULL DEFAULT 0,  -- 1: a payment assumed from the local row (see README)
	currency        TEXT    NOT NULL,
	first_ms        INTEGER NOT NULL,            -- first entry time (UTC ms)
	last_ms         INTEGER NOT NULL,            -- last entry time: when upstream got terminal
	run_id          INTEGER NOT NULL,
	keep_until_ms   INTEGER NOT NULL,            -- purged after this (retention)
	PRIMARY KEY (job, mode, key, window_start_ms)
) WITHOUT ROWID;
CREATE INDEX ledger_window ON ledger (job, mode, window_start_ms);
CREATE INDEX ledger_expiry ON ledger (job, mode, keep_until_ms);

-- One open item per (job, mode, key): a difference class, or 'awaiting' (a
-- local key whose settle horizon has not passed) or 'in_flight' (upstream
-- terminal, local pending, younger than stuck_after). Items end 'resolved'
-- (a later evaluation found the key matched, or its replay committed),
-- 'superseded' (the key got another class: ended_by names it) or 'closed'
-- (by a person, with a note).
CREATE TABLE items (
	id           INTEGER PRIMARY KEY,
	job          TEXT    NOT NULL,
	mode         TEXT    NOT NULL,
	key          TEXT    NOT NULL,
	class        TEXT    NOT NULL,
	severity     TEXT    NOT NULL,               -- critical | normal | info (awaiting, in flight)
	state        TEXT    NOT NULL DEFAULT 'open',
	opened_run   INTEGER NOT NULL,
	opened_at_ms INTEGER NOT NULL,
	last_run     INTEGER NOT NULL,               -- last evaluation
	last_at_ms   INTEGER NOT NULL,
	due_ms       INTEGER,                        -- awaiting / in flight: a difference after this
	amount_minor INTEGER,                        -- money at stake, minor units
	currency     TEXT,
	ended_run    INTEGER,
	ended_at_ms  INTEGER,
	ended_by     TEXT,                           -- matched | replayed | person | the new class
	note         TEXT,
	json         TEXT    NOT NULL                -- the difference as last evaluated
);
CREATE UNIQUE INDEX items_open ON items (job, mode, key) WHERE state = 'open';
CREATE INDEX items_key ON items (job, mode, key, id);
CREATE INDEX items_job ON items (job, state, mode, opened_at_ms);

ALTER TABLE tickets ADD COLUMN resolved_run INTEGER;
ALTER TABLE tickets ADD COLUMN resolved_at_ms INTEGER;
ALTER TABLE tickets ADD COLUMN note TEXT;
ALTER TABLE runs ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN awaiting INTEGER NOT NULL DEFAULT 0;

-- The version-3 difference ledger's open rows become open items (the latest
-- class of each key); nothing is dropped: the old tables stay for history.
INSERT INTO items (job, mode, key, class, severity, opened_run, opened_at_ms, last_run,
		   last_at_ms, json)
SELECT d.job, COALESCE((SELECT r.mode FROM runs r WHERE r.id = d.last_seen_run), 't1'), d.key,
       d.class, CASE d.class WHEN 'amount_mismatch' THEN 'critical' ELSE 'normal' END,
       d.first_seen_run, d.first_seen_at_ms, MAX(d.last_seen_run), d.last_seen_at_ms, d.json
FROM differences d WHERE d.resolved_run IS NULL GROUP BY d.job, d.key;
ALTER TABLE tickets ADD COLUMN synced INTEGER NOT NULL DEFAULT 1;  -- 0: the merchant's copy has not seen the end yet
