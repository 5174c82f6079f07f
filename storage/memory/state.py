"""What the memory backend holds: each org's state, as plain dataclasses."""

from __future__ import annotations

from collections import deque
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from promptsvc.templating.includes import Include
from storage.identity_records import ApiKey, User
from storage.login_records import AuthorizationCode, DeviceAuthorization, RealmSession, RefreshToken
from storage.records import (
    Environment,
    Event,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.usage_records import Guard
from storage.webhook_records import Delivery, DeliveryTask, Webhook


@dataclass(slots=True)
class PromptState:
    prompt: Prompt
    counter: int = 0  # last number handed out; never goes down
    versions: dict[int, PromptVersion] = field(default_factory=dict)  # ascending numbers
    numbers: dict[str, int] = field(default_factory=dict)  # version_id -> number
    production: int | None = None
    history: list[PromotionRecord] = field(default_factory=list)  # oldest first
    placements: dict[str, int] = field(default_factory=dict)  # environment -> number
    rollouts: dict[str, Rollout] = field(default_factory=dict)  # environment -> its rollout


@dataclass(slots=True)
class Family:
    session_id: str | None
    expires_at: datetime  # that of its newest token


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
class OrgState:
    by_name: dict[str, PromptState] = field(default_factory=dict)
    by_id: dict[str, PromptState] = field(default_factory=dict)
    keys: dict[str, ApiKey] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)  # by username, oldest first
    user_ids: dict[str, str] = field(default_factory=dict)  # user_id -> username
    # Login flow state; each record expires at its expires_at (see _live).
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    devices: dict[str, DeviceAuthorization] = field(default_factory=dict)
    user_codes: dict[str, str] = field(default_factory=dict)  # user_code -> device hash
    sessions: dict[str, RealmSession] = field(default_factory=dict)
    session_families: dict[str, set[str]] = field(default_factory=dict)
    tokens: dict[str, RefreshToken] = field(default_factory=dict)
    families: dict[str, Family] = field(default_factory=dict)
    events: deque[Event] = field(default_factory=deque)  # oldest first
    last_event: tuple[int, int] = (0, 0)  # position of the newest id handed out
    events_dropped: bool = False  # the log went over its bound at least once
    hooks: Hooks = field(default_factory=Hooks)
    # Environments other than a default production, oldest first (production once changed).
    environments: dict[str, Environment] = field(default_factory=dict)
    reviews: dict[str, Review] = field(default_factory=dict)  # oldest request first
    review_seq: dict[str, int] = field(default_factory=dict)  # review_id -> request sequence
    review_counter: int = 0  # last sequence handed out
    # (prompt_id, environment, version number) -> the open review's id
    open_reviews: dict[tuple[str, str, int], str] = field(default_factory=dict)
    # The reverse index of includes: prompt name -> (prompt_id, number) of every
    # version whose own content includes it (PromptVersion.included_names).
    included_by: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    guards: dict[str, Guard] = field(default_factory=dict)  # by rollout or review id

    def keep_guard(self, guarded_id: str, guard: Guard | None) -> None:
        """Keep ``guard`` for the rollout or review ``guarded_id`` (None: drop it)."""
        if guard is None:
            self.guards.pop(guarded_id, None)
        else:
            self.guards[guarded_id] = guard

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


class Expiring(Protocol):
    @property
    def expires_at(self) -> datetime: ...


E = TypeVar("E", bound=Expiring)

# Expired flow records are dropped when met, and all of them every this many writes, so
# records nobody asks for again (abandoned logins) cannot pile up.
SWEEP_EVERY = 512


def live(records: MutableMapping[str, E], key: str, now: datetime) -> E | None:
    """``records[key]`` unless absent or expired (an expired one is dropped)."""
    record = records.get(key)
    if record is not None and record.expires_at <= now:
        del records[key]
        return None
    return record
