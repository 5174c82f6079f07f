"""The release methods of the storage interface, written once for every backend.

Each method turns its arguments into one engine request (storage/release/records.py)
and hands it to the backend's :meth:`ReleaseMethods._release`, which loads the state
:class:`Target` names, lets :func:`storage.release.decide` decide and applies the
change in its own atomic step. So what a method asks of the engine (which actor, which
fields, what the load must read) cannot differ between backends.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from storage import contracts
from storage.lifecycle import UNGUARDED, Expected
from storage.records import PRODUCTION, Promotion, PromptVersion, Review, Rollout
from storage.release.records import (
    AbortRollout,
    Actor,
    ApproveReview,
    ArchiveVersion,
    CancelReview,
    CompleteRollout,
    DeletePrompt,
    DeleteVersion,
    EditVersion,
    Promote,
    RejectReview,
    Request,
    RequestReview,
    Rollback,
    SetPercent,
    StartRollout,
    UnarchiveVersion,
)
from storage.usage_records import Guard


@dataclass(frozen=True, slots=True)
class Target:
    """What a request names, for the backend to load in the step that applies it.

    ``prompt_ref``: the prompt (None: the prompt of ``review_id``, whose review the
    state includes whatever its status, passed on as the request's ``review_id``);
    ``version_ref``: a version, resolved to the request's ``version`` (VersionNotFound
    when it names none); ``history``: the state needs the promotion records (rollback);
    ``approver``: the actor's stored user record is read too, as ``Actor.record``.
    """

    prompt_ref: str | None = None
    version_ref: str | None = None
    review_id: str | None = None
    history: bool = False
    approver: bool = False


class ReleaseMethods(abc.ABC):
    """Mixed into each backend, ahead of the interface's abstract methods."""

    @abc.abstractmethod
    def _release(
        self,
        org: str,
        target: Target,
        kind: type[Request],
        actor: Actor,
        request_id: str | None,
        **fields: Any,
    ) -> Any:
        """Load ``target``'s state, decide ``kind(now=..., actor=actor, request_id=...,
        **fields)`` (with the ``version`` and ``review_id`` the target resolves) and
        apply the change atomically; its answer, or the refusal it carries raised."""

    def promote(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        environment: str = PRODUCTION,
        allow_breaking: bool = False,
    ) -> Promotion:
        return cast(
            Promotion,
            self._release(
                org,
                Target(prompt_ref, version_ref),
                Promote,
                Actor(promoted_by),
                request_id,
                environment=environment,
                notes=notes,
                archive_previous=archive_previous,
                expected=expected_production,
                allow_breaking=allow_breaking,
            ),
        )

    def rollback(
        self,
        org: str,
        prompt_ref: str,
        promoted_by: str,
        notes: str | None = None,
        to_version: int | None = None,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        environment: str = PRODUCTION,
    ) -> Promotion:
        return cast(
            Promotion,
            self._release(
                org,
                Target(prompt_ref, history=True),
                Rollback,
                Actor(promoted_by),
                request_id,
                environment=environment,
                notes=notes,
                to_version=to_version,
                expected=expected_production,
            ),
        )

    def edit_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        content: str,
        *,
        variables: Sequence[str] = (),
        sections: Sequence[str] = (),
        brought: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        actor: str | None = None,
        request_id: str | None = None,
        person: str | None = None,
    ) -> PromptVersion:
        schema, kept = contracts.validated(variables, variables_schema, examples, sections, brought)
        kept_config = contracts.validated_config(config)
        return cast(
            PromptVersion,
            self._release(
                org,
                Target(prompt_ref, version_ref),
                EditVersion,
                Actor(actor, person),
                request_id,
                content=content,
                variables=tuple(variables),
                variables_schema=schema,
                examples=tuple(kept),
                config=kept_config,
            ),
        )

    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        target = Target(prompt_ref, version_ref)
        return cast(
            PromptVersion, self._release(org, target, ArchiveVersion, Actor(actor), request_id)
        )

    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        target = Target(prompt_ref, version_ref)
        return cast(
            PromptVersion, self._release(org, target, UnarchiveVersion, Actor(actor), request_id)
        )

    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        target = Target(prompt_ref, version_ref)
        self._release(org, target, DeleteVersion, Actor(actor), request_id)

    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        self._release(org, Target(prompt_ref), DeletePrompt, Actor(actor), request_id)

    # -- reviews

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
        return cast(
            Review,
            self._release(
                org,
                Target(prompt_ref, version_ref),
                RequestReview,
                Actor(requested_by, person),
                request_id,
                environment=environment,
                notes=notes,
                rollout_percent=rollout_percent,
                allow_breaking=allow_breaking,
                guard=guard,
            ),
        )

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
        return cast(
            tuple[Review, Promotion | Rollout | None],
            self._release(
                org,
                Target(review_id=review_id, approver=True),
                ApproveReview,
                Actor(user_id, user_id),
                request_id,
                username=username,
                comment=comment,
            ),
        )

    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        target = Target(review_id=review_id, approver=True)
        who = Actor(user_id, user_id)
        return cast(
            Review, self._release(org, target, RejectReview, who, request_id, comment=comment)
        )

    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        target = Target(review_id=review_id)
        who = Actor(user_id, user_id)
        return cast(Review, self._release(org, target, CancelReview, who, request_id, admin=admin))

    # -- rollouts

    def start_rollout(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        percent: int,
        started_by: str,
        expected: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
        notes: str | None = None,
        guard: Guard | None = None,
    ) -> Rollout:
        return cast(
            Rollout,
            self._release(
                org,
                Target(prompt_ref, version_ref),
                StartRollout,
                Actor(started_by),
                request_id,
                environment=environment,
                percent=percent,
                expected=expected,
                allow_breaking=allow_breaking,
                notes=notes,
                guard=guard,
            ),
        )

    def set_rollout_percent(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        percent: int,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        return cast(
            Rollout,
            self._release(
                org,
                Target(prompt_ref),
                SetPercent,
                Actor(actor),
                request_id,
                environment=environment,
                percent=percent,
                rollout_id=rollout_id,
            ),
        )

    def complete_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        *,
        rollout_id: str | None = None,
        request_id: str | None = None,
        allow_breaking: bool = False,
    ) -> Promotion:
        return cast(
            Promotion,
            self._release(
                org,
                Target(prompt_ref),
                CompleteRollout,
                Actor(promoted_by),
                request_id,
                environment=environment,
                notes=notes,
                archive_previous=archive_previous,
                rollout_id=rollout_id,
                allow_breaking=allow_breaking,
            ),
        )

    def abort_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
        guard: dict[str, Any] | None = None,
    ) -> Rollout:
        return cast(
            Rollout,
            self._release(
                org,
                Target(prompt_ref),
                AbortRollout,
                Actor(actor),
                request_id,
                environment=environment,
                rollout_id=rollout_id,
                guard=guard,
            ),
        )
