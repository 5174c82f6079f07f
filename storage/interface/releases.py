"""Environments (an org's release pointers) and reviews (the two-person rule).

``production`` is an environment every org has: a prompt's published version is its
version there, moved by :meth:`PromptStore.promote` and :meth:`PromptStore.rollback`
as before. Any other environment is a placement per prompt (at most one version each)
moved by the same two methods with ``environment``; an environment with
``required_approvals`` >= 1 is entered through reviews only. The rules are decided by
storage/release; every backend applies the change, its history records and its events
in one atomic step.
"""

from __future__ import annotations

import abc

from storage import lifecycle
from storage.cursors import decode_number_cursor, page
from storage.errors import ReviewNotFound
from storage.interface.core import StorageCore
from storage.records import Environment, Page, Promotion, PromptVersion, Review, Rollout
from storage.release.records import Actor, LeaveEnvironment
from storage.usage_records import Guard


class ReleaseStore(StorageCore):
    """Environments, placements and reviews of one org at a time."""

    # -- environments
    def list_environments(self, org: str) -> list[Environment]:
        """Production first, then the others in the order they were created."""
        return list(lifecycle.with_production(self._stored_environments(org)).values())

    def get_environment(self, org: str, name: str) -> Environment:
        """Raises EnvironmentNotFound."""
        return lifecycle.environment_in(self._stored_environments(org), name)

    @abc.abstractmethod
    def _stored_environments(self, org: str) -> dict[str, Environment]:
        """The environments the org stores by name, oldest first (production only once
        changed)."""

    def create_environment(
        self, org: str, name: str, required_approvals: int = 0, description: str | None = None
    ) -> Environment:
        """Raises EnvironmentExists (production included). The caller validated the name
        (storage.lifecycle.environment_name_problem) and 0 <= required_approvals <= 3."""
        environment = Environment(name, required_approvals, description, self.clock())
        return self._add_environment(org, environment)

    @abc.abstractmethod
    def _add_environment(self, org: str, environment: Environment) -> Environment:
        """Store the new ``environment``. Raises EnvironmentExists."""

    def update_environment(
        self,
        org: str,
        name: str,
        *,
        required_approvals: int | None = None,
        description: str | None = None,
    ) -> Environment:
        """Change what is not None (``description=""`` clears it); production too. Open
        reviews keep the number of approvals they were opened with. Raises
        EnvironmentNotFound."""
        change = lifecycle.EnvironmentChange(required_approvals, description)
        return self._change_environment(org, name, change)

    @abc.abstractmethod
    def _change_environment(
        self, org: str, name: str, change: lifecycle.EnvironmentChange
    ) -> Environment:
        """In one step: ``change`` applied to the environment (production as every org
        has it when not stored) and stored; the result. Raises EnvironmentNotFound."""

    def delete_environment(
        self,
        org: str,
        name: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """The environment and every prompt's placement in it (its history records
        stay), in one atomic step that also cancels its open reviews, writing a
        ``review.cancelled`` event for each (in request order), and aborts its rollouts,
        writing ``rollout.aborted`` for each (``actor`` and ``request_id`` as given).
        Production: LifecycleError. Raises EnvironmentNotFound."""
        leave = LeaveEnvironment(
            now=self.clock(), actor=Actor(actor), request_id=request_id, environment=name
        )
        self._delete_environment(org, leave)

    @abc.abstractmethod
    def _delete_environment(self, org: str, leave: LeaveEnvironment) -> None:
        """In one atomic step: refused as ``storage.release.check_delete_environment``
        says, else every prompt leaves the environment as the release engine decides
        ``leave``, and the environment goes."""

    @abc.abstractmethod
    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        """The version ``environment`` holds for the prompt (production: the published
        one). Raises PromptNotFound, EnvironmentNotFound, NothingInEnvironment (for
        production: NoProductionVersion)."""

    # -- reviews
    @abc.abstractmethod
    def request_review(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        requested_by: str,
        notes: str | None = None,
        rollout_percent: int | None = None,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
        person: str | None = None,
        guard: Guard | None = None,
    ) -> Review:
        """Open a review of placing the version in ``environment``, expecting what the
        environment holds now, needing the environment's ``required_approvals`` (at
        least 1). ``guard`` (with ``rollout_percent``) is kept under the review's id in
        the same step, and becomes the guard of the rollout its approval starts.
        Raises PromptNotFound, VersionNotFound, EnvironmentNotFound,
        ReviewExists (an open review of the same version and environment), and the
        version's own refusal to enter the environment (LifecycleError; with
        ``rollout_percent``, 1-99, the refusal to start a rollout there). Writes
        ``review.requested``. The review records ``content_digest`` (storage.release)
        and ``person`` (who ``requested_by`` counts as) as ``requested_by_person``.

        The review keeps the promotion check against what the environment holds now
        (``breaking``); a breaking one is refused (BreakingPromotion) unless
        ``allow_breaking``, which needs ``notes`` (InvalidInput) and lets the review
        apply whatever the check finds when it is applied."""

    def get_review(self, org: str, review_id: str) -> Review:
        """Raises ReviewNotFound."""
        review = self._review_of(org, review_id)
        if review is None:
            raise ReviewNotFound(review_id)
        return review

    @abc.abstractmethod
    def _review_of(self, org: str, review_id: str) -> Review | None: ...

    def list_reviews(
        self,
        org: str,
        *,
        prompt_ref: str | None = None,
        status: str | None = None,
        environment: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Review]:
        """Newest request first, optionally of one prompt (PromptNotFound), status or
        environment."""
        before = decode_number_cursor(cursor)
        found = self._reviews_below(org, prompt_ref, status, environment, before, limit + 1)
        return page(found, limit)

    @abc.abstractmethod
    def _reviews_below(
        self,
        org: str,
        prompt_ref: str | None,
        status: str | None,
        environment: str | None,
        before: int | None,
        count: int,
    ) -> list[tuple[int, Review]]:
        """(request sequence, review) of up to ``count`` reviews requested below
        ``before`` (None: any), as :meth:`list_reviews` selects them, newest first."""

    @abc.abstractmethod
    def approve_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        username: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> tuple[Review, Promotion | Rollout | None]:
        """Add a person's approval: refused (ReviewForbidden) when the stored user of
        ``user_id``, read in the same step, is disabled or below Service Write, and to
        the requester, the person a requesting key counts as, and the version's
        ``authors``; ReviewClosed, AlreadyApproved. When it is the last one needed, the same
        atomic step applies the review: the promotion (as :meth:`PromptStore.promote`
        with the review's environment, guarded by its ``expected_version``, its record
        carrying ``review_id`` and ``approved_by``) and the review ``applied``; if the
        environment moved since the request, the approval and the status ``stale`` are
        recorded, nothing is promoted, and ReviewStale is raised. A version that cannot
        enter the environment any more: its LifecycleError, nothing recorded; so is a
        rollout running there (RolloutInProgress). The promotion check runs again in
        the same step; a breaking promotion of a review without ``allow_breaking``
        raises BreakingPromotion, nothing recorded. Writes ``review.approved`` (then
        ``version.promoted`` and ``review.applied``). A review with ``rollout_percent``
        starts a rollout instead of the promotion (storage/interface/rollouts.py:
        ``rollout.started`` instead of ``version.promoted``), returned in its place."""

    @abc.abstractmethod
    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        """Close an open review as ``rejected`` by a person allowed to approve it
        (as :meth:`approve_review` says). Writes ``review.rejected``."""

    @abc.abstractmethod
    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        """Close an open review as ``cancelled``: by its requester, or anyone when
        ``admin`` (a Service Admin). Writes ``review.cancelled``."""
