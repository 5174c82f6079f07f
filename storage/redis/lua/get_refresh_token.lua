-- get_refresh_token: a refresh token, used or not, while its family and session live.
-- KEYS[1], KEYS[2], KEYS[3]  see _refresh.lua
-- Returns the token's fields, or an empty list.
if not live_family() then
  return {}
end
return redis.call("HGETALL", KEYS[1])
