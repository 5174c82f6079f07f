"""An org's data read and written whole (backup and restore, promptsvc/backup).

Export reads each prompt in one transaction that holds the prompt's row lock (every
change of a prompt or its versions takes it first, storage/sql/prompts.py), so each
prompt is consistent in itself. Import writes the whole org in one transaction, after
checking that the org has no prompts, keys or users; imports of one org are
serialized (storage/sql/dialect.py), so of two at once the second finds the first's
data.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, exists, insert, or_, select, union
from sqlalchemy import exc as sa_exc

from storage import lifecycle
from storage.archive_front import ArchiveFront, ExportedPrompt
from storage.archive_records import OrgSnapshot, PromptSnapshot
from storage.errors import OrgNotEmpty
from storage.identity_records import ApiKey, User
from storage.records import PRODUCTION, Environment
from storage.sql import dialect
from storage.sql.core import Concern, Database, prompt_record
from storage.sql.environments import SqlEnvironments
from storage.sql.identity import SqlIdentity
from storage.sql.identity_tables import api_keys, users
from storage.sql.rows import (
    history_record,
    history_values,
    include_values,
    review_record,
    review_values,
    values_of,
    version_values,
)
from storage.sql.tables import (
    environments,
    history,
    includes,
    placements,
    prompts,
    reviews,
    versions,
)


def _prompt_values(org: str, item: PromptSnapshot) -> dict[str, Any]:
    """The ``prompts`` row, with the counters the operations keep, from the versions."""
    numbers = [v.version for v in item.versions]
    published = [v.version for v in item.versions if v.status == "published"]
    prompt = item.prompt
    return {
        "prompt_id": prompt.prompt_id,
        "org": org,
        "name": prompt.name,
        "prompt_type": prompt.prompt_type,
        "description": prompt.description,
        "created_at": prompt.created_at,
        "updated_at": prompt.updated_at,
        "counter": item.next_version,
        "latest_version": max(numbers) if numbers else None,
        "production_version": published[0] if published else None,
        "promotions": len(item.history),
    }


def _releases(org: str, snapshot: OrgSnapshot) -> list[tuple[Table, list[dict[str, Any]]]]:
    """The rows of the org's environments (production only when changed, at ``seq`` 0 as
    update_environment keeps it), placements and reviews (``seq`` in request order)."""
    default = lifecycle.default_production()
    environment_rows = [
        {
            "org": org,
            "name": e.name,
            "seq": 0 if e.name == PRODUCTION else position,
            "required_approvals": e.required_approvals,
            "description": e.description,
            "created_at": e.created_at,
        }
        for position, e in enumerate(snapshot.environments, start=1)
        if e != default
    ]
    placement_rows = [
        {"org": org, "prompt_id": v.prompt_id, "environment": env, "version": v.version}
        for item in snapshot.prompts
        for v in item.versions
        for env in v.placements
    ]
    review_rows = [
        {**review_values(org, review), "seq": seq}
        for seq, review in enumerate(snapshot.reviews, start=1)
    ]
    return [
        (environments, environment_rows),
        (placements, placement_rows),
        (reviews, review_rows),
    ]


class SqlArchive(Concern, ArchiveFront):
    def __init__(self, db: Database, environments: SqlEnvironments, identity: SqlIdentity) -> None:
        super().__init__(db)
        self.environments = environments
        self.identity = identity

    def list_orgs(self) -> list[str]:
        every = union(select(prompts.c.org), select(api_keys.c.org), select(users.c.org))
        with self.db.read() as connection:
            return sorted(connection.execute(every).scalars().all())

    @staticmethod
    def _has_data(connection: Connection, org: str) -> bool:
        found = connection.execute(
            select(
                or_(
                    exists().where(prompts.c.org == org),
                    exists().where(api_keys.c.org == org),
                    exists().where(users.c.org == org),
                )
            )
        ).scalar()
        return bool(found)

    def list_environments(self, org: str) -> list[Environment]:
        return self.environments.list_environments(org)

    def list_api_keys(self, org: str) -> list[ApiKey]:
        return self.identity.list_api_keys(org)

    def list_users(self, org: str) -> list[User]:
        return self.identity.list_users(org)

    def _prompt_refs(self, org: str) -> list[str]:
        statement = select(prompts.c.prompt_id).where(prompts.c.org == org)
        with self.db.read() as connection:
            return list(connection.execute(statement.order_by(prompts.c.name)).scalars())

    def _export_prompt(self, org: str, ref: str) -> ExportedPrompt | None:
        with self.db.write() as connection:  # the prompt's row lock: no change meanwhile
            statement = select(prompts).where(prompts.c.org == org, prompts.c.prompt_id == ref)
            row = connection.execute(dialect.locked(connection, statement)).first()
            if row is None:
                return None
            found = {}
            for table, order in ((versions, versions.c.version), (history, history.c.position)):
                found[table.name] = connection.execute(
                    select(table)
                    .where(table.c.org == org, table.c.prompt_id == ref)
                    .order_by(order)
                ).all()
            review_rows = connection.execute(
                select(reviews).where(reviews.c.org == org, reviews.c.prompt_id == ref)
            ).all()
        version = self.db.version
        snapshot = PromptSnapshot(
            prompt=prompt_record(row),
            next_version=row.counter,
            versions=tuple(version(row.name, row.prompt_type, v) for v in found["versions"]),
            history=tuple(history_record(h) for h in found["history"]),
        )
        return snapshot, [(r.seq, review_record(r)) for r in review_rows]

    def import_org(self, snapshot: OrgSnapshot) -> None:
        org = snapshot.org
        try:
            with self.db.write() as connection:
                dialect.serialize(connection, f"import_org:{org}")
                if self._has_data(connection, org):
                    raise OrgNotEmpty(org)
                # The snapshot's environments replace any the org kept.
                connection.execute(environments.delete().where(environments.c.org == org))
                rows = [_prompt_values(org, item) for item in snapshot.prompts]
                version_rows = [
                    version_values(org, v) for item in snapshot.prompts for v in item.versions
                ]
                history_rows = [
                    history_values(org, record, position)
                    for item in snapshot.prompts
                    for position, record in enumerate(item.history, start=1)
                ]
                include_rows = [
                    row
                    for item in snapshot.prompts
                    for v in item.versions
                    for row in include_values(org, v)
                ]
                for table, values in (
                    (prompts, rows),
                    (versions, version_rows),
                    (includes, include_rows),
                    (history, history_rows),
                    (api_keys, [values_of(key) for key in snapshot.api_keys]),
                    (users, [values_of(user) for user in snapshot.users]),
                    *_releases(org, snapshot),
                ):
                    if values:
                        connection.execute(insert(table), values)
        except sa_exc.IntegrityError:
            # A key or user added to the org since the check (PostgreSQL: nothing
            # locks an org's absent rows): the org is not empty any more.
            raise OrgNotEmpty(org) from None
