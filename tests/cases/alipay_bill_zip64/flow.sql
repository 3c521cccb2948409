-- uses payment_flow
-- A-MIN 0.01 at 00:00:00, 000777 at Alipay's maximum (100000000.00), A-COUP
-- (商家实收 7.50 of 订单金额 10.00), A-REF refunded, A-PART partly refunded,
-- A-MISS missing, A-AMT amount, A-LATE at 23:59:59, A-EXTRA extra.
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('A-MIN',             1, 'CNY', 'PAID',     '2024-01-15 23:59:59'),
  ('000777',  10000000000, 'CNY', 'PAID',     '2024-01-16 07:59:59'),
  ('A-COUP',         1000, 'CNY', 'PAID',     '2024-01-16 08:59:59'),
  ('A-REF',          2000, 'CNY', 'REFUNDED', '2024-01-16 09:59:59'),
  ('A-PART',         3000, 'CNY', 'PAID',     '2024-01-16 10:59:59'),
  ('A-AMT',          5001, 'CNY', 'PAID',     '2024-01-16 12:59:59'),
  ('A-LATE',          800, 'CNY', 'PAID',     '2024-01-16 23:49:58'),
  ('A-EXTRA',         900, 'CNY', 'PAID',     '2024-01-16 12:00:00');
