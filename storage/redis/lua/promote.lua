-- promote: the whole promotion as one atomic step. The draft becomes published with
-- promoted_at/promoted_by; the version published before it becomes archived (or draft
-- when ARGV[7] is "0"); a history record is written with the previous version's number.
-- Rule 1 (at most one published version) holds because this is the only way in.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  promoted_by    ARGV[5]  notes    ARGV[6]  "1" if there are notes, else "0"
-- ARGV[7]  "1" to archive the previous production version, "0" to make it a draft
-- ARGV[8]  now            ARGV[9]  new history id
-- ARGV[10] expected production number, "" for none, "*" for no guard; checked first
--          (after the prompt and version exist), so a failed guard changes nothing
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values, history record fields} or an error marker.
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
local previous = { production(pid) }
local refused = check_expected(previous[2], ARGV[10])
if refused then
  return refused
end
if status ~= "draft" then
  return { "state", status, number }
end
local now, hid = ARGV[8], ARGV[9]
if previous[1] then
  local demoted = "archived"
  if ARGV[7] == "0" then
    demoted = "draft"
  end
  set_status(pid, previous[1], previous[2], "published", demoted, now)
end
publish(pid, vid, number, "draft", ARGV[4], now)
local notes = nil
if ARGV[6] == "1" then
  notes = ARGV[5]
end
local record = record_promotion(pid, hid, number, ARGV[4], now, previous[2], notes)
emit("version.promoted", pid, prompt_name(pid), number, vid, "published", previous[2])
return { "ok", prompt_values(pid), version_values(pid, vid), record }
