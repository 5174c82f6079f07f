-- read_environment_page: a page of an environment's whole read, by prompt name: each
-- prompt's version there (and the rollout running there with its candidate), with the
-- org's newest event id, in one round trip.
-- KEYS[1], KEYS[2]  see _common.lua
-- KEYS[3]  ps:{<org>}:prompts  zset of names, all scores 0 (lexicographic order)
-- KEYS[4]  ps:{<org>}:events   the org's event stream
-- ARGV[1]  the environment
-- ARGV[2]  the lowest name to list: "(name" (after it) or "-"
-- ARGV[3]  how many to return (the caller asks one more than its page to see if more follow)
-- ARGV[4]  how many names to look at at most (prompts without a version in the
--          environment are skipped; the cap bounds the time the script holds Redis)
-- Returns {"no_environment"}, or {"ok", newest event id or "", the last name looked at
-- when the cap stopped the scan or "", entries...}; an entry is {prompt values, version
-- values} or, during a rollout, {prompt values, version values, rollout JSON, candidate
-- values} (as read_version.lua answers).
local env = ARGV[1]
if not has_environment(env) then
  return { "no_environment" }
end
local wanted, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local newest = redis.call("XREVRANGE", KEYS[4], "+", "-", "COUNT", 1)[1]
local out = { "ok", newest and newest[1] or "", "" }
local min = ARGV[2]
local scanned, found = 0, 0
local batch = 200
while found < wanted do
  local names = redis.call("ZRANGEBYLEX", KEYS[3], min, "+", "LIMIT", 0, batch)
  for _, name in ipairs(names) do
    if scanned == cap then
      out[3] = string.sub(min, 2)
      return out
    end
    scanned = scanned + 1
    min = "(" .. name
    local pid = redis.call("HGET", NAMES, name)
    local vid = resolve_version(pid, env == PRODUCTION and "production" or "environment", env)
    if vid then
      local entry = { prompt_values(pid), version_values(pid, vid) }
      local rollout = redis.call("HGET", pkey(pid, ":rollouts"), env)
      if rollout then
        entry[3] = rollout
        entry[4] = version_values(pid, cjson.decode(rollout).candidate_id)
      end
      out[#out + 1] = entry
      found = found + 1
      if found == wanted then
        return out
      end
    end
  end
  if #names < batch then
    return out
  end
end
return out
