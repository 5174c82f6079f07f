"""A change the release engine decided (storage/release ``Change``) as the writes
lua/apply_change.lua makes: nothing is decided here, the change is only spelled in the
key layout of storage/redis/keys.py (keys after the org prefix ``ps:{<org>}:``)."""

from __future__ import annotations

import json
from datetime import datetime

from storage.records import PRODUCTION, STATUSES, Review
from storage.redis import codec
from storage.redis.state import Loaded
from storage.release import Change
from storage.times import rfc3339

Write = list[str]


def _index(names: tuple[str, ...], pid: str, vid: str, command: str) -> list[Write]:
    """Enter a version in (SADD) or take it out of (SREM) the reverse index of includes."""
    return [[command, f"included-by:{name}", f"{pid}:{vid}"] for name in names]


def writes(loaded: Loaded, change: Change, now: datetime) -> list[Write]:
    """The writes of ``change``, decided on ``loaded``, in the order the engine gives."""
    pid = loaded.state.prompt.prompt_id
    prompt = f"p:{pid}"
    if change.deleted_prompt:
        name = loaded.state.prompt.name
        return [["DROP_PROMPT", prompt, pid], ["HDEL", "names", name], ["ZREM", "prompts", name]]
    out: list[Write] = [["HINCRBY", prompt, "rev", "1"]]
    for number, changed in change.versions.items():
        vid = loaded.versions[number].version_id
        key = f"{prompt}:v:{vid}"
        if "content" in changed:
            out += _index(loaded.versions[number].included_names, pid, vid, "SREM")
            included = change.updated[number].included_names
            out += _index(included, pid, vid, "SADD")
            changed = {**changed, "includes": included}
        if "status" in changed:
            old = loaded.versions[number].status
            out.append(["ZREM", f"{prompt}:versions:{old}", vid])
            out.append(["ZADD", f"{prompt}:versions:{changed['status']}", str(number), vid])
        stored = codec.encoded(changed)
        kept = codec.pairs(stored)
        if kept:
            out.append(["HSET", key, *kept])
        gone = [name for name, value in stored.items() if value is None]
        if gone:
            out.append(["HDEL", key, *gone])
    if change.deleted_version is not None:
        deleted = loaded.versions[change.deleted_version]
        vid = deleted.version_id
        out += _index(deleted.included_names, pid, vid, "SREM")
        out.append(["DEL", f"{prompt}:v:{vid}"])
        out.append(["ZREM", f"{prompt}:versions", vid])
        out += [["ZREM", f"{prompt}:versions:{status}", vid] for status in STATUSES]
    for environment, held in change.placements.items():
        if environment != PRODUCTION:  # production is the published version's status
            held_id = None if held is None else loaded.versions[held].version_id
            out.append(_put(f"{prompt}:env", environment, held_id))
    for environment, rollout in change.rollouts.items():
        raw = None if rollout is None else codec.stored_json(rollout)
        out.append(_put(f"{prompt}:rollouts", environment, raw))
    for review in change.new_reviews:
        rid = review.review_id
        out.append(["INCR", "review-seq"])
        out.append(["SET", f"review:{rid}", codec.review_json(review)])
        out.append(["ZADD", "reviews", "$seq", rid])
        out.append(["ZADD", f"{prompt}:reviews", "$seq", rid])
        if review.status == "open":
            out.append(["HSET", "open-reviews", _open_key(review), rid])
    for review in change.reviews:
        out.append(["SET", f"review:{review.review_id}", codec.review_json(review)])
        before = loaded.state.reviews.get(review.review_id)
        if review.status != "open" and before is not None and before.status == "open":
            out.append(["HDEL", "open-reviews", _open_key(review)])
    for record in change.history:
        hid = record.history_id
        out.append(["HINCRBY", prompt, "hseq", "1"])
        out.append(["HSET", f"{prompt}:h:{hid}", *codec.record_fields(record)])
        out.append(["ZADD", f"{prompt}:history", "$seq", hid])
    if change.touched:
        out.append(["HSET", prompt, "updated_at", rfc3339(now)])
    for guarded_id, guard in change.guards.items():
        guard_json = None if guard is None else json.dumps(guard.to_json())
        out.append(_put("guards", guarded_id, guard_json))
    for review_id, rollout_id in change.moved_guards.items():
        out.append(["HMOVE", "guards", review_id, rollout_id])
    return out


def _put(key: str, field: str, value: str | None) -> Write:
    """Set a hash's field, or delete it when ``value`` is None."""
    return ["HDEL", key, field] if value is None else ["HSET", key, field, value]


def _open_key(review: Review) -> str:
    return f"{review.prompt_id}:{review.environment}:{review.version}"
