-- approve_review: a person's approval (storage.lifecycle.check_approver's rules), and
-- when it is the last one needed, the review applied in the same step: the version
-- enters the environment (as promote does, _enter.lua) while the environment still
-- holds the review's expected_version; else the review is recorded "stale" and nothing
-- is promoted. Keys: see request_review.lua.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  review id      ARGV[2]  user id      ARGV[3]  username
-- ARGV[4]  comment        ARGV[5]  "1" if there is a comment, else "0"
-- ARGV[6]  now            ARGV[7]  new history id
-- ARGV[8]  new rollout id (used when the review has a rollout_percent: it starts a
--          rollout, _rollout.lua, instead of the promotion)
-- ARGV[9]  the promotion check's fingerprint ("" on a first pass)   ARGV[10] its outcome,
--          "1" breaking (the review allows it): see _common.lua, contract_check; the
--          "check" reply adds the review's JSON, and records nothing
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"check", ..., review JSON}, {"ok", review JSON} (approved, still open),
-- {"ok", review JSON, prompt values, version values, history record fields} (applied),
-- {"ok", review JSON, "rollout", rollout JSON} (applied: a rollout started), {"stale",
-- current or "", review JSON}, {"no_review"}, {"review_closed", status}, {"forbidden",
-- reason, version}, {"already_approved"}, {"no_environment"}, {"no_version", prompt
-- name, number}, the version's refusal, {"no_baseline", number, environment} or
-- {"rollout_busy", ...}.
local key = ORG .. "review:" .. ARGV[1]
local raw = redis.call("GET", key)
if not raw then
  return { "no_review" }
end
local review = cjson.decode(raw)
local user, now = ARGV[2], ARGV[6]
if review.status ~= "open" then
  return { "review_closed", review.status }
end
if user == review.requested_by then
  return { "forbidden", "requester", tostring(review.version) }
end
if user == review.version_author then
  return { "forbidden", "author", tostring(review.version) }
end
-- cjson decodes [] as an empty table and encodes it back as {}: count either.
local approvals = review.approvals
if type(approvals) ~= "table" then
  approvals = {}
end
local approved_by = {}
for _, approval in ipairs(approvals) do
  if approval.user_id == user then
    return { "already_approved" }
  end
  approved_by[#approved_by + 1] = approval.user_id
end
local comment = cjson.null
if ARGV[5] == "1" then
  comment = ARGV[4]
end
approvals[#approvals + 1] = { user_id = user, username = ARGV[3], at = now, comment = comment }
approved_by[#approved_by + 1] = user
review.approvals = approvals
local pid, env_name = review.prompt_id, review.environment
local open_key = pid .. ":" .. env_name .. ":" .. review.version

local function save(status)
  review.status = status
  if status ~= "open" then
    review.decided_at = now
    redis.call("HDEL", ORG .. "open-reviews", open_key)
  end
  local json = cjson.encode(review)
  redis.call("SET", key, json)
  return json
end

local function review_event(kind)
  emit(kind, pid, review.prompt_name, review.version, review.version_id, review.status, nil,
       env_name, review.review_id)
end

if #approvals < tonumber(review.required_approvals) then
  local json = save("open")
  review_event("review.approved")
  return { "ok", json }
end
if not environment(env_name) then
  return { "no_environment" }
end
local cur_vid, current = current_in(pid, env_name)
local expected = review.expected_version
if expected == cjson.null then
  expected = nil
end
if tonumber(current) ~= expected then
  local json = save("stale")
  review_event("review.approved")
  return { "stale", current or "", json }
end
local vid = resolve_version(pid, "id", review.version_id)
if not vid then
  return { "no_version", review.prompt_name, tostring(review.version) }
end
local status = redis.call("HGET", vkey(pid, vid), "status")
local percent = review.rollout_percent
if percent == cjson.null then
  percent = nil
end
local refused = check_enterable(env_name, status, review.version, current)
if not refused and percent and not cur_vid then
  refused = { "no_baseline", tostring(review.version), env_name }
end
refused = refused or check_no_rollout(pid, env_name, "review")
if refused then
  return refused
end
local check, breaking = contract_check(pid, vid, cur_vid, ARGV[9], ARGV[10])
if check then
  check[#check + 1] = raw
  return check
end
local json = save("applied")
review_event("review.approved")
if percent then
  local rollout = begin_rollout(
    pid, ARGV[8], vid, review.version, env_name, current, percent, user, now
  )
  review_event("review.applied")
  return { "ok", json, "rollout", rollout }
end
local record = enter(
  pid, vid, review.version, status, env_name, user, now, ARGV[7], cur_vid, current,
  review.notes ~= cjson.null and review.notes or nil, "archived", review.review_id,
  cjson.encode(approved_by), breaking
)
review_event("review.applied")
return { "ok", json, prompt_values(pid), version_values(pid, vid), record }
