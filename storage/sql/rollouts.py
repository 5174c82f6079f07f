"""Rollouts: each change in one transaction that locks the prompt's row first (so a
completion, a step, an abort and a promotion of one prompt take turns), the rules by
storage/lifecycle.py; the environment read on the read lane."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Row, update

from storage import contracts, lifecycle
from storage.errors import NoProductionVersion, NothingInEnvironment, RolloutNotFound
from storage.lifecycle import UNGUARDED, Expected
from storage.records import PRODUCTION, InRollout, Promotion, PromptVersion, Rollout
from storage.sql.core import Concern, Database
from storage.sql.read_lane import VERSION_WIDTH
from storage.sql.releases import SqlReleases
from storage.sql.rollout_rows import SqlRolloutRows
from storage.sql.tables import rollouts, utc
from storage.sql.versions import SqlVersions


class SqlRollouts(Concern):
    def __init__(
        self, db: Database, versions: SqlVersions, releases: SqlReleases, rows: SqlRolloutRows
    ) -> None:
        super().__init__(db)
        self.versions = versions
        self.releases = releases
        self.rows = rows

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
        lifecycle.check_percent(percent)
        lifecycle.check_acknowledgement(allow_breaking, notes)
        now = self.db.clock()
        with self.db.write() as connection:
            prompt, version = self.versions.locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_unprotected(self.releases.environment(connection, org, environment))
            current = self.releases.current(connection, prompt, environment)
            lifecycle.check_expected(prompt_ref, expected, current, environment)
            lifecycle.check_rollout_start(prompt_ref, environment, version, current)
            lifecycle.check_no_rollout(
                prompt_ref, self.rows.rollout_in(connection, prompt, environment), "start"
            )
            changes = contracts.breaking_changes(
                self.releases.held(connection, prompt, current), version
            )
            lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            assert current is not None  # check_rollout_start
            return self.rows.begin_rollout(
                connection,
                org,
                prompt,
                version.version,
                version.version_id,
                environment,
                current,
                percent,
                started_by,
                now,
                request_id,
            )

    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        with self.db.read() as connection:
            return self._rollout(connection, org, prompt_ref, environment, None)[1]

    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        with self.db.read() as connection:
            return self.rows.rollouts_of(
                connection, self.db.find_prompt(connection, org, prompt_ref)
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
        lifecycle.check_percent(percent)
        now = self.db.clock()
        with self.db.write() as connection:
            prompt, rollout = self._rollout(connection, org, prompt_ref, environment, rollout_id)
            connection.execute(
                update(rollouts)
                .where(
                    rollouts.c.org == org,
                    rollouts.c.prompt_id == prompt.prompt_id,
                    rollouts.c.environment == environment,
                )
                .values(percent=percent, updated_at=now)
            )
            stepped = replace(rollout, percent=percent, updated_at=now)
            self.rows.rollout_event(
                connection, org, prompt, "rollout.updated", stepped, actor, request_id, now
            )
        return stepped

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
        now = self.db.clock()
        lifecycle.check_acknowledgement(allow_breaking, notes)
        with self.db.write() as connection:
            prompt, rollout = self._rollout(connection, org, prompt_ref, environment, rollout_id)
            candidate = self.releases.find_number(connection, prompt, rollout.candidate_version)
            assert candidate is not None  # deleting the candidate ends the rollout
            current = self.releases.current(connection, prompt, environment)
            # Unreachable through the rules, checked as for any promotion.
            lifecycle.check_enterable(environment, candidate, current)
            changes = contracts.breaking_changes(
                self.releases.held(connection, prompt, current), candidate
            )
            breaking = lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            promotion = self.releases.enter(
                connection,
                org,
                prompt,
                candidate.version,
                environment,
                promoted_by,
                notes,
                now,
                request_id,
                archive_previous=archive_previous,
                rollout=rollout,
                breaking=breaking,
            )
            self.rows.end_rollout(
                connection, org, prompt, rollout, "rollout.completed", promoted_by, request_id, now
            )
        return promotion

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
        now = self.db.clock()
        with self.db.write() as connection:
            prompt, rollout = self._rollout(connection, org, prompt_ref, environment, rollout_id)
            return self.rows.end_rollout(
                connection, org, prompt, rollout, "rollout.aborted", actor, request_id, now
            )

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        pick = "production+rollout" if environment == PRODUCTION else "environment+rollout"
        params = {"org": org, "ref": prompt_ref, "environment": environment}
        row = self.db.lane(("name", pick), params)
        if row is None and prompt_ref.startswith("pmt_"):
            row = self.db.lane(("id", pick), params)
        if row is None:
            with self.db.read() as connection:
                self.db.find_prompt(connection, org, prompt_ref)
                self.releases.environment(connection, org, environment)
            if environment == PRODUCTION:
                raise NoProductionVersion(prompt_ref)
            raise NothingInEnvironment(prompt_ref, environment)
        version = self.db.lane_version(row)
        rollout_id, baseline, number, percent, started_by, started_at, updated_at = row[
            VERSION_WIDTH:
        ]
        if rollout_id is None:
            return version
        candidate_row = self.db.lane(
            ("id", "number"), {"org": org, "ref": version.prompt_id, "number": number}
        )
        if candidate_row is None:  # the candidate was deleted since: the rollout too
            return version
        candidate = self.db.lane_version(candidate_row)
        rollout = Rollout(
            rollout_id=rollout_id,
            prompt_id=version.prompt_id,
            environment=environment,
            baseline_version=baseline,
            candidate_version=number,
            candidate_id=candidate.version_id,
            percent=percent,
            started_by=started_by,
            started_at=utc(started_at),
            updated_at=utc(updated_at),
        )
        return InRollout(version, rollout, candidate)

    # -- helpers

    def _rollout(
        self,
        connection: Connection,
        org: str,
        prompt_ref: str,
        environment: str,
        rollout_id: str | None,
    ) -> tuple[Row[Any], Rollout]:
        """The prompt's row (locked when writing) and its rollout in ``environment``
        (``rollout_id``: only that one)."""
        prompt = self.db.find_prompt(connection, org, prompt_ref)
        self.releases.environment(connection, org, environment)
        rollout = self.rows.rollout_in(connection, prompt, environment)
        if rollout is None or rollout_id not in (None, rollout.rollout_id):
            raise RolloutNotFound(prompt_ref, environment, rollout_id)
        return prompt, rollout
