-- _common.lua: helpers prepended to every per-prompt script (its header says "see
-- _common.lua": storage/redis/scripts.py); not an operation itself.
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
-- "no_environment", "nothing_in_environment". No release rule is here: the release
-- engine (storage/release) decides, apply_change.lua writes.
--
-- Environments: the org's hash ps:{<org>}:envs (name -> JSON, production only once
-- changed) and each prompt's placements P:env (environment -> version id), mirrored on
-- the version as its "placements" field (a JSON list of names, sorted; absent = none).

local NAMES = KEYS[1]
local PREFIX = KEYS[2]
-- ps:{<org>}: (NAMES without "names"): the org's other keys, in the same slot.
local ORG = string.sub(NAMES, 1, #NAMES - 5)
local PRODUCTION = "production"

-- Whether the org has the environment (production always).
local function has_environment(name)
  return name == PRODUCTION or redis.call("HEXISTS", ORG .. "envs", name) == 1
end

local function pkey(pid, suffix)
  return PREFIX .. pid .. (suffix or "")
end

local function vkey(pid, vid)
  return PREFIX .. pid .. ":v:" .. vid
end

-- The published version's id, or nil.
local function production(pid)
  return redis.call("ZRANGE", pkey(pid, ":versions:published"), 0, 0)[1]
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
    return production(pid)
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

-- A version as two lists of values, in the order storage/redis/codec.py reads them (values
-- only, no field names: half the strings for the client to parse on every read).
local PROMPT_OF_VERSION = { "prompt_id", "name", "prompt_type" }
local VERSION_FIELDS = {
  "version_id", "version", "content", "variables", "status", "metadata", "tags",
  "created_at", "updated_at", "promoted_at", "promoted_by", "created_by", "placements",
  "variables_schema", "examples", "frozen", "authors", "config",
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
