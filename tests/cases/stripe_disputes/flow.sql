-- uses payment_flow
-- D-WON: disputed, then won back: paid. D-LOST: the dispute took the money: the merchant
-- marked it REFUNDED. D-OPEN: disputed, the flow still says PAID: a status_mismatch to
-- look at. D-ACH: the ACH debit failed (charge_failure) and the flow wrote REFUNDED.
INSERT INTO payment_flow (out_trade_no, amount_cents, currency, status, created_at) VALUES
  ('D-WON',  10000, 'USD', 'PAID',     '2024-01-15 20:00:00'),
  ('D-LOST',  5000, 'USD', 'REFUNDED', '2024-01-15 22:00:00'),
  ('D-OPEN',  2000, 'USD', 'PAID',     '2024-01-16 00:00:00'),
  ('D-ACH',   3000, 'USD', 'REFUNDED', '2024-01-16 02:00:00');
