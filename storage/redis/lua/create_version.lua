-- create_version: a new draft with the next number, kept atomic here: the release
-- engine decides changes of versions that exist. The number comes from the prompt's
-- own counter (field "next" of its hash), which only ever goes up: deleting or archiving
-- a version never gives its number back.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:events   the org's event stream, which gets the version's event
-- ARGV[1]  prompt ref          ARGV[2]  new version id
-- ARGV[3]  the includes that must exist, by the prompt's type: JSON {"text": [[name,
--          number], ...], "chat": [...]} (number 0: any version)
-- ARGV[4..] the version's hash fields and values (storage/redis/codec.py version_fields);
--          its "includes" (the prompts its content includes) enter the reverse index
-- ARGV[#ARGV - 3..#ARGV]  the event's actor and request id ("" = none), the time of the
--          change (RFC 3339), the least number of events to keep (storage/redis/scripts.py
--          event_context)
-- Returns {"ok", prompt values, number}, {"no_prompt"} or {"include_gone", prompt type,
-- index...} (1-based, into that type's list: deleted since the caller's checks).
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local prompt = prompt_values(pid) -- prompt_id, name, prompt_type
local prompt_type = prompt[3]
local gone, found = {}, {}
for i, include in ipairs(cjson.decode(ARGV[3])[prompt_type] or {}) do
  local ipid = redis.call("HGET", NAMES, include[1])
  if ipid ~= pid then -- what a version says of its own prompt is the cycle check's
    if not ipid or (include[2] ~= 0 and not resolve_version(ipid, "number", include[2])) then
      gone[#gone + 1] = i
    else
      found[ipid] = true
    end
  end
end
if #gone > 0 then
  return { "include_gone", prompt_type, unpack(gone) }
end
local vid, now = ARGV[2], ARGV[#ARGV - 1]
local number = redis.call("HINCRBY", pkey(pid), "next", 1)
redis.call("HSET", vkey(pid, vid), unpack(ARGV, 4, #ARGV - 4))
redis.call("HSET", vkey(pid, vid), "version", number)
local included = redis.call("HGET", vkey(pid, vid), "includes")
for _, name in ipairs(included and cjson.decode(included) or {}) do
  redis.call("SADD", ORG .. "included-by:" .. name, pid .. ":" .. vid)
end
redis.call("ZADD", pkey(pid, ":versions"), number, vid)
redis.call("ZADD", pkey(pid, ":versions:draft"), number, vid)
redis.call("HSET", pkey(pid), "updated_at", now)
-- The prompt's own revision ("rev", apply_change.lua) stays: a new version changes
-- nothing a decision about the others read. Each included prompt's moves: a deletion
-- decided before this (on includers read without it) must decide again.
for ipid in pairs(found) do
  if redis.call("HEXISTS", pkey(ipid), "rev") == 1 then -- absent: load_state sets it
    redis.call("HINCRBY", pkey(ipid), "rev", 1)
  end
end
-- The event, in the same step. "~": trimming drops whole stream nodes, so at least
-- ARGV[#ARGV] entries always stay.
local event = { "type", "version.created", "prompt_id", pid, "prompt_name", prompt[2], "at", now,
  "version", number, "version_id", vid, "status", "draft" }
for i, field in ipairs({ "actor", "request_id" }) do
  if ARGV[#ARGV - 4 + i] ~= "" then
    event[#event + 1] = field
    event[#event + 1] = ARGV[#ARGV - 4 + i]
  end
end
redis.call("XADD", KEYS[3], "MAXLEN", "~", ARGV[#ARGV], "*", unpack(event))
return { "ok", prompt, number }
