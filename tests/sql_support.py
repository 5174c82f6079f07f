"""PostgreSQL and SQLite for the tests.

``PROMPTSVC_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``)
names a database the tests may make schemas in; each test session makes its own
schema, migrated once, emptied (TRUNCATE) before each test that uses it, and dropped
at the end. Without a server the tests that need one skip, saying why; with
``PROMPTSVC_TEST_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import text

from storage.sql import identity_tables, schema, usage_tables  # noqa: F401  (their tables join metadata)
from storage.sql.engine import make_engine
from storage.sql.storage import SqlStorage
from storage.sql.tables import metadata

POSTGRES_URL = os.environ.get(
    "PROMPTSVC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REQUIRE_POSTGRES = os.environ.get("PROMPTSVC_TEST_REQUIRE_POSTGRES") == "1"


def postgres_problem() -> str | None:
    """Why PostgreSQL cannot be used here, or None."""
    try:
        engine = make_engine(POSTGRES_URL)
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:  # any reason at all: it is reported, not hidden
        return f"no PostgreSQL at {POSTGRES_URL}: {type(exc).__name__}: {exc}"
    return None


def skip_or_fail_postgres(reason: str) -> None:
    if REQUIRE_POSTGRES:
        pytest.fail(f"{reason} (PROMPTSVC_TEST_REQUIRE_POSTGRES=1)")
    pytest.skip(reason)


def in_schema(url: str, name: str) -> str:
    """``url`` with every connection's search path set to schema ``name``.

    Commits do not wait for the server's disk (``synchronous_commit=off``): a test
    never crashes the server, and the suite runs several times faster.
    """
    separator = "&" if "?" in url else "?"
    options = f"-csearch_path={name} -csynchronous_commit=off"
    return f"{url}{separator}options={quote(options)}"


class PostgresSchema:
    """A schema of its own in the test database, migrated to the newest revision
    (or left empty: ``migrate=False``)."""

    def __init__(self, base_url: str, *, migrate: bool = True) -> None:
        self.name = f"ps_test_{uuid.uuid4().hex[:12]}"
        self.base_url = base_url
        self.url = in_schema(base_url, self.name)
        admin = make_engine(base_url)
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{self.name}"'))
        admin.dispose()
        if migrate:
            engine = make_engine(self.url)
            schema.upgrade(engine, "the test schema")
            engine.dispose()
        self._admin = make_engine(self.url)

    def empty(self) -> None:
        # DELETE, not TRUNCATE: on tables this small it is many times faster.
        with self._admin.begin() as connection:
            for table in reversed(metadata.sorted_tables):
                connection.execute(table.delete())

    def drop(self) -> None:
        self._admin.dispose()
        admin = make_engine(self.base_url)
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{self.name}" CASCADE'))
        admin.dispose()


def postgres_schema(*, migrate: bool = True) -> Iterator[PostgresSchema]:
    """Body of a fixture: a schema of its own, dropped at its end."""
    problem = postgres_problem()
    if problem:
        skip_or_fail_postgres(problem)
    made = PostgresSchema(POSTGRES_URL, migrate=migrate)
    try:
        yield made
    finally:
        made.drop()


def sqlite_template(directory: Path) -> Path:
    """A SQLite file migrated to the newest revision, to copy for each test."""
    path = directory / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    schema.upgrade(engine, "the template")
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


SQL_IDENTITY_PENDING = "the SQL backend's identity concerns come from branch sqlid"


def sql_storage(
    backend: str,
    request: pytest.FixtureRequest,
    *,
    needs_identity: bool = True,
    cls: type[SqlStorage] = SqlStorage,
    **kwargs: Any,
) -> SqlStorage:
    """A new, empty SqlStorage for a test: ``sqlite`` (a copy of the session's migrated
    file in the test's tmp_path) or ``postgres`` (the session's schema, emptied).
    ``kwargs`` go to ``cls.from_url`` (the clock). Skips a test that needs identity
    while the SQL backend lacks it (storage/sql/pending.py)."""
    if needs_identity and importlib.util.find_spec("storage.sql.pending") is not None:
        pytest.skip(SQL_IDENTITY_PENDING)
    if backend == "sqlite":
        path = request.getfixturevalue("tmp_path") / "promptsvc.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return cls.from_url(f"sqlite:///{path}", **kwargs)
    made: PostgresSchema = request.getfixturevalue("postgres_schema")
    made.empty()
    return cls.from_url(made.url, **kwargs)
