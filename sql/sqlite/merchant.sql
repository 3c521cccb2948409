-- Tables recon's compensations write in the merchant database (SQLite).
-- Every write is idempotent through a unique key, so a crash and a rerun end
-- in the same state as one clean run (DESIGN "Repeatable and idempotent"):
--   idempotency_record  one row per replayed business operation, committed in
--                       the same transaction as the replayed flow row
--   recon_ticket        one ticket per (job, key, class): opening twice is a no-op
--   recon_outbox        one re-push event per (job, key, event), published by
--                       the merchant's outbox relay
-- Times are UTC text 'YYYY-MM-DDTHH:MM:SS.fffZ'.

CREATE TABLE IF NOT EXISTS idempotency_record (
	id         INTEGER PRIMARY KEY,
	idem_key   TEXT    NOT NULL,                -- e.g. 'recon:replay:ORD-1002'
	biz_type   TEXT    NOT NULL,                -- e.g. 'payment_replay'
	status     TEXT    NOT NULL,                -- 'done' (or 'processing' for two-step consumers)
	result     TEXT,                            -- what the first execution returned
	created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	updated_at TEXT,
	CONSTRAINT uk_idempotency_record_idem_key UNIQUE (idem_key)
);

CREATE TABLE IF NOT EXISTS recon_ticket (
	id         INTEGER PRIMARY KEY,
	job        TEXT    NOT NULL,
	biz_key    TEXT    NOT NULL,                -- the business key ('|' between parts)
	class      TEXT    NOT NULL,                -- extra, amount_mismatch, status_mismatch, duplicate
	severity   TEXT    NOT NULL DEFAULT 'normal',  -- 'critical' for amount_mismatch
	run_id     INTEGER,                         -- the recon run that opened it
	detail     TEXT,                            -- the difference as one JSON object
	status     TEXT    NOT NULL DEFAULT 'open',
	created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	updated_at TEXT,
	resolved_run INTEGER,   -- the recon run that resolved it (NULL: open, or closed by a person)
	note       TEXT,         -- why it ended: 'resolved by run N (matched)', a person's note
	CONSTRAINT uk_recon_ticket UNIQUE (job, biz_key, class)
);
CREATE INDEX IF NOT EXISTS idx_recon_ticket_status ON recon_ticket (status, created_at);

CREATE TABLE IF NOT EXISTS recon_outbox (
	id           INTEGER PRIMARY KEY,
	job          TEXT    NOT NULL,
	biz_key      TEXT    NOT NULL,
	event        TEXT    NOT NULL,              -- e.g. 'payment.succeeded' (stuck orders)
	payload      TEXT,                          -- the event body, JSON
	status       TEXT    NOT NULL DEFAULT 'pending',  -- pending, published
	attempts     INTEGER NOT NULL DEFAULT 0,
	created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
	published_at TEXT,
	CONSTRAINT uk_recon_outbox UNIQUE (job, biz_key, event)
);
CREATE INDEX IF NOT EXISTS idx_recon_outbox_pending ON recon_outbox (status, created_at);
