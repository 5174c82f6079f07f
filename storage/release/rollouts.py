"""A rollout's start, percent change, completion and abort."""

from __future__ import annotations

from dataclasses import replace

from storage import lifecycle
from storage.errors import RolloutNotFound
from storage.records import Rollout
from storage.release.draft import Draft
from storage.release.entry import (
    begin_rollout,
    check_baseline,
    check_contract,
    check_entry,
    end_rollout,
    enter,
)
from storage.release.records import (
    AbortRollout,
    Change,
    CompleteRollout,
    SetPercent,
    StartRollout,
    State,
)


def start_rollout(state: State, request: StartRollout) -> Change:
    """Serve the version to ``percent`` of the environment's keyed callers: the checks
    of a promotion, then a baseline to keep serving, then the contract check against
    it. Nothing changes but the rollout (the candidate keeps its status)."""
    lifecycle.check_percent(request.percent)
    lifecycle.check_acknowledgement(request.allow_breaking, request.notes)
    draft = Draft(state, request)
    number, environment = request.version, request.environment
    check_entry(draft, number, environment, "start", request.expected)
    check_baseline(draft, number, environment)
    check_contract(draft, number, environment, request.allow_breaking)
    rollout = begin_rollout(draft, number, environment, request.percent)
    if request.guard is not None:
        draft.change.guards[rollout.rollout_id] = request.guard
    draft.change.answer = rollout
    return draft.change


def set_percent(state: State, request: SetPercent) -> Change:
    lifecycle.check_percent(request.percent)
    draft = Draft(state, request)
    rollout = _rollout(draft, request.environment, request.rollout_id)
    rollout = replace(rollout, percent=request.percent, updated_at=request.now)
    draft.change.rollouts[rollout.environment] = rollout
    draft.rollout_event("rollout.updated", rollout)
    draft.change.answer = rollout
    return draft.change


def complete_rollout(state: State, request: CompleteRollout) -> Change:
    """The candidate enters the environment as a promotion would (no review needed),
    checked again against the baseline; the rollout ends."""
    lifecycle.check_acknowledgement(request.allow_breaking, request.notes)
    draft = Draft(state, request)
    environment = request.environment
    rollout = _rollout(draft, environment, request.rollout_id)
    number = rollout.candidate_version
    # Unreachable through the rules (a rollout blocks every other way in, and ends with
    # its candidate or baseline), checked as any promotion is.
    candidate = draft.version(number)
    lifecycle.check_enterable(environment, candidate, draft.held(environment))
    breaking = check_contract(draft, number, environment, request.allow_breaking)
    draft.change.answer = enter(
        draft,
        number,
        environment,
        request.notes,
        archive_previous=request.archive_previous,
        rollout=rollout,
        breaking=breaking,
    )
    end_rollout(draft, rollout, "rollout.completed")
    return draft.change


def abort_rollout(state: State, request: AbortRollout) -> Change:
    draft = Draft(state, request)
    rollout = _rollout(draft, request.environment, request.rollout_id)
    draft.change.answer = end_rollout(draft, rollout, "rollout.aborted", request.guard)
    return draft.change


def _rollout(draft: Draft, environment: str, rollout_id: str | None) -> Rollout:
    """The environment's rollout (``rollout_id``: only that one)."""
    draft.environment(environment)
    rollout = draft.state.rollouts.get(environment)
    if rollout is None or rollout_id not in (None, rollout.rollout_id):
        raise RolloutNotFound(draft.name, environment, rollout_id)
    return rollout
