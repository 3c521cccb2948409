SELECT count(*) FROM payment_flow;
SELECT count(*) FROM idempotency_record;
