-- _events.lua: the event helper, put in front of every script that changes a prompt or
-- a version (storage/redis/scripts.py); not an operation itself.
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

-- Append the change's event; nil arguments are left out of the entry (null fields).
-- Returns the event's id.
local function emit(kind, pid, name, number, vid, status, previous, environment, review_id,
                    rollout_id, percent)
  local n = #ARGV
  local entry = { "type", kind, "prompt_id", pid, "prompt_name", name, "at", ARGV[n - 1] }
  local function add(field, value)
    if value ~= nil and value ~= "" then
      entry[#entry + 1] = field
      entry[#entry + 1] = tostring(value)
    end
  end
  add("version", number)
  add("version_id", vid)
  add("status", status)
  add("previous_version", previous)
  add("environment", environment)
  add("review_id", review_id)
  add("rollout_id", rollout_id)
  add("percent", percent)
  add("actor", ARGV[n - 3])
  add("request_id", ARGV[n - 2])
  -- "~": trimming drops whole stream nodes, so at least ARGV[n] entries always stay.
  return redis.call("XADD", KEYS[#KEYS], "MAXLEN", "~", ARGV[n], "*", unpack(entry))
end
