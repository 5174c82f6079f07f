-- event_log_bounds: the ids of the oldest and the newest event an org's log keeps, and
-- whether it ever dropped older ones to stay within its bound, read together
-- (standalone).
-- KEYS[1]  ps:{<org>}:events  the org's event stream
-- ARGV[1]  the least number of events the log keeps (Redis before 7.0 does not count
--          the entries ever added: there a log that long is taken to have dropped some)
-- Returns {oldest id, newest id, 1 if events were dropped else 0}; "" for the ids of
-- an empty log.
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { "", "", 0 }
end
local info = redis.call("XINFO", "STREAM", KEYS[1])
local field = {}
for i = 1, #info, 2 do
  field[info[i]] = info[i + 1]
end
local length, added = field["length"], field["entries-added"]
local dropped = 0
if (added and added > length) or (not added and length >= tonumber(ARGV[1])) then
  dropped = 1
end
local oldest = field["first-entry"] -- an empty stream answers nil, false here
return { oldest and oldest[1] or "", field["last-generated-id"], dropped }
