-- rotate_refresh_token: mark the presented token used and store its successor; a token
-- used already revokes its family instead.
-- KEYS[1], KEYS[2], KEYS[3]  see _refresh.lua
-- KEYS[4]  ps:{<org>}:refresh:<new_token_hash>
-- ARGV[1]  new token_hash
-- ARGV[2]  issued_at of the successor (now)
-- ARGV[3]  expires_at of the successor
-- ARGV[4]  time to live of the successor, milliseconds
-- ARGV[5]  "1" to give the successor the scope ARGV[6], "0" to keep the token's
-- ARGV[6]  scope
-- Returns {"ok", successor fields}, {"reused", family_id} (family revoked) or {"absent"}.
local family_id = live_family()
if not family_id then
  return { "absent" }
end
local family = KEYS[2] .. family_id
if redis.call("HGET", KEYS[1], "used") == "1" then
  redis.call("DEL", family)
  return { "reused", family_id }
end
redis.call("HSET", KEYS[1], "used", "1")
redis.call("HSET", KEYS[4], unpack(redis.call("HGETALL", KEYS[1])))
redis.call("HSET", KEYS[4], "token_hash", ARGV[1], "used", "0", "issued_at", ARGV[2],
  "expires_at", ARGV[3])
if ARGV[5] == "1" then
  redis.call("HSET", KEYS[4], "scope", ARGV[6])
end
redis.call("PEXPIRE", KEYS[4], ARGV[4])
-- The family lives as long as its newest token.
if redis.call("PTTL", family) < tonumber(ARGV[4]) then
  redis.call("PEXPIRE", family, ARGV[4])
end
return { "ok", redis.call("HGETALL", KEYS[4]) }
