-- unarchive_version: archived -> draft; any other status is a lifecycle error.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values} or an error marker (see _common.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
if status ~= "archived" then
  return { "state", status, number }
end
set_status(pid, vid, number, "archived", "draft", ARGV[4])
emit("version.unarchived", pid, prompt_name(pid), number, vid, "draft")
return { "ok", prompt_values(pid), version_values(pid, vid) }
