-- promote: the whole promotion as one atomic step. Into production (ARGV[11]): the
-- draft becomes published with promoted_at/promoted_by; the version published before it
-- becomes archived (or draft when ARGV[7] is "0"). Into another environment: the
-- version (any status but archived) is placed there, replacing what it held. Either
-- way a history record is written with the number the environment held before.
-- Rule 1 (at most one published version) holds because this is the only way in.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  promoted_by    ARGV[5]  notes    ARGV[6]  "1" if there are notes, else "0"
-- ARGV[7]  "1" to archive the previous production version, "0" to make it a draft
-- ARGV[8]  now            ARGV[9]  new history id
-- ARGV[10] expected number in the environment, "" for none, "*" for no guard; checked
--          after the prompt, version and environment exist and the environment is not
--          protected, so a failed guard changes nothing
-- ARGV[11] environment
-- ARGV[12] the promotion check's fingerprint ("" on a first pass)   ARGV[13] its outcome,
--          "1" breaking (acknowledged by the caller): see _common.lua, contract_check
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values, history record fields}, {"check", ...}
-- or an error marker (a rollout in the environment: "rollout_busy", _rollout.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
local env_name = ARGV[11]
local env = environment(env_name)
if not env then
  return { "no_environment" }
end
if tonumber(env.required_approvals) >= 1 then
  return { "review_required", tostring(env.required_approvals) }
end
local busy = check_no_rollout(pid, env_name, "promote")
if busy then
  return busy
end
local cur_vid, cur_number = current_in(pid, env_name)
local refused = check_expected(cur_number, ARGV[10])
                or check_enterable(env_name, status, number, cur_number)
if refused then
  return refused
end
local check, breaking = contract_check(pid, vid, cur_vid, ARGV[12], ARGV[13])
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
  pid, vid, number, status, env_name, ARGV[4], ARGV[8], ARGV[9], cur_vid, cur_number, notes,
  demote, nil, nil, breaking
)
return { "ok", prompt_values(pid), version_values(pid, vid), record }
