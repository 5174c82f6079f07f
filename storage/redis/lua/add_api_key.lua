-- add_api_key: store a new API key unless its client_id is taken in the org.
-- KEYS[1]  ps:{<org>}:keys              list of client_ids, oldest first
-- KEYS[2]  ps:{<org>}:key:<client_id>   the key's hash
-- ARGV[1]  client_id
-- ARGV[2..] field, value pairs of the key hash
-- Returns 1, or 0 when the client_id exists.
if redis.call("EXISTS", KEYS[2]) == 1 then
  return 0
end
redis.call("HSET", KEYS[2], unpack(ARGV, 2))
redis.call("RPUSH", KEYS[1], ARGV[1])
return 1
