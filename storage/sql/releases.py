"""Every release change of the SQL backend: promotion and rollback, reviews, rollouts,
the edit, archive, unarchive and deletion of a version, and the deletion of an
environment. Each is one transaction that locks the prompt's row, loads its state
(storage/sql/state.py), lets the release engine decide (storage/release: every rule
is there) and applies the change (storage/sql/apply.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from sqlalchemy import Connection, Row, func, select, union

from storage import contracts, release
from storage.errors import PromptNotFound, ReviewNotFound, VersionNotFound
from storage.lifecycle import UNGUARDED, Expected
from storage.records import PRODUCTION, Promotion, PromptVersion, Review, Rollout
from storage.release import Actor, Request
from storage.sql import dialect
from storage.sql.apply import apply
from storage.sql.core import Concern
from storage.sql.identity import user_record
from storage.sql.state import load, org_environments
from storage.sql.tables import environments, placements, prompts, reviews, rollouts, users


class SqlReleases(Concern):
    """The release changes, each decided by storage/release and applied in one
    transaction."""

    @staticmethod
    def _locked_by_id(connection: Connection, org: str, prompt_id: str) -> Row[Any]:
        statement = select(prompts).where(prompts.c.org == org, prompts.c.prompt_id == prompt_id)
        row = connection.execute(dialect.locked(connection, statement)).first()
        if row is None:
            raise PromptNotFound(prompt_id)
        return row

    def _decide(
        self,
        org: str,
        prompt_ref: str | None,
        kind: type[Request],
        actor: Actor,
        request_id: str | None,
        *,
        version_ref: str | None = None,
        review_id: str | None = None,
        with_history: bool = False,
        **fields: Any,
    ) -> Any:
        """Decide the request ``kind(**fields)`` and apply its change, in one
        transaction; its answer (a refusal the change carries is raised after the
        commit: a stale review keeps its status). ``version_ref``: the version the
        request names (its ``version``); ``review_id``: the review it decides, whose
        prompt it locks, its actor's stored user read in the same transaction."""
        now = self.db.clock()
        with self.db.write() as connection:
            if review_id is not None:
                prompt_id = connection.execute(
                    select(reviews.c.prompt_id).where(
                        reviews.c.org == org, reviews.c.review_id == review_id
                    )
                ).scalar()
                if prompt_id is None:
                    raise ReviewNotFound(review_id)
                prompt = self._locked_by_id(connection, org, prompt_id)
                if kind in (release.ApproveReview, release.RejectReview):
                    row = connection.execute(
                        select(users).where(users.c.org == org, users.c.user_id == actor.identity)
                    ).first()
                    actor = replace(actor, record=None if row is None else user_record(row))
                fields["review_id"] = review_id
            else:
                assert prompt_ref is not None
                prompt = self.db.find_prompt(connection, org, prompt_ref)
            state, number = load(
                self.db,
                connection,
                prompt,
                version_ref=version_ref,
                review_id=review_id,
                with_history=with_history,
            )
            if version_ref is not None:
                if number is None:
                    raise VersionNotFound(prompt_ref or prompt.name, version_ref)
                fields["version"] = number
            request = kind(now=now, actor=actor, request_id=request_id, **fields)
            change = release.decide(state, request)
            apply(self.db, connection, prompt, change, now)
        if change.refusal is not None:
            raise change.refusal
        return change.answer

    # -- promotion and rollback

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
        found = self._decide(
            org,
            prompt_ref,
            release.Promote,
            Actor(promoted_by),
            request_id,
            version_ref=version_ref,
            environment=environment,
            notes=notes,
            archive_previous=archive_previous,
            expected=expected_production,
            allow_breaking=allow_breaking,
        )
        return cast(Promotion, found)

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
        found = self._decide(
            org,
            prompt_ref,
            release.Rollback,
            Actor(promoted_by),
            request_id,
            with_history=True,
            environment=environment,
            notes=notes,
            to_version=to_version,
            expected=expected_production,
        )
        return cast(Promotion, found)

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
    ) -> Review:
        found = self._decide(
            org,
            prompt_ref,
            release.RequestReview,
            Actor(requested_by, person),
            request_id,
            version_ref=version_ref,
            environment=environment,
            notes=notes,
            rollout_percent=rollout_percent,
            allow_breaking=allow_breaking,
        )
        return cast(Review, found)

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
        answer = self._decide(
            org,
            None,
            release.ApproveReview,
            Actor(user_id, user_id),
            request_id,
            review_id=review_id,
            username=username,
            comment=comment,
        )
        return cast(tuple[Review, Promotion | Rollout | None], answer)

    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        found = self._decide(
            org,
            None,
            release.RejectReview,
            Actor(user_id, user_id),
            request_id,
            review_id=review_id,
            comment=comment,
        )
        return cast(Review, found)

    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        found = self._decide(
            org,
            None,
            release.CancelReview,
            Actor(user_id, user_id),
            request_id,
            review_id=review_id,
            admin=admin,
        )
        return cast(Review, found)

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
    ) -> Rollout:
        found = self._decide(
            org,
            prompt_ref,
            release.StartRollout,
            Actor(started_by),
            request_id,
            version_ref=version_ref,
            environment=environment,
            percent=percent,
            expected=expected,
            allow_breaking=allow_breaking,
            notes=notes,
        )
        return cast(Rollout, found)

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
        found = self._decide(
            org,
            prompt_ref,
            release.SetPercent,
            Actor(actor),
            request_id,
            environment=environment,
            percent=percent,
            rollout_id=rollout_id,
        )
        return cast(Rollout, found)

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
        found = self._decide(
            org,
            prompt_ref,
            release.CompleteRollout,
            Actor(promoted_by),
            request_id,
            environment=environment,
            notes=notes,
            archive_previous=archive_previous,
            rollout_id=rollout_id,
            allow_breaking=allow_breaking,
        )
        return cast(Promotion, found)

    def abort_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        found = self._decide(
            org,
            prompt_ref,
            release.AbortRollout,
            Actor(actor),
            request_id,
            environment=environment,
            rollout_id=rollout_id,
        )
        return cast(Rollout, found)

    # -- versions

    def edit_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        content: str,
        *,
        variables: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        actor: str | None = None,
        request_id: str | None = None,
        person: str | None = None,
    ) -> PromptVersion:
        schema, kept = contracts.validated(variables, variables_schema, examples)
        kept_config = contracts.validated_config(config)
        found = self._decide(
            org,
            prompt_ref,
            release.EditVersion,
            Actor(actor, person),
            request_id,
            version_ref=version_ref,
            content=content,
            variables=tuple(variables),
            variables_schema=schema,
            examples=tuple(kept),
            config=kept_config,
        )
        return cast(PromptVersion, found)

    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        found = self._decide(
            org,
            prompt_ref,
            release.ArchiveVersion,
            Actor(actor),
            request_id,
            version_ref=version_ref,
        )
        return cast(PromptVersion, found)

    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        found = self._decide(
            org,
            prompt_ref,
            release.UnarchiveVersion,
            Actor(actor),
            request_id,
            version_ref=version_ref,
        )
        return cast(PromptVersion, found)

    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self._decide(
            org,
            prompt_ref,
            release.DeleteVersion,
            Actor(actor),
            request_id,
            version_ref=version_ref,
        )

    # -- environments

    def delete_environment(
        self,
        org: str,
        name: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Each prompt the environment touches leaves it (its rollout aborted, its open
        reviews cancelled, its placement gone: storage/release decides), the prompts
        locked at once in id order, so two deletions take them in the same order; then
        its row goes."""
        now = self.db.clock()
        with self.db.write() as connection:
            release.check_delete_environment(org_environments(connection, org), name)
            touched = union(
                select(placements.c.prompt_id).where(
                    placements.c.org == org, placements.c.environment == name
                ),
                select(reviews.c.prompt_id).where(
                    reviews.c.org == org, reviews.c.environment == name, reviews.c.status == "open"
                ),
                select(rollouts.c.prompt_id).where(
                    rollouts.c.org == org, rollouts.c.environment == name
                ),
            )
            ids = sorted(connection.execute(touched).scalars().all())
            locked = connection.execute(
                dialect.locked(
                    connection,
                    select(prompts)
                    .where(prompts.c.org == org, prompts.c.prompt_id.in_(ids))
                    .order_by(prompts.c.prompt_id),
                )
            ).all()
            # Prompts in the order of their first open review there, so the events of
            # the cancellations follow the reviews' order.
            first = dict(
                connection.execute(
                    select(reviews.c.prompt_id, func.min(reviews.c.seq))
                    .where(
                        reviews.c.org == org,
                        reviews.c.environment == name,
                        reviews.c.status == "open",
                    )
                    .group_by(reviews.c.prompt_id)
                ).all()
            )
            request = release.LeaveEnvironment(
                now=now, actor=Actor(actor), request_id=request_id, environment=name
            )
            for prompt in sorted(locked, key=lambda row: first.get(row.prompt_id, 2**62)):
                state, _ = load(self.db, connection, prompt)
                apply(self.db, connection, prompt, release.decide(state, request), now)
            connection.execute(
                environments.delete().where(environments.c.org == org, environments.c.name == name)
            )
