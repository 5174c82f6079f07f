-- request_review: open a review of placing a version in an environment, expecting what
-- the environment holds now. At most one open review per prompt, environment and version
-- (the org's hash ps:{<org>}:open-reviews, "<prompt_id>:<environment>:<number>" -> id).
-- Reviews: ps:{<org>}:review:<id> (the review's JSON), listed by request sequence in
-- ps:{<org>}:reviews and P:reviews (zsets; the sequence is ps:{<org>}:review-seq).
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  prompt ref     ARGV[2]  version mode ("number", "id", "none")   ARGV[3]  value
-- ARGV[4]  environment
-- ARGV[5]  the review's JSON as the caller knows it (review_id, requested_by,
--          requested_at, notes, rollout_percent, allow_breaking, and breaking: the
--          promotion check's changes); this script adds the rest
-- ARGV[6]  the promotion check's fingerprint ("" on a first pass): see _common.lua,
--          contract_check      ARGV[7]  unused (the check's outcome is in ARGV[5])
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", review JSON}, {"check", ...}, {"review_exists", id} or an error marker
-- (_common.lua).
local pid, vid, status, number = resolve(ARGV[1], ARGV[2], ARGV[3])
if not pid then
  return vid -- here: the error reply
end
local env_name = ARGV[4]
local env = environment(env_name)
if not env then
  return { "no_environment" }
end
local open_key = pid .. ":" .. env_name .. ":" .. number
local open = redis.call("HGET", ORG .. "open-reviews", open_key)
if open then
  return { "review_exists", open }
end
local cur_vid, current = current_in(pid, env_name)
local refused = check_enterable(env_name, status, number, current)
if refused then
  return refused
end
local check = contract_check(pid, vid, cur_vid, ARGV[6], "0")
if check then
  return check
end
local review = cjson.decode(ARGV[5])
-- A review that starts a rollout needs a baseline, as a start does (start_rollout.lua).
if review.rollout_percent ~= cjson.null and review.rollout_percent ~= nil and not current then
  return { "no_baseline", tostring(number), env_name }
end
if not cur_vid then
  -- Nothing held, nothing breaks (whatever a first pass found when it held something).
  review.breaking = {}
end
review.prompt_id = pid
review.prompt_name = prompt_name(pid)
review.version = number
review.version_id = vid
review.environment = env_name
review.status = "open"
review.expected_version = current and tonumber(current) or cjson.null
review.required_approvals = math.max(tonumber(env.required_approvals), 1)
review.version_author = redis.call("HGET", vkey(pid, vid), "created_by")
local json = cjson.encode(review)
local rid = review.review_id
local seq = redis.call("INCR", ORG .. "review-seq")
redis.call("SET", ORG .. "review:" .. rid, json)
redis.call("ZADD", ORG .. "reviews", seq, rid)
redis.call("ZADD", pkey(pid, ":reviews"), seq, rid)
redis.call("HSET", ORG .. "open-reviews", open_key, rid)
emit("review.requested", pid, review.prompt_name, number, vid, "open", nil, env_name, rid)
return { "ok", json }
