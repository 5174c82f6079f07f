-- list_history: a page of promotion records, newest promotion first.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  the highest sequence number to list: "(N" (below N) or "+inf"
-- ARGV[3]  how many to return (one more than the page, to see if more follow)
-- Returns {"ok", {sequence, record fields}, ...} or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local found = redis.call(
  "ZREVRANGEBYSCORE", pkey(pid, ":history"), ARGV[2], "-inf", "WITHSCORES", "LIMIT", 0, tonumber(ARGV[3])
)
local out = { "ok" }
for i = 1, #found, 2 do
  out[#out + 1] = { found[i + 1], redis.call("HGETALL", pkey(pid, ":h:" .. found[i])) }
end
return out
