-- _refresh.lua: helpers put in front of the refresh token scripts; not an operation.
--
-- Both scripts get
--   KEYS[1]  ps:{<org>}:refresh:<token_hash>   the presented token
--   KEYS[2]  ps:{<org>}:family:                prefix of the family keys
--   KEYS[3]  ps:{<org>}:session:               prefix of the session keys
-- The family and session keys are built here from the token's fields; the prefixes
-- carry the org's hash tag, so every key lives in the token's slot.

-- The token's family id when the token, its family and its session (if it has one)
-- all live; else nil.
local function live_family()
  local family_id = redis.call("HGET", KEYS[1], "family_id")
  if not family_id then
    return nil
  end
  local session_id = redis.call("HGET", KEYS[2] .. family_id, "session_id")
  if not session_id then
    return nil
  end
  if session_id ~= "" and redis.call("EXISTS", KEYS[3] .. session_id) == 0 then
    return nil
  end
  return family_id
end
