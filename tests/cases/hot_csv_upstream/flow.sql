-- uses payment_flow
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('G-1',   1, 'CNY', 'PAID',     '2024-01-15 23:59:59'),
  ('G-2', 500, 'CNY', 'PAID',     '2024-01-16 11:59:59');
