"""The SQL read lane (storage/sql/read_lane.py): fresh data on every read (on SQLite,
remembered only until the next commit of any process), and a connection the server
closed while it sat idle replaced without an error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from storage.sql.engine import make_engine
from storage.sql.storage import SqlStorage
from tests.sql_support import PostgresSchema

ROOT = Path(__file__).resolve().parents[2]
ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def greeting_one_and_two(store: SqlStorage) -> None:
    """Prompt ``greeting`` with versions "one" and "two", version 1 in production."""
    store.create_prompt(ORG, "greeting")
    for content in ("one", "two"):
        store.create_version(ORG, "greeting", content, USER)
    store.promote(ORG, "greeting", "1", USER)


def test_a_read_sees_what_another_process_just_committed(empty_url: str) -> None:
    reader, writer = SqlStorage.from_url(empty_url), SqlStorage.from_url(empty_url)
    try:
        greeting_one_and_two(writer)
        assert reader.get_production(ORG, "greeting").content == "one"
        writer.promote(ORG, "greeting", "2", USER)
        production = reader.get_production(ORG, "greeting")
        assert (production.content, production.status) == ("two", "published")
        assert reader.get_version(ORG, "greeting", "1").status == "archived"
        assert reader.get_latest(ORG, "greeting").version == 2
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("environment", ["staging", "production"])
def test_an_environment_read_is_one_statement_on_the_lane(
    empty_url: str, monkeypatch: pytest.MonkeyPatch, environment: str
) -> None:
    """The same lane as a production read: one SELECT, no SQLAlchemy connection."""
    store = SqlStorage.from_url(empty_url)
    try:
        store.create_prompt(ORG, "greeting")
        store.create_version(ORG, "greeting", "hello", USER)
        store.promote(ORG, "greeting", "1", USER)
        store.create_environment(ORG, "staging")
        store.promote(ORG, "greeting", "1", USER, environment="staging")
        lane, reads = store.db.lane, []

        def counting(key: tuple[str, str], params: dict[str, object]) -> object:
            reads.append(key)
            return lane(key, params)

        def no_transaction() -> None:
            raise AssertionError("a read outside the lane")

        monkeypatch.setattr(store.db, "lane", counting)
        monkeypatch.setattr(store.db, "read", no_transaction)
        found = store.get_in_environment(ORG, "greeting", environment)
        assert (found.version, found.environments) == (1, ["production", "staging"])
        pick = "production" if environment == "production" else "environment"
        assert reads == [("name", pick)]
    finally:
        monkeypatch.undo()
        store.close()


@pytest.mark.postgres
def test_a_connection_ended_by_the_server_is_replaced(postgres_schema: PostgresSchema) -> None:
    postgres_schema.empty()
    store = SqlStorage.from_url(postgres_schema.url)
    try:
        store.create_prompt(ORG, "greeting")
        store.create_version(ORG, "greeting", "hello", USER)
        assert store.get_latest(ORG, "greeting").content == "hello"
        pids = [lane.driver.info.backend_pid for lane in store.db.lane._idle.connections]
        assert pids
        admin = make_engine(postgres_schema.url)
        with admin.begin() as connection:
            for pid in pids:
                connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        admin.dispose()
        assert store.get_latest(ORG, "greeting").content == "hello"
        assert [lane.driver.info.backend_pid for lane in store.db.lane._idle.connections] != pids
    finally:
        store.close()


@pytest.mark.postgres
def test_a_postgres_read_is_one_execution_of_a_statement_prepared_once(
    postgres_schema: PostgresSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No statement is built or parsed per read: each read executes the statement the
    connection prepared on its first read, through libpq (no psycopg cursor)."""
    postgres_schema.empty()
    store = SqlStorage.from_url(postgres_schema.url)
    try:
        store.create_prompt(ORG, "greeting")
        store.create_version(ORG, "greeting", "hello", USER)
        store.promote(ORG, "greeting", "1", USER)
        assert store.get_production(ORG, "greeting").content == "hello"
        (lane_connection,) = store.db.lane._idle.connections
        psycopg_connection = lane_connection.driver

        def prepared() -> dict[str, int]:
            """Executions of each statement the connection prepared (it may hold the
            statements of writes from its time in the pool: storage/sql/direct.py)."""
            return dict(
                psycopg_connection.execute(
                    "SELECT name, generic_plans + custom_plans FROM pg_prepared_statements"
                ).fetchall()
            )

        before = prepared()
        assert before["promptsvc_name_production"] == 1

        def no_cursor(*args: object, **kwargs: object) -> None:
            raise AssertionError("a psycopg cursor on the read path")

        monkeypatch.setattr(psycopg_connection, "cursor", no_cursor)
        for _ in range(20):
            assert store.get_production(ORG, "greeting").version == 1
        monkeypatch.undo()
        assert store.db.lane._idle.connections == [
            lane_connection
        ]  # the same connection throughout
        assert prepared() == {**before, "promptsvc_name_production": 21}
    finally:
        store.close()


def test_a_row_changed_in_any_column_is_read_afresh(empty_url: str) -> None:
    """The lane remembers decoded rows by their whole stored value: a change another
    process made to one column (the version's placements) shows on the next read."""
    reader, writer = SqlStorage.from_url(empty_url), SqlStorage.from_url(empty_url)
    try:
        writer.create_prompt(ORG, "greeting")
        writer.create_version(ORG, "greeting", "hello", USER)
        writer.promote(ORG, "greeting", "1", USER)
        writer.create_environment(ORG, "staging")
        assert reader.get_production(ORG, "greeting").environments == ["production"]
        writer.promote(ORG, "greeting", "1", USER, environment="staging")
        production = reader.get_production(ORG, "greeting")
        assert production.environments == ["production", "staging"]
    finally:
        reader.close()
        writer.close()


def test_a_promotions_state_load_stays_in_psycopgs_statement_cache() -> None:
    # psycopg parses a statement over this length afresh on every run (about 100 us).
    from psycopg import _queries
    from sqlalchemy.dialects import postgresql

    from storage.sql.state import _LOADS

    sql = _LOADS["postgresql"][False].compile(dialect=postgresql.psycopg.dialect()).string
    assert len(sql.encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH


def test_a_sqlite_read_repeated_before_any_commit_calls_no_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between commits the lane answers a read it made before from memory
    (storage/sql/wal_watch.py); the first commit after, by any connection, sends the
    next read to the database."""
    url = f"sqlite:///{tmp_path / 'promptsvc.db'}"
    reader, writer = SqlStorage.from_url(url), SqlStorage.from_url(url)
    try:
        greeting_one_and_two(writer)
        lane, sent = reader.db.lane, []
        driver = lane.driver

        def counted(read: Callable[[Any], list[Any]]) -> list[Any]:
            sent.append(read)
            return driver(read)

        monkeypatch.setattr(lane, "driver", counted)
        assert reader.get_production(ORG, "greeting").content == "one"
        assert len(sent) == 1
        for _ in range(3):
            assert reader.get_production(ORG, "greeting").content == "one"
        assert reader.get_version(ORG, "greeting", "2").content == "two"
        assert len(sent) == 2  # the production read was made once, version 2's once
        writer.promote(ORG, "greeting", "2", USER)
        production = reader.get_production(ORG, "greeting")
        assert (production.content, len(sent)) == ("two", 3)
        writer.get_production(ORG, "greeting")  # a read commits nothing
        assert reader.get_production(ORG, "greeting").content == "two"
        assert len(sent) == 3
    finally:
        reader.close()
        writer.close()


def test_a_sqlite_read_sees_what_another_process_just_promoted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'promptsvc.db'}"
    reader = SqlStorage.from_url(url)
    try:
        greeting_one_and_two(reader)
        assert reader.get_production(ORG, "greeting").content == "one"
        promote = (
            "import sys; from storage.sql.storage import SqlStorage; "
            "s = SqlStorage.from_url(sys.argv[1]); "
            "s.promote(sys.argv[2], 'greeting', '2', sys.argv[3]); s.close()"
        )
        subprocess.run(
            [sys.executable, "-c", promote, url, ORG, USER], check=True, timeout=60, cwd=ROOT
        )
        production = reader.get_production(ORG, "greeting")
        assert (production.version, production.content) == (2, "two")
        assert reader.get_version(ORG, "greeting", "1").status == "archived"
    finally:
        reader.close()
