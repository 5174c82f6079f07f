-- fan_out: queue the messages storage/webhook_front.py's fan_out made of the events after
-- the cursor, and move the cursor past them, unless another worker moved it first.
-- KEYS[1]  ps:{<org>}:wh:cursor       string: the newest event fanned out to messages
-- KEYS[2]  ps:{<org>}:wh:queue        stream: messages to deliver, group "delivery"
-- ARGV[1]  the cursor the messages were made from; ARGV[2] the new cursor
-- ARGV[3..]  the messages as JSON
-- Returns 1, or 0 when the cursor had moved (nothing written).
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
for i = 3, #ARGV do
  redis.call("XADD", KEYS[2], "*", "job", ARGV[i])
end
redis.call("SET", KEYS[1], ARGV[2])
return 1
