-- bench/classify.sql: one FULL OUTER JOIN classifying every key (PostgreSQL and SQLite).
-- Tables up (the statement) and loc (the local flow) as bench/run loads them;
-- :amount_up is the expression giving the statement amount in cents.
SELECT class, count(*) FROM (
  SELECT CASE
    WHEN l.out_trade_no IS NULL THEN
      CASE WHEN u.status IN ('SUCCESS', 'REFUND') THEN 'missing' ELSE 'matched' END
    WHEN u.out_trade_no IS NULL THEN
      CASE WHEN l.status IN ('PAID', 'REFUNDED') THEN 'extra' ELSE 'matched' END
    WHEN AMOUNT_UP <> l.amount_cents THEN 'amount_mismatch'
    WHEN l.status = 'PENDING' AND l.created_at < '2024-03-02 05:45:00' THEN 'stuck'
    WHEN (u.status = 'SUCCESS' AND l.status <> 'PAID')
      OR (u.status = 'REFUND' AND l.status <> 'REFUNDED') THEN 'status_mismatch'
    ELSE 'matched' END AS class
  FROM up u FULL OUTER JOIN loc l ON l.out_trade_no = u.out_trade_no
) c GROUP BY class ORDER BY class;
