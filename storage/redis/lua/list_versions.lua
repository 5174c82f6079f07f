-- list_versions: a page of versions, newest first, optionally of one status.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  status ("" = every status; "-" = a status no version can have)
-- ARGV[3]  the highest score to list: "(N" (below N) or "+inf"
-- ARGV[4]  how many to return (one more than the page, to see if more follow)
-- Returns {"ok", prompt values, {version values, ...}} or {"no_prompt"}.
local pid = resolve_prompt(ARGV[1])
if not pid then
  return { "no_prompt" }
end
local out = {}
if ARGV[2] ~= "-" then
  local index = pkey(pid, ":versions")
  if ARGV[2] ~= "" then
    index = pkey(pid, ":versions:" .. ARGV[2])
  end
  local vids = redis.call("ZREVRANGEBYSCORE", index, ARGV[3], "-inf", "LIMIT", 0, tonumber(ARGV[4]))
  for i, vid in ipairs(vids) do
    out[i] = version_values(pid, vid)
  end
end
return { "ok", prompt_values(pid), out }
