"""A storage URL to a SQLAlchemy Engine set up for promptsvc.

* ``sqlite:///relative/path.db`` (from the working directory) and
  ``sqlite:////absolute/path.db``: the standard library's driver, in WAL mode (readers
  never wait for the writer, and several processes share one file), with a busy
  timeout (a writer waits for another instead of failing at once), foreign keys on,
  and ``synchronous=NORMAL``, SQLite's advice for WAL: a commit survives the process
  being killed at any point; a power cut may lose the last commits before the OS
  wrote them out (docs/deployment.md).
* ``postgresql://user:password@host:port/db`` (also ``postgres://``): psycopg 3, with a
  short connect timeout, so that a server that is down answers 503 fast.

Transactions: :func:`writing` begins one that takes the write lock up front, which
makes every read-then-write step atomic across threads and processes. On SQLite that
is ``BEGIN IMMEDIATE``: the stdlib driver's own transaction handling is turned off
(SQLAlchemy's documented recipe for pysqlite, "Serializable isolation / Savepoints /
Transactional DDL") and the ``begin`` event says BEGIN itself. On PostgreSQL writers
lock the rows they change (storage/sql/dialect.py).

Each process (each gunicorn worker: the app is not preloaded) makes its own engine and
pool; the pool holds as many connections as the worker has threads answering requests.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from storage.sql import direct

# Seconds a SQLite writer waits for the lock another one holds before giving up.
SQLITE_BUSY_TIMEOUT = 30
# Seconds to wait for PostgreSQL to accept a connection: a server that is down must
# turn into a 503 quickly, not hang a request.
POSTGRES_CONNECT_TIMEOUT = 3
# Connections each process keeps open, and more it may open under a burst; a request
# that finds none free waits this long, then gets a 503.
POOL_SIZE = 8
POOL_OVERFLOW = 16
POOL_TIMEOUT = 10

# The execution option that makes a transaction take the write lock when it begins.
WRITE = "promptsvc_write"


class UnsupportedUrl(ValueError):
    """A ``sqlite:`` or ``postgresql:`` URL this backend cannot use; the message says why."""


def is_sql_url(url: str) -> bool:
    scheme = url.split("://", 1)[0].lower()
    return scheme in ("sqlite", "postgresql", "postgres") or scheme.startswith("postgresql+")


def describe(url: str) -> str:
    """Where the data lives, for people: the file's absolute path, or the server and
    database (never the password)."""
    path = sqlite_file(url)
    if path is not None:
        return f"SQLite file {path}"
    parsed = make_url(_normalize(url))
    return f"PostgreSQL database {parsed.database!r} on {parsed.host}:{parsed.port or 5432}"


def sqlite_file(url: str) -> str | None:
    """The absolute path of a SQLite URL's file (which may not exist yet); None for
    PostgreSQL."""
    parsed = make_url(_normalize(url))
    if parsed.get_backend_name() != "sqlite":
        return None
    return os.path.abspath(parsed.database or "")


def _normalize(url: str) -> str:
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        return "postgresql+psycopg://" + rest
    if scheme == "sqlite":
        if rest in ("", "/", "/:memory:"):
            raise UnsupportedUrl(
                f"{url!r} names no file: use sqlite:///relative/path.db or "
                "sqlite:////absolute/path.db (memory:// keeps data in the process)"
            )
        return "sqlite://" + rest
    raise UnsupportedUrl(
        f"unsupported SQL storage URL {url!r}: use sqlite:///path.db or "
        "postgresql://user:password@host:port/db"
    )


def make_engine(url: str) -> Engine:
    try:
        sa_url = make_url(_normalize(url))
    except ArgumentError:
        raise UnsupportedUrl(f"{url!r} is not a valid storage URL") from None
    sqlite = sa_url.get_backend_name() == "sqlite"
    engine = create_engine(
        sa_url,
        # psycopg prepares no statement of its own on PostgreSQL: a ROLLBACK would make
        # it deallocate every one, those of storage/sql/direct.py and read_lane.py among
        # them.
        connect_args=(
            {"timeout": SQLITE_BUSY_TIMEOUT, "check_same_thread": False}
            if sqlite
            else {"connect_timeout": POSTGRES_CONNECT_TIMEOUT, "prepare_threshold": None}
        ),
        pool_size=POOL_SIZE,
        max_overflow=POOL_OVERFLOW,
        pool_timeout=POOL_TIMEOUT,
        # PostgreSQL: READ COMMITTED, its default; writers lock what they change.
        isolation_level=None if sqlite else "READ COMMITTED",
    )
    if sqlite:
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    else:
        # A statement of SQLAlchemy's goes after those a write deferred (storage/sql/direct.py).
        event.listen(engine, "before_execute", direct.flush)
    return engine


def _sqlite_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    # The driver must not begin transactions on its own (see the module docstring).
    dbapi_connection.isolation_level = None
    for pragma in (
        f"busy_timeout = {SQLITE_BUSY_TIMEOUT * 1000}",
        "journal_mode = WAL",
        "synchronous = NORMAL",
        "foreign_keys = ON",
    ):
        dbapi_connection.execute(f"PRAGMA {pragma}")


def _sqlite_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(WRITE, False)
    sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"
    if connection.dispatch.before_cursor_execute:  # watched (statement counts): as usual
        connection.exec_driver_sql(sql)
        return
    try:  # straight to the driver: SQLAlchemy's execution costs more than the BEGIN
        connection.connection.driver_connection.execute(sql)  # type: ignore[union-attr]
    except sqlite3.Error as error:  # as SQLAlchemy's would be (a lock held too long: 503)
        raise DBAPIError.instance(sql, None, error, sqlite3.Error) from error


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the write lock from its start (SQLite) and commits on
    leaving the block, or rolls back on an exception."""
    with engine.connect() as connection:
        connection.execution_options(**{WRITE: True})
        try:
            with connection.begin():
                yield connection
                direct.flush(connection, commit=True)  # PostgreSQL: what it deferred
        finally:
            connection.info.pop(direct.DEFERRED, None)  # (rolled back)


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A read-only transaction: one consistent snapshot for every statement in it."""
    with engine.connect() as connection, connection.begin():
        yield connection
