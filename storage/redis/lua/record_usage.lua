-- record_usage: add a usage report's counts to its buckets and its rollouts' arms, in
-- one step (storage/redis/usage.py).
-- KEYS[1]  ps:{<org>}:p:      prefix of the prompts' keys (P:versions: is there a version)
-- KEYS[2]  ps:{<org>}:usage   prefix of the usage keys (storage/redis/keys.py)
-- ARGV[1]  the hour bucket's start (epoch seconds), ARGV[2] seconds until it expires
-- ARGV[3]  the day bucket's start, ARGV[4] seconds until it expires
-- ARGV[5]  seconds an arms hash lives after its last report
-- ARGV[6..] per item, 10 values: prompt_id, version number, rollout_id ("" none), arm
--          ("" none), environment ("" none), renders, ok, errors, score_sum, score_count
-- Returns the number of items skipped (no such prompt or version).
local counters = { "renders", "ok", "errors", "score_sum", "score_count" }
local spans = { { "hour", ARGV[1], ARGV[2] }, { "day", ARGV[3], ARGV[4] } }
local known, touched, skipped = {}, {}, 0
for i = 6, #ARGV, 10 do
  local pid, version, rollout, arm, env = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local found = known[pid .. ":" .. version]
  if found == nil then
    found = redis.call("ZCOUNT", KEYS[1] .. pid .. ":versions", version, version) > 0
    known[pid .. ":" .. version] = found
  end
  if not found then
    skipped = skipped + 1
  else
    local where = version .. "|" .. rollout .. "|" .. arm .. "|" .. env
    local arms = nil
    if rollout ~= "" and arm ~= "" then
      arms = KEYS[2] .. "-arms:" .. rollout
    end
    for c = 1, 5 do
      local n = ARGV[i + 4 + c]
      if n ~= "0" then
        local command = c == 4 and "HINCRBYFLOAT" or "HINCRBY"
        for _, span in ipairs(spans) do
          local key = KEYS[2] .. ":" .. pid .. ":" .. span[1] .. ":" .. span[2]
          redis.call(command, key, counters[c] .. "|" .. where, n)
          if not touched[key] then
            touched[key] = true
            redis.call("EXPIRE", key, span[3])
          end
        end
        if arms then
          redis.call(command, arms, counters[c] .. "|" .. arm, n)
        end
      end
    end
    if arms then
      redis.call("EXPIRE", arms, ARGV[5])
    end
  end
end
return skipped
