-- read_records: the records an index names, each the hash KEYS[2] .. its id: every one
-- of a list, oldest first (API keys or users: KEYS[1] ps:{<org>}:keys or
-- ps:{<org>}:users, no ARGV), or the one a unique value names: a device's by its user
-- code (KEYS[1] the string ps:{<org>}:user-code:<user_code>, ARGV[1] "") or a user's by
-- user id (KEYS[1] the hash ps:{<org>}:user-ids, ARGV[1] the user id).
-- KEYS[2]  prefix of the record hashes, e.g. ps:{<org>}:user: (same {<org>} hash tag)
-- Returns a list of record fields (an empty one where a unique value names nothing).
local ids
if not ARGV[1] then
  ids = redis.call("LRANGE", KEYS[1], 0, -1)
elseif ARGV[1] == "" then
  ids = { redis.call("GET", KEYS[1]) }
else
  ids = { redis.call("HGET", KEYS[1], ARGV[1]) }
end
local out = {}
for i, id in ipairs(ids) do
  out[i] = id and redis.call("HGETALL", KEYS[2] .. id) or {}
end
return out
