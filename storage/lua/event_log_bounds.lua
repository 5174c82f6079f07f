-- event_log_bounds: the ids of the oldest and the newest event an org's log keeps, read
-- together (standalone).
-- KEYS[1]  ps:{<org>}:events  the org's event stream
-- Returns {oldest id, newest id}, "" for each when the log is empty.
local oldest = redis.call("XRANGE", KEYS[1], "-", "+", "COUNT", 1)[1]
local newest = redis.call("XREVRANGE", KEYS[1], "+", "-", "COUNT", 1)[1]
return { oldest and oldest[1] or "", newest and newest[1] or "" }
