-- uses payment_flow (replaced: the order id sits in one of two columns)
DROP TABLE payment_flow;
CREATE TABLE payment_flow (id INTEGER PRIMARY KEY, order_ref TEXT, legacy_ref TEXT,
                           amount_cents INTEGER NOT NULL, status TEXT NOT NULL,
                           created_at TEXT NOT NULL);
INSERT INTO payment_flow (order_ref, legacy_ref, amount_cents, status, created_at) VALUES
  ('F-1', NULL, 1000, 'PAID', '2024-01-16 01:00:01'),
  ('',    'F-2', 2000, 'PAID', '2024-01-16 02:00:01'),
  (NULL,  'F-3', 3000, 'PAID', '2024-01-16 03:00:01'),
  ('F-4', 'X-4', 4100, 'PAID', '2024-01-16 04:00:01'),
  -- F-6 was written days earlier: found by the lookup by key, through the same expression
  (' ',   'F-6', 6000, 'PAID', '2024-01-02 06:00:01');
