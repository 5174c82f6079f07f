"""The release engine in memory: a prompt's state as storage/release reads it, and the
change it decides applied, both under the one lock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from promptsvc.templating.includes import Include
from storage import lifecycle, release
from storage.errors import NoProductionVersion, NothingInEnvironment, ReviewNotFound
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState, PromptState, put
from storage.records import PRODUCTION, Environment, InRollout, PromptVersion, Review
from storage.release.methods import ReleaseMethods, Target


class MemoryNeighbours:
    """An org's other prompts as a decision reads them (storage.release.records
    ``Neighbours``), straight from the state under the lock the decision holds."""

    def __init__(self, org_state: OrgState) -> None:
        self.org_state = org_state

    def resolve(self, include: Include, environment: str) -> PromptVersion | None:
        state = self.org_state.by_name.get(include.name)
        if state is None or state.prompt.prompt_type != "text":
            return None
        if isinstance(include.ref, int):
            return state.versions.get(include.ref)
        number = state.placements.get(include.ref or environment)
        return None if number is None else state.versions.get(number)

    def includers(self, name: str) -> Sequence[PromptVersion]:
        return [
            self.org_state.by_id[prompt_id].versions[number]
            for prompt_id, number in self.org_state.included_by.get(name, ())
        ]


class MemoryPromotion(ReleaseMethods, MemoryCore):
    """The release methods (storage/release/methods.py): each loads, decides and
    applies under the lock."""

    def _release(
        self,
        org: str,
        target: Target,
        kind: type[release.Request],
        actor: release.Actor,
        request_id: str | None,
        **fields: Any,
    ) -> Any:
        now = self.clock()
        with self._lock:
            review = None
            if target.review_id is not None:
                org_state = self._orgs.get(org)
                if org_state is None or target.review_id not in org_state.reviews:
                    raise ReviewNotFound(target.review_id)
                review = org_state.reviews[target.review_id]
                state = org_state.by_id[review.prompt_id]
                if target.approver:
                    username = org_state.user_ids.get(actor.identity or "")
                    actor = replace(actor, record=org_state.users.get(username or ""))
                fields["review_id"] = target.review_id
            else:
                assert target.prompt_ref is not None
                state = self._state(org, target.prompt_ref)
            if target.version_ref is not None:
                ref = target.prompt_ref or state.prompt.name
                fields["version"] = self._number(state, ref, target.version_ref)
            request = kind(now=now, actor=actor, request_id=request_id, **fields)
            return self._decide(org, state, request, review)

    @staticmethod
    def _environment(org_state: OrgState | None, name: str) -> Environment:
        return lifecycle.environment_in(org_state.environments if org_state else {}, name)

    def _held(
        self, org: str, prompt_ref: str, environment: str
    ) -> tuple[PromptState, PromptVersion]:
        """The prompt's state and the version ``environment`` holds (lock held)."""
        state = self._state(org, prompt_ref)
        self._environment(self._orgs[org], environment)
        number = state.placements.get(environment)
        if number is None:
            if environment == PRODUCTION:
                raise NoProductionVersion(prompt_ref)
            raise NothingInEnvironment(prompt_ref, environment)
        return state, state.versions[number]

    @staticmethod
    def _with_rollout(
        state: PromptState, version: PromptVersion, environment: str
    ) -> PromptVersion | InRollout:
        """The read of ``environment`` holding ``version``: with its rollout, if any."""
        rollout = state.rollouts.get(environment)
        if rollout is None:
            return version
        return InRollout(version, rollout, state.versions[rollout.candidate_version])

    def _decide(
        self,
        org: str,
        state: PromptState,
        request: release.Request,
        review: Review | None = None,
        *,
        only_check: bool = False,
    ) -> Any:
        """Decide ``request`` on ``state`` (``review``: the one it decides) and apply
        the change; returns its answer (lock held). ``only_check``: raise the refusal,
        if any, and change nothing."""
        org_state = self._orgs[org]
        prompt_id = state.prompt.prompt_id
        reviews = {
            r.review_id: r
            for r in org_state.reviews.values()
            if r.prompt_id == prompt_id and r.status == "open"
        }
        if review is not None:
            reviews[review.review_id] = review
        view = release.State(
            prompt=state.prompt,
            versions=state.versions,
            placements=state.placements,
            environments=org_state.environments,
            rollouts=state.rollouts,
            reviews=reviews,
            history=state.history,
            neighbours=MemoryNeighbours(org_state),
        )
        change = release.decide(view, request)
        if only_check:
            return None
        self._apply(org_state, state, change, request)
        if change.refusal is not None:
            raise change.refusal
        return change.answer

    def _apply(
        self,
        org_state: OrgState,
        state: PromptState,
        change: release.Change,
        request: release.Request,
    ) -> None:
        for version in change.rewritten():  # what it includes may be gone since the checks
            release.check_included_present(version, org_state.holds)
        if change.deleted_prompt:
            del org_state.by_name[state.prompt.name]
            del org_state.by_id[state.prompt.prompt_id]
            for version in state.versions.values():
                org_state.index_includes(version, keep=False)
            for review_id, review in list(org_state.reviews.items()):  # they go with it
                if review.prompt_id == state.prompt.prompt_id:
                    del org_state.reviews[review_id], org_state.review_seq[review_id]
        for number, version in change.updated.items():
            org_state.index_includes(state.versions[number], keep=False)
            org_state.index_includes(version)
        state.versions.update(change.updated)
        if change.deleted_version is not None:
            org_state.index_includes(state.versions.pop(change.deleted_version), keep=False)
        for environment, held in change.placements.items():
            put(state.placements, environment, held)
        for environment, rollout in change.rollouts.items():
            put(state.rollouts, environment, rollout)
        for review in change.new_reviews:
            org_state.review_counter += 1
            org_state.reviews[review.review_id] = review
            org_state.review_seq[review.review_id] = org_state.review_counter
        for review in change.reviews:
            org_state.reviews[review.review_id] = review
        state.history.extend(change.history)
        for guarded_id, guard in change.guards.items():
            put(org_state.guards, guarded_id, guard)
        for review_id, rollout_id in change.moved_guards.items():
            if (moved := org_state.guards.pop(review_id, None)) is not None:
                org_state.guards[rollout_id] = moved
        if change.touched:
            state.prompt = replace(state.prompt, updated_at=request.now)
        for event in change.events:
            self._append(org_state, event)
