"""An org's snapshot on Redis: export_prompt.lua's replies as records, and a restore
plan as the writes apply_change.lua applies: every key the other operations read or
change, as they would have left it (storage/redis/keys.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storage.archive_front import RestorePlan
from storage.archive_records import PromptSnapshot
from storage.records import PRODUCTION, Review
from storage.redis import codec, keys

# Arguments per write: apply_change.lua unpacks each write's arguments onto the Lua
# stack, which holds some thousands. Even, so a write's pairs stay whole.
_BATCH = 1000


def prompt_snapshot(reply: Sequence[Any]) -> tuple[PromptSnapshot, list[tuple[int, Review]]]:
    """export_prompt.lua's ``{"ok", prompt hash, versions, history, reviews}`` as a
    snapshot, and the prompt's reviews with their request sequence."""
    _, flat, version_hashes, history_hashes, reviews = reply
    fields = codec.fields(flat)
    versions = tuple(codec.version(fields, codec.fields(v)) for v in version_hashes)
    production = next((v.version for v in versions if v.status == "published"), "")
    latest = versions[-1].version if versions else ""
    snapshot = PromptSnapshot(
        prompt=codec.prompt([flat, latest, production]),
        next_version=int(fields.get("next", 0)),
        versions=versions,
        history=tuple(codec.record(codec.fields(h)) for h in history_hashes),
    )
    return snapshot, [
        (int(seq), codec.review(json_)) for seq, json_ in zip(*[iter(reviews)] * 2, strict=False)
    ]


def guards(org: str) -> list[str]:
    """The keys that exist as soon as an org has a prompt, a key or a user: all absent
    means the org is empty."""
    return [keys.names(org), keys.prompt_list(org), keys.api_keys(org), keys.users(org)]


class Writes:
    """apply_change.lua's writes: [command, key after the org's prefix, arguments...]."""

    def __init__(self, org: str) -> None:
        self.args: list[list[str]] = []

    def add(self, command: str, key: str, values: Sequence[str] = ()) -> None:
        """``values`` in writes of at most ``_BATCH`` (none without values); a DEL
        takes none."""
        key = keys.in_org(key)
        if command == "DEL":
            self.args.append([command, key])
        for start in range(0, len(values), _BATCH):
            self.args.append([command, key, *values[start : start + _BATCH]])


def writes(plan: RestorePlan) -> list[list[str]]:
    """Every write that restores ``plan``, as apply_change.lua takes them."""
    snapshot = plan.snapshot
    org, out = snapshot.org, Writes(snapshot.org)
    names: list[str] = []
    listed: list[str] = []
    for restored in plan.prompts:
        item = restored.item
        prompt = item.prompt
        pid = prompt.prompt_id
        names += [prompt.name, pid]
        listed += ["0", prompt.name]
        counters = codec.flat_pairs(
            {"next": item.next_version or None, "hseq": len(item.history) or None}
        )
        out.add("HSET", keys.prompt(org, pid), [*codec.prompt_fields(prompt), *counters])
        by_number: list[str] = []
        by_status: dict[str, list[str]] = {}
        for version in item.versions:
            vid = version.version_id
            out.add("HSET", keys.version(org, pid, vid), codec.version_fields(version))
            for name in version.included_names:
                out.add("SADD", keys.included_by(org, name), [f"{pid}:{vid}"])
            by_number += [str(version.version), vid]
            by_status.setdefault(version.status, []).extend([str(version.version), vid])
        out.add("ZADD", keys.versions(org, pid), by_number)
        for status, members in by_status.items():
            out.add("ZADD", keys.status_index(org, pid, status), members)
        sequence: list[str] = []
        for position, record in enumerate(item.history, start=1):
            hid = record.history_id
            out.add("HSET", keys.history_record(org, pid, hid), codec.record_fields(record))
            sequence += [str(position), hid]
        out.add("ZADD", keys.history(org, pid), sequence)
        placed = [value for env, v in restored.placements for value in (env, v.version_id)]
        out.add("HSET", keys.placements(org, pid), placed)
    out.add("HSET", keys.names(org), names)
    out.add("ZADD", keys.prompt_list(org), listed)
    for key in snapshot.api_keys:
        out.add("HSET", keys.api_key(org, key.client_id), codec.flat_fields(key))
    out.add("RPUSH", keys.api_keys(org), [key.client_id for key in snapshot.api_keys])
    for user in snapshot.users:
        out.add("HSET", keys.user(org, user.username), codec.flat_fields(user))
    by_id = [value for user in snapshot.users for value in (user.user_id, user.username)]
    out.add("HSET", keys.user_ids(org), by_id)
    out.add("RPUSH", keys.users(org), [user.username for user in snapshot.users])
    _releases(plan, out)
    return out.args


def _releases(plan: RestorePlan, out: Writes) -> None:
    """The environments (replacing any the org kept) and the reviews with their indexes
    and request sequence, as apply_change.lua keeps them."""
    org = plan.snapshot.org
    out.add("DEL", keys.environments(org))
    out.add("DEL", keys.environment_order(org))
    envs = [v for _, e in plan.environments for v in (e.name, codec.stored_json(e))]
    out.add("HSET", keys.environments(org), envs)
    created = [e.name for _, e in plan.environments if e.name != PRODUCTION]
    out.add("RPUSH", keys.environment_order(org), created)
    by_seq: list[str] = []
    by_prompt: dict[str, list[str]] = {}
    for seq, review in plan.reviews:
        rid = review.review_id
        out.add("SET", keys.review(org, rid), [codec.review_json(review)])
        by_seq += [str(seq), rid]
        by_prompt.setdefault(review.prompt_id, []).extend([str(seq), rid])
    out.add("ZADD", keys.reviews(org), by_seq)
    for pid, members in by_prompt.items():
        out.add("ZADD", keys.prompt_reviews(org, pid), members)
    open_reviews = [
        value
        for (pid, env, version), rid in plan.open_reviews.items()
        for value in (f"{pid}:{env}:{version}", rid)
    ]
    out.add("HSET", keys.open_reviews(org), open_reviews)
    if plan.reviews:
        out.add("SET", keys.review_sequence(org), [str(len(plan.reviews))])
