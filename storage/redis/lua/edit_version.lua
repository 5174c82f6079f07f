-- edit_version: replace a draft's content, variables and contract (rule 3: drafts only).
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  new content
-- ARGV[5]  variables (JSON), as the caller extracted them
-- ARGV[6]  now
-- ARGV[7]  variables_schema (JSON, "" for the implied one)
-- ARGV[8]  examples (JSON, "" for none); both checked by the caller
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, version values} or an error marker (see _common.lua; a
-- rollout's candidate: "candidate", _rollout.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
if status ~= "draft" then
  return { "state", status, number }
end
local refused = check_not_candidate(pid, number)
if refused then
  return refused
end
redis.call("HSET", vkey(pid, vid), "content", ARGV[4], "variables", ARGV[5], "updated_at", ARGV[6])
for i, field in ipairs({ "variables_schema", "examples" }) do
  if ARGV[6 + i] ~= "" then
    redis.call("HSET", vkey(pid, vid), field, ARGV[6 + i])
  else
    redis.call("HDEL", vkey(pid, vid), field)
  end
end
emit("version.updated", pid, prompt_name(pid), number, vid, "draft")
return { "ok", prompt_values(pid), version_values(pid, vid) }
