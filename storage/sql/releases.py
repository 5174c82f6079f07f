"""Promotion, rollback and the promotion history, each change in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, select

from storage.base import (
    UNGUARDED,
    Expected,
    LifecycleError,
    NoRollbackTarget,
    Page,
    ProductionChanged,
    Promotion,
    PromotionRecord,
    decode_number_cursor,
    encode_cursor,
    new_id,
    rollback_notes,
)
from storage.sql.tables import history, versions
from storage.sql.versions import SqlVersions


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


def _check_expected(prompt: Row[Any], prompt_ref: str, expected: Expected) -> None:
    if expected is not UNGUARDED and expected != prompt.production_version:
        raise ProductionChanged(prompt_ref, expected, prompt.production_version)


class SqlReleases(SqlVersions):
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
            _check_expected(prompt, prompt_ref, expected_production)
            number, status = current.version, current.status
            if status != "draft":
                raise LifecycleError(f"version {number} is {status}: only a draft can be promoted")
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
                connection, org, prompt, number, promoted_by, notes, now, request_id
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
            _check_expected(prompt, prompt_ref, expected_production)
            current = prompt.production_version
            if current is None:
                raise NoRollbackTarget("no_production", prompt_ref, None)
            target = to_version
            if target is None:
                # The newest record is the promotion that made ``current`` production.
                target = connection.execute(
                    select(history.c.previous_version).where(
                        history.c.prompt_id == prompt.prompt_id,
                        history.c.position == prompt.promotions,
                    )
                ).scalar()
                if target is None:
                    raise NoRollbackTarget("first", prompt_ref, current)
            row = connection.execute(
                select(versions.c.promoted_at).where(
                    versions.c.prompt_id == prompt.prompt_id, versions.c.version == target
                )
            ).first()
            if row is None:
                reason = "deleted" if to_version is None else "missing"
                raise NoRollbackTarget(reason, prompt_ref, current, target)
            if target == current:
                raise NoRollbackTarget("current", prompt_ref, current, target)
            if row.promoted_at is None:
                raise NoRollbackTarget("never", prompt_ref, current, target)
            self._set_status(connection, prompt, current, status="archived", updated_at=now)
            notes = rollback_notes(target) if notes is None else notes
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
            statement = select(history).where(history.c.prompt_id == prompt.prompt_id)
            if before is not None:
                statement = statement.where(history.c.position < before)
            rows = connection.execute(
                statement.order_by(history.c.position.desc()).limit(limit)
            ).all()
        items = [_record(row) for row in rows]
        more = bool(rows) and rows[-1].position > 1
        return Page(items, encode_cursor(str(rows[-1].position)) if more else None)
