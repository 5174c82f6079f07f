"""Usage (docs/usage.md): what SDKs report, how it is counted and how long it is kept.

Usage is kept as counters per bucket, Prometheus-style, never a row per render: each
report adds its counts to the bucket of the hour and to the bucket of the day it was
received in (UTC), under its key (prompt, version, environment, rollout, arm). The
retention rule: hourly buckets are kept for :data:`HOURLY_DAYS` days, daily ones for
:data:`DAILY_DAYS` days; older buckets are dropped (the backends prune as they write).

A rollout's arms are counted apart as well, one counter per (rollout, arm) for as long
as the daily buckets are kept, so its guard reads them in one step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from storage.times import rfc3339

BucketSpan = Literal["hour", "day"]
SPANS: tuple[BucketSpan, ...] = ("hour", "day")
ARMS: tuple[str, ...] = ("baseline", "candidate")
# The retention rule.
HOURLY_DAYS = 30
DAILY_DAYS = 400
KEPT: dict[str, timedelta] = {
    "hour": timedelta(days=HOURLY_DAYS),
    "day": timedelta(days=DAILY_DAYS),
}
STEP: dict[str, timedelta] = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
# The counter fields of an item, a bucket and an arm, in this order.
COUNTERS = ("renders", "ok", "errors", "score_sum", "score_count")


def bucket_start(moment: datetime, span: str) -> datetime:
    """The start of the UTC hour or day ``moment`` falls in."""
    moment = moment.astimezone(UTC)
    hour = moment.replace(minute=0, second=0, microsecond=0)
    return hour if span == "hour" else hour.replace(hour=0)


def bucket_starts(since: datetime, until: datetime, span: str) -> list[datetime]:
    """Every bucket that overlaps ``[since, until)``, oldest first."""
    found, start = [], bucket_start(since, span)
    while start < until:
        found.append(start)
        start += STEP[span]
    return found


def oldest_kept(now: datetime, span: str) -> datetime:
    """The start of the oldest bucket the retention rule keeps at ``now``."""
    return bucket_start(now - KEPT[span], span)


@dataclass(frozen=True, slots=True)
class Counts:
    """What was counted under one key: in a report's item, a bucket, or a rollout's arm
    since it started (what its guard reads)."""

    renders: int = 0
    ok: int = 0
    errors: int = 0
    score_sum: float = 0.0
    score_count: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.renders + other.renders,
            self.ok + other.ok,
            self.errors + other.errors,
            self.score_sum + other.score_sum,
            self.score_count + other.score_count,
        )

    def values(self) -> tuple[int, int, int, float, int]:
        """The counters in :data:`COUNTERS` order."""
        return (self.renders, self.ok, self.errors, self.score_sum, self.score_count)

    @classmethod
    def parse(cls, fields: Mapping[str, str]) -> Counts:
        """From counters stored as text by name (a missing one is 0)."""
        return cls(
            int(fields.get("renders", 0)),
            int(fields.get("ok", 0)),
            int(fields.get("errors", 0)),
            float(fields.get("score_sum", 0)),
            int(fields.get("score_count", 0)),
        )

    @property
    def outcomes(self) -> int:
        return self.ok + self.errors

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.outcomes if self.outcomes else None

    @property
    def score_avg(self) -> float | None:
        return self.score_sum / self.score_count if self.score_count else None

    def to_json(self) -> dict[str, Any]:
        return {
            "renders": self.renders,
            "ok": self.ok,
            "errors": self.errors,
            "score_avg": self.score_avg,
        }


# (prompt_id, version, environment, rollout_id, arm): what counts are kept under.
UsageKey = tuple[str, int, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class UsageItem:
    """One key's counts in one report (validated: counts 0-10^9, ``score_sum`` at most
    ``score_count``). ``version`` is the version's number."""

    prompt_id: str
    version: int
    environment: str | None = None
    rollout_id: str | None = None
    arm: str | None = None  # baseline | candidate | None
    renders: int = 0
    ok: int = 0
    errors: int = 0
    score_sum: float = 0.0
    score_count: int = 0

    @property
    def key(self) -> UsageKey:
        return (self.prompt_id, self.version, self.environment, self.rollout_id, self.arm)

    def counts(self) -> Counts:
        return Counts(self.renders, self.ok, self.errors, self.score_sum, self.score_count)


@dataclass(slots=True)
class Tally:
    """A report summed by key, and by rollout arm, with the items skipped."""

    keys: dict[UsageKey, Counts] = field(default_factory=dict)
    arms: dict[tuple[str, str], Counts] = field(default_factory=dict)  # (rollout_id, arm)
    skipped: int = 0


def tally(items: Iterable[UsageItem], known: Callable[[str, int], bool]) -> Tally:
    """Sum ``items`` by key and by arm; an item whose (prompt_id, version) is not
    ``known`` to the org is skipped."""
    found = Tally()
    for item in items:
        if not known(item.prompt_id, item.version):
            found.skipped += 1
            continue
        counts = item.counts()
        found.keys[item.key] = found.keys.get(item.key, Counts()) + counts
        if item.rollout_id is not None and item.arm is not None:
            arm = (item.rollout_id, item.arm)
            found.arms[arm] = found.arms.get(arm, Counts()) + counts
    return found


class Pruning:
    """When a writer drops what the retention rule no longer keeps: at most once an
    hour per process (the rule is in days; pruning costs a scan)."""

    def __init__(self) -> None:
        self._hour: datetime | None = None

    def due(self, now: datetime) -> dict[str, datetime] | None:
        """The oldest bucket start each span keeps, when pruning is due; else None."""
        hour = bucket_start(now, "hour")
        if hour == self._hour:
            return None
        self._hour = hour
        return {span: oldest_kept(now, span) for span in SPANS}


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One bucket's sums for one key."""

    bucket_start: datetime
    version: int
    environment: str | None
    rollout_id: str | None
    arm: str | None
    counts: Counts

    @classmethod
    def stored(
        cls,
        start: datetime,
        version: int,
        environment: str,
        rollout_id: str,
        arm: str,
        counts: Counts,
    ) -> UsageRow:
        """A row as SQL and Redis keep it, "" for null (a key's part cannot be null)."""
        return cls(start, version, environment or None, rollout_id or None, arm or None, counts)

    def order(self) -> tuple[object, ...]:
        """Oldest bucket first, then version, environment, rollout, arm (nulls first)."""
        return (
            self.bucket_start,
            self.version,
            self.environment or "",
            self.rollout_id or "",
            self.arm or "",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bucket_start": rfc3339(self.bucket_start),
            "version": self.version,
            "environment": self.environment,
            "rollout_id": self.rollout_id,
            "arm": self.arm,
            **self.counts.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Guard:
    """A rollout's guard: abort when, with ``min_samples`` outcomes in each arm, the
    candidate's ``metric`` is worse than the baseline's by more than ``threshold``."""

    metric: str  # error_rate | score
    threshold: float
    min_samples: int

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "threshold": self.threshold, "min_samples": self.min_samples}
