"""Every release change of the SQL backend: promotion and rollback, reviews, rollouts,
the edit, archive, unarchive and deletion of a version, and the deletion of an
environment, and of a prompt. Each is one transaction that locks the prompt's row, loads its state
(storage/sql/state.py), lets the release engine decide (storage/release: every rule
is there) and applies the change (storage/sql/apply.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import bindparam, func, select, union

from storage import release
from storage.errors import ReviewNotFound, VersionNotFound
from storage.release import Actor, Request
from storage.release.methods import ReleaseMethods, Target
from storage.sql import dialect, direct
from storage.sql.apply import apply
from storage.sql.core import Concern
from storage.sql.identity import user_record
from storage.sql.identity_tables import users
from storage.sql.state import locked_state, org_environments
from storage.sql.tables import environments, placements, prompts, reviews, rollouts

# Built once (storage/sql/direct.py): a review's prompt, and a user's row.
_REVIEW_PROMPT = (
    select(reviews.c.prompt_id, prompts.c.name)
    .join(prompts)  # (on the foreign key)
    .where(reviews.c.org == bindparam("w_org"), reviews.c.review_id == bindparam("w_review_id"))
)
_USER = select(users).where(
    users.c.org == bindparam("w_org"), users.c.user_id == bindparam("w_user_id")
)


class SqlReleases(ReleaseMethods, Concern):
    """The release changes (storage/release/methods.py)."""

    def _release(
        self,
        org: str,
        target: Target,
        kind: type[Request],
        actor: Actor,
        request_id: str | None,
        **fields: Any,
    ) -> Any:
        """One transaction: lock the prompt (the review's, for a review id), load its
        state, decide, apply; a refusal the change carries is raised after the commit
        (a stale review keeps its status)."""
        now = self.db.clock()
        with self.db.write() as connection:
            prompt_ref, review = target.prompt_ref, None
            if target.review_id is not None:
                # The review's prompt and (an approval) the approver's stored record:
                # one round trip.
                reads: list[tuple[Any, dict[str, Any]]] = [
                    (_REVIEW_PROMPT, {"w_org": org, "w_review_id": target.review_id})
                ]
                if target.approver:
                    reads.append((_USER, {"w_org": org, "w_user_id": actor.identity}))
                found = direct.run_all(connection, reads)
                if not found[0]:
                    raise ReviewNotFound(target.review_id)
                review = found[0][0]
                prompt_ref = review.name
                if target.approver:
                    record = user_record(found[1][0]) if found[1] else None
                    actor = replace(actor, record=record)
                fields["review_id"] = target.review_id
            assert prompt_ref is not None
            prompt, state, number = locked_state(
                self.db,
                connection,
                org,
                prompt_ref,
                version_ref=target.version_ref,
                review_id=target.review_id,
                with_history=target.history,
            )
            if review is not None and review.prompt_id != prompt.prompt_id:
                raise ReviewNotFound(fields["review_id"])  # its prompt gone, another named so
            if target.version_ref is not None:
                if number is None:
                    raise VersionNotFound(target.prompt_ref or prompt.name, target.version_ref)
                fields["version"] = number
            request = kind(now=now, actor=actor, request_id=request_id, **fields)
            change = release.decide(state, request)
            if change.deleted_prompt:
                # Versions, history and the rest go with it (ON DELETE CASCADE).
                connection.execute(
                    prompts.delete().where(
                        prompts.c.org == org, prompts.c.prompt_id == prompt.prompt_id
                    )
                )
                self.db.append_events(connection, org, change.events)
            else:
                apply(self.db, connection, prompt, change, now)
        if change.refusal is not None:
            raise change.refusal
        return change.answer

    # -- environments

    def delete_environment(self, org: str, leave: release.LeaveEnvironment) -> None:
        """Each prompt the environment touches leaves it (its rollout aborted, its open
        reviews cancelled, its placement gone: storage/release decides), the prompts
        locked at once in id order, so two deletions take them in the same order; then
        its row goes."""
        name = leave.environment
        with self.db.write() as connection:
            release.check_delete_environment(org_environments(connection, org), name)
            open_there = (
                reviews.c.org == org,
                reviews.c.environment == name,
                reviews.c.status == "open",
            )
            touched = union(
                select(reviews.c.prompt_id).where(*open_there),
                *(
                    select(table.c.prompt_id).where(table.c.org == org, table.c.environment == name)
                    for table in (placements, rollouts)
                ),
            )
            locked = connection.execute(
                dialect.locked(
                    connection,
                    select(prompts)
                    .where(prompts.c.org == org, prompts.c.prompt_id.in_(touched))
                    .order_by(prompts.c.prompt_id),
                )
            ).all()
            # Prompts in the order of their first open review there, so the events of
            # the cancellations follow the reviews' order.
            first = dict(
                connection.execute(
                    select(reviews.c.prompt_id, func.min(reviews.c.seq))
                    .where(*open_there)
                    .group_by(reviews.c.prompt_id)
                ).all()
            )
            for prompt in sorted(locked, key=lambda row: first.get(row.prompt_id, 2**62)):
                _, state, _ = locked_state(self.db, connection, org, prompt.name)
                apply(self.db, connection, prompt, release.decide(state, leave), leave.now)
            connection.execute(
                environments.delete().where(environments.c.org == org, environments.c.name == name)
            )
