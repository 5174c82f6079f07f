-- list_rollouts: a prompt's rollouts, or the one in an environment.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  environment, "" for all of them
-- Returns {"ok", rollout JSON...} (none, or one with ARGV[2]), {"no_prompt"} or
-- {"no_environment"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
if ARGV[2] == "" then
  return { "ok", unpack(redis.call("HVALS", pkey(pid, ":rollouts"))) }
end
if not has_environment(ARGV[2]) then
  return { "no_environment" }
end
return { "ok", redis.call("HGET", pkey(pid, ":rollouts"), ARGV[2]) or nil }
