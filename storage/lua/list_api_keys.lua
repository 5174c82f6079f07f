-- list_api_keys: every key of an org, oldest first.
-- KEYS[1]  ps:{<org>}:keys   list of client_ids
-- KEYS[2]  ps:{<org>}:key:   prefix of the key hashes; each key is built here as
--          KEYS[2] .. client_id, which carries the same {<org>} hash tag (same slot).
-- Returns a list of key fields.
local out = {}
for i, client_id in ipairs(redis.call("LRANGE", KEYS[1], 0, -1)) do
  out[i] = redis.call("HGETALL", KEYS[2] .. client_id)
end
return out
