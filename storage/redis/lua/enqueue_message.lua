-- enqueue_message: queue one message for one webhook (a ping).
-- KEYS[1]  ps:{<org>}:webhooks        hash: webhook_id -> the webhook's JSON
-- KEYS[2]  ps:{<org>}:wh:queue        stream: messages to deliver, group "delivery"
-- ARGV[1]  webhook_id
-- ARGV[2]  the message as JSON (storage/redis/codec.py, job_value)
-- Returns 1, or 0 when there is no such webhook.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call("XADD", KEYS[2], "*", "job", ARGV[2])
return 1
