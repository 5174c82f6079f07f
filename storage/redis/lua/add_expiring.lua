-- add_expiring: store a record that expires (an authorization code, a realm session).
-- KEYS[1]  the record's hash (ps:{<org>}:code:<code_hash>, ps:{<org>}:session:<id>)
-- ARGV[1]  time to live, milliseconds
-- ARGV[2..] field, value pairs
-- Returns 1.
redis.call("DEL", KEYS[1])
redis.call("HSET", KEYS[1], unpack(ARGV, 2))
redis.call("PEXPIRE", KEYS[1], ARGV[1])
return 1
