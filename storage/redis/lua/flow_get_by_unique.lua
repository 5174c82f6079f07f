-- flow_get_by_unique: the login flow record a unique value (a user code) points at.
-- KEYS[1]  the value's index key, e.g. ps:{<org>}:user-code:<user_code>
-- KEYS[2]  prefix of the records, e.g. ps:{<org>}:device: (same {<org>} hash tag)
-- Returns the record's fields, or an empty list.
local key = redis.call("GET", KEYS[1])
if not key then
  return {}
end
return redis.call("HGETALL", KEYS[2] .. key)
