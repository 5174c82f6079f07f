"""An org read and written whole: the primitives of storage/archive_front.py. A prompt
is exported under its row lock (every change takes it first); imports of one org are
serialized, so of two at once the second finds the first's data."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, exists, insert, or_, select, union
from sqlalchemy import exc as sa_exc

from storage.archive_front import ExportedPrompt, RestorePlan
from storage.archive_records import PromptSnapshot
from storage.sql import dialect
from storage.sql.core import Concern, prompt_record
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


def _rows(plan: RestorePlan) -> list[tuple[Table, list[dict[str, Any]]]]:
    org, snapshot = plan.snapshot.org, plan.snapshot
    every = [(p, v) for p in plan.prompts for v in p.item.versions]
    return [
        (prompts, [
            {
                **values_of(p.item.prompt),
                "org": org,
                "counter": p.item.next_version,
                "latest_version": p.latest,
                "production_version": p.production,
                "promotions": len(p.item.history),
            }
            for p in plan.prompts
        ]),
        (versions, [version_values(org, v) for _, v in every]),
        (includes, [row for _, v in every for row in include_values(org, v)]),
        (history, [
            history_values(org, record, position)
            for p in plan.prompts
            for position, record in enumerate(p.item.history, start=1)
        ]),
        (api_keys, [values_of(key) for key in snapshot.api_keys]),
        (users, [values_of(user) for user in snapshot.users]),
        (environments, [
            {**values_of(e), "org": org, "seq": seq} for seq, e in plan.environments
        ]),
        (placements, [
            {"org": org, "prompt_id": v.prompt_id, "environment": env, "version": v.version}
            for p in plan.prompts
            for env, v in p.placements
        ]),
        (reviews, [{**review_values(org, r), "seq": seq} for seq, r in plan.reviews]),
    ]  # fmt: skip


# The tables whose rows make an org exist (an import wants none).
_ORG_DATA = (prompts, api_keys, users)


class SqlArchive(Concern):
    """The primitives of ArchiveFront (SqlStorage's) and the orgs that have data."""

    def list_orgs(self) -> list[str]:
        every = union(*(select(table.c.org) for table in _ORG_DATA))
        with self.db.read() as connection:
            return sorted(connection.execute(every).scalars().all())

    def prompt_refs(self, org: str) -> list[str]:
        statement = select(prompts.c.prompt_id).where(prompts.c.org == org)
        with self.db.read() as connection:
            return list(connection.execute(statement.order_by(prompts.c.name)).scalars())

    def export_prompt(self, org: str, ref: str) -> ExportedPrompt | None:
        with self.db.write() as connection:  # the prompt's row lock: no change meanwhile
            statement = select(prompts).where(prompts.c.org == org, prompts.c.prompt_id == ref)
            row = connection.execute(dialect.locked(connection, statement)).first()
            if row is None:
                return None
            found = {}
            for table, order in ((versions, "version"), (history, "position"), (reviews, "seq")):
                found[table.name] = connection.execute(
                    select(table)
                    .where(table.c.org == org, table.c.prompt_id == ref)
                    .order_by(table.c[order])
                ).all()
        version = self.db.version
        snapshot = PromptSnapshot(
            prompt=prompt_record(row),
            next_version=row.counter,
            versions=tuple(version(row.name, row.prompt_type, v) for v in found["versions"]),
            history=tuple(history_record(h) for h in found["history"]),
        )
        return snapshot, [(r.seq, review_record(r)) for r in found["reviews"]]

    def restore(self, plan: RestorePlan) -> bool:
        org = plan.snapshot.org
        try:
            with self.db.write() as connection:
                dialect.serialize(connection, f"import_org:{org}")
                has_data = or_(*(exists().where(table.c.org == org) for table in _ORG_DATA))
                if connection.execute(select(has_data)).scalar():
                    return False
                connection.execute(environments.delete().where(environments.c.org == org))
                for table, values in _rows(plan):
                    if values:
                        connection.execute(insert(table), values)
        except sa_exc.IntegrityError:
            # A key or user added to the org since the check (PostgreSQL: nothing
            # locks an org's absent rows): the org is not empty any more.
            return False
        return True
