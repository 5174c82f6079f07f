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

from dataclasses import dataclass
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

    def counts(self) -> tuple[int, int, int, float, int]:
        return (self.renders, self.ok, self.errors, self.score_sum, self.score_count)


def score_avg(score_sum: float, score_count: int) -> float | None:
    return score_sum / score_count if score_count else None


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One bucket's sums for one key."""

    bucket_start: datetime
    version: int
    environment: str | None
    rollout_id: str | None
    arm: str | None
    renders: int
    ok: int
    errors: int
    score_sum: float
    score_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "bucket_start": rfc3339(self.bucket_start),
            "version": self.version,
            "environment": self.environment,
            "rollout_id": self.rollout_id,
            "arm": self.arm,
            "renders": self.renders,
            "ok": self.ok,
            "errors": self.errors,
            "score_avg": score_avg(self.score_sum, self.score_count),
        }


@dataclass(frozen=True, slots=True)
class ArmFigures:
    """One arm of a rollout: its counts since the rollout started."""

    renders: int = 0
    ok: int = 0
    errors: int = 0
    score_sum: float = 0.0
    score_count: int = 0

    @property
    def outcomes(self) -> int:
        return self.ok + self.errors

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.outcomes if self.outcomes else None

    @property
    def score_avg(self) -> float | None:
        return score_avg(self.score_sum, self.score_count)

    def to_json(self) -> dict[str, Any]:
        return {
            "renders": self.renders,
            "ok": self.ok,
            "errors": self.errors,
            "score_avg": self.score_avg,
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
