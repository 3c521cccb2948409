-- uses payment_flow
-- W-MIN 0.01 at 00:00:00, 00012345 (leading zeros; 12345 is another key), a
-- 19-digit key at the maximum amount at 23:59:59, K matched / K0 missing,
-- PAD-1 padded with spaces upstream, COUP-1 (coupon: 订单金额 10.00, settled 8.00),
-- REF-FULL refunded, REF-PART partly refunded (still PAID), REF-SM refunded
-- upstream but PAID here, REV-1 revoked, AMT-1 amount, DUP-1 listed twice,
-- STUCK-1 pending, EXTRA-1 extra.
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('W-MIN',                       1, 'CNY', 'PAID',     '2024-01-15 23:59:59'),
  ('00012345',                10000, 'CNY', 'PAID',     '2024-01-16 07:59:50'),
  ('12345',                   10000, 'CNY', 'PAID',     '2024-01-16 07:59:51'),
  ('1234567890123456789', 2147483647, 'CNY', 'PAID',    '2024-01-16 23:49:58'),
  ('K',                         500, 'CNY', 'PAID',     '2024-01-16 08:59:50'),
  ('PAD-1',                     800, 'CNY', 'PAID',     '2024-01-16 09:29:50'),
  ('COUP-1',                   1000, 'CNY', 'PAID',     '2024-01-16 09:59:50'),
  ('REF-FULL',                 2000, 'CNY', 'REFUNDED', '2024-01-16 10:59:50'),
  ('REF-PART',                 3000, 'CNY', 'PAID',     '2024-01-16 11:09:50'),
  ('REF-SM',                   4000, 'CNY', 'PAID',     '2024-01-16 11:19:50'),
  ('REV-1',                    1200, 'CNY', 'CLOSED',   '2024-01-16 11:59:50'),
  ('AMT-1',                    4900, 'CNY', 'PAID',     '2024-01-16 12:59:50'),
  ('DUP-1',                     900, 'CNY', 'PAID',     '2024-01-16 13:59:50'),
  ('STUCK-1',                   700, 'CNY', 'PENDING',  '2024-01-16 14:29:50'),
  ('EXTRA-1',                   900, 'CNY', 'PAID',     '2024-01-16 12:00:00');
