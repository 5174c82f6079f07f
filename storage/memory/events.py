"""The change event log in memory: a bounded deque per org; waiters sleep on the lock."""

from __future__ import annotations

from storage.event_front import EventFront
from storage.event_records import Event, EventLogBounds
from storage.interface import EventStore
from storage.memory.core import MemoryCore


class MemoryEvents(MemoryCore, EventFront, EventStore):
    def _read_events(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        with self._lock:
            return self._events_after(org, after, limit)

    def _await_events(self, org: str, after: tuple[int, int], seconds: float) -> None:
        with self._appended:
            self._appended.wait_for(lambda: bool(self._events_after(org, after, 1)), seconds)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None or not org_state.events:
                return EventLogBounds(None, None)
            events = org_state.events
            return EventLogBounds(events[0].id, events[-1].id, org_state.events_dropped)
