"""Environments: the org's list, their creation and change (release changes move what
each holds for a prompt, and delete them: storage/sql/releases.py)."""

from __future__ import annotations

from sqlalchemy import func, insert, select, update

from storage import lifecycle
from storage.errors import EnvironmentExists
from storage.records import PRODUCTION, Environment
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
