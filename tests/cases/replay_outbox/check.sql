SELECT count(*) FROM payment_flow;
SELECT biz_key, event, status, json_remove(payload, '$.values.updated_at') FROM recon_outbox ORDER BY biz_key;
