"""A decision's working copy: the state as read, the change made so far, and the
versions, events and records as the change leaves them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from storage import lifecycle
from storage.errors import VersionNotFound
from storage.event_records import Event
from storage.records import Environment, PromptVersion, Review, Rollout
from storage.release.records import Change, Request, State


class Draft:
    """``state`` read by ``request``, and the ``change`` being made."""

    def __init__(self, state: State, request: Request) -> None:
        self.state = state
        self.request = request
        self.change = Change()

    @property
    def name(self) -> str:
        return self.state.prompt.name

    @property
    def actor(self) -> str | None:
        return self.request.actor.identity

    # -- reads

    def environment(self, name: str) -> Environment:
        return lifecycle.environment_in(self.state.environments, name)

    def held(self, environment: str) -> int | None:
        """The number of the version ``environment`` holds now (this change included)."""
        if environment in self.change.placements:
            return self.change.placements[environment]
        return self.state.placements.get(environment)

    def version(self, number: int) -> PromptVersion:
        """Version ``number`` as this change leaves it (VersionNotFound: deleted)."""
        changed = self.change.updated.get(number)
        if changed is not None:
            return changed
        version = self.state.versions.get(number)
        if version is None:
            raise VersionNotFound(self.name, str(number))
        return version

    def held_version(self, environment: str) -> PromptVersion | None:
        number = self.held(environment)
        return None if number is None else self.version(number)

    def open_reviews(self) -> list[Review]:
        return [r for r in self.state.reviews.values() if r.status == "open"]

    # -- writes

    def set(self, number: int, **fields: Any) -> PromptVersion:
        """Set fields of version ``number``; the version as it is then."""
        version = replace(self.version(number), **fields)
        self.change.versions.setdefault(number, {}).update(fields)
        self.change.updated[number] = version
        return version

    def place(self, environment: str, number: int | None) -> None:
        self.change.placements[environment] = number

    def event(
        self,
        kind: str,
        version: PromptVersion | None,
        *,
        actor: str | None = None,
        previous_version: int | None = None,
        environment: str | None = None,
        review_id: str | None = None,
        status: str | None = None,
        rollout_id: str | None = None,
        percent: int | None = None,
        reason: str | None = None,
        guard: dict[str, Any] | None = None,
    ) -> None:
        """Append the event of this change; ``status``: the event's own (a review's)
        instead of the version's; ``actor`` defaults to the request's."""
        self.change.events.append(
            Event(
                id="",
                type=kind,
                prompt_id=self.state.prompt.prompt_id,
                prompt_name=self.state.prompt.name,
                version=version.version if version else None,
                version_id=version.version_id if version else None,
                # A deleted version has no status any more.
                status=status
                or (version.status if version and kind != "version.deleted" else None),
                previous_version=previous_version,
                actor=self.actor if actor is None else actor,
                at=self.request.now,
                request_id=self.request.request_id,
                environment=environment,
                review_id=review_id,
                rollout_id=rollout_id,
                percent=percent,
                reason=reason,
                guard=guard,
            )
        )

    def review_event(self, kind: str, review: Review, actor: str | None = None) -> None:
        version = self.state.versions.get(review.version)
        self.event(
            kind,
            None if version is None else self.version(review.version),
            actor=actor,
            environment=review.environment,
            review_id=review.review_id,
            status=review.status,
        )

    def rollout_event(
        self,
        kind: str,
        rollout: Rollout,
        actor: str | None = None,
        *,
        reason: str | None = None,
        guard: dict[str, Any] | None = None,
    ) -> None:
        candidate = self.state.versions.get(rollout.candidate_version)
        self.event(
            kind,
            None if candidate is None else self.version(rollout.candidate_version),
            actor=actor,
            previous_version=rollout.baseline_version,
            environment=rollout.environment,
            rollout_id=rollout.rollout_id,
            percent=rollout.percent,
            reason=reason,
            guard=guard,
        )
