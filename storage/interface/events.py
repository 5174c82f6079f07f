"""The change events of an org.

Every change of a prompt or a version also appends one :class:`~storage.event_records.Event`
to its org's event log, in the same atomic step (memory under its lock, Redis inside the
change's Lua script), so the log holds exactly the changes that happened, in the order
they happened. A refused change writes none. The log keeps at least the newest
``event_log_size`` events of each org (storage/interface/core.py). Event ids are opaque
to clients and increase within an org; :func:`storage.ids.event_position` orders them.
"""

from __future__ import annotations

import abc

from storage.event_records import Event, EventLogBounds
from storage.interface.core import StorageCore


class EventStore(StorageCore):
    """Reading an org's event log (its bound: ``event_log_size``)."""

    @abc.abstractmethod
    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        """Up to ``limit`` events of the org's log with ids above ``after``, oldest
        first. Events older than the log keeps are gone: compare ``after`` with
        :meth:`event_log_bounds` to know whether any were missed."""

    @abc.abstractmethod
    def event_log_bounds(self, org: str) -> EventLogBounds:
        """The oldest and the newest event id the org's log keeps, and whether it has
        dropped any, read together."""

    @abc.abstractmethod
    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        """As :meth:`events_after`, but when there are none yet, block until one is
        written or ``timeout`` seconds pass (then: an empty list)."""
