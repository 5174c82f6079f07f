-- export_prompt: one prompt with everything it keeps, read in one atomic step (backups).
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- Returns {"ok", the prompt hash (with its counters "next" and "hseq"), {version hash,
-- ...} by ascending number (each with its "placements"), {history record, ...} in
-- promotion order, {request sequence, review JSON, ...} in request order}, every hash
-- as HGETALL gives it; or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local versions = {}
for i, vid in ipairs(redis.call("ZRANGE", pkey(pid, ":versions"), 0, -1)) do
  versions[i] = redis.call("HGETALL", vkey(pid, vid))
end
local history = {}
for i, hid in ipairs(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1)) do
  history[i] = redis.call("HGETALL", pkey(pid, ":h:" .. hid))
end
local reviews = redis.call("ZRANGE", pkey(pid, ":reviews"), 0, -1, "WITHSCORES")
for i = 1, #reviews, 2 do
  reviews[i], reviews[i + 1] = reviews[i + 1], redis.call("GET", ORG .. "review:" .. reviews[i])
end
return { "ok", redis.call("HGETALL", pkey(pid)), versions, history, reviews }
