-- uses payment_flow
-- Local times are New York (UTC-5): S-MIN 0.01 at 00:00:00 UTC, S-MAX at
-- Stripe's maximum 999999.99, S-REF refunded, S-PART partly refunded but
-- marked REFUNDED here (status_mismatch), S-MISS missing, S-LATE at 23:59:59
-- UTC, S-EXTRA extra. The fee, payout and adjustment lines are keyless.
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('S-MIN',         1, 'USD', 'PAID',     '2024-01-15 18:59:59'),
  ('S-MAX',  99999999, 'USD', 'PAID',     '2024-01-15 23:59:59'),
  ('S-REF',      2500, 'USD', 'REFUNDED', '2024-01-16 00:59:59'),
  ('S-PART',     4000, 'USD', 'REFUNDED', '2024-01-16 02:59:59'),
  ('S-LATE',      900, 'USD', 'PAID',     '2024-01-16 18:49:58'),
  ('S-EXTRA',     700, 'USD', 'PAID',     '2024-01-16 06:00:00');
