"""FakeClock: a clock the tests move by hand, for every clock seam in the code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock that moves only when told to.

    Calling it gives seconds since the epoch: what identity (``time.time``) and the SDK
    (``time.monotonic``, where only differences count) take. :meth:`utc` gives the same
    instant as an aware datetime: what storage (``storage.times.utcnow``) takes.

    It starts at the current whole second, so tokens that a library stamps with the real
    time agree with it; ``start`` sets another instant.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> float:
        return self.now.timestamp()

    def utc(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 1.0) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now
