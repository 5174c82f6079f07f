"""Usage counters and rollout guards in memory (storage/interface/usage.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from storage.memory.core import MemoryCore
from storage.memory.state import OrgState, UsageBook, put
from storage.times import Clock, utcnow
from storage.usage_records import (
    SPANS,
    BucketSpan,
    Counts,
    Guard,
    Pruning,
    UsageItem,
    UsageRow,
    bucket_start,
    tally,
)


class MemoryUsage(MemoryCore):
    def __init__(self, clock: Clock = utcnow) -> None:
        super().__init__(clock)
        self._pruning = Pruning()

    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.setdefault(org, OrgState())
            prompts, book = org_state.by_id, org_state.usage

            def known(prompt_id: str, version: int) -> bool:
                return prompt_id in prompts and version in prompts[prompt_id].versions

            found = tally(items, known)
            for span in SPANS:
                bucket = book.buckets.setdefault((span, bucket_start(now, span)), {})
                for key, counts in found.keys.items():
                    bucket[key] = bucket.get(key, Counts()) + counts
            for arm, counts in found.arms.items():
                book.arms[arm] = (book.arms.get(arm, (Counts(), now))[0] + counts, now)
            if (oldest := self._pruning.due(now)) is not None:
                for state in self._orgs.values():
                    _prune(state.usage, oldest)
        return found.skipped

    def read_usage(
        self, org: str, prompt_ref: str, since: datetime, until: datetime, span: BucketSpan
    ) -> list[UsageRow]:
        first = bucket_start(since, span)
        with self._lock:
            prompt_id = self._state(org, prompt_ref).prompt.prompt_id
            book = self._orgs[org].usage
            found = [
                UsageRow(start, version, environment, rollout_id, arm, counts)
                for (kind, start), bucket in book.buckets.items()
                if kind == span and first <= start < until
                for (pid, version, environment, rollout_id, arm), counts in bucket.items()
                if pid == prompt_id
            ]
        return sorted(found, key=UsageRow.order)

    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, Counts]:
        with self._lock:
            book = (self._orgs.get(org) or OrgState()).usage
            return {arm: c for (rid, arm), (c, _) in book.arms.items() if rid == rollout_id}

    def set_guard(self, org: str, guarded_id: str, guard: Guard | None) -> None:
        with self._lock:
            put(self._orgs.setdefault(org, OrgState()).guards, guarded_id, guard)

    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return None if org_state is None else org_state.guards.get(guarded_id)


def _prune(book: UsageBook, oldest: dict[str, datetime]) -> None:
    """Drop what the retention rule no longer keeps."""
    for span, start in [key for key in book.buckets if key[1] < oldest[key[0]]]:
        del book.buckets[(span, start)]
    for arm in [arm for arm, (_, seen) in book.arms.items() if seen < oldest["day"]]:
        del book.arms[arm]
