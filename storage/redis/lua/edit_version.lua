-- edit_version: replace a draft's content and variables (rule 3: drafts only).
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  new content
-- ARGV[5]  variables if text (JSON)   ARGV[6]  variables if chat (JSON)
-- ARGV[7]  why the content is not valid chat ("" = it is)
-- ARGV[8]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values} or an error marker (see _common.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
if status ~= "draft" then
  return { "state", status, number }
end
local variables, reason = pick_variables(pid, ARGV[5], ARGV[6], ARGV[7])
if not variables then
  return { "invalid", reason }
end
redis.call("HSET", vkey(pid, vid), "content", ARGV[4], "variables", variables, "updated_at", ARGV[8])
emit("version.updated", pid, prompt_name(pid), number, vid, "draft")
return { "ok", prompt_values(pid), version_values(pid, vid) }
