-- rollback: an earlier version of an environment becomes its version again, in one
-- atomic step. The target (ARGV[2], or else the version before the current one on the
-- line of the environment's versions, which never returns to a version rolled back
-- from: storage.lifecycle.production_line over that environment's records) enters it as
-- by promote, with a history record (notes default to "rollback to v<N>", as
-- storage.lifecycle.rollback_notes spells it). In production the target becomes
-- published whatever its status now, the current version archived: no moment shows zero
-- or two published versions, and a version that was ever production carries
-- promoted_at, which is how a to_version is checked. In another environment the target
-- must have been there (a record of it says so) and must not be archived. No review is
-- needed, protected or not.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  target number, "" for the version held before
-- ARGV[3]  promoted_by    ARGV[4]  notes    ARGV[5]  "1" if there are notes, else "0"
-- ARGV[6]  expected number in the environment, "" for none, "*" for no guard; checked first
-- ARGV[7]  now            ARGV[8]  new history id      ARGV[9]  environment
-- ARGV[10] the promotion check's fingerprint ("" on a first pass)   ARGV[11] its outcome,
--          "1" breaking: a rollback is exempt from the check, but its record says
--          whether it is breaking (_common.lua, contract_check)
-- + the org's event stream and the event context, as _events.lua says: a rollback is
--   logged as a version.promoted event
-- Returns {"ok", prompt values, version values, history record fields}, {"check", ...},
-- {"no_prompt"},
-- {"no_environment"}, {"production_changed", current or ""}, {"place", status, number}
-- or {"no_target", reason, current, target} with reason "no_production", "first",
-- "deleted", "missing", "current" or "never"; {"rollout_busy", ...} while the environment
-- has a rollout (_rollout.lua).
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local env = ARGV[9]
if not environment(env) then
  return { "no_environment" }
end
local busy = check_no_rollout(pid, env, "rollback")
if busy then
  return busy
end
local current_vid, current = current_in(pid, env)
local refused = check_expected(current, ARGV[6])
if refused then
  return refused
end
if not current_vid then
  return { "no_target", "no_production", "", "" }
end
-- The environment's records, oldest first: the version numbers each placed there.
local placed = {}
for _, hid in ipairs(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1)) do
  local h = redis.call("HMGET", pkey(pid, ":h:" .. hid), "environment", "version_number")
  if (h[1] or PRODUCTION) == env then
    placed[#placed + 1] = h[2]
  end
end
local target = ARGV[2]
if target == "" then
  -- The line (storage.lifecycle.production_line): each record extends it, and one that
  -- goes back to a version on it drops the versions after it.
  local line, at = {}, {}
  for _, number in ipairs(placed) do
    if at[number] then
      for i = #line, at[number] + 1, -1 do
        at[line[i]] = nil
        line[i] = nil
      end
    else
      line[#line + 1] = number
      at[number] = #line
    end
  end
  target = line[#line - 1]
  if not target then
    return { "no_target", "first", current, "" }
  end
end
local vid = resolve_version(pid, "number", target)
if not vid then
  if ARGV[2] == "" then
    return { "no_target", "deleted", current, target }
  end
  return { "no_target", "missing", current, target }
end
if vid == current_vid then
  return { "no_target", "current", current, target }
end
local fields = redis.call("HMGET", vkey(pid, vid), "status", "version", "promoted_at")
local number = tonumber(fields[2])
if env == PRODUCTION then
  if not fields[3] then
    return { "no_target", "never", current, target }
  end
else
  local was_there = false
  for _, placed_number in ipairs(placed) do
    if tonumber(placed_number) == number then
      was_there = true
      break
    end
  end
  if not was_there then
    return { "no_target", "never", current, target }
  end
  if fields[1] == "archived" then
    return { "place", fields[1], number }
  end
end
local check, breaking = contract_check(pid, vid, current_vid, ARGV[10], ARGV[11])
if check then
  return check
end
local notes = "rollback to v" .. number
if ARGV[5] == "1" then
  notes = ARGV[4]
end
local record = enter(
  pid, vid, number, fields[1], env, ARGV[3], ARGV[7], ARGV[8], current_vid, current, notes,
  nil, nil, nil, breaking
)
return { "ok", prompt_values(pid), version_values(pid, vid), record }
