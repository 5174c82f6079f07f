"""Environments: the org's list, their creation and change (release changes move what
each holds for a prompt, and delete them: storage/sql/releases.py)."""

from __future__ import annotations

from sqlalchemy import func, insert, select

from storage import lifecycle
from storage.errors import EnvironmentExists
from storage.records import PRODUCTION, Environment
from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.rows import values_of
from storage.sql.state import environment_named, org_environments
from storage.sql.tables import environments


class SqlEnvironments(Concern):
    """Environments of an org, each change in one transaction."""

    def stored_environments(self, org: str) -> dict[str, Environment]:
        with self.db.read() as connection:
            return org_environments(connection, org)

    def add_environment(self, org: str, environment: Environment) -> Environment:
        name = environment.name
        with self.db.write() as connection:
            found = connection.execute(
                select(environments.c.name).where(
                    environments.c.org == org, environments.c.name == name
                )
            ).first()
            if name == PRODUCTION or found is not None:
                raise EnvironmentExists(name)
            last = connection.execute(
                select(func.max(environments.c.seq)).where(environments.c.org == org)
            ).scalar()
            row = {**values_of(environment), "org": org, "seq": int(last or 0) + 1}
            connection.execute(insert(environments).values(row))
        return environment

    def change_environment(
        self, org: str, name: str, change: lifecycle.EnvironmentChange
    ) -> Environment:
        with self.db.write() as connection:
            changed = change.applied(environment_named(connection, org, name))
            # Production as every org has it (no row yet) is stored from now on.
            row = {**values_of(changed), "org": org, "seq": 0}
            changes = {key: row[key] for key in ("required_approvals", "description")}
            connection.execute(dialect.upsert(connection, environments, row, **changes))
        return changed
