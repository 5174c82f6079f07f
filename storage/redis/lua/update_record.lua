-- update_record: change some fields of an existing record (an API key, a user).
-- KEYS[1]  its hash, e.g. ps:{<org>}:key:<client_id> or ps:{<org>}:user:<username>
-- ARGV     field, value pairs to set
-- Returns the record's fields after the change, or an empty list when there is none.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return {}
end
redis.call("HSET", KEYS[1], unpack(ARGV))
return redis.call("HGETALL", KEYS[1])
