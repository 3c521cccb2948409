-- Example merchant payment flow table (SQLite), as recon expects to read it:
-- a unique key on the business key (replays are idempotent inserts against it)
-- and an index on the time column (the window predicate is pushed down to it).
-- Times are local wall-clock text 'YYYY-MM-DD HH:MM:SS' in the job's zone.
CREATE TABLE IF NOT EXISTS payment_flow (
	id           INTEGER PRIMARY KEY,
	out_trade_no TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL CHECK (typeof(amount_cents) = 'integer'),
	currency     TEXT    NOT NULL DEFAULT 'CNY',
	status       TEXT    NOT NULL,            -- PAID, PENDING, REFUNDED, CLOSED
	created_at   TEXT    NOT NULL,
	updated_at   TEXT,
	CONSTRAINT uk_payment_flow_out_trade_no UNIQUE (out_trade_no)
);
CREATE INDEX IF NOT EXISTS idx_payment_flow_created_at ON payment_flow (created_at);
