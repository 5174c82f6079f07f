-- list_prompts: a page of prompts in name order.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:prompts  zset of names, all scores 0 (lexicographic order)
-- ARGV[1]  list names after this one ("" = from the start)
-- ARGV[2]  how many to return (the caller asks one more than its page to see if more follow)
-- Returns a list of {prompt fields, latest, production}.
local out = {}
local names = redis.call("ZRANGEBYLEX", KEYS[3], after(ARGV[1], "-"), "+", "LIMIT", 0,
  tonumber(ARGV[2]))
for i, name in ipairs(names) do
  out[i] = prompt_summary(redis.call("HGET", NAMES, name))
end
return out
