"""The ``rollouts`` rows as every change of a prompt sees them, in its transaction (the
prompt's row locked first): starting and ending a rollout with its event, and the
rollouts an archive or a delete ends. The RolloutStore itself is storage/sql/rollouts.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, and_, insert, select

from storage import lifecycle
from storage.ids import new_id
from storage.records import Rollout
from storage.sql.core import Concern, prompt_record
from storage.sql.tables import rollouts, versions


def rollout_of(row: Row[Any]) -> Rollout:
    """A ``rollouts`` row joined to its candidate's ``version_id``."""
    return Rollout(
        rollout_id=row.rollout_id,
        prompt_id=row.prompt_id,
        environment=row.environment,
        baseline_version=row.baseline_version,
        candidate_version=row.candidate_version,
        candidate_id=row.version_id,
        percent=row.percent,
        started_by=row.started_by,
        started_at=row.started_at,
        updated_at=row.updated_at,
    )


def _with_candidate_id() -> Any:
    return select(rollouts, versions.c.version_id).join(
        versions,
        and_(
            versions.c.org == rollouts.c.org,
            versions.c.prompt_id == rollouts.c.prompt_id,
            versions.c.version == rollouts.c.candidate_version,
        ),
    )


class SqlRolloutRows(Concern):
    """The ``rollouts`` rows as the other release concerns change them."""

    def rollouts_of(self, connection: Connection, prompt: Row[Any]) -> list[Rollout]:
        """The prompt's rollouts, by environment name."""
        rows = connection.execute(
            _with_candidate_id()
            .where(rollouts.c.org == prompt.org, rollouts.c.prompt_id == prompt.prompt_id)
            .order_by(rollouts.c.environment)
        ).all()
        return [rollout_of(row) for row in rows]

    def rollout_in(
        self, connection: Connection, prompt: Row[Any], environment: str
    ) -> Rollout | None:
        row = connection.execute(
            _with_candidate_id().where(
                rollouts.c.org == prompt.org,
                rollouts.c.prompt_id == prompt.prompt_id,
                rollouts.c.environment == environment,
            )
        ).first()
        return None if row is None else rollout_of(row)

    def begin_rollout(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        number: int,
        candidate_id: str,
        environment: str,
        baseline: int,
        percent: int,
        started_by: str,
        now: datetime,
        request_id: str | None,
    ) -> Rollout:
        """Start a rollout of version ``number`` over ``baseline`` (the caller checked the
        rules), with its event."""
        rollout = Rollout(
            rollout_id=new_id("ro_"),
            prompt_id=prompt.prompt_id,
            environment=environment,
            baseline_version=baseline,
            candidate_version=number,
            candidate_id=candidate_id,
            percent=percent,
            started_by=started_by,
            started_at=now,
            updated_at=now,
        )
        connection.execute(
            insert(rollouts).values(
                org=org,
                prompt_id=prompt.prompt_id,
                environment=environment,
                rollout_id=rollout.rollout_id,
                baseline_version=baseline,
                candidate_version=number,
                percent=percent,
                started_by=started_by,
                started_at=now,
                updated_at=now,
            )
        )
        self.rollout_event(
            connection, org, prompt, "rollout.started", rollout, started_by, request_id, now
        )
        return rollout

    def end_rollout(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        rollout: Rollout,
        kind: str,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> Rollout:
        """The rollout ends (``kind``: rollout.completed or rollout.aborted), with its
        event; returns it as it was at the end."""
        connection.execute(
            rollouts.delete().where(
                rollouts.c.org == org,
                rollouts.c.prompt_id == prompt.prompt_id,
                rollouts.c.environment == rollout.environment,
            )
        )
        ended = replace(rollout, updated_at=now)
        self.rollout_event(connection, org, prompt, kind, ended, actor, request_id, now)
        return ended

    def abort_rollouts_of(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        number: int,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        """End (aborted) the rollouts whose candidate or baseline version ``number`` is
        (it is being archived or deleted)."""
        ended = lifecycle.rollouts_ended_by(number, self.rollouts_of(connection, prompt))
        for rollout in ended:
            self.end_rollout(
                connection, org, prompt, rollout, "rollout.aborted", actor, request_id, now
            )

    def rollout_event(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        kind: str,
        rollout: Rollout,
        actor: str | None,
        request_id: str | None,
        now: datetime,
    ) -> None:
        row = connection.execute(
            select(versions).where(
                versions.c.org == org,
                versions.c.prompt_id == prompt.prompt_id,
                versions.c.version == rollout.candidate_version,
            )
        ).first()
        candidate = None if row is None else self.db.version(prompt.name, prompt.prompt_type, row)
        self.db.append_event(
            connection,
            org,
            kind,
            prompt_record(prompt),
            candidate,
            actor,
            request_id,
            now,
            previous_version=rollout.baseline_version,
            environment=rollout.environment,
            rollout_id=rollout.rollout_id,
            percent=rollout.percent,
        )
