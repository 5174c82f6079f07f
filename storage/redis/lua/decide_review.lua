-- decide_review: reject or cancel an open review (storage.lifecycle.check_rejecter and
-- check_canceller). Keys: see request_review.lua.
-- KEYS[1], KEYS[2]  see _common.lua
-- ARGV[1]  review id      ARGV[2]  "reject" or "cancel"      ARGV[3]  user id
-- ARGV[4]  comment        ARGV[5]  "1" if there is a comment, else "0"
-- ARGV[6]  "1" when the user is a Service Admin (may cancel anyone's review)
-- ARGV[7]  now
-- + the org's event stream and the event context, as _events.lua says
-- Returns {"ok", review JSON}, {"no_review"}, {"review_closed", status} or
-- {"forbidden", reason, version}.
local key = ORG .. "review:" .. ARGV[1]
local raw = redis.call("GET", key)
if not raw then
  return { "no_review" }
end
local review = cjson.decode(raw)
local user = ARGV[3]
if review.status ~= "open" then
  return { "review_closed", review.status }
end
if ARGV[2] == "reject" then
  if user == review.requested_by then
    return { "forbidden", "requester", tostring(review.version) }
  end
  if user == review.version_author then
    return { "forbidden", "author", tostring(review.version) }
  end
  review.status = "rejected"
  review.rejected_by = user
  if ARGV[5] == "1" then
    review.rejection_comment = ARGV[4]
  end
elseif ARGV[6] ~= "1" and user ~= review.requested_by then
  return { "forbidden", "cancel", tostring(review.version) }
else
  review.status = "cancelled"
end
review.decided_at = ARGV[7]
local pid = review.prompt_id
redis.call("HDEL", ORG .. "open-reviews", pid .. ":" .. review.environment .. ":" .. review.version)
local json = cjson.encode(review)
redis.call("SET", key, json)
emit("review." .. review.status, pid, review.prompt_name, review.version, review.version_id,
     review.status, nil, review.environment, review.review_id)
return { "ok", json }
