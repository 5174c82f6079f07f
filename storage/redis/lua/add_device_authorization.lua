-- add_device_authorization: store a pending device authorization, found by its device
-- code digest and by its user code, both expiring with it.
-- KEYS[1]  ps:{<org>}:device:<device_code_hash>
-- KEYS[2]  ps:{<org>}:user-code:<user_code>
-- ARGV[1]  time to live, milliseconds
-- ARGV[2]  device_code_hash
-- ARGV[3..] field, value pairs of the record
-- Returns 1, or 0 when the device code or the user code is in use.
if redis.call("EXISTS", KEYS[1]) == 1 or redis.call("EXISTS", KEYS[2]) == 1 then
  return 0
end
redis.call("HSET", KEYS[1], unpack(ARGV, 3))
redis.call("PEXPIRE", KEYS[1], ARGV[1])
redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[1])
return 1
