SELECT out_trade_no, amount_cents, currency, status, created_at, length(updated_at), channel,
       customer_id, typeof(customer_id), note, coalesce(coupon, 'NULL')
FROM payment_flow ORDER BY out_trade_no;
SELECT idem_key, result FROM idempotency_record ORDER BY idem_key;
