-- set_environment: store an environment (production included) unless what is stored
-- under its name has changed since the caller read it; a new one (but production)
-- joins the order of creation.
-- KEYS[1]  ps:{<org>}:envs       hash: name -> the environment's JSON
-- KEYS[2]  ps:{<org>}:env-order  list: names of the environments created, oldest first
-- KEYS[3]  ps:{<org>}:env-rev    string: the environments' revision, which every change
--                                of them bumps (apply_change.lua checks it)
-- ARGV[1]  name    ARGV[2]  the JSON the caller read ("" = none stored)
-- ARGV[3]  the environment's JSON
-- Returns 1, or 0 (nothing written) when what is stored is not ARGV[2].
local raw = redis.call("HGET", KEYS[1], ARGV[1])
if (raw or "") ~= ARGV[2] then
  return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[3])
if not raw and ARGV[1] ~= "production" then
  redis.call("RPUSH", KEYS[2], ARGV[1])
end
redis.call("INCR", KEYS[3])
return 1
