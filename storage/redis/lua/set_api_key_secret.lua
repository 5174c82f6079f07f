-- set_api_key_secret: give a key a new secret (its hash); revoked stays as it is.
-- KEYS[1]  ps:{<org>}:key:<client_id>
-- ARGV[1]  the new secret's hash
-- Returns the key's fields, or an empty list when there is no such key.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return {}
end
redis.call("HSET", KEYS[1], "secret_hash", ARGV[1])
return redis.call("HGETALL", KEYS[1])
