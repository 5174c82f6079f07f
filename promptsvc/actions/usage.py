"""Usage reports and rollout guards (docs/usage.md): counts added to their buckets, and
each guarded rollout the report touches checked where the report arrives, so no other
process watches: a guard's abort goes through the release engine, expecting the
rollout's id, so hosts that see the same regression at once end the rollout once."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from identity.people import standing
from identity.principal import Principal
from identity.roles import SERVICE_READ, SERVICE_WRITE, role_includes
from promptsvc.actions.roles import requires
from promptsvc.errors import Forbidden
from promptsvc.http import request_id
from storage import PromptNotFound, Rollout, RolloutNotFound, Storage
from storage.release.guard import breach
from storage.times import rfc3339
from storage.usage_records import Counts, Guard, UsageItem

ENDINGS = ("rollout.completed", "rollout.aborted")


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a report did: items counted and skipped, rollouts its guards ended."""

    accepted: int
    skipped: int
    aborted: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "skipped": self.skipped}


@requires(SERVICE_READ)
def report_usage(storage: Storage, principal: Principal, items: list[dict[str, Any]]) -> Receipt:
    """Count the items (validated by UsageReportSchema) in the buckets of now, then
    check the guards of the rollouts they name."""
    found = [UsageItem(**item) for item in items]
    skipped = storage.record_usage(principal.org, found) if found else 0
    rollouts = sorted({(i.prompt_id, i.rollout_id) for i in found if i.rollout_id and i.arm})
    aborted = tuple(
        rollout_id
        for prompt_id, rollout_id in rollouts
        if rollout_id and check_guard(storage, principal.org, prompt_id, rollout_id)
    )
    return Receipt(len(found) - skipped, skipped, aborted)


def check_guard(storage: Storage, org: str, prompt_id: str, rollout_id: str) -> bool:
    """End the rollout when its guard finds the candidate worse (storage/release/guard.py);
    True when this call ended it."""
    guard = storage.get_guard(org, rollout_id)
    if guard is None:
        return False
    figures = breach(guard, storage.rollout_arms(org, rollout_id))
    if figures is None:
        return False
    rollout = running(storage, org, prompt_id, rollout_id)
    if rollout is None:
        return False
    try:
        storage.abort_rollout(
            org,
            prompt_id,
            rollout.environment,
            rollout_id=rollout_id,
            request_id=request_id(),
            guard=figures,
        )
    except (RolloutNotFound, PromptNotFound):
        return False  # ended meanwhile: another worker's guard check, or a person
    return True


def running(storage: Storage, org: str, prompt_ref: str, rollout_id: str) -> Rollout | None:
    try:
        rollouts: Iterable[Rollout] = storage.list_rollouts(org, prompt_ref)
    except PromptNotFound:
        return None
    return next((r for r in rollouts if r.rollout_id == rollout_id), None)


@requires(SERVICE_WRITE)
def set_rollout_guard(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    environment: str,
    guard: Guard | None,
    *,
    rollout_id: str | None = None,
) -> Rollout:
    """Set (or with None, drop) the guard of the environment's rollout (RolloutNotFound
    when none runs, or another than ``rollout_id``); the guard is checked at once.
    A person's token counts as their user stands now (identity.people.standing), as
    for an approval: dropping a guard takes a rollout's safety away, so a user since
    disabled or demoted below Service Write is refused though the token still says
    otherwise."""
    current = standing(storage, principal)
    if current is None or not role_includes(current.role, SERVICE_WRITE):
        raise Forbidden(SERVICE_WRITE)
    rollout = storage.get_rollout(principal.org, prompt_ref, environment)
    if rollout_id is not None and rollout.rollout_id != rollout_id:
        raise RolloutNotFound(prompt_ref, environment, rollout_id)
    storage.set_guard(principal.org, rollout.rollout_id, guard)
    check_guard(storage, principal.org, rollout.prompt_id, rollout.rollout_id)
    return rollout


def guarded_view(storage: Storage, org: str, rollout: Rollout) -> dict[str, Any]:
    """The guard of a running rollout and its arms' figures, as its reads show them."""
    guard = storage.get_guard(org, rollout.rollout_id)
    arms = storage.rollout_arms(org, rollout.rollout_id)
    return {
        "guard": None if guard is None else guard.to_json(),
        "arms": {arm: arms.get(arm, Counts()).to_json() for arm in ("baseline", "candidate")},
    }


# The event log is read in pages of this many events.
EVENT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class EndedRollout:
    """How a rollout ended, as its ``rollout.completed`` / ``rollout.aborted`` event
    recorded it: ``reason`` ``guard`` (with the guard's figures) or ``manual`` for an
    abort, None for a completion; ``ended_by`` the person or key that ended it (None
    for a guard's abort)."""

    rollout_id: str
    environment: str
    baseline_version: int | None
    candidate_version: int | None
    percent: int | None
    outcome: str  # completed | aborted
    reason: str | None
    guard: dict[str, Any] | None
    ended_by: str | None
    ended_at: datetime
    request_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rollout_id": self.rollout_id,
            "environment": self.environment,
            "baseline_version": self.baseline_version,
            "candidate_version": self.candidate_version,
            "percent": self.percent,
            "outcome": self.outcome,
            "reason": self.reason,
            "guard": self.guard,
            "ended_by": self.ended_by,
            "ended_at": rfc3339(self.ended_at),
            "request_id": self.request_id,
        }


@requires(SERVICE_READ)
def ended_rollouts(
    storage: Storage, principal: Principal, prompt_ref: str, limit: int
) -> list[EndedRollout]:
    """The prompt's newest ``limit`` ended rollouts, newest first, from the org's event
    log (a rollout ends by deleting its record; its end event is what is kept of it,
    for as long as the log keeps it: docs/usage.md)."""
    prompt_id = storage.get_prompt(principal.org, prompt_ref).prompt_id
    found: deque[EndedRollout] = deque(maxlen=limit)
    after = "0-0"
    while page := storage.events_after(principal.org, after, EVENT_PAGE):
        after = page[-1].id
        found.extend(
            EndedRollout(
                rollout_id=event.rollout_id,
                environment=event.environment or "",
                baseline_version=event.previous_version,
                candidate_version=event.version,
                percent=event.percent,
                outcome=event.type.removeprefix("rollout."),
                reason=event.reason,
                guard=event.guard,
                ended_by=event.actor,
                ended_at=event.at,
                request_id=event.request_id,
            )
            for event in page
            if event.prompt_id == prompt_id
            and event.type in ENDINGS
            and event.rollout_id is not None
        )
        if len(page) < EVENT_PAGE:
            break
    return list(reversed(found))


def guard_from(body: dict[str, Any] | None) -> Guard | None:
    """A guard as GuardSchema loaded it."""
    return None if body is None else Guard(**body)
