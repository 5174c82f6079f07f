-- restore_org: write one org's records from a backup in one atomic step, and only when
-- the org has nothing yet. The records arrive as plain writes (storage/redis/snapshot.py
-- spells them with the layout of storage/redis/keys.py), so this script knows no layout.
-- KEYS[1]  ps:{<org>}:   the org's prefix; every key named in ARGV must begin with it,
--          so the script touches one slot and runs unchanged on Redis Cluster
-- ARGV[1]  n, the number of keys that follow and must all be absent (the org's indexes)
-- ARGV[2..]  those n keys, then the writes, each a command ("HSET", "ZADD", "RPUSH",
--          "SET", "DEL" or "SADD"), a key, a count and that many arguments (field
--          value ... / score member ... / value ... / value / none / member ...)
-- Returns {"ok"}, or {"not_empty", key} having written nothing.
local prefix = KEYS[1]
local allowed = { HSET = true, ZADD = true, RPUSH = true, SET = true, DEL = true, SADD = true }

local function own(key)
  if string.sub(key, 1, #prefix) ~= prefix then
    error("restore_org: key outside the org's prefix: " .. key)
  end
  return key
end

local guards = tonumber(ARGV[1])
for i = 2, guards + 1 do
  if redis.call("EXISTS", own(ARGV[i])) == 1 then
    return { "not_empty", ARGV[i] }
  end
end

-- Check every write before the first one, so a malformed list writes nothing.
local writes = {}
local i = guards + 2
while i <= #ARGV do
  local command, key, count = ARGV[i], own(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if not allowed[command] or not count or i + 2 + count > #ARGV then
    error("restore_org: malformed write at ARGV[" .. i .. "]")
  end
  writes[#writes + 1] = { command, key, i + 3, i + 2 + count }
  i = i + 3 + count
end
for _, write in ipairs(writes) do
  redis.call(write[1], write[2], unpack(ARGV, write[3], write[4]))
end
return { "ok" }
