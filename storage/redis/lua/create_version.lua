-- create_version: a new draft with the next number, kept atomic here: the release
-- engine decides changes of versions that exist. The number comes from the prompt's
-- own counter (field "next" of its hash), which only ever goes up: deleting or archiving
-- a version never gives its number back.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref          ARGV[2]  new version id      ARGV[3]  content
-- ARGV[4]  created_by          ARGV[5]  metadata (JSON)     ARGV[6]  tags (JSON)
-- ARGV[7]  variables (JSON), as the caller extracted them
-- ARGV[8]  now (ISO 8601)
-- ARGV[9]  variables_schema (JSON, "" for the implied one)
-- ARGV[10] examples (JSON, "" for none); both checked by the caller
-- ARGV[11] authors (JSON list: created_by and the person it counts as)
-- ARGV[12] config (JSON, "" for none; checked by the caller)
-- ARGV[13] the prompts its content includes (JSON list of names, "" for none): kept
--          as its "includes" field and entered in the org's reverse index
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", prompt values, number} or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local variables, vid, now = ARGV[7], ARGV[2], ARGV[8]
local number = redis.call("HINCRBY", pkey(pid), "next", 1)
redis.call(
  "HSET", vkey(pid, vid),
  "version_id", vid, "version", number, "content", ARGV[3], "variables", variables,
  "status", "draft", "metadata", ARGV[5], "tags", ARGV[6], "created_by", ARGV[4],
  "created_at", now, "updated_at", now, "authors", ARGV[11]
)
if ARGV[9] ~= "" then
  redis.call("HSET", vkey(pid, vid), "variables_schema", ARGV[9])
end
if ARGV[10] ~= "" then
  redis.call("HSET", vkey(pid, vid), "examples", ARGV[10])
end
if ARGV[12] ~= "" then
  redis.call("HSET", vkey(pid, vid), "config", ARGV[12])
end
if ARGV[13] ~= "" then
  redis.call("HSET", vkey(pid, vid), "includes", ARGV[13])
  for _, included in ipairs(cjson.decode(ARGV[13])) do
    redis.call("SADD", ORG .. "included-by:" .. included, pid .. ":" .. vid)
  end
end
redis.call("ZADD", pkey(pid, ":versions"), number, vid)
redis.call("ZADD", pkey(pid, ":versions:draft"), number, vid)
redis.call("HSET", pkey(pid), "updated_at", now)
-- The prompt's revision ("rev", apply_change.lua) stays: a new version changes nothing
-- a decision about the others read, and a decision about it loads it after this.
emit("version.created", pid, prompt_name(pid), number, vid, "draft")
return { "ok", prompt_values(pid), number }
