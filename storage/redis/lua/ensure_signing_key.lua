-- ensure_signing_key: keep the candidate only if no signing key is kept yet, and return
-- the key that signs (the newest). Many workers may race here; exactly one wins.
-- KEYS[1]  ps:{_global}:signing        list of kids, oldest first
-- KEYS[2]  ps:{_global}:signing:keys   hash kid -> JSON key
-- ARGV[1]  candidate kid
-- ARGV[2]  candidate JSON
-- Returns the JSON of the signing key.
if redis.call("LLEN", KEYS[1]) == 0 then
  redis.call("RPUSH", KEYS[1], ARGV[1])
  redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
end
return redis.call("HGET", KEYS[2], redis.call("LINDEX", KEYS[1], -1))
