-- read_version: the production, latest, an environment's or one specific version,
-- resolved from a prompt name or id in one round trip.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref
-- ARGV[2]  mode: "production", "latest", "environment", "number", "id" or "none"
-- ARGV[3]  the environment, number or version id (modes "environment", "number", "id")
-- ARGV[4]  optional: the environment floating includes resolve against; given, the
--          includes of the versions read are read too (below)
-- Returns {"ok", prompt values, version values}, {"no_prompt"}, {"no_version"},
-- {"no_production"}, {"no_environment"} or {"nothing_in_environment"}. A production or
-- environment read while a rollout runs there adds the rollout's JSON and its
-- candidate's version values (P:rollouts, storage/redis/keys.py); with ARGV[4], when
-- the versions read have include tags, a sixth element (the fourth and fifth then
-- false when no rollout runs) lists what they resolve to, every level down, each
-- (name, where) once: {name, where, prompt values, version values} or {name, where}
-- when nothing is there. What this misses (a tag only Python's grammar reads, past
-- MAX_READ) the caller reads itself (storage/neighbours.py): it only saves round trips.
local MAX_DEPTH = 3 -- promptsvc/templating/includes.py
local MAX_READ = 64

-- Resolve prompt and version; returns pid, vid or nil, error reply.
local function resolve(ref, mode, value)
  local pid = resolve_prompt(ref)
  if not pid then
    return nil, { "no_prompt" }
  end
  local vid = resolve_version(pid, mode, value)
  if vid then
    return pid, vid
  elseif mode == "production" then
    return nil, { "no_production" }
  elseif mode ~= "environment" then
    return nil, { "no_version" }
  elseif not has_environment(value) then
    return nil, { "no_environment" }
  end
  return nil, { "nothing_in_environment" }
end

-- {name, ref or false} of each include tag of text; the grammar as
-- promptsvc/templating/includes.py INCLUDE has it, closely enough (see above).
local function scan(text, into)
  if not string.find(text, "{{>", 1, true) then
    return
  end
  for inner in string.gmatch(text, "{{>%s*([^{}]-)%s*}}") do
    local name, ref = string.match(inner, "^(%w[%w%._%-]*)@([%w%-]+)$")
    name = name or string.match(inner, "^(%w[%w%._%-]*)$")
    if name then
      into[#into + 1] = { name, ref or false }
    end
  end
end

-- The include tags of a version's content (a chat prompt's: of each message).
local function tags(prompt_type, content, into)
  if prompt_type ~= "chat" then
    return scan(content, into)
  end
  if not (string.find(content, "{{>", 1, true) or string.find(content, "\\u", 1, true)) then
    return
  end
  local ok, messages = pcall(cjson.decode, content)
  if ok and type(messages) == "table" then
    for _, message in ipairs(messages) do
      if type(message) == "table" and type(message.content) == "string" then
        scan(message.content, into)
      end
    end
  end
end

-- What the tags resolve to, floating ones in env, as storage/redis/prompts.py
-- read_many reads each (name, where).
local function included(level, env)
  local found, seen = {}, {}
  for _ = 1, MAX_DEPTH do
    local below = {}
    for _, tag in ipairs(level) do
      local where = tag[2] or env
      local key = tag[1] .. "@" .. where
      if not seen[key] and #found < MAX_READ then
        seen[key] = true
        local mode, value = "environment", where
        if string.match(where, "^%d+$") then
          mode = "number"
        elseif where == PRODUCTION then
          mode, value = "production", ""
        end
        local pid, vid = resolve(tag[1], mode, value)
        if pid then
          local prompt, version = prompt_values(pid), version_values(pid, vid)
          found[#found + 1] = { tag[1], where, prompt, version }
          if prompt[3] == "text" then
            scan(version[3], below)
          end
        else
          found[#found + 1] = { tag[1], where }
        end
      end
    end
    level = below
  end
  return found
end

local pid, vid_or_err = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid_or_err
end
local prompt, version = prompt_values(pid), version_values(pid, vid_or_err)
local rollout, candidate = false, false
if ARGV[2] == "production" or ARGV[2] == "environment" then
  local env = ARGV[2] == "production" and PRODUCTION or ARGV[3]
  rollout = redis.call("HGET", pkey(pid, ":rollouts"), env)
  if rollout then
    candidate = version_values(pid, cjson.decode(rollout).candidate_id)
  end
end
local level = {}
if ARGV[4] then
  tags(prompt[3], version[3], level)
  if candidate then
    tags(prompt[3], candidate[3], level)
  end
end
if #level > 0 then
  return { "ok", prompt, version, rollout, candidate, included(level, ARGV[4]) }
elseif rollout then
  return { "ok", prompt, version, rollout, candidate }
end
return { "ok", prompt, version }
