-- uses payment_flow (replaced: times as epoch seconds in an INTEGER column)
DROP TABLE payment_flow;
CREATE TABLE payment_flow (out_trade_no TEXT PRIMARY KEY, amount_cents INTEGER NOT NULL,
                           status TEXT NOT NULL, created_at INTEGER NOT NULL);
-- 2024-01-16 00:00:05 +08:00, 09:30:00, 23:59:30, and T-4 with another amount;
-- T-5 on 2024-01-10: the table is read whole (epoch values do not sort as text), the row is filtered out once parsed
INSERT INTO payment_flow VALUES
  ('T-1', 100, 'PAID', 1705334405),
  ('T-2', 2550, 'PAID', 1705368600),
  ('T-3', 300, 'PAID', 1705420770),
  ('T-4', 450, 'PAID', 1705377600),
  ('T-5', 900, 'PAID', 1704844800);
