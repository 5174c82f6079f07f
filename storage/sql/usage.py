"""Usage counters and rollout guards in SQL (storage/interface/usage.py): counters as
upserts that add (``ON CONFLICT DO UPDATE SET n = n + excluded.n``), one transaction
per report, rows written in key order so concurrent reports cannot deadlock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, delete, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite

from storage.sql import dialect
from storage.sql.core import Concern
from storage.sql.tables import rollout_guards, usage_arms, usage_counts, versions
from storage.usage_records import (
    COUNTERS,
    SPANS,
    ArmFigures,
    BucketSpan,
    Guard,
    UsageItem,
    UsageRow,
    bucket_start,
    oldest_kept,
)


class SqlUsage(Concern):
    _pruned: datetime | None = None  # the hour this process last pruned in

    def record_usage(self, org: str, items: Sequence[UsageItem]) -> int:
        now = self.db.clock()
        starts = {span: bucket_start(now, span) for span in SPANS}
        with self.db.write() as connection:
            known = _known_versions(connection, org, items)
            kept = [item for item in items if (item.prompt_id, item.version) in known]
            counts: dict[tuple[Any, ...], list[float]] = {}
            arms: dict[tuple[Any, ...], list[float]] = {}
            for item in kept:
                where: tuple[Any, ...] = (
                    item.version,
                    item.environment or "",
                    item.rollout_id or "",
                )
                where += (item.arm or "",)
                for span, start in starts.items():
                    _add(counts, (org, item.prompt_id, span, start, *where), item)
                if item.rollout_id and item.arm:
                    _add(arms, (org, item.rollout_id, item.arm), item)
            _upsert_adding(connection, usage_counts, counts)
            _upsert_adding(connection, usage_arms, arms, updated_at=now)
            if self._pruned != starts["hour"]:
                _prune(connection, now)
                self._pruned = starts["hour"]
        return len(items) - len(kept)

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
            UsageRow(
                row.bucket_start,
                row.version,
                row.environment or None,
                row.rollout_id or None,
                row.arm or None,
                row.renders,
                row.ok,
                row.errors,
                row.score_sum,
                row.score_count,
            )
            for row in rows
        ]

    def rollout_arms(self, org: str, rollout_id: str) -> dict[str, ArmFigures]:
        c = usage_arms.c
        with self.db.read() as connection:
            rows = connection.execute(
                select(usage_arms).where(c.org == org, c.rollout_id == rollout_id)
            ).all()
        return {
            row.arm: ArmFigures(row.renders, row.ok, row.errors, row.score_sum, row.score_count)
            for row in rows
        }

    def set_guard(self, org: str, guarded_id: str, guard: Guard | None) -> None:
        c = rollout_guards.c
        with self.db.write() as connection:
            if guard is None:
                connection.execute(
                    delete(rollout_guards).where(c.org == org, c.guarded_id == guarded_id)
                )
                return
            fields = guard.to_json()
            row = {"org": org, "guarded_id": guarded_id, **fields}
            connection.execute(dialect.upsert(connection, rollout_guards, row, **fields))

    def get_guard(self, org: str, guarded_id: str) -> Guard | None:
        c = rollout_guards.c
        row = self.db.read_one(
            select(rollout_guards).where(c.org == org, c.guarded_id == guarded_id)
        )
        return None if row is None else Guard(row.metric, row.threshold, row.min_samples)


def _known_versions(
    connection: Connection, org: str, items: Sequence[UsageItem]
) -> set[tuple[str, int]]:
    """Which of the items' (prompt_id, version) the org has."""
    pairs = sorted({(item.prompt_id, item.version) for item in items})
    if not pairs:
        return set()
    c = versions.c
    rows = connection.execute(
        select(c.prompt_id, c.version).where(
            c.org == org, tuple_(c.prompt_id, c.version).in_(pairs)
        )
    ).all()
    return {(row.prompt_id, row.version) for row in rows}


def _add(into: dict[tuple[Any, ...], list[float]], key: tuple[Any, ...], item: UsageItem) -> None:
    found = into.setdefault(key, [0, 0, 0, 0.0, 0])
    for i, n in enumerate(item.counts()):
        found[i] += n


def _upsert_adding(
    connection: Connection, table: Table, rows: dict[tuple[Any, ...], list[float]], **extra: Any
) -> None:
    """Insert each row, or add its counters to the row with the same key."""
    if not rows:
        return
    insert = (postgresql.insert if dialect.is_postgres(connection) else sqlite.insert)(table)
    key = [column.name for column in table.primary_key.columns]
    changes = {name: table.c[name] + insert.excluded[name] for name in COUNTERS}
    changes.update({name: insert.excluded[name] for name in extra})
    statement = insert.on_conflict_do_update(index_elements=key, set_=changes)
    connection.execute(
        statement,
        [
            {**dict(zip(key, k, strict=True)), **dict(zip(COUNTERS, v, strict=True)), **extra}
            for k, v in sorted(rows.items())
        ],
    )


def _prune(connection: Connection, now: datetime) -> None:
    """Drop what the retention rule no longer keeps."""
    c = usage_counts.c
    for span in SPANS:
        connection.execute(
            delete(usage_counts).where(c.span == span, c.bucket_start < oldest_kept(now, span))
        )
    connection.execute(delete(usage_arms).where(usage_arms.c.updated_at < oldest_kept(now, "day")))
