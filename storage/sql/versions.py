"""Versions: numbering, the reads (production, latest, by ref), edits and the status
changes other than promotion (storage/sql/releases.py).

The hot read (production, latest or one version of a prompt) is one indexed statement
outside any transaction, on the read lane's own connections (storage/sql/read_lane.py):
the prompt row joined to the version row, decoded through a memo keyed by the whole row
(storage/sql/core.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, insert, select, update

from storage import contracts, lifecycle
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import NoProductionVersion, VersionNotFound
from storage.ids import new_id, version_number
from storage.records import Page, PromptVersion
from storage.sql.rollout_rows import SqlRolloutRows
from storage.sql.tables import placements, prompts, versions

# Version numbers and promotion positions are 32-bit columns: a larger one names no
# row, and every row is below it.
MAX_COLUMN_NUMBER = 2**31 - 1


def _version_condition(version_ref: str) -> ColumnElement[bool] | None:
    """Which version ``version_ref`` names; None when it can name none."""
    number = version_number(version_ref)
    if number is not None:
        return versions.c.version == number if number <= MAX_COLUMN_NUMBER else None
    if version_ref.startswith("v_"):
        return versions.c.version_id == version_ref
    return None


def of_prompt(table: Any, prompt: Row[Any]) -> ColumnElement[bool]:
    """The rows of ``table`` (versions, history) that belong to the prompt ``prompt``."""
    return (table.c.org == prompt.org) & (table.c.prompt_id == prompt.prompt_id)


def contract_values(
    variables: Sequence[str],
    variables_schema: dict[str, Any] | None,
    examples: list[dict[str, Any]] | None,
) -> dict[str, str | None]:
    """A version's contract, checked (storage.contracts.validated), as its columns:
    null for the implied schema and for no examples."""
    schema, kept = contracts.validated(variables, variables_schema, examples)
    return {
        "variables_schema": None if schema is None else json.dumps(schema),
        "examples": json.dumps(list(kept)) if kept else None,
    }


def _unplace(connection: Connection, prompt: Row[Any], number: int) -> None:
    """Version ``number`` leaves every environment but production (the caller clears
    the version's own ``placements`` mirror, or deletes it)."""
    connection.execute(
        placements.delete().where(of_prompt(placements, prompt), placements.c.version == number)
    )


class SqlVersions(SqlRolloutRows):
    # -- reads

    def _read_version(
        self, org: str, prompt_ref: str, pick: str, **params: Any
    ) -> PromptVersion | None:
        """The version ``pick`` names (storage/sql/read_lane.py), by prompt name or
        else id; None when there is none. One statement per try, on the read lane."""
        row = self._lane(("name", pick), {"org": org, "ref": prompt_ref, **params})
        if row is None and prompt_ref.startswith("pmt_"):
            row = self._lane(("id", pick), {"org": org, "ref": prompt_ref, **params})
        return None if row is None else self._lane_version(row)

    def _prompt_exists(self, org: str, prompt_ref: str) -> None:
        """Raise PromptNotFound unless the prompt exists (after a version read missed)."""
        with self._read() as connection:
            self._find_prompt(connection, org, prompt_ref)

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        number = version_number(version_ref)
        found = None
        if number is not None and number <= MAX_COLUMN_NUMBER:
            found = self._read_version(org, prompt_ref, "number", number=number)
        elif number is None and version_ref.startswith("v_"):
            found = self._read_version(org, prompt_ref, "version_id", version_id=version_ref)
        if found is None:
            self._prompt_exists(org, prompt_ref)
            raise VersionNotFound(prompt_ref, version_ref)
        return found

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        found = self._read_version(org, prompt_ref, "latest")
        if found is None:
            self._prompt_exists(org, prompt_ref)
            raise VersionNotFound(prompt_ref, "latest")
        return found

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        found = self._read_version(org, prompt_ref, "production")
        if found is None:
            self._prompt_exists(org, prompt_ref)
            raise NoProductionVersion(prompt_ref)
        return found

    def list_versions(
        self,
        org: str,
        prompt_ref: str,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[PromptVersion]:
        before = decode_number_cursor(cursor)
        with self._read() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            statement = select(versions).where(of_prompt(versions, prompt))
            if before is not None and before <= MAX_COLUMN_NUMBER:
                statement = statement.where(versions.c.version < before)
            if status is not None:
                statement = statement.where(versions.c.status == status)
            rows = connection.execute(
                statement.order_by(versions.c.version.desc()).limit(limit + 1)
            ).all()
        found = [self._version(prompt.name, prompt.prompt_type, row) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(found, encode_cursor(str(found[-1].version)) if more else None)

    # -- changes (each in one transaction, the prompt row locked first)

    def _locked_version(
        self, connection: Connection, org: str, prompt_ref: str, version_ref: str
    ) -> tuple[Row[Any], PromptVersion]:
        """The prompt's row (locked) and the version; raises the not-found errors."""
        prompt = self._find_prompt(connection, org, prompt_ref)
        condition = _version_condition(version_ref)
        row = None
        if condition is not None:
            row = connection.execute(
                select(versions).where(of_prompt(versions, prompt), condition)
            ).first()
        if row is None:
            raise VersionNotFound(prompt_ref, version_ref)
        return prompt, self._version(prompt.name, prompt.prompt_type, row)

    def _set_status(
        self, connection: Connection, prompt: Row[Any], number: int, **values: Any
    ) -> PromptVersion:
        row = connection.execute(
            update(versions)
            .where(of_prompt(versions, prompt), versions.c.version == number)
            .values(**values)
            .returning(*versions.c)
        ).one()
        return self._version(prompt.name, prompt.prompt_type, row)

    def _touch_prompt(self, connection: Connection, prompt: Row[Any], **values: Any) -> None:
        connection.execute(
            update(prompts)
            .where(prompts.c.org == prompt.org, prompts.c.prompt_id == prompt.prompt_id)
            .values(**values)
        )

    def create_version(
        self,
        org: str,
        prompt_ref: str,
        content: str,
        created_by: str,
        metadata: dict[str, object] | None = None,
        tags: list[str] | None = None,
        *,
        variables: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        contract = contract_values(variables, variables_schema, examples)
        metadata_json = json.dumps(metadata or {})
        with self._write() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            number = prompt.counter + 1
            row = connection.execute(
                insert(versions)
                .values(
                    org=org,
                    prompt_id=prompt.prompt_id,
                    version=number,
                    version_id=new_id("v_"),
                    content=content,
                    variables=json.dumps(list(variables)),
                    status="draft",
                    metadata=metadata_json,
                    tags=json.dumps(list(tags or ())),
                    created_at=now,
                    updated_at=now,
                    created_by=created_by,
                    **contract,
                )
                .returning(*versions.c)
            ).one()
            self._touch_prompt(
                connection, prompt, counter=number, latest_version=number, updated_at=now
            )
            version = self._version(prompt.name, prompt.prompt_type, row)
            self._append_event(
                connection,
                org,
                "version.created",
                self._prompt(prompt),
                version,
                created_by,
                request_id,
                now,
            )
        return version

    def edit_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        content: str,
        *,
        variables: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        contract = contract_values(variables, variables_schema, examples)
        with self._write() as connection:
            prompt, current = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_editable(current)
            lifecycle.check_not_candidate(current.version, self._rollouts_of(connection, prompt))
            version = self._set_status(
                connection,
                prompt,
                current.version,
                content=content,
                variables=json.dumps(list(variables)),
                updated_at=now,
                **contract,
            )
            self._append_event(
                connection,
                org,
                "version.updated",
                self._prompt(prompt),
                version,
                actor,
                request_id,
                now,
            )
        return version

    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        with self._write() as connection:
            prompt, current = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_archivable(current)
            _unplace(connection, prompt, current.version)
            version = self._set_status(
                connection,
                prompt,
                current.version,
                status="archived",
                updated_at=now,
                placements=None,
            )
            self._append_event(
                connection,
                org,
                "version.archived",
                self._prompt(prompt),
                version,
                actor,
                request_id,
                now,
            )
            self._abort_rollouts_of(
                connection, org, prompt, current.version, actor, request_id, now
            )
        return version

    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        with self._write() as connection:
            prompt, current = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_unarchivable(current)
            version = self._set_status(
                connection, prompt, current.version, status="draft", updated_at=now
            )
            self._append_event(
                connection,
                org,
                "version.unarchived",
                self._prompt(prompt),
                version,
                actor,
                request_id,
                now,
            )
        return version

    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        now = self.clock()
        with self._write() as connection:
            prompt, version = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_deletable(version)
            self._abort_rollouts_of(
                connection, org, prompt, version.version, actor, request_id, now
            )
            _unplace(connection, prompt, version.version)
            connection.execute(
                versions.delete().where(
                    of_prompt(versions, prompt), versions.c.version == version.version
                )
            )
            latest = connection.execute(
                select(versions.c.version)
                .where(of_prompt(versions, prompt))
                .order_by(versions.c.version.desc())
                .limit(1)
            ).scalar()
            self._touch_prompt(connection, prompt, latest_version=latest, updated_at=now)
            self._append_event(
                connection,
                org,
                "version.deleted",
                self._prompt(prompt),
                version,
                actor,
                request_id,
                now,
            )
