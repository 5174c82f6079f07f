"""Reviews: the two-person rule, each step in one transaction that first locks the
review's prompt row, so concurrent approvals of one review (and promotions of its
prompt) take turns; the last approval applies the promotion in its own transaction
(storage/sql/releases.py), the rules by storage/lifecycle.py."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, union, update

from storage import contracts, lifecycle
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import (
    LifecycleError,
    ReviewExists,
    ReviewNotFound,
    ReviewStale,
    VersionNotFound,
)
from storage.ids import new_id
from storage.records import PRODUCTION, Approval, BreakingChange, Page, Promotion, Review, Rollout
from storage.sql.core import Concern, Database, prompt_record
from storage.sql.environments import SqlEnvironments
from storage.sql.releases import SqlReleases
from storage.sql.rollout_rows import SqlRolloutRows
from storage.sql.tables import placements, prompts, reviews, rollouts
from storage.sql.versions import SqlVersions
from storage.times import rfc3339


def _body(review: Review) -> str:
    """What the columns do not hold, as JSON."""
    return json.dumps(
        {
            "prompt_name": review.prompt_name,
            "version_id": review.version_id,
            "requested_by": review.requested_by,
            "requested_at": rfc3339(review.requested_at),
            "notes": review.notes,
            "expected_version": review.expected_version,
            "required_approvals": review.required_approvals,
            "approvals": [
                {
                    "user_id": a.user_id,
                    "username": a.username,
                    "at": rfc3339(a.at),
                    "comment": a.comment,
                }
                for a in review.approvals
            ],
            "rejected_by": review.rejected_by,
            "rejection_comment": review.rejection_comment,
            "rollout_percent": review.rollout_percent,
            "version_author": review.version_author,
            "allow_breaking": review.allow_breaking,
            "breaking": [change.to_json() for change in review.breaking],
        }
    )


def _review(row: Row[Any]) -> Review:
    b = json.loads(row.body)
    return Review(
        review_id=row.review_id,
        prompt_id=row.prompt_id,
        prompt_name=b["prompt_name"],
        version=row.version,
        version_id=b["version_id"],
        environment=row.environment,
        status=row.status,
        requested_by=b["requested_by"],
        requested_at=datetime.fromisoformat(b["requested_at"]),
        notes=b["notes"],
        expected_version=b["expected_version"],
        required_approvals=b["required_approvals"],
        approvals=tuple(
            Approval(a["user_id"], a["username"], datetime.fromisoformat(a["at"]), a["comment"])
            for a in b["approvals"]
        ),
        rejected_by=b["rejected_by"],
        decided_at=row.decided_at,
        rollout_percent=b["rollout_percent"],
        version_author=b["version_author"],
        rejection_comment=b["rejection_comment"],
        allow_breaking=b.get("allow_breaking", False),
        breaking=tuple(BreakingChange(**change) for change in b.get("breaking", ())),
    )


class SqlReviews(Concern):
    """Reviews of an org, and the deletion of an environment (which cancels them)."""

    def __init__(
        self,
        db: Database,
        versions: SqlVersions,
        releases: SqlReleases,
        rows: SqlRolloutRows,
        environments: SqlEnvironments,
    ) -> None:
        super().__init__(db)
        self.versions = versions
        self.releases = releases
        self.rows = rows
        self.environments = environments

    def _locked_review(
        self, connection: Connection, org: str, review_id: str
    ) -> tuple[Row[Any], Review]:
        """The review's prompt row (locked first, as every change of a prompt does) and
        the review; ReviewNotFound."""
        found = connection.execute(
            select(reviews.c.prompt_id).where(
                reviews.c.org == org, reviews.c.review_id == review_id
            )
        ).scalar()
        if found is None:
            raise ReviewNotFound(review_id)
        prompt = self.db.find_prompt(connection, org, found)
        row = connection.execute(
            select(reviews).where(reviews.c.org == org, reviews.c.review_id == review_id)
        ).one()
        return prompt, _review(row)

    @staticmethod
    def _save(connection: Connection, org: str, review: Review) -> None:
        connection.execute(
            update(reviews)
            .where(reviews.c.org == org, reviews.c.review_id == review.review_id)
            .values(status=review.status, decided_at=review.decided_at, body=_body(review))
        )

    def delete_environment(
        self,
        org: str,
        name: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Here rather than beside the other environment changes: it cancels the
        environment's open reviews, aborts its rollouts and writes their events."""
        now = self.db.clock()
        with self.db.write() as connection:
            self.releases.environment(connection, org, name)
            if name == PRODUCTION:
                raise LifecycleError("production cannot be deleted")
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
            # Every change of a prompt locks its row first; in id order, so two deletions
            # take them in the same order.
            locked = {
                prompt_id: self.db.find_prompt(connection, org, prompt_id)
                for prompt_id in sorted(connection.execute(touched).scalars().all())
            }
            # Its rollouts end (aborted), in prompt id order.
            for prompt in locked.values():
                rollout = self.rows.rollout_in(connection, prompt, name)
                if rollout is not None:
                    self.rows.end_rollout(
                        connection, org, prompt, rollout, "rollout.aborted", actor, request_id, now
                    )
            self.environments.unplace_everywhere(connection, org, name)
            open_rows = connection.execute(
                select(reviews)
                .where(
                    reviews.c.org == org, reviews.c.environment == name, reviews.c.status == "open"
                )
                .order_by(reviews.c.seq)
            ).all()
            for row in open_rows:
                review = lifecycle.closed(_review(row), "cancelled", now)
                self._save(connection, org, review)
                prompt = locked[review.prompt_id]
                self._review_event(
                    connection, org, prompt, "review.cancelled", review, actor, request_id, now
                )

    def _review_event(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        kind: str,
        review: Review,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        version = self.releases.find_number(connection, prompt, review.version)
        self.db.append_event(
            connection,
            org,
            kind,
            prompt_record(prompt),
            version,
            actor,
            request_id,
            now,
            environment=review.environment,
            review_id=review.review_id,
            status=review.status,
        )

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
    ) -> Review:
        now = self.db.clock()
        lifecycle.check_acknowledgement(allow_breaking, notes)
        with self.db.write() as connection:
            prompt, version = self.versions.locked_version(connection, org, prompt_ref, version_ref)
            env = self.releases.environment(connection, org, environment)
            open_id = connection.execute(
                select(reviews.c.review_id).where(
                    reviews.c.org == org,
                    reviews.c.prompt_id == prompt.prompt_id,
                    reviews.c.environment == environment,
                    reviews.c.version == version.version,
                    reviews.c.status == "open",
                )
            ).scalar()
            if open_id is not None:
                raise ReviewExists(open_id)
            current = self.releases.current(connection, prompt, environment)
            if rollout_percent is None:
                lifecycle.check_enterable(environment, version, current)
            else:
                lifecycle.check_percent(rollout_percent)
                lifecycle.check_rollout_start(prompt_ref, environment, version, current)
            changes = contracts.breaking_changes(
                self.releases.held(connection, prompt, current), version
            )
            lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            review = Review(
                review_id=new_id("rv_"),
                prompt_id=prompt.prompt_id,
                prompt_name=prompt.name,
                version=version.version,
                version_id=version.version_id,
                environment=environment,
                status="open",
                requested_by=requested_by,
                requested_at=now,
                notes=notes,
                expected_version=current,
                required_approvals=max(env.required_approvals, 1),
                approvals=(),
                rejected_by=None,
                decided_at=None,
                rollout_percent=rollout_percent,
                version_author=version.created_by,
                allow_breaking=allow_breaking,
                breaking=tuple(changes),
            )
            last = connection.execute(
                select(func.max(reviews.c.seq)).where(reviews.c.org == org)
            ).scalar()
            connection.execute(
                insert(reviews).values(
                    org=org,
                    review_id=review.review_id,
                    seq=int(last or 0) + 1,
                    prompt_id=review.prompt_id,
                    environment=environment,
                    version=review.version,
                    status="open",
                    decided_at=None,
                    body=_body(review),
                )
            )
            self._review_event(
                connection, org, prompt, "review.requested", review, requested_by, request_id, now
            )
        return review

    def get_review(self, org: str, review_id: str) -> Review:
        with self.db.read() as connection:
            row = connection.execute(
                select(reviews).where(reviews.c.org == org, reviews.c.review_id == review_id)
            ).first()
        if row is None:
            raise ReviewNotFound(review_id)
        return _review(row)

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
        before = decode_number_cursor(cursor)
        with self.db.read() as connection:
            statement = select(reviews).where(reviews.c.org == org)
            if prompt_ref is not None:
                prompt = self.db.find_prompt(connection, org, prompt_ref)
                statement = statement.where(reviews.c.prompt_id == prompt.prompt_id)
            if status is not None:
                statement = statement.where(reviews.c.status == status)
            if environment is not None:
                statement = statement.where(reviews.c.environment == environment)
            if before is not None:
                statement = statement.where(reviews.c.seq < before)
            rows = connection.execute(
                statement.order_by(reviews.c.seq.desc()).limit(limit + 1)
            ).all()
        items = [_review(row) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(items, encode_cursor(str(rows[limit - 1].seq)) if more else None)

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
        now = self.db.clock()
        stale: ReviewStale | None = None
        applied: Promotion | Rollout | None = None
        with self.db.write() as connection:
            prompt, review = self._locked_review(connection, org, review_id)
            lifecycle.check_approver(review, user_id)
            review = lifecycle.with_approval(review, Approval(user_id, username, now, comment))
            if not lifecycle.complete(review):
                self._save(connection, org, review)
                self._review_event(
                    connection, org, prompt, "review.approved", review, user_id, request_id, now
                )
                return review, None
            self.releases.environment(connection, org, review.environment)
            current = self.releases.current(connection, prompt, review.environment)
            if current != review.expected_version:
                review = lifecycle.closed(review, "stale", now)
                self._save(connection, org, review)
                self._review_event(
                    connection, org, prompt, "review.approved", review, user_id, request_id, now
                )
                stale = ReviewStale(
                    review_id,
                    review.prompt_name,
                    review.expected_version,
                    current,
                    review.environment,
                )
            else:
                version = self.releases.find_number(connection, prompt, review.version)
                if version is None:
                    raise VersionNotFound(review.prompt_name, str(review.version))
                if review.rollout_percent is None:
                    lifecycle.check_enterable(review.environment, version, current)
                else:
                    lifecycle.check_rollout_start(
                        review.prompt_name, review.environment, version, current
                    )
                lifecycle.check_no_rollout(
                    review.prompt_name,
                    self.rows.rollout_in(connection, prompt, review.environment),
                    "review",
                )
                changes = contracts.breaking_changes(
                    self.releases.held(connection, prompt, current), version
                )
                breaking = lifecycle.check_breaking(
                    review.prompt_name, review.environment, changes, review.allow_breaking
                )
                review = lifecycle.closed(review, "applied", now)
                self._save(connection, org, review)
                self._review_event(
                    connection, org, prompt, "review.approved", review, user_id, request_id, now
                )
                if review.rollout_percent is not None:
                    assert current is not None  # check_rollout_start
                    applied = self.rows.begin_rollout(
                        connection,
                        org,
                        prompt,
                        review.version,
                        version.version_id,
                        review.environment,
                        current,
                        review.rollout_percent,
                        user_id,
                        now,
                        request_id,
                    )
                else:
                    applied = self.releases.enter(
                        connection,
                        org,
                        prompt,
                        review.version,
                        review.environment,
                        user_id,
                        review.notes,
                        now,
                        request_id,
                        review=review,
                        breaking=breaking,
                    )
                # The prompt row the event reads is the one _enter left.
                moved = connection.execute(
                    select(prompts).where(
                        prompts.c.org == org, prompts.c.prompt_id == prompt.prompt_id
                    )
                ).one()
                self._review_event(
                    connection, org, moved, "review.applied", review, user_id, request_id, now
                )
        # Raised after the commit: the stale status and the approval are kept.
        if stale is not None:
            raise stale
        return review, applied

    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        now = self.db.clock()
        with self.db.write() as connection:
            prompt, review = self._locked_review(connection, org, review_id)
            lifecycle.check_rejecter(review, user_id)
            review = lifecycle.closed(
                review, "rejected", now, rejected_by=user_id, rejection_comment=comment
            )
            self._save(connection, org, review)
            self._review_event(
                connection, org, prompt, "review.rejected", review, user_id, request_id, now
            )
        return review

    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        now = self.db.clock()
        with self.db.write() as connection:
            prompt, review = self._locked_review(connection, org, review_id)
            lifecycle.check_canceller(review, user_id, admin)
            review = lifecycle.closed(review, "cancelled", now)
            self._save(connection, org, review)
            self._review_event(
                connection, org, prompt, "review.cancelled", review, user_id, request_id, now
            )
        return review
