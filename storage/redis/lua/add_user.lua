-- add_user: store a new user unless the username is taken in the org.
-- KEYS[1]  ps:{<org>}:users              list of usernames, oldest first
-- KEYS[2]  ps:{<org>}:user:<username>    the user's hash
-- KEYS[3]  ps:{<org>}:user-ids           hash user_id -> username
-- ARGV[1]  username
-- ARGV[2]  user_id
-- ARGV[3..] field, value pairs of the user hash
-- Returns 1, or 0 when the username exists.
if redis.call("EXISTS", KEYS[2]) == 1 then
  return 0
end
redis.call("HSET", KEYS[2], unpack(ARGV, 3))
redis.call("HSET", KEYS[3], ARGV[2], ARGV[1])
redis.call("RPUSH", KEYS[1], ARGV[1])
return 1
