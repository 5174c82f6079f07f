-- fan_out: queue the messages storage/webhook_front.py's fan_out made of the events after
-- the cursor, and move the cursor past them, unless another worker moved it first.
-- KEYS[1]..KEYS[8]  the org's webhook keys, as storage/redis/webhooks.py's _hooks() lists them
-- ARGV[1]  the cursor the messages were made from; ARGV[2] the new cursor
-- ARGV[3..]  the messages as JSON
-- Returns 1, or 0 when the cursor had moved (nothing written).
local HOOKS, IDS, SINCE, CURSOR, QUEUE, RETRY, LOG, EVENTS = unpack(KEYS)
if redis.call("GET", CURSOR) ~= ARGV[1] then
  return 0
end
for i = 3, #ARGV do
  redis.call("XADD", QUEUE, "*", "job", ARGV[i])
end
redis.call("SET", CURSOR, ARGV[2])
return 1
