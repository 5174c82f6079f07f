-- take_authorization_code: read an authorization code and delete it (single use).
-- KEYS[1]  ps:{<org>}:code:<code_hash>
-- Returns the code's fields, or an empty list when it is absent, expired or taken.
local found = redis.call("HGETALL", KEYS[1])
redis.call("DEL", KEYS[1])
return found
