"""Environments: the org's list, their creation and change (release changes move what
each holds for a prompt, and delete them: storage/sql/releases.py)."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc
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
        if environment.name == PRODUCTION:  # (every org has it, stored or not)
            raise EnvironmentExists(environment.name)
        last = select(func.coalesce(func.max(environments.c.seq), 0)).where(
            environments.c.org == org
        )
        row = {**values_of(environment), "org": org, "seq": last.scalar_subquery() + 1}
        try:
            with self.db.write() as connection:
                connection.execute(insert(environments).values(row))
        except sa_exc.IntegrityError:
            raise EnvironmentExists(environment.name) from None
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
