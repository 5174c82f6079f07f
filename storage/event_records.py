"""The records of an org's event log: one change, and the log's bounds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.records import Prompt, PromptVersion
from storage.times import rfc3339


@dataclass(frozen=True, slots=True)
class Event:
    """One change in an org's event log.

    ``version``, ``version_id`` and ``status`` (the version's status after the change;
    for ``review.*`` events the review's) are None for prompt events;
    ``previous_version`` is the version a promotion replaced in its environment (None
    when there was none, and for other events). ``environment`` is set on promotions
    and review events, ``review_id`` on review events and on a promotion a review
    applied. ``rollout_id`` and ``percent`` are set on ``rollout.*`` events (whose
    version is the candidate and ``previous_version`` the baseline) and ``rollout_id``
    on the ``version.promoted`` of a completed rollout. ``actor`` is the user id that
    made the change and ``request_id`` the request that asked for it, when the caller
    gave them. A ``rollout.aborted`` says why in ``reason``: ``guard`` (its guard
    found the candidate worse, docs/usage.md; the figures in ``guard``) or ``manual``
    (a caller's abort, or an archive or delete that ended it).
    """

    id: str  # increases within an org (event_position)
    type: str  # one of EVENT_TYPES
    prompt_id: str
    prompt_name: str
    version: int | None
    version_id: str | None
    status: str | None
    previous_version: int | None
    actor: str | None
    at: datetime
    request_id: str | None
    environment: str | None = None
    review_id: str | None = None
    rollout_id: str | None = None
    percent: int | None = None
    reason: str | None = None
    guard: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "prompt_id": self.prompt_id,
            "prompt_name": self.prompt_name,
            "version": self.version,
            "version_id": self.version_id,
            "status": self.status,
            "previous_version": self.previous_version,
            "actor": self.actor,
            "at": rfc3339(self.at),
            "request_id": self.request_id,
            "environment": self.environment,
            "review_id": self.review_id,
            "rollout_id": self.rollout_id,
            "percent": self.percent,
            "reason": self.reason,
            "guard": self.guard,
        }


def created_event(
    record: Prompt | PromptVersion, actor: str | None, request_id: str | None
) -> Event:
    """The event of a new prompt or a new version, ``id`` unset (a release change's
    events are storage/release's)."""
    version = record if isinstance(record, PromptVersion) else None
    return Event(
        id="",
        type="prompt.created" if version is None else "version.created",
        prompt_id=record.prompt_id,
        prompt_name=record.name,
        version=None if version is None else version.version,
        version_id=None if version is None else version.version_id,
        status=None if version is None else version.status,
        previous_version=None,
        actor=actor,
        at=record.created_at,
        request_id=request_id,
    )


@dataclass(frozen=True, slots=True)
class EventLogBounds:
    """The ids of the oldest and the newest event an org's log keeps (None: empty), and
    whether it has dropped older events to stay within its bound.

    A reader whose last id is older than ``oldest`` has missed events only when
    ``trimmed``: a log that never dropped one still holds everything after any id.
    """

    oldest: str | None
    newest: str | None
    trimmed: bool = False
