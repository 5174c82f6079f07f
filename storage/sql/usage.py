"""Usage counters and rollout guards in SQL (storage/interface/usage.py): counters as
upserts that add (``ON CONFLICT DO UPDATE SET n = n + excluded.n``), one transaction
per report, rows written in key order so concurrent reports cannot deadlock."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.tables import UtcDateTime, versions
from storage.sql.usage_tables import rollout_guards, usage_arms, usage_counts
from storage.stored import decoded
from storage.usage_records import (
    COUNTERS,
    SPANS,
    BucketSpan,
    Counts,
    Guard,
    Pruning,
    UsageItem,
    UsageRow,
    bucket_start,
    tally,
)


class SqlUsage(Concern):
    @functools.cached_property
    def _pruning(self) -> Pruning:
        return Pruning()

    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        now = self.db.clock()
        with self.db.write() as connection:
            # Which of the items' versions the org has: every version of the prompts
            # they name (a report names few prompts).
            c = versions.c
            named = c.prompt_id.in_(sorted({item.prompt_id for item in items}))
            statement = select(c.prompt_id, c.version).where(c.org == org, named)
            known = {tuple(row) for row in connection.execute(statement)}
            found = tally(items, lambda prompt_id, version: (prompt_id, version) in known)
            # Rows in key order (the columns' order, the key's first), so concurrent
            # reports cannot deadlock; null as "".
            rows = sorted(
                (org, pid, span, bound(connection, bucket_start(now, span)), version, env or "",
                 rollout_id or "", arm or "", *counts.values())
                for span in SPANS
                for (pid, version, env, rollout_id, arm), counts in found.keys.items()
            )  # fmt: skip
            _add_to(connection, usage_counts, rows)
            when = bound(connection, now)
            arms = sorted((org, *key, *counts.values(), when) for key, counts in found.arms.items())
            _add_to(connection, usage_arms, arms)
            if (oldest := self._pruning.due(now)) is not None:
                _prune(connection, oldest)
        return found.skipped

    def read_usage(
        self, org: str, prompt_ref: str, since: datetime, until: datetime, span: BucketSpan
    ) -> list[UsageRow]:
        c = usage_counts.c
        with self.db.read() as connection:
            prompt_id = self.db.find_prompt(connection, org, prompt_ref).prompt_id
            rows = connection.execute(
                select(usage_counts)
                .where(
                    c.org == org,
                    c.prompt_id == prompt_id,
                    c.span == span,
                    c.bucket_start >= bucket_start(since, span),
                    c.bucket_start < until,
                )
                .order_by(c.bucket_start, c.version, c.environment, c.rollout_id, c.arm)
            ).all()
        return [
            UsageRow.stored(
                row.bucket_start, row.version, row.environment, row.rollout_id, row.arm,
                decoded(Counts, row),
            )
            for row in rows
        ]  # fmt: skip

    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, Counts]:
        c = usage_arms.c
        with self.db.read() as connection:
            rows = connection.execute(
                select(usage_arms).where(c.org == org, c.rollout_id == rollout_id)
            ).all()
        return {row.arm: decoded(Counts, row) for row in rows}

    def set_guard(self, org: str, guarded_id: str, guard: Guard | None) -> None:
        with self.db.write() as connection:
            keep_guard(connection, org, guarded_id, guard)

    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        c = rollout_guards.c
        row = self.db.read_one(
            select(rollout_guards).where(c.org == org, c.guarded_id == guarded_id)
        )
        return None if row is None else Guard(row.metric, row.threshold, row.min_samples)


def keep_guard(connection: Connection, org: str, guarded_id: str, guard: Guard | None) -> None:
    """Keep ``guard`` for the rollout or review ``guarded_id`` (None: drop it)."""
    c = rollout_guards.c
    if guard is None:
        connection.execute(delete(rollout_guards).where(c.org == org, c.guarded_id == guarded_id))
        return
    fields = guard.to_json()
    row = {"org": org, "guarded_id": guarded_id, **fields}
    connection.execute(dialect.upsert(connection, rollout_guards, row, **fields))


def move_guard(connection: Connection, org: str, review_id: str, rollout_id: str) -> None:
    """The guard kept under ``review_id`` becomes ``rollout_id``'s."""
    c = rollout_guards.c
    connection.execute(
        update(rollout_guards)
        .where(c.org == org, c.guarded_id == review_id)
        .values(guarded_id=rollout_id)
    )


def bound(connection: Connection, moment: datetime) -> Any:
    """A time as the driver takes it for a UtcDateTime column (rows sent as they are)."""
    return UtcDateTime().process_bind_param(moment, connection.dialect)


@functools.cache
def _adding(dialect: str, table: Table) -> str:
    """The statement that inserts a row of ``table`` (its columns in order) or adds its
    counters to the row with the same key, in ``dialect``'s SQL with positional
    parameters: sent with the driver's executemany, as the rows are, since SQLAlchemy's
    handling of each row's parameters costs more than the database's work here."""
    insert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
    key = [column.name for column in table.primary_key.columns]
    changes = {name: table.c[name] + insert.excluded[name] for name in COUNTERS}
    changes.update(
        {c.name: insert.excluded[c.name] for c in table.c if c.name not in (*key, *COUNTERS)}
    )
    statement = insert.on_conflict_do_update(index_elements=key, set_=changes)
    named = (
        postgresql.dialect(paramstyle="format")
        if dialect == "postgresql"
        else sqlite.dialect(paramstyle="qmark")
    )
    return str(statement.compile(dialect=named, column_keys=[c.name for c in table.c]))


def _add_to(connection: Connection, table: Table, rows: list[tuple[Any, ...]]) -> None:
    """Send ``rows`` (``table``'s columns in order) with :func:`_adding`'s statement."""
    if rows:
        connection.exec_driver_sql(_adding(connection.dialect.name, table), rows)


def _prune(connection: Connection, oldest: dict[str, datetime]) -> None:
    """Drop what the retention rule no longer keeps."""
    c = usage_counts.c
    for span, start in oldest.items():
        connection.execute(delete(usage_counts).where(c.span == span, c.bucket_start < start))
    connection.execute(delete(usage_arms).where(usage_arms.c.updated_at < oldest["day"]))
