-- abort_rollout: a rollout ends, the environment keeping its version; rollout.aborted.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  environment
-- ARGV[3]  rollout id it must be, "" for whichever runs        ARGV[4]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", rollout JSON as it ended}, {"no_prompt"}, {"no_environment"} or
-- {"no_rollout"}.
local pid, rollout = find_rollout(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return rollout -- here: the error reply
end
return { "ok", end_rollout(pid, rollout, "rollout.aborted", ARGV[4]) }
