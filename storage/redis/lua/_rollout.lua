-- _rollout.lua: the rollout helpers, put after _common.lua and _events.lua (and
-- _enter.lua) in front of the scripts that start, step, end or are blocked by a rollout
-- (storage/redis/scripts.py); not an operation itself. It reads no KEYS[...] of its
-- own: the keys it touches come from _common.lua's prefixes.
--
-- A prompt's rollouts are the hash P:rollouts: environment -> the rollout's JSON
-- {rollout_id, prompt_id, environment, baseline_version, candidate_version,
-- candidate_id, percent, started_by, started_at, updated_at} (storage/redis/codec.py
-- reads it). Markers: "rollout_busy" (+ rollout id, environment, action: a rollout
-- blocks the change), "no_rollout", "candidate" (+ number, rollout id: the candidate's
-- content cannot change), "no_baseline" (+ number, environment: it holds nothing).

-- The rollout in env as a table, or nil.
local function rollout_in(pid, env)
  local raw = redis.call("HGET", pkey(pid, ":rollouts"), env)
  if raw then
    return cjson.decode(raw)
  end
  return nil
end

-- The refusal of action (storage.lifecycle.ROLLOUT_BLOCKS) while env has a rollout, or nil.
local function check_no_rollout(pid, env, action)
  local rollout = rollout_in(pid, env)
  if rollout then
    return { "rollout_busy", rollout.rollout_id, env, action }
  end
  return nil
end

-- The refusal to change version number's content while it is a candidate, or nil.
local function check_not_candidate(pid, number)
  for _, raw in ipairs(redis.call("HVALS", pkey(pid, ":rollouts"))) do
    local rollout = cjson.decode(raw)
    if tonumber(rollout.candidate_version) == tonumber(number) then
      return { "candidate", tostring(number), rollout.rollout_id }
    end
  end
  return nil
end

-- A rollout event: the candidate as its version, the baseline as previous_version.
local function rollout_event(kind, pid, rollout)
  local status = redis.call("HGET", vkey(pid, rollout.candidate_id), "status")
  if not status then
    status = nil
  end
  emit(
    kind, pid, prompt_name(pid), rollout.candidate_version, rollout.candidate_id, status,
    rollout.baseline_version, rollout.environment, nil, rollout.rollout_id, rollout.percent
  )
end

-- Start a rollout (the caller checked the rules); returns its JSON.
local function begin_rollout(pid, rollout_id, vid, number, env, baseline, percent, by, now)
  local rollout = {
    rollout_id = rollout_id, prompt_id = pid, environment = env,
    baseline_version = tonumber(baseline), candidate_version = tonumber(number),
    candidate_id = vid, percent = tonumber(percent), started_by = by,
    started_at = now, updated_at = now,
  }
  local raw = cjson.encode(rollout)
  redis.call("HSET", pkey(pid, ":rollouts"), env, raw)
  rollout_event("rollout.started", pid, rollout)
  return raw
end

-- End a rollout (kind: rollout.completed or rollout.aborted); returns its JSON as it
-- was at the end.
local function end_rollout(pid, rollout, kind, now)
  redis.call("HDEL", pkey(pid, ":rollouts"), rollout.environment)
  rollout.updated_at = now
  rollout_event(kind, pid, rollout)
  return cjson.encode(rollout)
end

-- End (aborted) the rollouts whose candidate or baseline version number is.
local function abort_rollouts_of(pid, number, now)
  for _, raw in ipairs(redis.call("HVALS", pkey(pid, ":rollouts"))) do
    local rollout = cjson.decode(raw)
    if tonumber(rollout.candidate_version) == tonumber(number)
        or tonumber(rollout.baseline_version) == tonumber(number) then
      end_rollout(pid, rollout, "rollout.aborted", now)
    end
  end
end

-- The prompt id and the rollout in env (only the one named guard, unless guard is
-- ""), or nil and the error reply.
local function find_rollout(ref, env, guard)
  local pid = resolve_prompt(ref)
  if not pid then
    return nil, { "no_prompt" }
  end
  if not environment(env) then
    return nil, { "no_environment" }
  end
  local rollout = rollout_in(pid, env)
  if not rollout or (guard ~= "" and rollout.rollout_id ~= guard) then
    return nil, { "no_rollout" }
  end
  return pid, rollout
end
