-- uses payment_flow (replaced: a merchant's own flow table: NOT NULL columns recon does not know)
DROP TABLE payment_flow;
CREATE TABLE payment_flow (
	id           INTEGER PRIMARY KEY,
	out_trade_no TEXT    NOT NULL UNIQUE,
	amount_cents INTEGER NOT NULL,
	currency     TEXT    NOT NULL,
	status       TEXT    NOT NULL,
	created_at   TEXT    NOT NULL,
	updated_at   TEXT    NOT NULL,
	channel      TEXT    NOT NULL,
	customer_id  INTEGER NOT NULL,
	note         TEXT    NOT NULL,
	coupon       TEXT
);
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at, updated_at,
                          channel, customer_id, note)
VALUES ('R-1', 100, 'CNY', 'PAID', '2024-01-16 09:00:01', '2024-01-16 09:00:01', 'web', 7, '');
