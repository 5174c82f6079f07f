-- flow_add: keep a login flow record, and the index of its unique value, until it expires.
-- KEYS[1]  the record's hash
-- KEYS[2]  its unique value's index key (KEYS[1] again when its kind has none)
-- ARGV[1]  time to live, milliseconds
-- ARGV[2]  "1": only when neither key is taken
-- ARGV[3]  the record's key (what the index holds)
-- ARGV[4..] field, value pairs
-- Returns 1, or 0 when a key is taken.
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1], KEYS[2]) > 0 then
  return 0
end
redis.call("DEL", KEYS[1])
redis.call("HSET", KEYS[1], unpack(ARGV, 4))
redis.call("PEXPIRE", KEYS[1], ARGV[1])
if KEYS[2] ~= KEYS[1] then
  redis.call("SET", KEYS[2], ARGV[3], "PX", ARGV[1])
end
return 1
