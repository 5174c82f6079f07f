-- read_version: the production, latest, an environment's or one specific version,
-- resolved from a prompt name or id in one round trip.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  mode: "production", "latest", "environment", "number", "id" or "none"
-- ARGV[3]  the environment, number or version id (modes "environment", "number", "id")
-- Returns {"ok", prompt values, version values}, {"no_prompt"}, {"no_version"},
-- {"no_production"}, {"no_environment"} or {"nothing_in_environment"}. A production or
-- environment read while a rollout runs there adds the rollout's JSON and its
-- candidate's version values (P:rollouts, storage/redis/keys.py).
local pid, vid_or_err = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid_or_err
end
if ARGV[2] == "production" or ARGV[2] == "environment" then
  local env = ARGV[2] == "production" and PRODUCTION or ARGV[3]
  local rollout = redis.call("HGET", pkey(pid, ":rollouts"), env)
  if rollout then
    local candidate = cjson.decode(rollout).candidate_id
    return {
      "ok", prompt_values(pid), version_values(pid, vid_or_err), rollout,
      version_values(pid, candidate),
    }
  end
end
return { "ok", prompt_values(pid), version_values(pid, vid_or_err) }
