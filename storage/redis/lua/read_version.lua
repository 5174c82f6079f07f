-- read_version: the production, latest, an environment's or one specific version,
-- resolved from a prompt name or id in one round trip.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  mode: "production", "latest", "environment", "number", "id" or "none"
-- ARGV[3]  the environment, number or version id (modes "environment", "number", "id")
-- Returns {"ok", prompt values, version values}, {"no_prompt"}, {"no_version"},
-- {"no_production"}, {"no_environment"} or {"nothing_in_environment"}.
local pid, vid_or_err = resolve(ARGV[1], ARGV[2], ARGV[3], true)
if not pid then
  return vid_or_err
end
return { "ok", prompt_values(pid), version_values(pid, vid_or_err) }
