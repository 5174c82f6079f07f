"""How a version enters an environment: the checks every way in shares (in the order of
docs/api.md section 9), and the writes of a promotion and of a rollout's start and end."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from storage import contracts, lifecycle
from storage.ids import new_id
from storage.lifecycle import UNGUARDED, Expected
from storage.records import PRODUCTION, BreakingChange, Promotion, PromotionRecord, Review, Rollout
from storage.release.draft import Draft
from storage.release.includes import check_includes, includer_changes


def check_entry(
    draft: Draft,
    number: int,
    environment: str,
    action: str,
    expected: Expected = UNGUARDED,
    *,
    protected_ok: bool = False,
) -> int | None:
    """The checks before version ``number`` enters ``environment`` (or starts a rollout
    there: ``action`` as lifecycle.ROLLOUT_BLOCKS names it), first refusal first: the
    version's status, a rollout running there, the version being there already, the
    ``expected`` guard, a protection the caller does not pass (``protected_ok``: a
    review's approval). Returns what the environment holds."""
    env = draft.environment(environment)
    candidate = draft.version(number)
    current = draft.held(environment)
    if environment == PRODUCTION:
        lifecycle.check_promotable(candidate)
    elif candidate.status == "archived":
        raise lifecycle.refusal("place", number, candidate.status)
    lifecycle.check_no_rollout(draft.name, draft.state.rollouts.get(environment), action)
    if environment != PRODUCTION and number == current:
        raise lifecycle.refusal("place/here", number, candidate.status)
    lifecycle.check_expected(draft.name, expected, current, environment)
    if not protected_ok:
        lifecycle.check_unprotected(env)
    return current


def check_baseline(draft: Draft, number: int, environment: str) -> None:
    """A rollout needs a version to keep serving: an environment that holds nothing
    gets a plain promotion."""
    if draft.held(environment) is None:
        raise lifecycle.no_baseline(draft.name, environment, number)


def breaking_changes(draft: Draft, number: int, environment: str) -> list[BreakingChange]:
    """What version ``number`` replacing what ``environment`` holds would break: for
    callers of this prompt there, then for the prompts that include it there (each
    change naming its ``prompt``)."""
    return [
        *contracts.breaking_changes(draft.held_version(environment), draft.version(number)),
        *includer_changes(draft, number, environment),
    ]


def check_contract(draft: Draft, number: int, environment: str, allow_breaking: bool) -> bool:
    """The checks of version ``number``'s content entering ``environment``: its
    includes (storage/release/includes.py: IncludeRefused), then the promotion check
    against what the environment holds: whether it breaks it (BreakingPromotion when
    it does, unacknowledged)."""
    check_includes(draft, number, environment)
    changes = breaking_changes(draft, number, environment)
    return lifecycle.check_breaking(draft.name, environment, changes, allow_breaking)


def enter(
    draft: Draft,
    number: int,
    environment: str,
    notes: str | None,
    *,
    archive_previous: bool = True,
    review: Review | None = None,
    rollout: Rollout | None = None,
    breaking: bool = False,
) -> Promotion:
    """Version ``number`` becomes ``environment``'s, replacing what it held (in
    production: published, the previous one archived or made a draft), frozen from now
    on, with its history record and event (``rollout``: the rollout this completes)."""
    now = draft.request.now
    promoted_by = draft.actor or ""
    previous = draft.held(environment)
    if environment == PRODUCTION:
        if previous is not None:
            status = "archived" if archive_previous else "draft"
            draft.set(previous, status=status, updated_at=now)
        version = draft.set(
            number,
            status="published",
            updated_at=now,
            promoted_at=now,
            promoted_by=promoted_by,
            frozen=True,
        )
    else:
        if previous is not None:
            kept = tuple(e for e in draft.version(previous).placements if e != environment)
            draft.set(previous, placements=kept)
        placements = tuple(sorted({*draft.version(number).placements, environment}))
        version = draft.set(number, placements=placements, frozen=True)
    draft.place(environment, number)
    record = PromotionRecord(
        history_id=new_id("h_"),
        prompt_id=draft.state.prompt.prompt_id,
        version_number=number,
        promoted_by=promoted_by,
        promoted_at=now,
        previous_version=previous,
        notes=notes,
        environment=environment,
        review_id=None if review is None else review.review_id,
        approved_by=() if review is None else tuple(a.user_id for a in review.approvals),
        rollout_id=None if rollout is None else rollout.rollout_id,
        breaking=breaking,
    )
    draft.change.history.append(record)
    draft.change.touched = True
    draft.event(
        "version.promoted",
        version,
        actor=promoted_by,
        previous_version=previous,
        environment=environment,
        review_id=record.review_id,
        rollout_id=record.rollout_id,
    )
    return Promotion(version, record)


def begin_rollout(draft: Draft, number: int, environment: str, percent: int) -> Rollout:
    """Start a rollout of version ``number`` over what ``environment`` holds (the
    caller checked the rules); candidate and baseline are frozen from now on."""
    baseline = draft.held(environment)
    assert baseline is not None, "check_baseline first"
    now = draft.request.now
    candidate = draft.set(number, frozen=True)
    if not draft.version(baseline).frozen:
        draft.set(baseline, frozen=True)
    rollout = Rollout(
        rollout_id=new_id("ro_"),
        prompt_id=draft.state.prompt.prompt_id,
        environment=environment,
        baseline_version=baseline,
        candidate_version=number,
        candidate_id=candidate.version_id,
        percent=percent,
        started_by=draft.actor or "",
        started_at=now,
        updated_at=now,
    )
    draft.change.rollouts[environment] = rollout
    draft.rollout_event("rollout.started", rollout)
    return rollout


def end_rollout(
    draft: Draft, rollout: Rollout, kind: str, guard: dict[str, Any] | None = None
) -> Rollout:
    """The rollout ends (``kind``: rollout.completed or rollout.aborted), with its
    event; returns it as it was at the end. An abort's event says why: ``guard`` with
    the guard's figures when given, else ``manual``."""
    draft.change.rollouts[rollout.environment] = None
    draft.change.guards[rollout.rollout_id] = None  # a guard is of a running rollout
    ended = replace(rollout, updated_at=draft.request.now)
    reason = None if kind != "rollout.aborted" else "guard" if guard else "manual"
    draft.rollout_event(kind, ended, reason=reason, guard=guard)
    return ended
