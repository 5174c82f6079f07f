-- enqueue_message: queue one message for one webhook (a ping).
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  webhook_id
-- ARGV[2]  the message as JSON (storage/redis/codec.py, job_value)
-- Returns 1, or 0 when there is no such webhook.
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
if redis.call("HEXISTS", HOOKS, ARGV[1]) == 0 then
  return 0
end
redis.call("XADD", QUEUE, "*", "job", ARGV[2])
return 1
