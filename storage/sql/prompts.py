"""Prompts: create, look up (by name or ``pmt_`` id), list by name (deleting one is a
release change: storage/sql/releases.py)."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc
from sqlalchemy import insert, select

from storage.errors import PromptExists, PromptNotFound
from storage.event_records import created_event
from storage.records import Prompt
from storage.sql.core import PROMPT_BY, Concern, prompt_record, ref_columns
from storage.sql.rows import row_of
from storage.sql.tables import prompts


class SqlPrompts(Concern):
    """Prompts (with storage/sql/versions.py and releases.py: the PromptStore)."""

    def add_prompt(
        self, org: str, prompt: Prompt, actor: str | None, request_id: str | None
    ) -> Prompt:
        row = row_of(prompts, prompt, org=org, counter=0, promotions=0)
        try:
            with self.db.write() as connection:
                connection.execute(insert(prompts).values(row))
                self.db.append_events(connection, org, [created_event(prompt, actor, request_id)])
        except sa_exc.IntegrityError:
            raise PromptExists(prompt.name) from None
        return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        key = {"org": org, "ref": prompt_ref}
        for column in ref_columns(prompt_ref):
            row = self.db.read_one(PROMPT_BY[column], key)
            if row is not None:
                return prompt_record(row)
        raise PromptNotFound(prompt_ref)

    def prompts_after(self, org: str, after: str, count: int) -> list[Prompt]:
        statement = select(prompts).where(prompts.c.org == org, prompts.c.name > after)
        with self.db.read() as connection:
            rows = connection.execute(statement.order_by(prompts.c.name).limit(count)).all()
        return [prompt_record(row) for row in rows]
