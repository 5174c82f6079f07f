-- list_prompts: a page of prompts in name order.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:prompts  zset of names, all scores 0 (lexicographic order)
-- ARGV[1]  list names after this one ("" = from the start)
-- ARGV[2]  how many to return (the caller asks one more than its page to see if more follow)
-- Returns a list of {prompt fields, latest, production}.
local min = "-"
if ARGV[1] ~= "" then
  min = "(" .. ARGV[1]
end
local out = {}
for i, name in ipairs(redis.call("ZRANGEBYLEX", KEYS[3], min, "+", "LIMIT", 0, tonumber(ARGV[2]))) do
  out[i] = prompt_summary(redis.call("HGET", NAMES, name))
end
return out
