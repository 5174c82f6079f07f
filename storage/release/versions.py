"""What happens to a version itself: edit (the freeze), archive, unarchive, delete; and
what an environment's deletion means for one prompt."""

from __future__ import annotations

from storage import lifecycle
from storage.errors import EnvironmentNotFound, LifecycleError, VersionFrozen
from storage.records import PRODUCTION, Environment
from storage.release.draft import Draft
from storage.release.entry import end_rollout
from storage.release.includes import check_in_use, check_leaving, check_unused
from storage.release.records import (
    ArchiveVersion,
    Change,
    DeletePrompt,
    DeleteVersion,
    EditVersion,
    LeaveEnvironment,
    State,
    UnarchiveVersion,
)
from storage.release.reviews import cancel_for_environment


def frozen(draft: Draft, number: int) -> bool:
    """Whether version ``number``'s content may never change again: it was placed in
    an environment or was a rollout's candidate or baseline (its ``frozen`` flag), or
    an open review names it."""
    if draft.version(number).frozen:
        return True
    return any(review.version == number for review in draft.open_reviews())


def edit_version(state: State, request: EditVersion) -> Change:
    """New content, contract and config for a draft that is not frozen; whoever edits it (and
    the person they count as) joins its authors."""
    draft = Draft(state, request)
    number = request.version
    lifecycle.check_editable(draft.version(number))
    if frozen(draft, number):
        raise VersionFrozen(lifecycle.FROZEN.format(n=number))
    identity, person = request.actor.identity, request.actor.person
    authors = tuple(dict.fromkeys((*draft.version(number).authors, *people(identity, person))))
    version = draft.set(
        number,
        content=request.content,
        variables=request.variables,
        variables_schema=request.variables_schema,
        examples=request.examples,
        config=request.config,
        updated_at=request.now,
        authors=authors,
    )
    draft.event("version.updated", version)
    draft.change.answer = version
    return draft.change


def archive_version(state: State, request: ArchiveVersion) -> Change:
    """A draft leaves every environment and becomes archived; the rollouts whose
    candidate or baseline it is end (aborted)."""
    draft = Draft(state, request)
    number = request.version
    lifecycle.check_archivable(draft.version(number))
    check_in_use(draft, number, draft.version(number).environments, pinned=False)
    _unplace(draft, number)
    version = draft.set(number, status="archived", updated_at=request.now)
    draft.event("version.archived", version)
    _abort_rollouts_of(draft, number)
    draft.change.answer = version
    return draft.change


def unarchive_version(state: State, request: UnarchiveVersion) -> Change:
    """An archived version is a draft again, as frozen as it was."""
    draft = Draft(state, request)
    number = request.version
    lifecycle.check_unarchivable(draft.version(number))
    version = draft.set(number, status="draft", updated_at=request.now)
    draft.event("version.unarchived", version)
    draft.change.answer = version
    return draft.change


def delete_version(state: State, request: DeleteVersion) -> Change:
    """Any version but the published one goes, out of every environment, ending the
    rollouts whose candidate or baseline it is (aborted)."""
    draft = Draft(state, request)
    number = request.version
    version = draft.version(number)
    lifecycle.check_deletable(version)
    check_in_use(draft, number, version.environments, pinned=True)
    _abort_rollouts_of(draft, number)
    _unplace(draft, number)
    version = draft.version(number)
    draft.change.deleted_version = number
    draft.change.touched = True
    draft.event("version.deleted", version)
    return draft.change


def delete_prompt(state: State, request: DeletePrompt) -> Change:
    """The prompt goes with everything of it, unless another prompt's version includes
    it (InUse)."""
    draft = Draft(state, request)
    check_unused(draft)
    draft.change.deleted_prompt = True
    draft.event("prompt.deleted", None)
    return draft.change


def check_delete_environment(environments: dict[str, Environment], name: str) -> None:
    """An environment other than production, that exists, can be deleted."""
    if name not in environments and name != PRODUCTION:
        raise EnvironmentNotFound(name)
    if name == PRODUCTION:
        raise LifecycleError("production cannot be deleted", "builtin")


def leave_environment(state: State, request: LeaveEnvironment) -> Change:
    """The environment is deleted: its rollout of this prompt ends (aborted), its
    placement goes (its history records stay), its open reviews are cancelled."""
    draft = Draft(state, request)
    environment = request.environment
    check_leaving(draft, environment)
    rollout = state.rollouts.get(environment)
    if rollout is not None:
        end_rollout(draft, rollout, "rollout.aborted")
    number = draft.held(environment)
    if number is not None:
        kept = tuple(e for e in draft.version(number).placements if e != environment)
        draft.set(number, placements=kept)
        draft.place(environment, None)
    cancel_for_environment(draft, environment)
    return draft.change


def people(identity: str | None, person: str | None) -> tuple[str, ...]:
    """The ``authors`` a version gets from ``identity``, who counts as ``person``."""
    return tuple(dict.fromkeys(who for who in (identity, person) if who))


def _unplace(draft: Draft, number: int) -> None:
    """Take version ``number`` out of every environment but production."""
    for environment in draft.version(number).placements:
        draft.place(environment, None)
    draft.set(number, placements=())


def _abort_rollouts_of(draft: Draft, number: int) -> None:
    """End (aborted) the rollouts whose candidate or baseline version ``number`` is."""
    for rollout in lifecycle.rollouts_ended_by(number, list(draft.state.rollouts.values())):
        end_rollout(draft, rollout, "rollout.aborted")
