-- delete_version: remove a draft or archived version (and its placements). Numbering is unchanged: the
-- prompt's counter is not touched. A published version cannot be deleted.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok"} or an error marker (see _common.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
if status == "published" then
  return { "state", status, number }
end
-- A rollout of it, or over it, ends first, while its event can still name the version.
abort_rollouts_of(pid, number, ARGV[4])
unplace(pid, vid)
redis.call("DEL", vkey(pid, vid))
redis.call("ZREM", pkey(pid, ":versions"), vid)
redis.call("ZREM", pkey(pid, ":versions:" .. status), vid)
redis.call("HSET", pkey(pid), "updated_at", ARGV[4])
-- A deleted version has no status any more.
emit("version.deleted", pid, prompt_name(pid), number, vid, nil)
return { "ok" }
