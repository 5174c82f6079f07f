-- poll_device_authorization: a client's poll; records its time.
-- KEYS[1]  ps:{<org>}:device:<device_code_hash>
-- ARGV[1]  now (the storage clock)
-- Returns the record's fields as they were before this poll, or an empty list.
local found = redis.call("HGETALL", KEYS[1])
if #found > 0 then
  redis.call("HSET", KEYS[1], "last_polled_at", ARGV[1])
end
return found
