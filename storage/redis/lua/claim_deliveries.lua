-- claim_deliveries: queue the retries that are due, and claim messages for one consumer
-- (Storage.claim_deliveries; webhooks.py's _fan_out queued the new events' messages).
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  the consumer's name
-- ARGV[2]  the most messages to claim
-- ARGV[3]  lease (ms): a message claimed longer ago than this is claimed again
-- ARGV[4]  now (ms since the epoch, the storage clock)
-- Returns {entry id, message JSON} pairs, flattened.
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
if redis.call("EXISTS", QUEUE) == 0 then
  return {}
end
local limit = tonumber(ARGV[2])
for _, job in ipairs(redis.call("ZRANGEBYSCORE", RETRY, "-inf", ARGV[4], "LIMIT", 0, limit)) do
  redis.call("XADD", QUEUE, "*", "job", job)
  redis.call("ZREM", RETRY, job)
end

-- First what a dead consumer left past its lease, then new messages.
local claimed = {}
local function take(list)
  for _, entry in ipairs(list) do
    local job = entry[2] and entry[2][2]
    if job then -- entries deleted while pending come back without fields
      if redis.call("HEXISTS", HOOKS, cjson.decode(job)["w"]) == 1 then
        claimed[#claimed + 1] = entry[1]
        claimed[#claimed + 1] = job
      else -- the webhook is gone: drop its message
        redis.call("XACK", QUEUE, "delivery", entry[1])
        redis.call("XDEL", QUEUE, entry[1])
      end
    end
  end
end
take(redis.call("XAUTOCLAIM", QUEUE, "delivery", ARGV[1], ARGV[3], "0-0", "COUNT", limit)[2])
local room = limit - #claimed / 2
if room > 0 then
  local fresh = redis.call("XREADGROUP", "GROUP", "delivery", ARGV[1], "COUNT", room, "STREAMS",
    QUEUE, ">")
  if fresh and fresh[1] then
    -- Redis answers {{stream, entries}} (nil for none); fakeredis {stream, entries}.
    take(type(fresh[1]) == "string" and fresh[2] or fresh[1][2])
  end
end
return claimed
