"""PostgreSQL and SQLite for the tests.

``PROMPTSVC_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``)
names a database the tests may make schemas in; each test session makes its own
schema, migrated once, emptied (TRUNCATE) before each test that uses it, and dropped
at the end. Without a server the tests that need one skip, saying why; with
``PROMPTSVC_TEST_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) they fail instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, text

from storage.sql import schema
from storage.sql.engine import make_engine
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
    """``url`` with every connection's search path set to schema ``name``."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={name}')}"


class PostgresSchema:
    """A schema of its own in the test database, migrated to the newest revision."""

    def __init__(self, base_url: str) -> None:
        self.name = f"ps_test_{uuid.uuid4().hex[:12]}"
        self.base_url = base_url
        self.url = in_schema(base_url, self.name)
        self._admin: Engine = make_engine(base_url)
        with self._admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{self.name}"'))
        engine = make_engine(self.url)
        schema.upgrade(engine, "the test schema")
        engine.dispose()
        self._tables = ", ".join(f'"{self.name}"."{t.name}"' for t in metadata.sorted_tables)

    def empty(self) -> None:
        with self._admin.begin() as connection:
            connection.execute(text(f"TRUNCATE {self._tables} RESTART IDENTITY CASCADE"))

    def drop(self) -> None:
        with self._admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{self.name}" CASCADE'))
        self._admin.dispose()


def postgres_schema() -> Iterator[PostgresSchema]:
    """Body of a session fixture: the session's schema, dropped at its end."""
    problem = postgres_problem()
    if problem:
        skip_or_fail_postgres(problem)
    made = PostgresSchema(POSTGRES_URL)
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
