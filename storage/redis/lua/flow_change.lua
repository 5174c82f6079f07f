-- flow_change: change or delete a login flow record only if its fields are as expected.
-- KEYS[1]  the record's hash
-- KEYS[2]  prefix of its kind's unique value index keys (same {<org>} hash tag)
-- ARGV[1]  the unique field, "" for none (deleting the record deletes its index key)
-- ARGV[2]  "1" to delete, "0" to change
-- ARGV[3]  new time to live, milliseconds; "" to keep it
-- ARGV[4]  n, the number of expected field, value pairs that follow; then the changes'
-- Returns {fields before, 1 when changed or deleted, else 0}.
local before = redis.call("HGETALL", KEYS[1])
local n = tonumber(ARGV[4])
if #before == 0 then
  return { before, 0 }
end
for i = 5, 4 + 2 * n, 2 do
  if redis.call("HGET", KEYS[1], ARGV[i]) ~= ARGV[i + 1] then
    return { before, 0 }
  end
end
if ARGV[2] == "1" then
  if ARGV[1] ~= "" then
    redis.call("DEL", KEYS[2] .. redis.call("HGET", KEYS[1], ARGV[1]))
  end
  redis.call("DEL", KEYS[1])
  return { before, 1 }
end
if #ARGV > 4 + 2 * n then
  redis.call("HSET", KEYS[1], unpack(ARGV, 5 + 2 * n))
end
if ARGV[3] ~= "" then
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
end
return { before, 1 }
