-- set_rollout: a rollout's new percent, with its rollout.updated event.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  environment
-- ARGV[3]  rollout id it must be, "" for whichever runs
-- ARGV[4]  percent (1-99, checked by the caller)     ARGV[5]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", rollout JSON}, {"no_prompt"}, {"no_environment"} or {"no_rollout"}.
local pid, rollout = find_rollout(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return rollout -- here: the error reply
end
rollout.percent = tonumber(ARGV[4])
rollout.updated_at = ARGV[5]
local raw = cjson.encode(rollout)
redis.call("HSET", pkey(pid, ":rollouts"), ARGV[2], raw)
rollout_event("rollout.updated", pid, rollout)
return { "ok", raw }
