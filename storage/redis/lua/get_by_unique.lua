-- get_by_unique: the record a unique value names: a device's by its user code (KEYS[1]
-- the string ps:{<org>}:user-code:<user_code>) or a user's by user id (KEYS[1] the
-- hash ps:{<org>}:user-ids, ARGV[1] the user id).
-- KEYS[2]  prefix of the records, e.g. ps:{<org>}:device: (same {<org>} hash tag)
-- Returns the record's fields, or an empty list.
local key
if ARGV[1] then
  key = redis.call("HGET", KEYS[1], ARGV[1])
else
  key = redis.call("GET", KEYS[1])
end
if not key then
  return {}
end
return redis.call("HGETALL", KEYS[2] .. key)
