-- get_user_by_id: a user found by user id.
-- KEYS[1]  ps:{<org>}:user-ids   hash user_id -> username
-- KEYS[2]  ps:{<org>}:user:      prefix of the user hashes (same {<org>} hash tag)
-- ARGV[1]  user_id
-- Returns the user's fields, or an empty list.
local username = redis.call("HGET", KEYS[1], ARGV[1])
if not username then
  return {}
end
return redis.call("HGETALL", KEYS[2] .. username)
