-- read_version: the production, latest or one specific version, resolved from a prompt
-- name or id in one round trip.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  mode: "production", "latest", "number", "id" or "none"
-- ARGV[3]  the number or version id (modes "number" and "id")
-- Returns {"ok", prompt values, version values}, {"no_prompt"}, {"no_version"} or
-- {"no_production"}.
local pid, vid_or_err = resolve(ARGV[1], ARGV[2], ARGV[3], true)
if not pid then
  return vid_or_err
end
return { "ok", prompt_values(pid), version_values(pid, vid_or_err) }
