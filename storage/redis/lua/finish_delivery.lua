-- finish_delivery: record an attempt, take its message off the queue, and queue it again
-- for later when it is to be retried.
-- KEYS[1]  ps:{<org>}:wh:queue        stream: messages to deliver, group "delivery"
-- KEYS[2]  ps:{<org>}:wh:retry        zset: messages to queue again, by due time (ms)
-- KEYS[3]  ps:{<org>}:webhooks        hash: webhook_id -> the webhook's JSON
-- KEYS[4]  ps:{<org>}:wh:log:<id>     list: the webhook's delivery attempts, newest first
-- ARGV[1]  the message's entry id in the queue
-- ARGV[2]  webhook_id
-- ARGV[3]  the attempt as JSON
-- ARGV[4]  the history's length
-- ARGV[5]  when to retry (ms since the epoch), "" for never
-- ARGV[6]  the message of the next attempt as JSON (when retried)
-- Returns 1, or 0 when the webhook is gone (nothing recorded).
redis.call("XACK", KEYS[1], "delivery", ARGV[1])
redis.call("XDEL", KEYS[1], ARGV[1])
if redis.call("HEXISTS", KEYS[3], ARGV[2]) == 0 then
  return 0
end
redis.call("LPUSH", KEYS[4], ARGV[3])
redis.call("LTRIM", KEYS[4], 0, tonumber(ARGV[4]) - 1)
if ARGV[5] ~= "" then
  redis.call("ZADD", KEYS[2], ARGV[5], ARGV[6])
end
return 1
