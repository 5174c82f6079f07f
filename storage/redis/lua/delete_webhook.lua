-- delete_webhook: remove a webhook and its delivery history (LOG). Its queued messages
-- stay until claimed, and claim_deliveries.lua drops them then.
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  webhook_id
-- Returns 1, or 0 when there is no such webhook.
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
if redis.call("HDEL", HOOKS, ARGV[1]) == 0 then
  return 0
end
redis.call("LREM", IDS, 0, ARGV[1])
redis.call("HDEL", SINCE, ARGV[1])
redis.call("DEL", LOG)
return 1
