"""What SQLite and PostgreSQL do differently, each in one small place.

* Row locks: PostgreSQL writers lock the rows they read before changing them
  (``FOR UPDATE``), and delivery workers skip the queue rows another worker holds
  (``FOR UPDATE SKIP LOCKED``). SQLite has no row locks: a writing transaction holds
  the whole database from its ``BEGIN IMMEDIATE`` (storage/sql/engine.py), so the
  same statements go without the clause.
* Upserts: ``INSERT ... ON CONFLICT DO NOTHING`` comes from each dialect's own
  ``insert``.
* New events: PostgreSQL tells listeners in other processes with ``NOTIFY`` (sent at
  commit); SQLite has no such channel, and waiters poll (storage/sql/events.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, Table, text
from sqlalchemy.dialects import postgresql, sqlite

# The channel PostgreSQL's NOTIFY uses for new events; the payload is the org.
EVENTS_CHANNEL = "promptsvc_events"
# How often a waiter looks for new events when nobody can tell it (SQLite, or a
# PostgreSQL listener that lost its connection): the contract's bound is 250 ms.
POLL_INTERVAL = 0.2


def is_postgres(connection: Connection) -> bool:
    return connection.dialect.name == "postgresql"


def locked(connection: Connection, statement: Select[Any]) -> Select[Any]:
    """``statement`` locking the rows it reads until commit (PostgreSQL)."""
    return statement.with_for_update() if is_postgres(connection) else statement


def skip_locked(connection: Connection, statement: Select[Any]) -> Select[Any]:
    """``statement`` locking the rows it reads and passing over rows another
    transaction holds (PostgreSQL); SQLite's writer holds everything already."""
    if is_postgres(connection):
        return statement.with_for_update(skip_locked=True)
    return statement


def insert_ignoring_conflict(connection: Connection, table: Table, **values: Any) -> None:
    """Insert the row unless one with the same key exists (then: nothing)."""
    insert = postgresql.insert if is_postgres(connection) else sqlite.insert
    connection.execute(insert(table).values(**values).on_conflict_do_nothing())


def notify_events(connection: Connection, org: str) -> None:
    """Tell listeners in every process that ``org`` has new events (at commit)."""
    if is_postgres(connection):
        connection.execute(
            text("SELECT pg_notify(:channel, :org)"),
            {
                "channel": EVENTS_CHANNEL,
                "org": org,
            },
        )
