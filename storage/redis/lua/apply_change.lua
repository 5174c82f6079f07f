-- apply_change: a change the release engine decided (storage/release), as the writes
-- storage/redis/change.py spells it, applied only while everything the decision read is
-- as it was read; no rule lives here. The guards name what was read: the prompt's
-- revision (field "rev" of its hash, which every write of its release state bumps) and
-- whatever else the decision depended on (an environment's JSON, ...). The other guarded
-- writes are spelled for it too: a new prompt, environment, API key or user, the
-- webhook fan-out, a webhook's deletion or message, and an org's restore (snapshot.py; its
-- guards say the org is empty).
-- KEYS[1]  ps:{<org>}:         the org's prefix: every key below is named after it, so
--                              the script touches one slot (Redis Cluster)
-- KEYS[2]  ps:{<org>}:events   the org's event stream
-- ARGV[1]  guards: JSON list of [key, field, value] (key after the prefix): HGET key
--          field (GET key when field is null) must answer value (null: nothing, true:
--          anything); or of [key]: the key must not exist. Else nothing is written
-- ARGV[2]  writes: JSON list of [command, key, argument...] (key after the prefix), run
--          in order, each command checked before the first write; a ZADD score "$seq"
--          stands for the reply of the last INCR/HINCRBY; the command DROP_PROMPT is
--          drop_prompt below; HMOVE key from to moves a hash's field (a review's guard
--          to the rollout its approval started)
-- ARGV[3]  events: JSON list of field lists, appended to the stream in order
-- ARGV[4]  the least number of events to keep
-- Returns {"ok", event id...} or {"changed"} (a guard did not hold: read again, decide
-- again).
local ORG = KEYS[1]
for _, guard in ipairs(cjson.decode(ARGV[1])) do
  local key, field, expected = ORG .. guard[1], guard[2], guard[3]
  local value
  if field == nil then -- [key]: absent
    value = redis.call("EXISTS", key) == 1
  elseif field == cjson.null then
    value = redis.call("GET", key)
  else
    value = redis.call("HGET", key, field)
  end
  if expected == true then -- present
    value = value ~= false
  end
  if value ~= (expected ~= nil and expected ~= cjson.null and expected) then -- nil, null: false
    return { "changed" }
  end
end
-- DROP_PROMPT p:<pid> <pid>: the prompt with every key of its own, found through its
-- index sets (never KEYS/SCAN); its versions leave the reverse index of includes, its
-- reviews the org's lists. Its version counter goes with its hash, so a prompt created
-- later under the same name starts again at 1.
local function drop_prompt(P, pid)
  local gone = {}
  local function del(key)
    gone[#gone + 1] = key
    if #gone == 500 then -- unpack() of a very long list would overflow the Lua stack
      redis.call("DEL", unpack(gone))
      gone = {}
    end
  end
  for _, vid in ipairs(redis.call("ZRANGE", P .. ":versions", 0, -1)) do
    local included = redis.call("HGET", P .. ":v:" .. vid, "includes")
    for _, name in ipairs(included and cjson.decode(included) or {}) do
      redis.call("SREM", ORG .. "included-by:" .. name, pid .. ":" .. vid)
    end
    del(P .. ":v:" .. vid)
  end
  for _, hid in ipairs(redis.call("ZRANGE", P .. ":history", 0, -1)) do
    del(P .. ":h:" .. hid)
  end
  for _, rid in ipairs(redis.call("ZRANGE", P .. ":reviews", 0, -1)) do
    local raw = redis.call("GET", ORG .. "review:" .. rid)
    if raw then
      local review = cjson.decode(raw)
      local key = pid .. ":" .. review.environment .. ":" .. review.version
      if redis.call("HGET", ORG .. "open-reviews", key) == rid then
        redis.call("HDEL", ORG .. "open-reviews", key)
      end
    end
    del(ORG .. "review:" .. rid)
    redis.call("ZREM", ORG .. "reviews", rid)
  end
  for _, suffix in ipairs({ "", ":versions", ":versions:draft", ":versions:published",
    ":versions:archived", ":history", ":env", ":reviews", ":rollouts" }) do
    del(P .. suffix)
  end
  redis.call("DEL", unpack(gone))
end

local WRITES = {
  HSET = true, HDEL = true, HINCRBY = true, ZADD = true, ZREM = true, SET = true, DEL = true,
  INCR = true, LREM = true, SADD = true, SREM = true, RPUSH = true, XADD = true,
  DROP_PROMPT = true, HMOVE = true,
}
local writes = cjson.decode(ARGV[2])
for _, write in ipairs(writes) do
  if not WRITES[write[1]] then
    return redis.error_reply("apply_change: no write " .. tostring(write[1]))
  end
end
local seq = nil
for _, write in ipairs(writes) do
  local command = write[1]
  if command == "DROP_PROMPT" then
    drop_prompt(ORG .. write[2], write[3])
  elseif command == "HMOVE" then
    local value = redis.call("HGET", ORG .. write[2], write[3])
    if value then
      redis.call("HSET", ORG .. write[2], write[4], value)
      redis.call("HDEL", ORG .. write[2], write[3])
    end
  else
    if command == "ZADD" and write[3] == "$seq" then
      write[3] = seq
    end
    write[2] = ORG .. write[2]
    local reply = redis.call(unpack(write))
    if command == "INCR" or command == "HINCRBY" then
      seq = reply
    end
  end
end
local ids = { "ok" }
for _, entry in ipairs(cjson.decode(ARGV[3])) do
  -- "~": trimming drops whole stream nodes, so at least ARGV[4] entries always stay.
  ids[#ids + 1] = redis.call("XADD", KEYS[2], "MAXLEN", "~", ARGV[4], "*", unpack(entry))
end
return ids
