-- revoke_api_key: mark a key revoked (idempotent).
-- KEYS[1]  ps:{<org>}:key:<client_id>
-- Returns the key's fields, or an empty list when there is no such key.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return {}
end
redis.call("HSET", KEYS[1], "revoked", "1")
return redis.call("HGETALL", KEYS[1])
