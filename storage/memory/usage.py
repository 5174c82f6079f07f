"""Usage counters and rollout guards in memory (storage/interface/usage.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from storage.memory.core import MemoryCore
from storage.memory.state import OrgState
from storage.times import Clock, utcnow
from storage.usage_records import (
    SPANS,
    ArmFigures,
    BucketSpan,
    Guard,
    UsageItem,
    UsageRow,
    bucket_start,
    oldest_kept,
)

# (prompt_id, span, bucket_start, version, environment, rollout_id, arm)
BucketKey = tuple[str, str, datetime, int, str | None, str | None, str | None]


@dataclass(slots=True)
class Counts:
    renders: int = 0
    ok: int = 0
    errors: int = 0
    score_sum: float = 0.0
    score_count: int = 0
    at: datetime | None = None  # the last report added (arms: pruned by it)

    def add(self, item: UsageItem, now: datetime) -> None:
        self.renders += item.renders
        self.ok += item.ok
        self.errors += item.errors
        self.score_sum += item.score_sum
        self.score_count += item.score_count
        self.at = now


@dataclass(slots=True)
class UsageBook:
    """One org's counters."""

    buckets: dict[BucketKey, Counts] = field(default_factory=dict)
    arms: dict[tuple[str, str], Counts] = field(default_factory=dict)  # (rollout_id, arm)
    pruned: datetime | None = None  # the hour of the last pruning


class MemoryUsage(MemoryCore):
    def __init__(self, clock: Clock = utcnow) -> None:
        super().__init__(clock)
        self._usage: dict[str, UsageBook] = {}

    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        now = self.clock()
        starts = {span: bucket_start(now, span) for span in SPANS}
        skipped = 0
        with self._lock:
            org_state = self._orgs.get(org)
            book = self._usage.setdefault(org, UsageBook())
            for item in items:
                state = None if org_state is None else org_state.by_id.get(item.prompt_id)
                if state is None or item.version not in state.versions:
                    skipped += 1
                    continue
                where = (item.version, item.environment, item.rollout_id, item.arm)
                for span, start in starts.items():
                    key = (item.prompt_id, span, start, *where)
                    book.buckets.setdefault(key, Counts()).add(item, now)
                if item.rollout_id is not None and item.arm is not None:
                    book.arms.setdefault((item.rollout_id, item.arm), Counts()).add(item, now)
            if book.pruned != starts["hour"]:
                _prune(book, now)
                book.pruned = starts["hour"]
        return skipped

    def read_usage(
        self, org: str, prompt_ref: str, since: datetime, until: datetime, span: BucketSpan
    ) -> list[UsageRow]:
        first = bucket_start(since, span)
        with self._lock:
            prompt_id = self._state(org, prompt_ref).prompt.prompt_id
            book = self._usage.get(org, UsageBook())
            found = [
                UsageRow(
                    start,
                    version,
                    environment,
                    rollout_id,
                    arm,
                    c.renders,
                    c.ok,
                    c.errors,
                    c.score_sum,
                    c.score_count,
                )
                for (pid, kind, start, version, environment, rollout_id, arm), c in list(
                    book.buckets.items()
                )
                if pid == prompt_id and kind == span and first <= start < until
            ]
        return sorted(found, key=row_order)

    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, ArmFigures]:
        with self._lock:
            book = self._usage.get(org, UsageBook())
            return {
                arm: ArmFigures(c.renders, c.ok, c.errors, c.score_sum, c.score_count)
                for (rid, arm), c in book.arms.items()
                if rid == rollout_id
            }

    def set_guard(self, org: str, guarded_id: str, guard: Guard | None) -> None:
        with self._lock:
            self._orgs.setdefault(org, OrgState()).keep_guard(guarded_id, guard)

    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return None if org_state is None else org_state.guards.get(guarded_id)


def row_order(row: UsageRow) -> tuple[object, ...]:
    """Oldest bucket first, then version, environment, rollout and arm (nulls first)."""
    return (
        row.bucket_start,
        row.version,
        row.environment or "",
        row.rollout_id or "",
        row.arm or "",
    )


def _prune(book: UsageBook, now: datetime) -> None:
    """Drop what the retention rule no longer keeps."""
    oldest: dict[str, datetime] = {span: oldest_kept(now, span) for span in SPANS}
    for bucket in [key for key in book.buckets if key[2] < oldest[key[1]]]:
        del book.buckets[bucket]
    for arm in [key for key, c in book.arms.items() if c.at is not None and c.at < oldest["day"]]:
        del book.arms[arm]
