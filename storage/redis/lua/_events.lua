-- _events.lua: the event helper, put in front of every script that creates a prompt or
-- a version (its header says "as _events.lua says": storage/redis/scripts.py); not an
-- operation itself.
--
-- Such a script gets, after its own KEYS and ARGV (so each script's own numbering
-- stays as its header says):
--   KEYS[#KEYS]      ps:{<org>}:events   stream: the org's event log
--   ARGV[#ARGV - 3]  actor: the user id making the change ("" = none given)
--   ARGV[#ARGV - 2]  request id ("" = none given)
--   ARGV[#ARGV - 1]  the time of the change (RFC 3339)
--   ARGV[#ARGV]      the least number of events to keep
-- The script calls emit once, after its checks passed and its change is made, so a
-- change and its event are one atomic step and a refused change writes none. The
-- stream carries the org's hash tag like every other key of the script.

-- Append the change's event (a prompt's creation: no number, version id or status);
-- nil and "" values are left out of the entry (null fields). Returns the event's id.
local function emit(kind, pid, name, number, vid, status)
  local n = #ARGV
  local entry = { "type", kind, "prompt_id", pid, "prompt_name", name, "at", ARGV[n - 1] }
  local optional = { "version", number, "version_id", vid, "status", status,
    "actor", ARGV[n - 3], "request_id", ARGV[n - 2] }
  for i = 1, 9, 2 do
    if optional[i + 1] ~= nil and optional[i + 1] ~= "" then
      entry[#entry + 1] = optional[i]
      entry[#entry + 1] = tostring(optional[i + 1])
    end
  end
  -- "~": trimming drops whole stream nodes, so at least ARGV[n] entries always stay.
  return redis.call("XADD", KEYS[#KEYS], "MAXLEN", "~", ARGV[n], "*", unpack(entry))
end
