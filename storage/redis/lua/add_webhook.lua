-- add_webhook: subscribe a webhook to the org's events written from now on.
-- KEYS[1]  ps:{<org>}:webhooks        hash: webhook_id -> the webhook's JSON
-- KEYS[2]  ps:{<org>}:webhook-ids     list: webhook ids, oldest first
-- KEYS[3]  ps:{<org>}:webhook-since   hash: webhook_id -> the newest event id at creation
-- KEYS[4]  ps:{<org>}:wh:cursor       string: the newest event fanned out to messages
-- KEYS[5]  ps:{<org>}:events          stream: the org's event log
-- KEYS[6]  ps:{<org>}:wh:queue        stream: messages to deliver, group "delivery"
-- ARGV[1]  webhook_id
-- ARGV[2]  the webhook's JSON
-- ARGV[3]  the most webhooks an org may have (storage.interface.MAX_WEBHOOKS)
-- Returns 1, or 0 when the org has ARGV[3] webhooks already (nothing is changed).
if redis.call("LLEN", KEYS[2]) >= tonumber(ARGV[3]) then
  return 0
end
local newest = redis.call("XREVRANGE", KEYS[5], "+", "-", "COUNT", 1)
local last = newest[1] and newest[1][1] or "0-0"
if redis.call("EXISTS", KEYS[4]) == 0 then
  redis.call("SET", KEYS[4], last)
end
if redis.call("EXISTS", KEYS[6]) == 0 then
  redis.call("XGROUP", "CREATE", KEYS[6], "delivery", "0", "MKSTREAM")
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
redis.call("HSET", KEYS[3], ARGV[1], last)
redis.call("RPUSH", KEYS[2], ARGV[1])
return 1
