"""EventStore's reads written once for every backend, over two primitives: the events
after a log position, and a wait until one may have been appended."""

from __future__ import annotations

import abc
import time

from storage.event_records import Event
from storage.ids import event_position


class EventFront(abc.ABC):
    @abc.abstractmethod
    def _read_events(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        """Up to ``limit`` events after the position ``after``, oldest first."""

    @abc.abstractmethod
    def _await_events(self, org: str, after: tuple[int, int], seconds: float) -> None:
        """Return once an event after ``after`` may have been appended, or after at most
        ``seconds``; early returns are fine (the caller reads again)."""

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        return self._read_events(org, event_position(after), limit)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        position = event_position(after)
        deadline = time.monotonic() + timeout
        while True:
            found = self._read_events(org, position, limit)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0:
                return found
            self._await_events(org, position, remaining)
