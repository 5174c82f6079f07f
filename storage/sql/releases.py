"""Promotion, rollback and the promotion history, each change in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, select

from storage import lifecycle
from storage.cursors import decode_number_cursor, encode_cursor
from storage.ids import new_id
from storage.interface import PromptStore
from storage.lifecycle import UNGUARDED, Expected
from storage.records import Page, Promotion, PromotionRecord, PromptVersion
from storage.sql.tables import history, versions
from storage.sql.versions import SqlVersions, of_prompt


def _record(row: Row[Any]) -> PromotionRecord:
    return PromotionRecord(
        history_id=row.history_id,
        prompt_id=row.prompt_id,
        version_number=row.version_number,
        promoted_by=row.promoted_by,
        promoted_at=row.promoted_at,
        previous_version=row.previous_version,
        notes=row.notes,
    )


class SqlReleases(SqlVersions, PromptStore):
    """Promotions and rollbacks, the rules by storage/lifecycle.py; with SqlVersions and
    SqlPrompts, the PromptStore."""

    def _publish(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        number: int,
        promoted_by: str,
        notes: str | None,
        now: datetime,
        request_id: str | None,
    ) -> Promotion:
        """``number`` becomes production and the promotion is recorded, in the history
        and in the event log (the caller has moved the previous production version out)."""
        previous = prompt.production_version
        version = self._set_status(
            connection,
            prompt,
            number,
            status="published",
            updated_at=now,
            promoted_at=now,
            promoted_by=promoted_by,
        )
        position = prompt.promotions + 1
        row = connection.execute(
            insert(history)
            .values(
                org=org,
                prompt_id=prompt.prompt_id,
                position=position,
                history_id=new_id("h_"),
                version_number=number,
                promoted_by=promoted_by,
                promoted_at=now,
                previous_version=previous,
                notes=notes,
            )
            .returning(*history.c)
        ).one()
        self._touch_prompt(
            connection, prompt, production_version=number, promotions=position, updated_at=now
        )
        self._append_event(
            connection,
            org,
            "version.promoted",
            self._prompt(prompt),
            version,
            promoted_by,
            request_id,
            now,
            previous_version=previous,
        )
        return Promotion(version, _record(row))

    def promote(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
    ) -> Promotion:
        now = self.clock()
        with self._write() as connection:
            prompt, current = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_expected(prompt_ref, expected_production, prompt.production_version)
            lifecycle.check_promotable(current)
            previous = prompt.production_version
            if previous is not None:
                self._set_status(
                    connection,
                    prompt,
                    previous,
                    status="archived" if archive_previous else "draft",
                    updated_at=now,
                )
            return self._publish(
                connection, org, prompt, current.version, promoted_by, notes, now, request_id
            )

    def rollback(
        self,
        org: str,
        prompt_ref: str,
        promoted_by: str,
        notes: str | None = None,
        to_version: int | None = None,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
    ) -> Promotion:
        now = self.clock()
        with self._write() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            current = prompt.production_version
            lifecycle.check_expected(prompt_ref, expected_production, current)
            # The rule walks the whole history (storage/lifecycle.py), oldest first.
            records = [
                _record(row)
                for row in connection.execute(
                    select(history).where(of_prompt(history, prompt)).order_by(history.c.position)
                )
            ]

            def find(number: int) -> PromptVersion | None:
                row = connection.execute(
                    select(versions).where(
                        of_prompt(versions, prompt), versions.c.version == number
                    )
                ).first()
                return None if row is None else self._version(prompt.name, prompt.prompt_type, row)

            target = lifecycle.rollback_target(prompt_ref, current, records, to_version, find)
            assert current is not None  # rollback_target refused a prompt without one
            self._set_status(connection, prompt, current, status="archived", updated_at=now)
            notes = lifecycle.rollback_notes(target) if notes is None else notes
            return self._publish(
                connection, org, prompt, target, promoted_by, notes, now, request_id
            )

    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        # Positions are 1-based promotion sequence numbers; pages go newest first.
        before = decode_number_cursor(cursor)
        with self._read() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            statement = select(history).where(of_prompt(history, prompt))
            if before is not None:
                statement = statement.where(history.c.position < before)
            rows = connection.execute(
                statement.order_by(history.c.position.desc()).limit(limit)
            ).all()
        items = [_record(row) for row in rows]
        more = bool(rows) and rows[-1].position > 1
        return Page(items, encode_cursor(str(rows[-1].position)) if more else None)
