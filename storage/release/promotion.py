"""Promotion into an environment and rollback."""

from __future__ import annotations

from storage import lifecycle
from storage.release.draft import Draft
from storage.release.entry import breaking_changes, check_contract, check_entry, enter
from storage.release.records import Change, Promote, Rollback, State


def promote(state: State, request: Promote) -> Change:
    """The version enters the environment directly: refused into a protected one
    (ReviewRequired), checked against what it replaces (storage/contracts.py)."""
    lifecycle.check_acknowledgement(request.allow_breaking, request.notes)
    draft = Draft(state, request)
    check_entry(draft, request.version, request.environment, "promote", request.expected)
    breaking = check_contract(draft, request.version, request.environment, request.allow_breaking)
    draft.change.answer = enter(
        draft,
        request.version,
        request.environment,
        request.notes,
        archive_previous=request.archive_previous,
        breaking=breaking,
    )
    return draft.change


def rollback(state: State, request: Rollback) -> Change:
    """The environment gets back the version it held before (or ``to_version``, which
    it held once): allowed into a protected environment, exempt from the contract check
    (the record says whether it breaks). The target was placed before, so it is frozen:
    it brings back the content that was there."""
    draft = Draft(state, request)
    environment = request.environment
    draft.environment(environment)
    lifecycle.check_no_rollout(draft.name, state.rollouts.get(environment), "rollback")
    current = draft.held(environment)
    lifecycle.check_expected(draft.name, request.expected, current, environment)
    target = lifecycle.rollback_target(
        draft.name, current, state.history, request.to_version, state.versions.get, environment
    )
    notes = lifecycle.rollback_notes(target) if request.notes is None else request.notes
    changes = breaking_changes(draft, target, environment)
    draft.change.answer = enter(draft, target, environment, notes, breaking=bool(changes))
    return draft.change
