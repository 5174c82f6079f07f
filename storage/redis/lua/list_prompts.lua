-- list_prompts: a page of prompts in name order.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:prompts  zset of names, all scores 0 (lexicographic order)
-- ARGV[1]  the lowest name to list: "(name" (after it) or "-"
-- ARGV[2]  how many to return (the caller asks one more than its page to see if more follow)
-- Returns a list of {prompt fields, latest, production}.
local out = {}
for i, name in ipairs(redis.call("ZRANGEBYLEX", KEYS[3], ARGV[1], "+", "LIMIT", 0, tonumber(ARGV[2]))) do
  out[i] = prompt_summary(redis.call("HGET", NAMES, name))
end
return out
