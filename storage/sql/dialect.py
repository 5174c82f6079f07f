"""What SQLite and PostgreSQL do differently, each in one small place.

* Row locks: PostgreSQL writers lock the rows they read before changing them
  (``FOR UPDATE``), and delivery workers skip the queue rows another worker holds
  (``FOR UPDATE SKIP LOCKED``). SQLite has no row locks: a writing transaction holds
  the whole database from its ``BEGIN IMMEDIATE`` (storage/sql/engine.py), so the
  same statements go without the clause.
* Upserts: ``INSERT ... ON CONFLICT DO NOTHING`` (or ``DO UPDATE``) comes from each
  dialect's own ``insert``.
* Serializing a step that no row can lock (the row does not exist yet): PostgreSQL
  takes a transaction-scoped advisory lock on the step's name; on SQLite the writer
  holds the whole database already.
* New events: PostgreSQL tells listeners in other processes with ``pg_notify`` (sent
  at commit), in what the event log's upsert returns (storage/sql/core.py); SQLite has
  no such channel, and waiters poll (storage/sql/events.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import Connection, Select, Table, func, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

# The channel PostgreSQL's NOTIFY uses for new events; the payload is the org.
EVENTS_CHANNEL = "promptsvc_events"
# How often a waiter looks for new events when nobody can tell it (SQLite, or a
# PostgreSQL listener that lost its connection): the contract's bound is 250 ms.
POLL_INTERVAL = 0.2


def is_postgres(connection: Connection) -> bool:
    return connection.dialect.name == "postgresql"


def locked(
    connection: Connection, statement: Select[Any], read: bool = False, skip: bool = False
) -> Select[Any]:
    """``statement`` locking the rows it reads until commit (PostgreSQL; ``read``: a
    shared lock, which only a writer of the rows waits for; ``skip``: passing over rows
    another transaction holds). SQLite's writer holds everything already."""
    if not is_postgres(connection):
        return statement
    return statement.with_for_update(read=read, skip_locked=skip)


def insert_ignoring_conflict(connection: Connection, table: Table, **values: Any) -> None:
    """Insert the row unless one with the same key exists (then: nothing)."""
    insert = postgresql.insert if is_postgres(connection) else sqlite.insert
    connection.execute(insert(table).values(**values).on_conflict_do_nothing())


def upsert(
    connection: Connection | str, table: Table, values: dict[str, Any], **changes: Any
) -> Insert:
    """Insert ``values``, or, when a row with the same primary key exists, set
    ``changes`` on it (``table.c`` there is the existing row); one statement, for the
    dialect of ``connection`` (or the one named)."""
    name = connection if isinstance(connection, str) else connection.dialect.name
    insert = postgresql.insert if name == "postgresql" else sqlite.insert
    key = [column.name for column in table.primary_key.columns]
    return insert(table).values(**values).on_conflict_do_update(index_elements=key, set_=changes)


def serialize(connection: Connection, name: str) -> None:
    """Hold off every other transaction that serializes on ``name`` until commit."""
    if is_postgres(connection):
        digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:key)"),
            {"key": int.from_bytes(digest, "big", signed=True)},
        )


def notified(dialect_name: str, org: Any) -> list[Any]:
    """What a statement that appends events returns to tell listeners in every process
    that ``org`` has new events (PostgreSQL's ``pg_notify``, sent at commit)."""
    return (
        [func.pg_notify(EVENTS_CHANNEL, org).label("notified")]
        if dialect_name == "postgresql"
        else []
    )
