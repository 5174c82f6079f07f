-- add_signing_key: append a signing key (ARGV[3] "1": only when none is kept; of
-- workers racing here one wins), and return the newest.
-- KEYS[1]  ps:{_global}:signing        list of kids, oldest first
-- KEYS[2]  ps:{_global}:signing:keys   hash kid -> JSON key
-- ARGV[1]  kid; ARGV[2] its JSON
if ARGV[3] ~= "1" or redis.call("LLEN", KEYS[1]) == 0 then
  redis.call("RPUSH", KEYS[1], ARGV[1])
  redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
end
return redis.call("HGET", KEYS[2], redis.call("LINDEX", KEYS[1], -1))
