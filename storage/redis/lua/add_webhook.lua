-- add_webhook: subscribe a webhook to the org's events written from now on.
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  webhook_id
-- ARGV[2]  the webhook's JSON
-- ARGV[3]  the most webhooks an org may have (storage.interface.MAX_WEBHOOKS)
-- Returns 1, or 0 when the org has ARGV[3] webhooks already (nothing is changed).
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
if redis.call("LLEN", IDS) >= tonumber(ARGV[3]) then
  return 0
end
local newest = redis.call("XREVRANGE", EVENTS, "+", "-", "COUNT", 1)
local last = newest[1] and newest[1][1] or "0-0"
if redis.call("EXISTS", CURSOR) == 0 then
  redis.call("SET", CURSOR, last)
end
if redis.call("EXISTS", QUEUE) == 0 then
  redis.call("XGROUP", "CREATE", QUEUE, "delivery", "0", "MKSTREAM")
end
redis.call("HSET", HOOKS, ARGV[1], ARGV[2])
redis.call("HSET", SINCE, ARGV[1], last)
redis.call("RPUSH", IDS, ARGV[1])
return 1
