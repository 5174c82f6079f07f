-- delete_environment: an environment (not production) with every prompt's placement in
-- it; its open reviews are closed as cancelled, each with its review.cancelled event, in
-- request order, and its rollouts end with rollout.aborted (_rollout.lua). History
-- records stay. Walks the org's prompts (the names hash): one
-- step, whatever their number.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  environment    ARGV[2]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok"}, {"no_environment"} or {"production"}.
local name = ARGV[1]
if not environment(name) then
  return { "no_environment" }
end
if name == PRODUCTION then
  return { "production" }
end
for _, pid in ipairs(redis.call("HVALS", NAMES)) do
  local rollout = rollout_in(pid, name)
  if rollout then
    end_rollout(pid, rollout, "rollout.aborted", ARGV[2])
  end
  local vid = redis.call("HGET", pkey(pid, ":env"), name)
  if vid then
    redis.call("HDEL", pkey(pid, ":env"), name)
    local kept = placements_of(pid, vid)
    kept[name] = nil
    set_placements(pid, vid, kept)
  end
end
local open = redis.call("HGETALL", ORG .. "open-reviews")
local cancelled = {}
for i = 1, #open, 2 do
  local review_key = ORG .. "review:" .. open[i + 1]
  local review = cjson.decode(redis.call("GET", review_key))
  if review.environment == name then
    review.status = "cancelled"
    review.decided_at = ARGV[2]
    redis.call("SET", review_key, cjson.encode(review))
    redis.call("HDEL", ORG .. "open-reviews", open[i])
    local seq = tonumber(redis.call("ZSCORE", ORG .. "reviews", review.review_id))
    cancelled[#cancelled + 1] = { seq, review }
  end
end
table.sort(cancelled, function(a, b)
  return a[1] < b[1]
end)
for _, found in ipairs(cancelled) do
  local review = found[2]
  emit("review.cancelled", review.prompt_id, review.prompt_name, review.version,
       review.version_id, "cancelled", nil, name, review.review_id)
end
redis.call("HDEL", ORG .. "envs", name)
redis.call("LREM", ORG .. "env-order", 0, name)
return { "ok" }
