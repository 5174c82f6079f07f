"""What the memory backend holds: each org's state, as plain dataclasses."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from promptsvc.templating.includes import Include
from storage.event_records import Event
from storage.identity_records import ApiKey, User
from storage.records import (
    PRODUCTION,
    Environment,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.usage_records import Counts, Guard, UsageKey
from storage.webhook_records import Delivery, DeliveryTask, Webhook

K = TypeVar("K")
V = TypeVar("V")


def put(mapping: dict[K, V], key: K, value: V | None) -> None:
    """Keep ``value`` under ``key``; None: drop what is there."""
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value


@dataclass(slots=True)
class PromptState:
    prompt: Prompt
    counter: int = 0  # last number handed out; never goes down
    versions: dict[int, PromptVersion] = field(default_factory=dict)  # ascending numbers
    history: list[PromotionRecord] = field(default_factory=list)  # oldest first
    placements: dict[str, int] = field(default_factory=dict)  # environment -> number
    rollouts: dict[str, Rollout] = field(default_factory=dict)  # environment -> its rollout

    @property
    def production(self) -> int | None:
        """The published version's number (production's placement), or None."""
        return self.placements.get(PRODUCTION)


@dataclass(slots=True)
class Queued:
    task: DeliveryTask
    claimed_at: float | None = None  # time.monotonic() of the last claim; None: not claimed


@dataclass(slots=True)
class Hooks:
    """An org's webhooks and delivery queue (see Storage.claim_deliveries)."""

    webhooks: dict[str, Webhook] = field(default_factory=dict)  # oldest first
    since: dict[str, tuple[int, int]] = field(default_factory=dict)  # log position at creation
    cursor: tuple[int, int] = (0, 0)  # the newest event fanned out to messages
    queue: dict[str, Queued] = field(default_factory=dict)  # by ticket, oldest first
    retries: list[tuple[datetime, DeliveryTask]] = field(default_factory=list)
    deliveries: dict[str, deque[Delivery]] = field(default_factory=dict)  # newest first


@dataclass(slots=True)
class UsageBook:
    """One org's counters: buckets by (span, start) then key, arms by (rollout, arm)
    with the last report that added to each (the retention rule drops arms by it)."""

    buckets: dict[tuple[str, datetime], dict[UsageKey, Counts]] = field(default_factory=dict)
    arms: dict[tuple[str, str], tuple[Counts, datetime]] = field(default_factory=dict)


@dataclass(slots=True)
class OrgState:
    by_name: dict[str, PromptState] = field(default_factory=dict)
    by_id: dict[str, PromptState] = field(default_factory=dict)
    keys: dict[str, ApiKey] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)  # by username, oldest first
    user_ids: dict[str, str] = field(default_factory=dict)  # user_id -> username
    # Login flow records (storage/memory/login.py): (kind, key) -> record, and
    # (kind, unique value) -> key.
    flows: dict[tuple[str, str], Any] = field(default_factory=dict)
    flow_index: dict[tuple[str, str], str] = field(default_factory=dict)
    events: deque[Event] = field(default_factory=deque)  # oldest first
    last_event: tuple[int, int] = (0, 0)  # position of the newest id handed out
    events_dropped: bool = False  # the log went over its bound at least once
    hooks: Hooks = field(default_factory=Hooks)
    # Environments other than a default production, oldest first (production once changed).
    environments: dict[str, Environment] = field(default_factory=dict)
    reviews: dict[str, Review] = field(default_factory=dict)  # oldest request first
    review_seq: dict[str, int] = field(default_factory=dict)  # review_id -> request sequence
    review_counter: int = 0  # last sequence handed out
    # The reverse index of includes: prompt name -> (prompt_id, number) of every
    # version whose own content includes it (PromptVersion.included_names).
    included_by: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    guards: dict[str, Guard] = field(default_factory=dict)  # by rollout or review id
    usage: UsageBook = field(default_factory=UsageBook)

    def index_includes(self, version: PromptVersion, keep: bool = True) -> None:
        """Enter ``version``'s includes in the reverse index (``keep`` False: take
        them out)."""
        member = (version.prompt_id, version.version)
        for name in version.included_names:
            if keep:
                self.included_by.setdefault(name, set()).add(member)
            elif name in self.included_by:
                self.included_by[name].discard(member)
                if not self.included_by[name]:
                    del self.included_by[name]

    def holds(self, include: Include) -> bool:
        """Whether the prompt ``include`` names exists (and its ``@N`` version)."""
        state = self.by_name.get(include.name)
        if state is None:
            return False
        return not isinstance(include.ref, int) or include.ref in state.versions

    def is_empty(self) -> bool:
        """No prompts, keys or users (login state alone does not count)."""
        return not (self.by_name or self.keys or self.users)
