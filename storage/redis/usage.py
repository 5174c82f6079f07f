"""Usage counters and rollout guards on Redis (storage/interface/usage.py): a report
is one script, record_usage.lua, that adds to the buckets' hashes and the arms' hashes
with HINCRBY; buckets expire (EXPIRE) when the retention rule drops them. Every key
carries the org's hash tag (storage/redis/keys.py), so the script runs on Redis
Cluster unchanged. Lifetimes count from the storage clock's now (not the server's: a
test clock)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, check, guard
from storage.usage_records import (
    KEPT,
    STEP,
    BucketSpan,
    Counts,
    Guard,
    UsageItem,
    UsageRow,
    bucket_start,
    bucket_starts,
    oldest_kept,
)


class RedisUsage(RedisCore[ClientT]):
    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        now = self.clock()
        hour, day = bucket_start(now, "hour"), bucket_start(now, "day")
        args: list[str] = [
            str(_epoch(hour)),
            str(_seconds(hour + KEPT["hour"] + STEP["hour"] - now)),
            str(_epoch(day)),
            str(_seconds(day + KEPT["day"] + STEP["day"] - now)),
            str(_seconds(KEPT["day"])),
        ]
        for item in items:
            args += [
                item.prompt_id,
                str(item.version),
                item.rollout_id or "",
                item.arm or "",
                item.environment or "",
                *("0" if n == 0 else repr(n) for n in item.counts().values()),
            ]
        prefixes = [keys.prompt_prefix(org), keys.usage_prefix(org)]
        return int(self._run("record_usage", prefixes, args))

    def read_usage(
        self, org: str, prompt_ref: str, since: datetime, until: datetime, span: BucketSpan
    ) -> list[UsageRow]:
        prompt_id = codec.prompt(
            check(self._prompt_script("get_prompt", org, [prompt_ref]), prompt_ref)[1]
        ).prompt_id
        # Buckets older than the retention rule's are gone: not worth a lookup each.
        starts = bucket_starts(max(since, oldest_kept(self.clock(), span)), until, span)
        with guard():
            pipe = self.client.pipeline(transaction=False)
            for start in starts:
                pipe.hgetall(keys.usage_bucket(org, prompt_id, span, _epoch(start)))
            buckets = pipe.execute()
        rows = [
            UsageRow.stored(start, int(version), environment, rollout_id, arm, counts)
            for start, bucket in zip(starts, buckets, strict=True)
            for where, counts in _counts_by(bucket).items()
            for version, rollout_id, arm, environment in [where.split("|", 3)]
        ]
        return sorted(rows, key=UsageRow.order)

    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, Counts]:
        return _counts_by(self._hgetall(keys.usage_arms(org, rollout_id)))

    def set_guard(self, org: str, guarded_id: str, guard_: Guard | None) -> None:
        with guard():
            if guard_ is None:
                self.client.hdel(keys.guards(org), guarded_id)
            else:
                self.client.hset(keys.guards(org), guarded_id, json.dumps(guard_.to_json()))

    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        with guard():
            raw = self.client.hget(keys.guards(org), guarded_id)
        return None if raw is None else Guard(**json.loads(raw))


def _counts_by(fields: dict[str, str]) -> dict[str, Counts]:
    """Counters kept as ``<counter>|<where>`` fields (record_usage.lua), by where."""
    found: dict[str, dict[str, str]] = {}
    for field, value in fields.items():
        counter, where = field.split("|", 1)
        found.setdefault(where, {})[counter] = value
    return {where: Counts.parse(counts) for where, counts in found.items()}


def _epoch(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp())


def _seconds(span: timedelta) -> int:
    return max(1, int(span.total_seconds()))
