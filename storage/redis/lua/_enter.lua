-- _enter.lua: how a version enters an environment, put after _common.lua and
-- _events.lua in front of the scripts that promote (storage/redis/scripts.py); not an
-- operation itself. The caller has checked the rules. It reads no KEYS[...] of its own:
-- the keys it touches come from _common.lua's prefixes.

-- Version vid (number, status) becomes env's, replacing what it held (cur_vid,
-- cur_number; in production archived, or a draft when demote is "draft"), with its
-- history record and version.promoted event. review_id and approved (a JSON list of user
-- ids) for a review's promotion, else nil. breaking: the promotion check found
-- breaking changes (the record says so). rollout_id for a rollout's completion, else
-- nil. Returns the record's fields.
local function enter(pid, vid, number, status, env, by, now, hid, cur_vid, cur_number, notes,
                     demote, review_id, approved, breaking, rollout_id)
  if env == PRODUCTION then
    if cur_vid then
      set_status(pid, cur_vid, cur_number, "published", demote or "archived", now)
    end
    publish(pid, vid, number, status, by, now)
    status = "published"
  else
    if cur_vid then
      local kept = placements_of(pid, cur_vid)
      kept[env] = nil
      set_placements(pid, cur_vid, kept)
    end
    local mine = placements_of(pid, vid)
    mine[env] = true
    set_placements(pid, vid, mine)
    redis.call("HSET", pkey(pid, ":env"), env, vid)
  end
  local extra = { "environment", env }
  if review_id then
    extra = { "environment", env, "review_id", review_id, "approved_by", approved }
  end
  if breaking then
    extra[#extra + 1] = "breaking"
    extra[#extra + 1] = "1"
  end
  if rollout_id then
    extra[#extra + 1] = "rollout_id"
    extra[#extra + 1] = rollout_id
  end
  local record = record_promotion(pid, hid, number, by, now, cur_number, notes, extra)
  emit(
    "version.promoted", pid, prompt_name(pid), number, vid, status, cur_number, env, review_id,
    rollout_id
  )
  return record
end
