"""Environments: the org's list and the version each holds for a prompt (placements are
moved by promotions: storage/sql/releases.py)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Row, func, insert, select, update

from storage import lifecycle
from storage.errors import EnvironmentExists, NothingInEnvironment
from storage.records import PRODUCTION, Environment, PromptVersion
from storage.sql.core import Concern, Database
from storage.sql.releases import SqlReleases
from storage.sql.tables import environments, placements, versions
from storage.sql.versions import SqlVersions


def _environment(row: Row[Any]) -> Environment:
    return Environment(row.name, row.required_approvals, row.description, row.created_at)


class SqlEnvironments(Concern):
    """Environments of an org, each change in one transaction."""

    def __init__(self, db: Database, versions: SqlVersions, releases: SqlReleases) -> None:
        super().__init__(db)
        self.versions = versions
        self.releases = releases

    def list_environments(self, org: str) -> list[Environment]:
        with self.db.read() as connection:
            rows = connection.execute(
                select(environments).where(environments.c.org == org).order_by(environments.c.seq)
            ).all()
        stored = {row.name: _environment(row) for row in rows}
        production = stored.pop(PRODUCTION, None) or lifecycle.default_production()
        return [production, *stored.values()]

    def get_environment(self, org: str, name: str) -> Environment:
        with self.db.read() as connection:
            return self.releases.environment(connection, org, name)

    @staticmethod
    def _next_seq(connection: Connection, org: str) -> int:
        last = connection.execute(
            select(func.max(environments.c.seq)).where(environments.c.org == org)
        ).scalar()
        return int(last or 0) + 1

    def create_environment(
        self, org: str, name: str, required_approvals: int = 0, description: str | None = None
    ) -> Environment:
        environment = Environment(name, required_approvals, description, self.db.clock())
        with self.db.write() as connection:
            found = connection.execute(
                select(environments.c.name).where(
                    environments.c.org == org, environments.c.name == name
                )
            ).first()
            if name == PRODUCTION or found is not None:
                raise EnvironmentExists(name)
            connection.execute(
                insert(environments).values(
                    org=org,
                    name=name,
                    seq=self._next_seq(connection, org),
                    required_approvals=required_approvals,
                    description=description,
                    created_at=environment.created_at,
                )
            )
        return environment

    def update_environment(
        self,
        org: str,
        name: str,
        *,
        required_approvals: int | None = None,
        description: str | None = None,
    ) -> Environment:
        with self.db.write() as connection:
            current = self.releases.environment(connection, org, name)
            changed = Environment(
                name,
                current.required_approvals if required_approvals is None else required_approvals,
                current.description if description is None else (description or None),
                current.created_at,
            )
            values = {
                "required_approvals": changed.required_approvals,
                "description": changed.description,
            }
            updated = connection.execute(
                update(environments)
                .where(environments.c.org == org, environments.c.name == name)
                .values(**values)
            ).rowcount
            if not updated:  # production as every org has it: stored from now on
                connection.execute(
                    insert(environments).values(
                        org=org, name=name, seq=0, created_at=None, **values
                    )
                )
        return changed

    @staticmethod
    def unplace_everywhere(connection: Connection, org: str, name: str) -> None:
        """Take every prompt's version out of ``name``, and the environment's row (its
        reviews: storage/sql/reviews.py's delete_environment)."""
        held = connection.execute(
            select(placements).where(placements.c.org == org, placements.c.environment == name)
        ).all()
        for placement in held:
            row = connection.execute(
                select(versions.c.placements).where(
                    versions.c.org == org,
                    versions.c.prompt_id == placement.prompt_id,
                    versions.c.version == placement.version,
                )
            ).scalar()
            kept = set(json.loads(row) if row else []) - {name}
            connection.execute(
                update(versions)
                .where(
                    versions.c.org == org,
                    versions.c.prompt_id == placement.prompt_id,
                    versions.c.version == placement.version,
                )
                .values(placements=json.dumps(sorted(kept)) if kept else None)
            )
        connection.execute(
            placements.delete().where(placements.c.org == org, placements.c.environment == name)
        )
        connection.execute(
            environments.delete().where(environments.c.org == org, environments.c.name == name)
        )

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        if environment == PRODUCTION:
            return self.versions.get_production(org, prompt_ref)
        found = self.versions.read_version(org, prompt_ref, "environment", environment=environment)
        if found is not None:
            return found
        with self.db.read() as connection:
            self.db.find_prompt(connection, org, prompt_ref)
            self.releases.environment(connection, org, environment)
        raise NothingInEnvironment(prompt_ref, environment)
