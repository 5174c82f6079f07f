-- start_rollout: a promotion with a percent. The checks of promote.lua (environment,
-- protection, guard, the version's own rule), then the environment must hold a version
-- (the baseline) and have no rollout; nothing changes but the new rollout and its
-- rollout.started event: the candidate keeps its status.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  environment    ARGV[5]  percent (1-99, checked by the caller)
-- ARGV[6]  started_by     ARGV[7]  now      ARGV[8]  new rollout id
-- ARGV[9]  expected number in the environment, "" for none, "*" for no guard
-- ARGV[10] the promotion check's fingerprint ("" on a first pass)   ARGV[11] its outcome
--          (unused: a start records nothing of it); see _common.lua, contract_check
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", rollout JSON}, {"check", ...} or an error marker (_common.lua,
-- _rollout.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
local env_name = ARGV[4]
local env = environment(env_name)
if not env then
  return { "no_environment" }
end
if tonumber(env.required_approvals) >= 1 then
  return { "review_required", tostring(env.required_approvals) }
end
local cur_vid, cur_number = current_in(pid, env_name)
local refused = check_expected(cur_number, ARGV[9])
                or check_enterable(env_name, status, number, cur_number)
if refused then
  return refused
end
if not cur_vid then
  return { "no_baseline", tostring(number), env_name }
end
refused = check_no_rollout(pid, env_name, "start")
if refused then
  return refused
end
local check = contract_check(pid, vid, cur_vid, ARGV[10], ARGV[11])
if check then
  return check
end
return {
  "ok", begin_rollout(pid, ARGV[8], vid, number, env_name, cur_number, ARGV[5], ARGV[6], ARGV[7])
}
