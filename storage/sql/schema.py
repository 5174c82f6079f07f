"""The database's schema: checked and brought up to date at start-up, under a lock.

Alembic's migrations (storage/sql/migrations/versions) run from code, as in Alembic's
cookbook ("Sharing a Connection across one or more programmatic migration commands"):
the connection that holds the lock is handed to migrations/env.py.

The lock: on PostgreSQL an advisory lock held until commit, on SQLite the write lock
of ``BEGIN IMMEDIATE``; the migrations run inside that transaction (both dialects' DDL
is transactional). Of many processes starting at once one upgrades; the others wait for
the lock, then find the schema current.

A database is refused, with a message that says why and no traceback to read, when it
is not a promptsvc database (tables but no promptsvc schema; a file that is not
SQLite), when its schema is newer than this promptsvc knows, or when it cannot be
written (a read-only SQLite file or directory). A SQLite file is checked on a
connection that only reads before the engine opens it, so a file refused is left as
it was found.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, inspect, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import NullPool

from storage.errors import StorageError, StorageUnavailable
from storage.sql import dialect
from storage.sql.engine import SQLITE_BUSY_TIMEOUT, WRITE, describe, make_engine

SCRIPTS = Path(__file__).resolve().parent / "migrations"


class SchemaError(StorageError):
    """The database cannot be used by this promptsvc; the message says why."""


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.attributes["connection"] = connection
    return config


@functools.cache
def _revisions() -> tuple[str, frozenset[str]]:
    """The newest revision and every revision this promptsvc knows (read once: Alembic
    loads every migration file to tell)."""
    scripts = ScriptDirectory.from_config(_config())
    newest = scripts.get_current_head()
    assert newest is not None
    return newest, frozenset(script.revision for script in scripts.walk_revisions())


def head() -> str:
    """The newest revision this promptsvc knows."""
    return _revisions()[0]


@contextmanager
def _translated(where: str) -> Iterator[None]:
    """Driver errors at start-up, said for people."""
    try:
        yield
    except sa_exc.DatabaseError as exc:
        original = exc.orig
        message = str(original).lower()
        if "readonly" in message or "read-only" in message:
            beside = " and to its directory (the -wal and -shm files beside it)"
            sqlite = isinstance(original, sqlite3.DatabaseError)
            raise SchemaError(
                f"{where} is read-only: promptsvc must write to it{beside if sqlite else ''}"
            ) from None
        if isinstance(original, sqlite3.DatabaseError):
            if "not a database" in message or "malformed" in message:
                raise SchemaError(f"{where} is not a SQLite database") from None
            if "unable to open" in message:
                raise SchemaError(
                    f"{where} cannot be opened: does its directory exist, and may "
                    "promptsvc write there?"
                ) from None
        if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
            raise StorageUnavailable(f"{where} did not answer") from None
        raise


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the schema lock."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            with connection.begin():
                dialect.serialize(connection, "schema")
                yield connection
            return
        # Foreign keys off while tables are rebuilt (Alembic's batch mode drops and
        # recreates them; a cascade would empty the tables that point at them).
        # On the driver's connection: outside a transaction, where the pragma works.
        driver = connection.connection.dbapi_connection
        assert driver is not None
        driver.execute("PRAGMA foreign_keys = OFF")
        try:
            connection.execution_options(**{WRITE: True})
            with connection.begin():
                yield connection
                problems = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                if problems:
                    raise SchemaError(f"the migration broke foreign keys: {problems[:5]}")
        finally:
            driver.execute("PRAGMA foreign_keys = ON")


def _check(connection: Connection, where: str) -> str | None:
    """The database's revision (None: a new, empty database); SchemaError when it is
    not ours or newer than this promptsvc."""
    tables = set(inspect(connection).get_table_names())
    if not tables:
        return None
    revision = MigrationContext.configure(connection).get_current_revision()
    if revision is None or "prompts" not in tables:
        shown = ", ".join(sorted(tables)[:5])
        raise SchemaError(
            f"{where} is not a promptsvc database: it has other tables ({shown}) and no "
            "promptsvc schema; point PROMPTSVC_STORAGE_URL at a new file or database"
        )
    if revision not in _revisions()[1]:
        raise SchemaError(
            f"{where} has schema revision {revision!r}, newer than this promptsvc knows "
            f"(its newest is {head()!r}): run the promptsvc that wrote it, or a newer one"
        )
    return revision


def _check_untouched(engine: Engine, where: str) -> None:
    """On SQLite, :func:`_check` the file before the engine opens it: the engine's
    connections switch a file to WAL mode, which rewrites its header, and a file that
    is not ours must be refused as it was found. The connection here runs no PRAGMA and
    only reads (it may not create the file: a missing one is new, and ours)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database:
        return
    path = Path(os.path.abspath(database))
    if not path.exists():
        return
    uri = f"{path.as_uri()}?mode=rw"
    probe = create_engine(
        "sqlite://",
        creator=lambda: sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT),
        poolclass=NullPool,
    )
    with probe.connect() as connection:  # closed with it (NullPool)
        _check(connection, where)


def upgrade(engine: Engine, where: str, revision: str = "head") -> tuple[str | None, str]:
    """Bring the database to the newest schema, or to ``revision`` (idempotent).
    Returns the revisions before and after."""
    target = head() if revision == "head" else revision
    with _translated(where):
        _check_untouched(engine, where)
        with _locked(engine) as connection:
            before = _check(connection, where)
            if before is not None:
                # A database that cannot be written fails here, at start-up, rather
                # than on the first change a user makes.
                connection.execute(text("UPDATE alembic_version SET version_num = version_num"))
            if before != target:
                command.upgrade(_config(connection), target)
    return before, target


def current(engine: Engine, where: str) -> str | None:
    """The database's revision (None: no promptsvc schema yet)."""
    with _translated(where):
        _check_untouched(engine, where)
        with engine.connect() as connection:
            return _check(connection, where)


def opened(url: str) -> Engine:
    """An engine on the database at ``url``, its schema brought up to date (under a
    lock: one process upgrades, the others wait). SchemaError when it cannot be used."""
    engine = make_engine(url)
    try:
        upgrade(engine, describe(url))
    except BaseException:
        engine.dispose()
        raise
    return engine


def prepare(url: str) -> None:
    """Check the database at ``url`` and bring it to the newest schema, then close
    every connection: gunicorn's master does this before it forks its workers, so a
    refusal is said once, and no database handle crosses the fork."""
    opened(url).dispose()
