-- _common.lua: helpers prepended to every per-prompt script; not an operation itself.
--
-- Every per-prompt script gets
--   KEYS[1]  ps:{<org>}:names   hash: prompt name -> prompt id
--   KEYS[2]  ps:{<org>}:p:      prefix of every key of one prompt (storage/redis/keys.py)
-- A prompt's own keys depend on its id, which is often only known after reading
-- KEYS[1] (the caller gave a name), so they are built here from KEYS[2]. KEYS[2]
-- carries the org's hash tag, so every key built from it lives in the same slot as
-- KEYS[1]: the scripts touch one slot and run unchanged on Redis Cluster.
--
-- Replies are tables whose first element is "ok" or an error marker that the Python
-- side turns into a typed error: "no_prompt", "no_version", "no_production",
-- "state" (+ status, number: a lifecycle rule forbids the change),
-- "production_changed" (+ the production number or "": a guard did not hold),
-- "no_environment", "nothing_in_environment", "review_required" (+ approvals),
-- "place_here" (+ number: the environment holds that version already),
-- "check" (+ fingerprint, prompt values, candidate values, current values: run the
-- promotion check on these and send the script again with the fingerprint).
--
-- Environments: the org's hash ps:{<org>}:envs (name -> JSON, production only once
-- changed) and each prompt's placements P:env (environment -> version id), mirrored on
-- the version as its "placements" field (a JSON list of names, sorted; absent = none).

local NAMES = KEYS[1]
local PREFIX = KEYS[2]
-- ps:{<org>}: (NAMES without "names"): the org's other keys, in the same slot.
local ORG = string.sub(NAMES, 1, #NAMES - 5)
local PRODUCTION = "production"

local function pkey(pid, suffix)
  return PREFIX .. pid .. (suffix or "")
end

local function vkey(pid, vid)
  return PREFIX .. pid .. ":v:" .. vid
end

local function prompt_name(pid)
  return redis.call("HGET", pkey(pid), "name")
end

-- A name or a pmt_ id -> the prompt id, or nil when there is no such prompt.
local function resolve_prompt(ref)
  if string.sub(ref, 1, 4) ~= "pmt_" then
    -- create_prompt and delete_prompt change the names hash and the prompt hash
    -- together, so a name found here always has its prompt.
    return redis.call("HGET", NAMES, ref) or nil
  end
  -- Only [A-Za-z0-9] after the prefix: a ref with ":" must not reach another key.
  if string.match(ref, "^pmt_%w+$") and redis.call("EXISTS", pkey(ref)) == 1 then
    return ref
  end
  return nil
end

-- mode: "production" | "latest" | "number" (value = decimal) | "id" (value = v_...) |
-- "none" (a ref that can name no version). Returns the version id or nil.
local function resolve_version(pid, mode, value)
  if mode == "production" then
    return redis.call("ZRANGE", pkey(pid, ":versions:published"), 0, 0)[1]
  elseif mode == "latest" then
    return redis.call("ZRANGE", pkey(pid, ":versions"), -1, -1)[1]
  elseif mode == "number" then
    return redis.call("ZRANGEBYSCORE", pkey(pid, ":versions"), value, value, "LIMIT", 0, 1)[1]
  elseif mode == "environment" then
    return redis.call("HGET", pkey(pid, ":env"), value) or nil
  elseif mode == "id" then
    -- The version key includes the prompt id, so another prompt's v_ id is not found.
    if string.match(value, "^v_%w+$") and redis.call("EXISTS", vkey(pid, value)) == 1 then
      return value
    end
  end
  return nil
end

-- Resolve prompt and version; returns pid, vid, status, number or nil, error reply.
-- Reads pass without_state to skip fetching status and number they do not need.
local function resolve(ref, mode, value, without_state)
  local pid = resolve_prompt(ref)
  if not pid then
    return nil, { "no_prompt" }
  end
  local vid = resolve_version(pid, mode, value)
  if not vid then
    if mode == "production" then
      return nil, { "no_production" }
    end
    if mode == "environment" then
      if redis.call("HEXISTS", ORG .. "envs", value) == 0 then
        return nil, { "no_environment" }
      end
      return nil, { "nothing_in_environment" }
    end
    return nil, { "no_version" }
  end
  if without_state then
    return pid, vid
  end
  local fields = redis.call("HMGET", vkey(pid, vid), "status", "version")
  return pid, vid, fields[1], tonumber(fields[2])
end

-- Move a version between status indexes; updated_at moves on every status change.
local function set_status(pid, vid, number, from, to, now)
  redis.call("ZREM", pkey(pid, ":versions:" .. from), vid)
  redis.call("ZADD", pkey(pid, ":versions:" .. to), number, vid)
  redis.call("HSET", vkey(pid, vid), "status", to, "updated_at", now)
end

-- The published version's id and number (a string), or nil.
local function production(pid)
  local found = redis.call("ZRANGE", pkey(pid, ":versions:published"), 0, 0, "WITHSCORES")
  return found[1], found[2]
end

-- A guarded change's check against the production number (nil: none). expected is "*"
-- (no guard), "" (expects no production version) or a number. Returns the error reply
-- when production is something else, else nil.
local function check_expected(current, expected)
  if expected == "*" or tonumber(expected) == tonumber(current) then
    return nil
  end
  return { "production_changed", current or "" }
end

-- The version vid (number, status from) becomes production: published, with
-- promoted_at/promoted_by.
local function publish(pid, vid, number, from, promoted_by, now)
  set_status(pid, vid, number, from, "published", now)
  redis.call("HSET", vkey(pid, vid), "promoted_at", now, "promoted_by", promoted_by)
end

-- Write a promotion record (previous and notes: nil when there are none) and touch the
-- prompt. extra: more fields (environment, review_id, approved_by), or nil. Returns the
-- record's fields as HGETALL gives them.
local function record_promotion(pid, hid, number, promoted_by, now, previous, notes, extra)
  local record = {
    "history_id", hid, "prompt_id", pid, "version_number", number,
    "promoted_by", promoted_by, "promoted_at", now,
  }
  for _, value in ipairs(extra or {}) do
    table.insert(record, value)
  end
  if previous then
    table.insert(record, "previous_version")
    table.insert(record, previous)
  end
  if notes then
    table.insert(record, "notes")
    table.insert(record, notes)
  end
  local seq = redis.call("HINCRBY", pkey(pid), "hseq", 1)
  redis.call("HSET", pkey(pid, ":h:" .. hid), unpack(record))
  redis.call("ZADD", pkey(pid, ":history"), seq, hid)
  redis.call("HSET", pkey(pid), "updated_at", now)
  return redis.call("HGETALL", pkey(pid, ":h:" .. hid))
end

-- A version as two lists of values, in the order storage/redis/codec.py reads them (values
-- only, no field names: half the strings for the client to parse on every read).
local PROMPT_OF_VERSION = { "prompt_id", "name", "prompt_type" }
local VERSION_FIELDS = {
  "version_id", "version", "content", "variables", "status", "metadata", "tags",
  "created_at", "updated_at", "promoted_at", "promoted_by", "created_by", "placements",
  "variables_schema", "examples",
}

local function prompt_values(pid)
  return redis.call("HMGET", pkey(pid), unpack(PROMPT_OF_VERSION))
end

local function version_values(pid, vid)
  return redis.call("HMGET", vkey(pid, vid), unpack(VERSION_FIELDS))
end

-- Prompt fields plus the numbers of the latest and the production version ("" = none).
local function prompt_summary(pid)
  local latest = redis.call("ZRANGE", pkey(pid, ":versions"), -1, -1, "WITHSCORES")[2] or ""
  local prod = redis.call("ZRANGE", pkey(pid, ":versions:published"), 0, 0, "WITHSCORES")[2]
  return { redis.call("HGETALL", pkey(pid)), latest, prod or "" }
end


-- ---------------------------------------------------------------- environments

-- The environment's JSON as a table, or nil when the org has no such environment.
local function environment(name)
  local raw = redis.call("HGET", ORG .. "envs", name)
  if raw then
    return cjson.decode(raw)
  end
  if name == PRODUCTION then
    return { name = PRODUCTION, required_approvals = 0 }
  end
  return nil
end

-- The id and number (a string) of the version the environment holds, or nil.
local function current_in(pid, env)
  if env == PRODUCTION then
    return production(pid)
  end
  local vid = redis.call("HGET", pkey(pid, ":env"), env)
  if not vid then
    return nil
  end
  return vid, redis.call("HGET", vkey(pid, vid), "version")
end

-- The version's environments other than production, as a set.
local function placements_of(pid, vid)
  local set = {}
  local raw = redis.call("HGET", vkey(pid, vid), "placements")
  if raw then
    for _, name in ipairs(cjson.decode(raw)) do
      set[name] = true
    end
  end
  return set
end

-- Names are [a-z0-9-]: written as JSON by hand, so an empty set is [] (not cjson's {}).
local function set_placements(pid, vid, set)
  local names = {}
  for name in pairs(set) do
    names[#names + 1] = name
  end
  if #names == 0 then
    redis.call("HDEL", vkey(pid, vid), "placements")
    return
  end
  table.sort(names)
  redis.call("HSET", vkey(pid, vid), "placements", '["' .. table.concat(names, '","') .. '"]')
end

-- Take a version out of every environment but production.
local function unplace(pid, vid)
  for name in pairs(placements_of(pid, vid)) do
    redis.call("HDEL", pkey(pid, ":env"), name)
  end
  redis.call("HDEL", vkey(pid, vid), "placements")
end

-- The version's own rule for entering env (storage.lifecycle.check_enterable): nil, or
-- the refusal.
local function check_enterable(env, status, number, current)
  if env == PRODUCTION then
    if status ~= "draft" then
      return { "state", status, number }
    end
  elseif status == "archived" then
    return { "place", status, number }
  elseif tonumber(current) == tonumber(number) then
    return { "place_here", status, number }
  end
  return nil
end

-- The fields of the newest promotion record of env (records without an environment are
-- production's), or nil.
local function newest_record(pid, env)
  local hids = redis.call("ZREVRANGE", pkey(pid, ":history"), 0, -1)
  for _, hid in ipairs(hids) do
    local fields = redis.call("HMGET", pkey(pid, ":h:" .. hid), "environment", "previous_version")
    if (fields[1] or PRODUCTION) == env then
      return fields
    end
  end
  return nil
end


-- ---------------------------------------------------------------- the promotion check

-- The check (storage/contracts.py) cannot run in Lua: the Python side runs it between
-- two passes of the script that moves a version. The first pass answers "check" with
-- both versions and a fingerprint of what the check reads; the second carries that
-- fingerprint and the check's outcome, and goes ahead only while the fingerprint still
-- matches, so the check and the change are one atomic step. An environment that holds
-- nothing needs no check.
-- The fingerprint is what the check reads of both versions, verbatim (Lua has no hash
-- function on every server this runs on; a contract is small).
local CONTRACT_FIELDS = { "variables", "variables_schema", "examples" }

local function contract_fingerprint(pid, vid, cur_vid)
  local parts = {}
  for _, id in ipairs({ vid, cur_vid }) do
    parts[#parts + 1] = id
    for _, value in ipairs(redis.call("HMGET", vkey(pid, id), unpack(CONTRACT_FIELDS))) do
      parts[#parts + 1] = value or ""
    end
  end
  return table.concat(parts, "\0")
end

-- vid enters an environment holding cur_vid (nil: nothing). given: the fingerprint the
-- caller checked ("" on a first pass); breaking: the check's outcome ("1" or "0").
-- Returns nil and whether the change is breaking, or the "check" reply.
local function contract_check(pid, vid, cur_vid, given, breaking)
  if not cur_vid then
    return nil, false
  end
  local fingerprint = contract_fingerprint(pid, vid, cur_vid)
  if given == fingerprint then
    return nil, breaking == "1"
  end
  return {
    "check", fingerprint, prompt_values(pid), version_values(pid, vid),
    version_values(pid, cur_vid),
  }
end
