"""The memory backend's shared state and the lookups every concern uses."""

from __future__ import annotations

import itertools
import threading
from dataclasses import replace

from storage.errors import PromptNotFound, VersionNotFound
from storage.event_records import Event
from storage.identity_records import SigningKey
from storage.ids import event_id, event_position, version_number
from storage.interface import StorageCore
from storage.memory.state import OrgState, PromptState
from storage.records import Prompt, RateLimitSettings
from storage.times import Clock, utcnow


class MemoryCore(StorageCore):
    """The state every concern of the memory backend shares, under one lock: each
    operation is short, and one lock makes every multi-record change (promotion above
    all) atomic for readers too."""

    def __init__(self, clock: Clock = utcnow) -> None:
        super().__init__(clock)
        self._lock = threading.Lock()
        # Waiters for new events (wait_for_events) sleep on the same lock.
        self._appended = threading.Condition(self._lock)
        self._orgs: dict[str, OrgState] = {}
        self._signing: list[SigningKey] = []
        self._session_secret: str | None = None
        self._flow_writes = 0
        self._tickets = itertools.count(1)

    def ping(self) -> None:
        return None

    def rate_limit_settings(self) -> RateLimitSettings:
        # Counters in this process, like the data: limits' own memory storage.
        return RateLimitSettings("memory://")

    # -- lookups (call with the lock held)

    def _state(self, org: str, prompt_ref: str) -> PromptState:
        org_state = self._orgs.get(org)
        if org_state is not None:
            state = org_state.by_name.get(prompt_ref) or org_state.by_id.get(prompt_ref)
            if state is not None:
                return state
        raise PromptNotFound(prompt_ref)

    @staticmethod
    def _number(state: PromptState, prompt_ref: str, version_ref: str) -> int:
        number = version_number(version_ref)
        if number is None:  # a v_ id
            found = (n for n, v in state.versions.items() if v.version_id == version_ref)
            number = next(found, None)
        if number in state.versions:
            return number
        raise VersionNotFound(prompt_ref, version_ref)

    @staticmethod
    def _prompt(state: PromptState) -> Prompt:
        latest = next(reversed(state.versions)) if state.versions else None
        return replace(state.prompt, latest_version=latest, production_version=state.production)

    def _append(self, org_state: OrgState, event: Event) -> None:
        """Append ``event`` (its ``id`` given here) and wake the waiters."""
        # Ids as Redis makes them: milliseconds, and a sequence within one millisecond;
        # never lower than the last one, whatever the clock does.
        ms = int(event.at.timestamp() * 1000)
        last_ms, last_seq = org_state.last_event
        position = (ms, 0) if ms > last_ms else (last_ms, last_seq + 1)
        org_state.last_event = position
        org_state.events.append(replace(event, id=event_id(*position)))
        while len(org_state.events) > self.event_log_size:
            org_state.events.popleft()
            org_state.events_dropped = True
        self._appended.notify_all()

    def _events_after(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        org_state = self._orgs.get(org)
        if org_state is None:
            return []
        found: list[Event] = []
        # Newest first from the end: a follower asks for the few newest events.
        for event in reversed(org_state.events):
            if event_position(event.id) <= after:
                break
            found.append(event)
        found.reverse()
        return found[:limit]
