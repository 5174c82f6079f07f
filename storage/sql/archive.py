"""An org's data read and written whole (backup and restore, promptsvc/backup).

Export reads each prompt in one transaction that holds the prompt's row lock (every
change of a prompt or its versions takes it first, storage/sql/prompts.py), so each
prompt is consistent in itself. Import writes the whole org in one transaction, after
checking that the org has no prompts, keys or users; imports of one org are
serialized (storage/sql/dialect.py), so of two at once the second finds the first's
data.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, exists, insert, or_, select, union
from sqlalchemy import exc as sa_exc

from storage.errors import OrgNotEmpty
from storage.interface import OrgArchive
from storage.records import OrgSnapshot, PromptSnapshot, PromptVersion
from storage.sql import dialect
from storage.sql.core import SqlCore
from storage.sql.identity import api_key_record, api_key_values, user_record, user_values
from storage.sql.releases import _record
from storage.sql.tables import api_keys, history, prompts, users, versions


def _version_values(org: str, version: PromptVersion) -> dict[str, Any]:
    return {
        "org": org,
        "prompt_id": version.prompt_id,
        "version": version.version,
        "version_id": version.version_id,
        "content": version.content,
        "variables": json.dumps(list(version.variables)),
        "status": version.status,
        "metadata": json.dumps(version.metadata),
        "tags": json.dumps(list(version.tags)),
        "created_at": version.created_at,
        "updated_at": version.updated_at,
        "promoted_at": version.promoted_at,
        "promoted_by": version.promoted_by,
        "created_by": version.created_by,
        "variables_schema": None
        if version.variables_schema is None
        else json.dumps(version.variables_schema),
        "examples": json.dumps(list(version.examples)) if version.examples else None,
    }


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


class SqlArchive(SqlCore, OrgArchive):
    def list_orgs(self) -> list[str]:
        every = union(select(prompts.c.org), select(api_keys.c.org), select(users.c.org))
        with self._read() as connection:
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

    def _export_prompt(self, org: str, prompt_id: str) -> PromptSnapshot | None:
        """One prompt with its versions and history; None when it was deleted since."""
        with self._write() as connection:
            statement = select(prompts).where(
                prompts.c.org == org, prompts.c.prompt_id == prompt_id
            )
            row = connection.execute(dialect.locked(connection, statement)).first()
            if row is None:
                return None
            version_rows = connection.execute(
                select(versions)
                .where(versions.c.org == org, versions.c.prompt_id == prompt_id)
                .order_by(versions.c.version)
            ).all()
            history_rows = connection.execute(
                select(history)
                .where(history.c.org == org, history.c.prompt_id == prompt_id)
                .order_by(history.c.position)
            ).all()
        return PromptSnapshot(
            prompt=self._prompt(row),
            next_version=row.counter,
            versions=tuple(self._version(row.name, row.prompt_type, v) for v in version_rows),
            history=tuple(_record(h) for h in history_rows),
        )

    def export_org(self, org: str) -> OrgSnapshot:
        with self._read() as connection:
            prompt_ids = (
                connection.execute(
                    select(prompts.c.prompt_id).where(prompts.c.org == org).order_by(prompts.c.name)
                )
                .scalars()
                .all()
            )
            keys = connection.execute(
                select(api_keys).where(api_keys.c.org == org).order_by(api_keys.c.seq)
            ).all()
            user_rows = connection.execute(
                select(users).where(users.c.org == org).order_by(users.c.seq)
            ).all()
        exported = (self._export_prompt(org, prompt_id) for prompt_id in prompt_ids)
        return OrgSnapshot(
            org,
            tuple(item for item in exported if item is not None),
            tuple(api_key_record(row) for row in keys),
            tuple(user_record(row) for row in user_rows),
        )

    def import_org(self, snapshot: OrgSnapshot) -> None:
        org = snapshot.org
        try:
            with self._write() as connection:
                dialect.serialize(connection, f"import_org:{org}")
                if self._has_data(connection, org):
                    raise OrgNotEmpty(org)
                rows = [_prompt_values(org, item) for item in snapshot.prompts]
                version_rows = [
                    _version_values(org, v) for item in snapshot.prompts for v in item.versions
                ]
                history_rows = [
                    {
                        "org": org,
                        "prompt_id": record.prompt_id,
                        "position": position,
                        "history_id": record.history_id,
                        "version_number": record.version_number,
                        "promoted_by": record.promoted_by,
                        "promoted_at": record.promoted_at,
                        "previous_version": record.previous_version,
                        "notes": record.notes,
                        "environment": record.environment,
                        "review_id": record.review_id,
                        "approved_by": json.dumps(list(record.approved_by))
                        if record.review_id
                        else None,
                        "breaking": record.breaking or None,
                        "rollout_id": record.rollout_id,
                    }
                    for item in snapshot.prompts
                    for position, record in enumerate(item.history, start=1)
                ]
                for table, values in (
                    (prompts, rows),
                    (versions, version_rows),
                    (history, history_rows),
                    (api_keys, [api_key_values(key) for key in snapshot.api_keys]),
                    (users, [user_values(user) for user in snapshot.users]),
                ):
                    if values:
                        connection.execute(insert(table), values)
        except sa_exc.IntegrityError:
            # A key or user added to the org since the check (PostgreSQL: nothing
            # locks an org's absent rows): the org is not empty any more.
            raise OrgNotEmpty(org) from None
