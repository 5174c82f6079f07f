-- load_state: one prompt's release state as the release engine reads it
-- (storage/redis/state.py builds the State), in one step, with the revisions that
-- apply_change.lua checks before it writes what was decided on it.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref, or "" when ARGV[4] names a review (its prompt is loaded)
-- ARGV[2]  the request's version: mode ("number", "id", "none"; "" for none asked)
-- ARGV[3]  its value
-- ARGV[4]  review id ("" for none): added to the reviews whatever its status
-- ARGV[5]  "1" to add the prompt's promotion records (a rollback reads them)
-- ARGV[6]  user id whose stored record to add ("" for none)
-- Returns {"ok", prompt summary (_common.lua's prompt_summary), number asked or "",
-- environments (HGETALL), the environments' revision or false, placements
-- (environment -> version id, production's not included), rollout JSON list, review JSON
-- list (open ones, request order, then ARGV[4]'s), version HGETALL list, history
-- HGETALL list, user HGETALL, how many versions of other prompts include it (SCARD of
-- its included-by set; create_version.lua moves its revision when that grows)}, or
-- {"no_prompt"}, {"no_version"}, {"no_review"}.
-- A prompt without a revision yet (stored before revisions, or never changed since its
-- creation) gets one, and its versions the frozen flag (docs/api.md section 5, rule
-- 2a) as data stored before the flag shows it: every version a promotion record names,
-- the published and placed ones, rollouts' candidates and baselines, and the versions
-- of open and applied reviews.
local review_raw = nil
local ref = ARGV[1]
if ARGV[4] ~= "" then
  review_raw = redis.call("GET", ORG .. "review:" .. ARGV[4])
  if not review_raw then
    return { "no_review" }
  end
  ref = cjson.decode(review_raw).prompt_id
end
local pid = resolve_prompt(ref)
if not pid then
  return { "no_prompt" }
end
local placed = redis.call("HGETALL", pkey(pid, ":env"))
local rollouts = redis.call("HVALS", pkey(pid, ":rollouts"))
-- Calls f with each version held: the published, the placed ones, and each rollout's
-- candidate and baseline (nil for none).
local function each_held(f)
  f(production(pid))
  for i = 2, #placed, 2 do
    f(placed[i])
  end
  for _, raw in ipairs(rollouts) do
    local rollout = cjson.decode(raw)
    f(rollout.candidate_id)
    f(resolve_version(pid, "number", tostring(rollout.baseline_version)))
  end
end
if not redis.call("HGET", pkey(pid), "rev") then
  local function freeze(vid)
    if vid and redis.call("EXISTS", vkey(pid, vid)) == 1 then
      redis.call("HSET", vkey(pid, vid), "frozen", "1")
    end
  end
  for _, hid in ipairs(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1)) do
    local number = redis.call("HGET", pkey(pid, ":h:" .. hid), "version_number")
    freeze(resolve_version(pid, "number", number))
  end
  each_held(freeze)
  for _, rid in ipairs(redis.call("ZRANGE", pkey(pid, ":reviews"), 0, -1)) do
    local raw = redis.call("GET", ORG .. "review:" .. rid)
    if raw then
      local review = cjson.decode(raw)
      if review.status == "open" or review.status == "applied" then
        freeze(review.version_id)
      end
    end
  end
  redis.call("HSET", pkey(pid), "rev", "0")
end
local vids, seen = {}, {}
local function want(vid)
  if vid and not seen[vid] then
    seen[vid] = true
    vids[#vids + 1] = vid
  end
end
local asked = ""
if ARGV[2] ~= "" then
  local vid = resolve_version(pid, ARGV[2], ARGV[3])
  if not vid then
    return { "no_version" }
  end
  want(vid)
  asked = redis.call("HGET", vkey(pid, vid), "version")
end
each_held(want)
-- The prompt's open reviews, in request order (the org's open index, filtered).
local open = redis.call("HGETALL", ORG .. "open-reviews")
local ordered = {}
for i = 1, #open, 2 do
  local rid = open[i + 1]
  if string.sub(open[i], 1, #pid + 1) == pid .. ":" and rid ~= ARGV[4] then
    ordered[#ordered + 1] = { tonumber(redis.call("ZSCORE", ORG .. "reviews", rid)) or 0, rid }
  end
end
table.sort(ordered, function(a, b)
  return a[1] < b[1]
end)
local reviews = {}
for i, found in ipairs(ordered) do
  reviews[i] = redis.call("GET", ORG .. "review:" .. found[2])
end
if review_raw then
  reviews[#reviews + 1] = review_raw
  want(cjson.decode(review_raw).version_id)
end
local versions = {}
for _, vid in ipairs(vids) do
  local flat = redis.call("HGETALL", vkey(pid, vid))
  if #flat > 0 then
    versions[#versions + 1] = flat
  end
end
local history = {}
if ARGV[5] == "1" then
  for _, hid in ipairs(redis.call("ZRANGE", pkey(pid, ":history"), 0, -1)) do
    history[#history + 1] = redis.call("HGETALL", pkey(pid, ":h:" .. hid))
  end
end
local user = {}
if ARGV[6] ~= "" then
  local username = redis.call("HGET", ORG .. "user-ids", ARGV[6])
  if username then
    user = redis.call("HGETALL", ORG .. "user:" .. username)
  end
end
local own_name = redis.call("HGET", pkey(pid), "name")
local includers = redis.call("SCARD", ORG .. "included-by:" .. own_name)
return {
  "ok", prompt_summary(pid), asked or "", redis.call("HGETALL", ORG .. "envs"),
  redis.call("GET", ORG .. "env-rev"), placed, rollouts, reviews, versions, history, user,
  includers,
}
