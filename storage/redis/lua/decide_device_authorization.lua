-- decide_device_authorization: record a person's answer to a pending device
-- authorization, once.
-- KEYS[1]  ps:{<org>}:user-code:<user_code>
-- KEYS[2]  ps:{<org>}:device:   prefix of the records (same {<org>} hash tag)
-- ARGV[1]  "approved" or "denied"
-- ARGV[2]  user_id of the person
-- ARGV[3]  their session id, "" for none
-- Returns {"ok", fields after the change}, {"decided", status} when it is not pending,
-- or {"absent"}.
local device_code_hash = redis.call("GET", KEYS[1])
if not device_code_hash then
  return { "absent" }
end
local record = KEYS[2] .. device_code_hash
local status = redis.call("HGET", record, "status")
if not status then
  return { "absent" }
end
if status ~= "pending" then
  return { "decided", status }
end
redis.call("HSET", record, "status", ARGV[1], "user_id", ARGV[2])
if ARGV[3] ~= "" then
  redis.call("HSET", record, "session_id", ARGV[3])
end
return { "ok", redis.call("HGETALL", record) }
