-- get_device_authorization_by_user_code: the record a user code points at.
-- KEYS[1]  ps:{<org>}:user-code:<user_code>
-- KEYS[2]  ps:{<org>}:device:   prefix of the records (same {<org>} hash tag)
-- Returns the record's fields, or an empty list.
local device_code_hash = redis.call("GET", KEYS[1])
if not device_code_hash then
  return {}
end
return redis.call("HGETALL", KEYS[2] .. device_code_hash)
