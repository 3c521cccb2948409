-- uses payment_flow
-- OLD-1 at 00:00:00 matched, OLD-2 refunded (a product name with a raw comma), OLD-3 at 23:59:59 missing
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('OLD-1', 100, 'CNY', 'PAID',     '2024-01-15 23:59:50'),
  ('OLD-2', 200, 'CNY', 'REFUNDED', '2024-01-16 09:59:50');
