-- list_reviews: a page of reviews, newest request first, of the org or of one prompt,
-- optionally of one status and environment. Keys: storage/redis/keys.py.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref ("" = every prompt)
-- ARGV[2]  status ("" = any)        ARGV[3]  environment ("" = any)
-- ARGV[4]  the highest sequence to list: "(N" (below N) or "+inf"
-- ARGV[5]  how many to return (one more than the page, to see if more follow)
-- Returns {"ok", {sequence, review JSON}, ...} or {"no_prompt"}.
local index = ORG .. "reviews"
if ARGV[1] ~= "" then
  local pid = resolve_prompt(ARGV[1])
  if not pid then
    return { "no_prompt" }
  end
  index = pkey(pid, ":reviews")
end
local want = tonumber(ARGV[5])
local out = { "ok" }
local offset = 0
while #out - 1 < want do
  local found = redis.call("ZREVRANGEBYSCORE", index, ARGV[4], "-inf", "WITHSCORES", "LIMIT", offset, 100)
  if #found == 0 then
    break
  end
  offset = offset + #found / 2
  for i = 1, #found, 2 do
    local json = redis.call("GET", ORG .. "review:" .. found[i])
    if json then
      local review = cjson.decode(json)
      if (ARGV[2] == "" or review.status == ARGV[2])
         and (ARGV[3] == "" or review.environment == ARGV[3]) then
        out[#out + 1] = { found[i + 1], json }
        if #out - 1 == want then
          break
        end
      end
    end
  end
end
return out
