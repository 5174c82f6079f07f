"""How a version enters an environment in memory: shared by promotions, rollbacks and
applied reviews (the caller holds the lock and has checked the rules)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from storage import lifecycle
from storage.errors import EnvironmentNotFound
from storage.ids import new_id
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState, PromptState
from storage.records import (
    PRODUCTION,
    Environment,
    Promotion,
    PromotionRecord,
    PromptVersion,
    Review,
    Rollout,
)


class MemoryPromotion(MemoryCore):
    @staticmethod
    def _environment(org_state: OrgState | None, name: str) -> Environment:
        if org_state is not None and name in org_state.environments:
            return org_state.environments[name]
        if name == PRODUCTION:
            return lifecycle.default_production()
        raise EnvironmentNotFound(name)

    @staticmethod
    def _current(state: PromptState, environment: str) -> int | None:
        """The number of the version ``environment`` holds, or None."""
        if environment == PRODUCTION:
            return state.production
        return state.placements.get(environment)

    def _held(self, state: PromptState, environment: str) -> PromptVersion | None:
        """The version ``environment`` holds, or None."""
        number = self._current(state, environment)
        return None if number is None else state.versions[number]

    @staticmethod
    def _set_placements(state: PromptState, number: int, placements: set[str]) -> None:
        state.versions[number] = replace(
            state.versions[number], placements=tuple(sorted(placements))
        )

    @staticmethod
    def _forget_reviews(org_state: OrgState, prompt_id: str) -> None:
        """A deleted prompt's reviews go with it."""
        for review_id, review in list(org_state.reviews.items()):
            if review.prompt_id == prompt_id:
                del org_state.reviews[review_id]
                del org_state.review_seq[review_id]
        for key in [key for key in org_state.open_reviews if key[0] == prompt_id]:
            del org_state.open_reviews[key]

    def _unplace(self, state: PromptState, number: int) -> None:
        """Take version ``number`` out of every environment but production."""
        for environment in state.versions[number].placements:
            del state.placements[environment]
        self._set_placements(state, number, set())

    def _enter(
        self,
        org: str,
        state: PromptState,
        number: int,
        environment: str,
        promoted_by: str,
        notes: str | None,
        now: datetime,
        request_id: str | None,
        *,
        archive_previous: bool = True,
        review: Review | None = None,
        rollout: Rollout | None = None,
        breaking: bool = False,
    ) -> Promotion:
        """Version ``number`` becomes ``environment``'s, replacing what it held (in
        production: published, the previous one archived or made a draft), with its
        history record and event (``rollout``: the rollout this completes)."""
        previous = self._current(state, environment)
        if environment == PRODUCTION:
            if previous is not None:
                self._set_status(state, previous, "archived" if archive_previous else "draft", now)
            version = replace(
                state.versions[number],
                status="published",
                updated_at=now,
                promoted_at=now,
                promoted_by=promoted_by,
            )
            state.versions[number] = version
            state.production = number
        else:
            if previous is not None:
                kept = set(state.versions[previous].placements) - {environment}
                self._set_placements(state, previous, kept)
            self._set_placements(state, number, {*state.versions[number].placements, environment})
            state.placements[environment] = number
            version = state.versions[number]
        record = PromotionRecord(
            history_id=new_id("h_"),
            prompt_id=state.prompt.prompt_id,
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
        state.history.append(record)
        state.prompt = replace(state.prompt, updated_at=now)
        self._record(
            self._orgs[org],
            "version.promoted",
            state.prompt,
            version,
            promoted_by,
            request_id,
            now,
            previous_version=previous,
            environment=environment,
            review_id=record.review_id,
            rollout_id=record.rollout_id,
        )
        return Promotion(version, record)

    def _begin_rollout(
        self,
        org: str,
        state: PromptState,
        number: int,
        environment: str,
        percent: int,
        started_by: str,
        now: datetime,
        request_id: str | None,
    ) -> Rollout:
        """Start a rollout of version ``number`` over what ``environment`` holds (the
        caller checked the rules), with its event."""
        baseline = self._current(state, environment)
        assert baseline is not None
        rollout = Rollout(
            rollout_id=new_id("ro_"),
            prompt_id=state.prompt.prompt_id,
            environment=environment,
            baseline_version=baseline,
            candidate_version=number,
            candidate_id=state.versions[number].version_id,
            percent=percent,
            started_by=started_by,
            started_at=now,
            updated_at=now,
        )
        state.rollouts[environment] = rollout
        self._rollout_event(org, state, "rollout.started", rollout, started_by, request_id, now)
        return rollout

    def _end_rollout(
        self,
        org: str,
        state: PromptState,
        rollout: Rollout,
        kind: str,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> Rollout:
        """The rollout ends (``kind``: rollout.completed or rollout.aborted), with its
        event; returns it as it was at the end."""
        del state.rollouts[rollout.environment]
        ended = replace(rollout, updated_at=now)
        self._rollout_event(org, state, kind, ended, actor, request_id, now)
        return ended

    def _abort_rollouts_of(
        self,
        org: str,
        state: PromptState,
        number: int,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        """End (aborted) the rollouts whose candidate or baseline version ``number`` is
        (it is being archived or deleted)."""
        for rollout in lifecycle.rollouts_ended_by(number, list(state.rollouts.values())):
            self._end_rollout(org, state, rollout, "rollout.aborted", actor, request_id, now)

    def _rollout_event(
        self,
        org: str,
        state: PromptState,
        kind: str,
        rollout: Rollout,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        self._record(
            self._orgs[org],
            kind,
            state.prompt,
            state.versions.get(rollout.candidate_version),
            actor,
            request_id,
            now,
            previous_version=rollout.baseline_version,
            environment=rollout.environment,
            rollout_id=rollout.rollout_id,
            percent=rollout.percent,
        )
