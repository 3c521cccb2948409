-- Example merchant payment flow table (MySQL 8 / MariaDB 10.5+), as recon
-- expects to read it: a unique key on the business key (replays are
-- INSERT ... ON DUPLICATE KEY UPDATE against it, affected rows 0 = already
-- there) and an index on the time column (the window predicate
-- "created_at >= ? AND created_at < ?" is pushed down to it).
-- created_at is wall-clock time in the job's zone (DATETIME); a TIMESTAMP
-- column works too and is read as a UTC instant.
-- recon reads it inside START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY:
-- SELECT on this table is all the reconciliation user needs
-- (GRANT SELECT ON shop.payment_flow TO 'recon_ro'@'%').
CREATE TABLE IF NOT EXISTS payment_flow (
	id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	out_trade_no VARCHAR(64)  NOT NULL,
	amount_cents BIGINT       NOT NULL,            -- minor units, never a float
	currency     CHAR(3)      NOT NULL DEFAULT 'CNY',
	status       VARCHAR(16)  NOT NULL,            -- PAID, PENDING, REFUNDED, CLOSED
	created_at   DATETIME(3)  NOT NULL,
	updated_at   DATETIME(3)  NULL,
	UNIQUE KEY uk_payment_flow_out_trade_no (out_trade_no),
	KEY idx_payment_flow_created_at (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
