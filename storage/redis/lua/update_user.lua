-- update_user: change some fields of an existing user.
-- KEYS[1]  ps:{<org>}:user:<username>
-- ARGV     field, value pairs to set (updated_at always among them)
-- Returns the user's fields after the change, or an empty list when there is no user.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return {}
end
redis.call("HSET", KEYS[1], unpack(ARGV))
return redis.call("HGETALL", KEYS[1])
