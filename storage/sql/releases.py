"""Promotion and rollback into any environment, and the promotion history, each change
in one transaction."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from storage import contracts, lifecycle
from storage.cursors import decode_number_cursor, encode_cursor
from storage.errors import EnvironmentNotFound
from storage.ids import new_id
from storage.interface import PromptStore
from storage.lifecycle import UNGUARDED, Expected
from storage.records import (
    PRODUCTION,
    Environment,
    Page,
    Promotion,
    PromotionRecord,
    PromptVersion,
    Review,
    Rollout,
)
from storage.sql.tables import environments, history, placements, versions
from storage.sql.versions import MAX_COLUMN_NUMBER, SqlVersions, of_prompt


def _record(row: Row[Any]) -> PromotionRecord:
    return PromotionRecord(
        history_id=row.history_id,
        prompt_id=row.prompt_id,
        version_number=row.version_number,
        promoted_by=row.promoted_by,
        promoted_at=row.promoted_at,
        previous_version=row.previous_version,
        notes=row.notes,
        environment=row.environment or PRODUCTION,
        review_id=row.review_id,
        approved_by=tuple(json.loads(row.approved_by)) if row.approved_by else (),
        rollout_id=row.rollout_id,
        breaking=bool(row.breaking),
    )


class SqlReleases(SqlVersions, PromptStore):
    """Promotions and rollbacks into any environment, the rules by storage/lifecycle.py;
    with SqlVersions and SqlPrompts, the PromptStore. Environments other than production
    are rows of ``placements``, mirrored on each version's ``placements`` column."""

    # -- environments as a promotion sees them (the transaction's connection)

    @staticmethod
    def _environment(connection: Connection, org: str, name: str) -> Environment:
        row = connection.execute(
            select(environments).where(environments.c.org == org, environments.c.name == name)
        ).first()
        if row is not None:
            return Environment(row.name, row.required_approvals, row.description, row.created_at)
        if name == PRODUCTION:
            return lifecycle.default_production()
        raise EnvironmentNotFound(name)

    @staticmethod
    def _current(connection: Connection, prompt: Row[Any], environment: str) -> int | None:
        """The number of the version ``environment`` holds for ``prompt``, or None."""
        if environment == PRODUCTION:
            number: int | None = prompt.production_version
            return number
        found: int | None = connection.execute(
            select(placements.c.version).where(
                of_prompt(placements, prompt), placements.c.environment == environment
            )
        ).scalar()
        return found

    def _find_number(
        self, connection: Connection, prompt: Row[Any], number: int
    ) -> PromptVersion | None:
        row = connection.execute(
            select(versions).where(of_prompt(versions, prompt), versions.c.version == number)
        ).first()
        return None if row is None else self._version(prompt.name, prompt.prompt_type, row)

    def _held(
        self, connection: Connection, prompt: Row[Any], number: int | None
    ) -> PromptVersion | None:
        """Version ``number`` (what an environment holds), or None for none."""
        return None if number is None else self._find_number(connection, prompt, number)

    def _set_placements(
        self, connection: Connection, prompt: Row[Any], number: int, names: set[str]
    ) -> PromptVersion:
        value = json.dumps(sorted(names)) if names else None
        return self._set_status(connection, prompt, number, placements=value)

    def _enter(
        self,
        connection: Connection,
        org: str,
        prompt: Row[Any],
        number: int,
        environment: str,
        promoted_by: str,
        notes: str | None,
        now: datetime,
        request_id: str | None,
        *,
        archive_previous: bool = True,
        review: Review | None = None,
        rollout: Rollout | None = None,
        breaking: bool = False,
    ) -> Promotion:
        """Version ``number`` becomes ``environment``'s, replacing what it held (in
        production: published, the previous one archived or made a draft), with its
        history record and event (the caller checked the rules; ``rollout``: the
        rollout this completes)."""
        previous = self._current(connection, prompt, environment)
        production = prompt.production_version
        if environment == PRODUCTION:
            if previous is not None:
                self._set_status(
                    connection,
                    prompt,
                    previous,
                    status="archived" if archive_previous else "draft",
                    updated_at=now,
                )
            version = self._set_status(
                connection,
                prompt,
                number,
                status="published",
                updated_at=now,
                promoted_at=now,
                promoted_by=promoted_by,
            )
            production = number
        else:
            if previous is not None:
                old = self._find_number(connection, prompt, previous)
                assert old is not None
                self._set_placements(
                    connection, prompt, previous, set(old.placements) - {environment}
                )
                connection.execute(
                    update(placements)
                    .where(of_prompt(placements, prompt), placements.c.environment == environment)
                    .values(version=number)
                )
            else:
                connection.execute(
                    insert(placements).values(
                        org=org, prompt_id=prompt.prompt_id, environment=environment, version=number
                    )
                )
            new = self._find_number(connection, prompt, number)
            assert new is not None
            version = self._set_placements(
                connection, prompt, number, {*new.placements, environment}
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
                environment=environment,
                review_id=None if review is None else review.review_id,
                approved_by=None
                if review is None
                else json.dumps([a.user_id for a in review.approvals]),
                rollout_id=None if rollout is None else rollout.rollout_id,
                breaking=breaking,
            )
            .returning(*history.c)
        ).one()
        self._touch_prompt(
            connection, prompt, production_version=production, promotions=position, updated_at=now
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
            environment=environment,
            review_id=None if review is None else review.review_id,
            rollout_id=None if rollout is None else rollout.rollout_id,
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
        environment: str = PRODUCTION,
        allow_breaking: bool = False,
    ) -> Promotion:
        now = self.clock()
        lifecycle.check_acknowledgement(allow_breaking, notes)
        with self._write() as connection:
            prompt, version = self._locked_version(connection, org, prompt_ref, version_ref)
            lifecycle.check_unprotected(self._environment(connection, org, environment))
            lifecycle.check_no_rollout(
                prompt_ref, self._rollout_in(connection, prompt, environment), "promote"
            )
            current = self._current(connection, prompt, environment)
            lifecycle.check_expected(prompt_ref, expected_production, current, environment)
            lifecycle.check_enterable(environment, version, current)
            changes = contracts.breaking_changes(self._held(connection, prompt, current), version)
            breaking = lifecycle.check_breaking(prompt_ref, environment, changes, allow_breaking)
            return self._enter(
                connection,
                org,
                prompt,
                version.version,
                environment,
                promoted_by,
                notes,
                now,
                request_id,
                archive_previous=archive_previous,
                breaking=breaking,
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
        environment: str = PRODUCTION,
    ) -> Promotion:
        now = self.clock()
        with self._write() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            self._environment(connection, org, environment)
            lifecycle.check_no_rollout(
                prompt_ref, self._rollout_in(connection, prompt, environment), "rollback"
            )
            current = self._current(connection, prompt, environment)
            lifecycle.check_expected(prompt_ref, expected_production, current, environment)
            # The rule walks the whole history (storage/lifecycle.py), oldest first.
            records = [
                _record(row)
                for row in connection.execute(
                    select(history).where(of_prompt(history, prompt)).order_by(history.c.position)
                )
            ]
            target = lifecycle.rollback_target(
                prompt_ref,
                current,
                records,
                to_version,
                lambda number: self._find_number(connection, prompt, number),
                environment,
            )
            notes = lifecycle.rollback_notes(target) if notes is None else notes
            # Exempt from the check, but the record says whether it breaks.
            restored = self._find_number(connection, prompt, target)
            assert restored is not None  # rollback_target found it
            changes = contracts.breaking_changes(self._held(connection, prompt, current), restored)
            return self._enter(
                connection,
                org,
                prompt,
                target,
                environment,
                promoted_by,
                notes,
                now,
                request_id,
                breaking=bool(changes),
            )

    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        # Positions are 1-based promotion sequence numbers; pages go newest first.
        before = decode_number_cursor(cursor)
        with self._read() as connection:
            prompt = self._find_prompt(connection, org, prompt_ref)
            statement = select(history).where(of_prompt(history, prompt))
            if before is not None and before <= MAX_COLUMN_NUMBER:
                statement = statement.where(history.c.position < before)
            rows = connection.execute(
                statement.order_by(history.c.position.desc()).limit(limit)
            ).all()
        items = [_record(row) for row in rows]
        more = bool(rows) and rows[-1].position > 1
        return Page(items, encode_cursor(str(rows[-1].position)) if more else None)
