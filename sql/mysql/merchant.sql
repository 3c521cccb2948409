-- Tables recon's compensations write in the merchant database (MySQL / MariaDB).
-- Every write is idempotent through a unique key, so a crash and a rerun end
-- in the same state as one clean run (DESIGN "Repeatable and idempotent"):
--   idempotency_record  one row per replayed business operation, committed in
--                       the same transaction as the replayed flow row
--   recon_ticket        one ticket per (job, key, class): opening twice is a no-op
--   recon_outbox        one re-push event per (job, key, event), published by
--                       the merchant's outbox relay
-- These need INSERT for recon's writer user; the compare's reader needs nothing here.

CREATE TABLE IF NOT EXISTS idempotency_record (
	id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	idem_key   VARCHAR(128) NOT NULL,           -- e.g. 'recon:replay:ORD-1002'
	biz_type   VARCHAR(32)  NOT NULL,           -- e.g. 'payment_replay'
	status     VARCHAR(16)  NOT NULL,           -- 'done' (or 'processing' for two-step consumers)
	result     TEXT         NULL,               -- what the first execution returned
	created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at TIMESTAMP(3) NULL,
	UNIQUE KEY uk_idempotency_record_idem_key (idem_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS recon_ticket (
	id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	job        VARCHAR(64)  NOT NULL,
	biz_key    VARCHAR(256) NOT NULL,           -- the business key ('|' between parts)
	class      VARCHAR(32)  NOT NULL,           -- extra, amount_mismatch, status_mismatch, duplicate
	severity   VARCHAR(16)  NOT NULL DEFAULT 'normal',  -- 'critical' for amount_mismatch
	run_id     BIGINT       NULL,               -- the recon run that opened it
	detail     TEXT         NULL,               -- the difference as one JSON object
	status     VARCHAR(16)  NOT NULL DEFAULT 'open',
	created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	updated_at TIMESTAMP(3) NULL,
	resolved_run BIGINT,    -- the recon run that resolved it (NULL: open, or closed by a person)
	note       TEXT,        -- why it ended: 'resolved by run N (matched)', a person's note
	UNIQUE KEY uk_recon_ticket (job, biz_key, class),
	KEY idx_recon_ticket_status (status, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS recon_outbox (
	id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	job          VARCHAR(64)  NOT NULL,
	biz_key      VARCHAR(256) NOT NULL,
	event        VARCHAR(64)  NOT NULL,         -- e.g. 'payment.succeeded' (stuck orders)
	payload      TEXT         NULL,             -- the event body, JSON
	status       VARCHAR(16)  NOT NULL DEFAULT 'pending',  -- pending, published
	attempts     INT          NOT NULL DEFAULT 0,
	created_at   TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
	published_at TIMESTAMP(3) NULL,
	UNIQUE KEY uk_recon_outbox (job, biz_key, event),
	KEY idx_recon_outbox_pending (status, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
