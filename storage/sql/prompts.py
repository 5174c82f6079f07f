"""Prompts: create, look up (by name or ``pmt_`` id), list by name, delete."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, insert, select
from sqlalchemy import exc as sa_exc

from storage import release
from storage.cursors import decode_cursor, encode_cursor
from storage.errors import PromptExists, PromptNotFound
from storage.ids import new_id
from storage.records import Page, Prompt
from storage.sql import dialect
from storage.sql.core import Concern, prompt_record
from storage.sql.tables import prompts
from storage.sql.versions import includers


class SqlPrompts(Concern):
    """Prompts (with storage/sql/versions.py and releases.py: the PromptStore)."""

    def _find_prompt(self, connection: Connection, org: str, prompt_ref: str) -> Row[Any]:
        """The prompt's row, locked for the transaction when it writes (PostgreSQL):
        every change of a prompt or its versions takes this lock first."""
        statement = select(prompts).where(prompts.c.org == org, prompts.c.name == prompt_ref)
        row = connection.execute(dialect.locked(connection, statement)).first()
        if row is None and prompt_ref.startswith("pmt_"):
            statement = select(prompts).where(
                prompts.c.org == org, prompts.c.prompt_id == prompt_ref
            )
            row = connection.execute(dialect.locked(connection, statement)).first()
        if row is None:
            raise PromptNotFound(prompt_ref)
        return row

    def create_prompt(
        self,
        org: str,
        name: str,
        prompt_type: str = "text",
        description: str | None = None,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Prompt:
        now = self.db.clock()
        prompt = Prompt(new_id("pmt_"), name, prompt_type, description, now, now, None, None)
        try:
            with self.db.write() as connection:
                connection.execute(
                    insert(prompts).values(
                        prompt_id=prompt.prompt_id,
                        org=org,
                        name=name,
                        prompt_type=prompt_type,
                        description=description,
                        created_at=now,
                        updated_at=now,
                        counter=0,
                        promotions=0,
                    )
                )
                self.db.append_event(
                    connection, org, "prompt.created", prompt, None, actor, request_id, now
                )
        except sa_exc.IntegrityError:
            raise PromptExists(name) from None
        return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        with self.db.read() as connection:
            return prompt_record(self.db.find_prompt(connection, org, prompt_ref))

    def list_prompts(self, org: str, limit: int = 50, cursor: str | None = None) -> Page[Prompt]:
        statement = select(prompts).where(prompts.c.org == org)
        if cursor:
            statement = statement.where(prompts.c.name > decode_cursor(cursor))
        with self.db.read() as connection:
            rows = connection.execute(statement.order_by(prompts.c.name).limit(limit + 1)).all()
        items = [prompt_record(row) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(items, encode_cursor(items[-1].name) if more else None)

    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        now = self.db.clock()
        with self.db.write() as connection:
            prompt = prompt_record(self.db.find_prompt(connection, org, prompt_ref))
            # Read under the prompt's lock: a new includer's write waits for it (versions.py).
            release.check_prompt_unused(
                prompt.name, includers(self.db, connection, org, prompt.name)
            )
            # Versions and history go with it (ON DELETE CASCADE).
            # Ids are unique within an org only (an import copies them into another).
            connection.execute(
                prompts.delete().where(
                    prompts.c.org == org, prompts.c.prompt_id == prompt.prompt_id
                )
            )
            self.db.append_event(
                connection, org, "prompt.deleted", prompt, None, actor, request_id, now
            )
