-- claim_deliveries: fan new events out to messages, queue the retries that are due, and
-- claim messages for one consumer (Storage.claim_deliveries).
-- KEYS[1]  ps:{<org>}:events          stream: the org's event log
-- KEYS[2]  ps:{<org>}:webhooks        hash: webhook_id -> the webhook's JSON
-- KEYS[3]  ps:{<org>}:webhook-since   hash: webhook_id -> the newest event id at creation
-- KEYS[4]  ps:{<org>}:wh:cursor       string: the newest event fanned out to messages
-- KEYS[5]  ps:{<org>}:wh:queue        stream: messages to deliver, group "delivery"
-- KEYS[6]  ps:{<org>}:wh:retry        zset: messages to queue again, by due time (ms)
-- ARGV[1]  the consumer's name
-- ARGV[2]  the most messages to claim (and events to fan out)
-- ARGV[3]  lease (ms): a message claimed longer ago than this is claimed again
-- ARGV[4]  now (ms since the epoch, the storage clock)
-- Returns {entry id, message JSON} pairs, flattened.
local limit = tonumber(ARGV[2])
local cursor = redis.call("GET", KEYS[4])
if not cursor then
  return {}
end

local function position(id)
  local ms, seq = string.match(id, "^(%d+)-(%d+)$")
  return tonumber(ms), tonumber(seq)
end

local function newer(a, b)
  local am, as = position(a)
  local bm, bs = position(b)
  return am > bm or (am == bm and as > bs)
end

-- Fan-out: one message per event and webhook that wants it and was there before it.
local hooks = {}
local flat = redis.call("HGETALL", KEYS[2])
for i = 1, #flat, 2 do
  local types = {}
  for _, kind in ipairs(cjson.decode(flat[i + 1])["events"]) do
    types[kind] = true
  end
  hooks[#hooks + 1] = { id = flat[i], types = types, since = redis.call("HGET", KEYS[3], flat[i]) }
end
local entries = redis.call("XRANGE", KEYS[1], "(" .. cursor, "+", "COUNT", limit)
for _, entry in ipairs(entries) do
  local id, fields = entry[1], entry[2]
  local kind = ""
  for i = 1, #fields, 2 do
    if fields[i] == "type" then
      kind = fields[i + 1]
    end
  end
  for _, hook in ipairs(hooks) do
    if hook.since and newer(id, hook.since) and (hook.types["*"] or hook.types[kind]) then
      local message = "msg_" .. string.sub(hook.id, 4) .. "_" .. id
      local job = cjson.encode({ w = hook.id, m = message, e = id, t = kind, a = 1, f = fields })
      redis.call("XADD", KEYS[5], "*", "job", job)
    end
  end
  cursor = id
end
redis.call("SET", KEYS[4], cursor)

-- Retries whose time has come go back on the queue.
for _, job in ipairs(redis.call("ZRANGEBYSCORE", KEYS[6], "-inf", ARGV[4], "LIMIT", 0, limit)) do
  redis.call("XADD", KEYS[5], "*", "job", job)
  redis.call("ZREM", KEYS[6], job)
end

-- Claim: first what a dead consumer left past its lease, then new messages.
local claimed = {}
local function take(list)
  for _, entry in ipairs(list) do
    local job = entry[2] and entry[2][2]
    if job then -- entries deleted while pending come back without fields
      if redis.call("HEXISTS", KEYS[2], cjson.decode(job)["w"]) == 1 then
        claimed[#claimed + 1] = entry[1]
        claimed[#claimed + 1] = job
      else -- the webhook is gone: drop its message
        redis.call("XACK", KEYS[5], "delivery", entry[1])
        redis.call("XDEL", KEYS[5], entry[1])
      end
    end
  end
end
take(redis.call("XAUTOCLAIM", KEYS[5], "delivery", ARGV[1], ARGV[3], "0-0", "COUNT", limit)[2])
local room = limit - #claimed / 2
if room > 0 then
  local fresh = redis.call("XREADGROUP", "GROUP", "delivery", ARGV[1], "COUNT", room, "STREAMS",
    KEYS[5], ">")
  if fresh and fresh[1] then
    -- Redis answers {{stream, entries}} (nil for none); fakeredis {stream, entries}.
    take(type(fresh[1]) == "string" and fresh[2] or fresh[1][2])
  end
end
return claimed
