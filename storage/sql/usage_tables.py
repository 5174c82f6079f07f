"""The SQL backend's usage tables: counters per bucket, rollout arms and guards
(conventions in storage/sql/tables.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
)

from storage.sql.tables import UtcDateTime, metadata, prompt_key


def _counters() -> list[Column[Any]]:
    """A usage counter's columns (storage/usage_records.py COUNTERS)."""
    return [
        Column("renders", BigInteger, nullable=False),
        Column("ok", BigInteger, nullable=False),
        Column("errors", BigInteger, nullable=False),
        Column("score_sum", Float, nullable=False),
        Column("score_count", BigInteger, nullable=False),
    ]


# Usage counters per bucket (storage/usage_records.py): one row per prompt, span
# ("hour" or "day"), bucket start and key; "" stands for a null environment, rollout or
# arm (a key column cannot be null). Reports add to the rows; old buckets are deleted.
usage_counts = Table(
    "usage_counts",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("span", String(4), primary_key=True),
    Column("bucket_start", UtcDateTime, primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("environment", String(64), primary_key=True),
    Column("rollout_id", String(40), primary_key=True),
    Column("arm", String(9), primary_key=True),
    *_counters(),
    prompt_key(),
    Index(None, "span", "bucket_start"),  # the retention rule's deletes
)

# A rollout's arms, counted since it started (its guard reads them).
usage_arms = Table(
    "usage_arms",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("rollout_id", String(40), primary_key=True),
    Column("arm", String(9), primary_key=True),
    *_counters(),
    Column("updated_at", UtcDateTime, nullable=False),
)

# A rollout's guard, by the rollout's id (or a review's, until it starts the rollout).
rollout_guards = Table(
    "rollout_guards",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("guarded_id", String(40), primary_key=True),
    Column("metric", String(10), nullable=False),
    Column("threshold", Float, nullable=False),
    Column("min_samples", Integer, nullable=False),
)
