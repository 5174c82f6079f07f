"""What every capability of storage shares: the clock, the health check and where
rate-limit counters go."""

from __future__ import annotations

import abc

from storage.records import RateLimitSettings
from storage.times import Clock, utcnow

# The least number of events the log keeps per org.
EVENT_LOG_SIZE = 10_000


class StorageCore(abc.ABC):
    """The base of every capability (storage/interface): a backend implements them all,
    combined as :class:`storage.interface.Storage`.

    Timestamps come from ``clock`` so tests can move time without sleeping.
    """

    # The least number of events kept per org; the oldest beyond it may be dropped.
    # Every change appends an event, so every capability that changes data needs it.
    event_log_size: int = EVENT_LOG_SIZE

    def __init__(self, clock: Clock = utcnow) -> None:
        self.clock = clock

    # -- health
    @abc.abstractmethod
    def ping(self) -> None:
        """Return if the backend answers, else raise StorageUnavailable."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    @abc.abstractmethod
    def rate_limit_settings(self) -> RateLimitSettings:
        """Where rate-limit counters go so that they are shared as widely as this
        backend's data is (one process for memory, every worker and host for Redis)."""
