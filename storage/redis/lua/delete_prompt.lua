-- delete_prompt: a prompt with every version, history record, placement, review and index, found through
-- its own index sets (never KEYS/SCAN). Its version counter goes with its hash, so a
-- prompt created later under the same name starts again at 1.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:prompts  zset of names
-- ARGV[1]  prompt ref
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok"} or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end

-- DEL in chunks: unpack() of a very long list would overflow the Lua stack.
local function del_all(members, key_of)
  local batch = {}
  for _, member in ipairs(members) do
    batch[#batch + 1] = key_of(member)
    if #batch == 500 then
      redis.call("DEL", unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then
    redis.call("DEL", unpack(batch))
  end
end

-- Its versions leave the reverse index of includes (ps:{<org>}:included-by:<name>).
for _, vid in ipairs(redis.call("ZRANGE", pkey(pid, ":versions"), 0, -1)) do
  local included = redis.call("HGET", vkey(pid, vid), "includes")
  if included then
    for _, name in ipairs(cjson.decode(included)) do
      redis.call("SREM", ORG .. "included-by:" .. name, pid .. ":" .. vid)
    end
  end
end
del_all(redis.call("ZRANGE", pkey(pid, ":versions"), 0, -1), function(vid)
  return vkey(pid, vid)
end)
del_all(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1), function(hid)
  return pkey(pid, ":h:" .. hid)
end)
-- Its reviews go with it: their records, their places in the org's list, the open index.
for _, rid in ipairs(redis.call("ZRANGE", pkey(pid, ":reviews"), 0, -1)) do
  local raw = redis.call("GET", ORG .. "review:" .. rid)
  if raw then
    local review = cjson.decode(raw)
    local key = pid .. ":" .. review.environment .. ":" .. review.version
    if redis.call("HGET", ORG .. "open-reviews", key) == rid then
      redis.call("HDEL", ORG .. "open-reviews", key)
    end
  end
  redis.call("DEL", ORG .. "review:" .. rid)
  redis.call("ZREM", ORG .. "reviews", rid)
end
local name = redis.call("HGET", pkey(pid), "name")
redis.call(
  "DEL",
  pkey(pid),
  pkey(pid, ":versions"),
  pkey(pid, ":versions:draft"),
  pkey(pid, ":versions:published"),
  pkey(pid, ":versions:archived"),
  pkey(pid, ":history"),
  pkey(pid, ":env"),
  pkey(pid, ":reviews"),
  pkey(pid, ":rollouts")
)
redis.call("HDEL", NAMES, name)
redis.call("ZREM", KEYS[3], name)
emit("prompt.deleted", pid, name)
return { "ok" }
