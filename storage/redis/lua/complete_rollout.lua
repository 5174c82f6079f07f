-- complete_rollout: the candidate enters the environment as promote.lua makes it enter
-- (in production published, the baseline archived or made a draft), its history record
-- and version.promoted event carrying the rollout's id, and the rollout ends with
-- rollout.completed: one atomic step.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  environment
-- ARGV[3]  rollout id it must be, "" for whichever runs
-- ARGV[4]  promoted_by    ARGV[5]  notes    ARGV[6]  "1" if there are notes, else "0"
-- ARGV[7]  "1" to archive the baseline (production), "0" to make it a draft
-- ARGV[8]  now            ARGV[9]  new history id
-- ARGV[10] the promotion check's fingerprint ("" on a first pass)   ARGV[11] its outcome,
--          "1" breaking (acknowledged by the caller): see _common.lua, contract_check
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values, history record fields, rollout JSON},
-- {"check", ...} or an error marker.
local pid, rollout = find_rollout(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return rollout -- here: the error reply
end
local env = ARGV[2]
local vid = rollout.candidate_id
local fields = redis.call("HMGET", vkey(pid, vid), "status", "version")
local status, number = fields[1], tonumber(fields[2])
local cur_vid, cur_number = current_in(pid, env)
-- Unreachable through the rules, checked as for any promotion.
local refused = check_enterable(env, status, number, cur_number)
if refused then
  return refused
end
local check, breaking = contract_check(pid, vid, cur_vid, ARGV[10], ARGV[11])
if check then
  return check
end
local notes = nil
if ARGV[6] == "1" then
  notes = ARGV[5]
end
local demote = "archived"
if ARGV[7] == "0" then
  demote = "draft"
end
local record = enter(
  pid, vid, number, status, env, ARGV[4], ARGV[8], ARGV[9], cur_vid, cur_number, notes, demote,
  nil, nil, breaking, rollout.rollout_id
)
local ended = end_rollout(pid, rollout, "rollout.completed", ARGV[8])
return { "ok", prompt_values(pid), version_values(pid, vid), record, ended }
