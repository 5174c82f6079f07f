-- create_prompt: add a prompt to an org (standalone; every key is known up front).
-- KEYS[1]  ps:{<org>}:names          hash name -> prompt id
-- KEYS[2]  ps:{<org>}:prompts        zset of names (listing order)
-- KEYS[3]  ps:{<org>}:p:<prompt_id>  the new prompt's hash
-- ARGV[1]  name
-- ARGV[2]  prompt id
-- ARGV[3..] field, value pairs of the prompt hash (absent fields are null)
-- + the org's event stream and the event context, as _events.lua says
-- Returns 1, or 0 when the name is taken.
if redis.call("HSETNX", KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call("ZADD", KEYS[2], 0, ARGV[1])
-- The event context follows the hash fields in ARGV.
redis.call("HSET", KEYS[3], unpack(ARGV, 3, #ARGV - 4))
emit("prompt.created", ARGV[2], ARGV[1])
return 1
