-- finish_delivery: record an attempt, take its message off the queue, and queue it again
-- for later when it is to be retried.
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  the message's entry id in the queue
-- ARGV[2]  webhook_id
-- ARGV[3]  the attempt as JSON
-- ARGV[4]  the history's length
-- ARGV[5]  when to retry (ms since the epoch), "" for never
-- ARGV[6]  the message of the next attempt as JSON (when retried)
-- Returns 1, or 0 when the webhook is gone (nothing recorded).
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
redis.call("XACK", QUEUE, "delivery", ARGV[1])
redis.call("XDEL", QUEUE, ARGV[1])
if redis.call("HEXISTS", HOOKS, ARGV[2]) == 0 then
  return 0
end
redis.call("LPUSH", LOG, ARGV[3])
redis.call("LTRIM", LOG, 0, tonumber(ARGV[4]) - 1)
if ARGV[5] ~= "" then
  redis.call("ZADD", RETRY, ARGV[5], ARGV[6])
end
return 1
