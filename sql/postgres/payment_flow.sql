-- Example merchant payment flow table (PostgreSQL), as recon expects to read it:
-- a unique key on the business key (replays are idempotent inserts against it:
-- INSERT ... ON CONFLICT DO NOTHING) and an index on the time column (the
-- window predicate "created_at >= $1 AND created_at < $2" is pushed down to it).
-- created_at is wall-clock time in the job's zone (timestamp without time
-- zone); a timestamptz column works too and is read as a UTC instant.
-- recon reads it inside a READ ONLY transaction: SELECT on this table is all
-- the reconciliation user needs (GRANT SELECT ON payment_flow TO recon_ro).
CREATE TABLE IF NOT EXISTS payment_flow (
	id           BIGSERIAL    PRIMARY KEY,
	out_trade_no VARCHAR(64)  NOT NULL,
	amount_cents BIGINT       NOT NULL,            -- minor units, never a float
	currency     VARCHAR(3)   NOT NULL DEFAULT 'CNY',
	status       VARCHAR(16)  NOT NULL,            -- PAID, PENDING, REFUNDED, CLOSED
	created_at   TIMESTAMP(3) NOT NULL,
	updated_at   TIMESTAMP(3),
	CONSTRAINT uk_payment_flow_out_trade_no UNIQUE (out_trade_no)
);
CREATE INDEX IF NOT EXISTS idx_payment_flow_created_at ON payment_flow (created_at);
