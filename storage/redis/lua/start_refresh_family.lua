-- start_refresh_family: the first refresh token of a new family, joined to its session.
-- KEYS[1]  ps:{<org>}:refresh:<token_hash>
-- KEYS[2]  ps:{<org>}:family:<family_id>
-- KEYS[3]  ps:{<org>}:session:<session_id>            (unused without a session)
-- KEYS[4]  ps:{<org>}:session-families:<session_id>   (unused without a session)
-- ARGV[1]  time to live of the token, milliseconds
-- ARGV[2]  family_id
-- ARGV[3]  session_id, "" for none
-- ARGV[4..] field, value pairs of the token
-- Returns 1, or 0 when the session has ended.
if ARGV[3] ~= "" then
  local session_ttl = redis.call("PTTL", KEYS[3])
  if session_ttl < 0 then
    return 0
  end
  redis.call("SADD", KEYS[4], ARGV[2])
  redis.call("PEXPIRE", KEYS[4], session_ttl)
end
redis.call("HSET", KEYS[2], "family_id", ARGV[2], "session_id", ARGV[3])
redis.call("PEXPIRE", KEYS[2], ARGV[1])
redis.call("HSET", KEYS[1], unpack(ARGV, 4))
redis.call("PEXPIRE", KEYS[1], ARGV[1])
return 1
