-- list_records: every record of an org's ordered index (API keys, users), oldest first.
-- KEYS[1]  the index: ps:{<org>}:keys (client_ids) or ps:{<org>}:users (usernames)
-- KEYS[2]  prefix of the record hashes (ps:{<org>}:key: or ps:{<org>}:user:); each is
--          built here as KEYS[2] .. id, which carries the same {<org>} hash tag.
-- Returns a list of record fields.
local out = {}
for i, id in ipairs(redis.call("LRANGE", KEYS[1], 0, -1)) do
  out[i] = redis.call("HGETALL", KEYS[2] .. id)
end
return out
