-- add_record: store a new API key or user unless its id is taken in the org.
-- KEYS[1]  the org's ids, oldest first: ps:{<org>}:keys or ps:{<org>}:users
-- KEYS[2]  the record's hash: ps:{<org>}:key:<client_id> or ps:{<org>}:user:<username>
-- KEYS[3]  hash unique value -> id (ps:{<org>}:user-ids); KEYS[2] again for none
-- ARGV[1]  id; ARGV[2] unique value; ARGV[3..] field, value pairs
-- Returns 1, or 0 when the id is taken.
if redis.call("EXISTS", KEYS[2]) == 1 then
  return 0
end
redis.call("HSET", KEYS[2], unpack(ARGV, 3))
if KEYS[3] ~= KEYS[2] then
  redis.call("HSET", KEYS[3], ARGV[2], ARGV[1])
end
redis.call("RPUSH", KEYS[1], ARGV[1])
return 1
