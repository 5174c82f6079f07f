"""The storage clock and the one spelling of a time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """``2025-01-02T03:04:05.123456Z``: the one spelling of a time, in JSON and in Redis.

    UTC with a ``Z`` and always six fraction digits, so the strings sort as the times
    do. A naive datetime is taken to be UTC already (the storage clock is UTC).
    """
    if moment.utcoffset():  # None (naive) and zero need no conversion
        moment = moment.astimezone(UTC)
    # isoformat costs less than strftime (docs/benchmarks.md, "Timestamps"); [:26]
    # drops any "+00:00".
    return moment.isoformat(timespec="microseconds")[:26] + "Z"
