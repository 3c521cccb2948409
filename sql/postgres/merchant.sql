-- Tables recon's compensations write in the merchant database (PostgreSQL).
-- Every write is idempotent through a unique key, so a crash and a rerun end
-- in the same state as one clean run (DESIGN "Repeatable and idempotent"):
--   idempotency_record  one row per replayed business operation, committed in
--                       the same transaction as the replayed flow row
--   recon_ticket        one ticket per (job, key, class): opening twice is a no-op
--   recon_outbox        one re-push event per (job, key, event), published by
--                       the merchant's outbox relay
-- These need INSERT for recon's writer user; the compare's reader needs nothing here.

CREATE TABLE IF NOT EXISTS idempotency_record (
	id         BIGSERIAL    PRIMARY KEY,
	idem_key   VARCHAR(128) NOT NULL,           -- e.g. 'recon:replay:ORD-1002'
	biz_type   VARCHAR(32)  NOT NULL,           -- e.g. 'payment_replay'
	status     VARCHAR(16)  NOT NULL,           -- 'done' (or 'processing' for two-step consumers)
	result     TEXT,                            -- what the first execution returned
	created_at TIMESTAMPTZ  NOT NULL DEFAULT now(),
	updated_at TIMESTAMPTZ,
	CONSTRAINT uk_idempotency_record_idem_key UNIQUE (idem_key)
);

CREATE TABLE IF NOT EXISTS recon_ticket (
	id         BIGSERIAL    PRIMARY KEY,
	job        VARCHAR(64)  NOT NULL,
	biz_key    VARCHAR(256) NOT NULL,           -- the business key ('|' between parts)
	class      VARCHAR(32)  NOT NULL,           -- extra, amount_mismatch, status_mismatch, duplicate
	severity   VARCHAR(16)  NOT NULL DEFAULT 'normal',  -- 'critical' for amount_mismatch
	run_id     BIGINT,                          -- the recon run that opened it
	detail     TEXT,                            -- the difference as one JSON object
	status     VARCHAR(16)  NOT NULL DEFAULT 'open',
	created_at TIMESTAMPTZ  NOT NULL DEFAULT now(),
	updated_at TIMESTAMPTZ,
	resolved_run BIGINT,    -- the recon run that resolved it (NULL: open, or closed by a person)
	note       TEXT,        -- why it ended: 'resolved by run N (matched)', a person's note
	CONSTRAINT uk_recon_ticket UNIQUE (job, biz_key, class)
);
CREATE INDEX IF NOT EXISTS idx_recon_ticket_status ON recon_ticket (status, created_at);

CREATE TABLE IF NOT EXISTS recon_outbox (
	id           BIGSERIAL    PRIMARY KEY,
	job          VARCHAR(64)  NOT NULL,
	biz_key      VARCHAR(256) NOT NULL,
	event        VARCHAR(64)  NOT NULL,         -- e.g. 'payment.succeeded' (stuck orders)
	payload      TEXT,                          -- the event body, JSON
	status       VARCHAR(16)  NOT NULL DEFAULT 'pending',  -- pending, published
	attempts     INTEGER      NOT NULL DEFAULT 0,
	created_at   TIMESTAMPTZ  NOT NULL DEFAULT now(),
	published_at TIMESTAMPTZ,
	CONSTRAINT uk_recon_outbox UNIQUE (job, biz_key, event)
);
CREATE INDEX IF NOT EXISTS idx_recon_outbox_pending ON recon_outbox (status, created_at);
