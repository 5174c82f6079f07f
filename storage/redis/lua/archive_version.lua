-- archive_version: draft -> archived, and out of every environment. A published version cannot be archived (rule 2:
-- promote another version instead); an archived one already is.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values} or an error marker (see _common.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
if status ~= "draft" then
  return { "state", status, number }
end
unplace(pid, vid)
set_status(pid, vid, number, "draft", "archived", ARGV[4])
emit("version.archived", pid, prompt_name(pid), number, vid, "archived")
-- A rollout of it, or over it, ends (_rollout.lua).
abort_rollouts_of(pid, number, ARGV[4])
return { "ok", prompt_values(pid), version_values(pid, vid) }
