-- consume_device_authorization: hand out an approved device authorization once.
-- KEYS[1]  ps:{<org>}:device:<device_code_hash>
-- KEYS[2]  ps:{<org>}:user-code:   prefix of the user code keys (same {<org>} hash tag)
-- Returns the record's fields, deleting it and its user code key; an empty list when it
-- is not approved (pending, denied, absent, expired, consumed).
if redis.call("HGET", KEYS[1], "status") ~= "approved" then
  return {}
end
local found = redis.call("HGETALL", KEYS[1])
redis.call("DEL", KEYS[1], KEYS[2] .. redis.call("HGET", KEYS[1], "user_code"))
return found
