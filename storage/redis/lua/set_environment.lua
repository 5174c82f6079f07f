-- set_environment: create an environment, or change one (production included).
-- KEYS[1]  ps:{<org>}:envs       hash: name -> the environment's JSON
-- KEYS[2]  ps:{<org>}:env-order  list: names of the environments created, oldest first
-- KEYS[3]  ps:{<org>}:env-rev    string: the environments' revision, which every change
--                                of them bumps (apply_change.lua checks it)
-- ARGV[1]  name
-- ARGV[2]  "create": ARGV[3] is the new environment's JSON
--          "update": ARGV[3] is required_approvals ("" = keep), ARGV[4] "keep", "set"
--          or "clear" the description, ARGV[5] the description, ARGV[6] production's
--          JSON as every org has it before a change
-- Returns {"ok", JSON}, {"exists"} or {"no_environment"}.
local name = ARGV[1]
local raw = redis.call("HGET", KEYS[1], name)
if ARGV[2] == "create" then
  if raw or name == "production" then
    return { "exists" }
  end
  redis.call("HSET", KEYS[1], name, ARGV[3])
  redis.call("RPUSH", KEYS[2], name)
  redis.call("INCR", KEYS[3])
  return { "ok", ARGV[3] }
end
if not raw then
  if name ~= "production" then
    return { "no_environment" }
  end
  raw = ARGV[6]
end
local env = cjson.decode(raw)
if ARGV[3] ~= "" then
  env.required_approvals = tonumber(ARGV[3])
end
if ARGV[4] == "set" then
  env.description = ARGV[5]
elseif ARGV[4] == "clear" then
  env.description = cjson.null
end
local json = cjson.encode(env)
redis.call("HSET", KEYS[1], name, json)
redis.call("INCR", KEYS[3])
return { "ok", json }
