-- end_session: logout. Delete the session and every refresh family started in it.
-- KEYS[1]  ps:{<org>}:session:<session_id>
-- KEYS[2]  ps:{<org>}:session-families:<session_id>   set of family ids
-- KEYS[3]  ps:{<org>}:family:   prefix of the family keys (same {<org>} hash tag)
-- Returns the session's fields, or an empty list when there was none.
local found = redis.call("HGETALL", KEYS[1])
for _, family_id in ipairs(redis.call("SMEMBERS", KEYS[2])) do
  redis.call("DEL", KEYS[3] .. family_id)
end
redis.call("DEL", KEYS[1], KEYS[2])
return found
