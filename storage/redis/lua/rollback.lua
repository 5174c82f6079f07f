-- rollback: an earlier production version becomes production again, in one atomic step.
-- The target (ARGV[2], or else the version before the current one on the line of
-- production versions, which never returns to a version rolled back from) becomes
-- published whatever its status
-- now, with promoted_at/promoted_by; the current production version becomes archived;
-- a history record is written (notes default to "rollback to v<N>", as
-- storage.lifecycle.rollback_notes spells it). No moment shows zero or two published
-- versions. A version that was ever production carries promoted_at, which is how a
-- to_version is checked.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  target number, "" for the version production before
-- ARGV[3]  promoted_by    ARGV[4]  notes    ARGV[5]  "1" if there are notes, else "0"
-- ARGV[6]  expected production number, "" for none, "*" for no guard; checked first
-- ARGV[7]  now            ARGV[8]  new history id
-- + the org's event stream and the event context, as _events.lua says: a rollback is
--   logged as a version.promoted event
-- Returns {"ok", prompt values, version values, history record fields}, {"no_prompt"},
-- {"production_changed", current or ""} or {"no_target", reason, current, target} with
-- reason "no_production", "first", "deleted", "missing", "current" or "never".
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local current_vid, current = production(pid)
local refused = check_expected(current, ARGV[6])
if refused then
  return refused
end
if not current_vid then
  return { "no_target", "no_production", "", "" }
end
local target = ARGV[2]
if target == "" then
  -- The line of production versions (storage.lifecycle.production_line): each record
  -- extends it, and one that goes back to a version on it drops the versions after it.
  local line, at = {}, {}
  for _, hid in ipairs(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1)) do
    local number = redis.call("HGET", pkey(pid, ":h:" .. hid), "version_number")
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
if not fields[3] then
  return { "no_target", "never", current, target }
end
local now, number = ARGV[7], tonumber(fields[2])
set_status(pid, current_vid, current, "published", "archived", now)
publish(pid, vid, number, fields[1], ARGV[3], now)
local notes = "rollback to v" .. number
if ARGV[5] == "1" then
  notes = ARGV[4]
end
local record = record_promotion(pid, ARGV[8], number, ARGV[3], now, current, notes)
emit("version.promoted", pid, prompt_name(pid), number, vid, "published", current)
return { "ok", prompt_values(pid), version_values(pid, vid), record }
