-- The example merchant flow (loaded after sql/sqlite/payment_flow.sql).
-- Business day 2024-01-16 in Asia/Shanghai; one key of every class:
--   ORD-1001 matched            ORD-1002 missing (no local row)
--   ORD-1003 extra              ORD-1004 stuck (local PENDING since 08:59)
--   ORD-1005 amount_mismatch    ORD-1006 status_mismatch (refunded upstream)
--   ORD-1007 duplicate (the provider listed the same entry twice)
--   ORD-1009 matched after a partial refund     ORD-1010 matched (revoked, CLOSED)
--   ORD-1011 created 23:55 the day before, paid 00:00:30: matched inside the margin
--   ORD-1012 created 23:56, paid after midnight: owned by the next window
--   ORD-1014 paid 2024-01-10, refunded today: found by key lookup, matched
--   ORD-1015 PENDING, no upstream: in flight, not a difference
--   ORD-1016 created 23:59:45, paid 23:59:50: matched
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('ORD-1001', 10000, 'CNY', 'PAID',     '2024-01-16 08:14:40'),
  ('ORD-1003',  2500, 'CNY', 'PAID',     '2024-01-16 12:00:00'),
  ('ORD-1004',  3000, 'CNY', 'PENDING',  '2024-01-16 08:59:00'),
  ('ORD-1005',  8000, 'CNY', 'PAID',     '2024-01-16 10:02:30'),
  ('ORD-1006',  2000, 'CNY', 'PAID',     '2024-01-16 10:39:50'),
  ('ORD-1007',  1250, 'CNY', 'PAID',     '2024-01-16 11:05:00'),
  ('ORD-1009',  1000, 'CNY', 'PAID',     '2024-01-16 13:19:40'),
  ('ORD-1010',  4500, 'CNY', 'CLOSED',   '2024-01-16 13:59:30'),
  ('ORD-1011',  6600, 'CNY', 'PAID',     '2024-01-15 23:55:00'),
  ('ORD-1012',  1800, 'CNY', 'PAID',     '2024-01-16 23:56:00'),
  ('ORD-1014',  1500, 'CNY', 'REFUNDED', '2024-01-10 20:00:00'),
  ('ORD-1015',   700, 'CNY', 'PENDING',  '2024-01-16 21:00:00'),
  ('ORD-1016',   990, 'CNY', 'PAID',     '2024-01-16 23:59:45'),
  ('ORD-0999',  4200, 'CNY', 'PAID',     '2024-01-15 20:00:00');
