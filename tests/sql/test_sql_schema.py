"""The SQL schema: migrations from the first revision with data in it, the tables as
tables.py describes them, ``promptsvc db``, and databases the server refuses at start."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import insert, select, text

from promptsvc import cli
from storage.sql import schema
from storage.sql.engine import make_engine
from storage.sql.storage import SqlStorage
from storage.sql.tables import event_logs, metadata
from tests.servers import free_port, promptsvc_command

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_the_newest_migration_builds_the_tables_as_described(empty_url: str) -> None:
    engine = make_engine(empty_url)
    assert schema.upgrade(engine, "test") == (None, schema.head())
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    engine.dispose()


def _first_revision_data(url: str) -> None:
    """A database at revision 0001 holding what a server of that revision wrote."""
    engine = make_engine(url)
    schema.upgrade(engine, "test", revision="0001")
    ms = int(AT.timestamp() * 1000)
    with engine.begin() as connection:
        t = {name: metadata.tables[name] for name in ("prompts", "versions", "history", "events")}
        connection.execute(
            insert(t["prompts"]).values(
                prompt_id="pmt_1",
                org=ORG,
                name="greeting",
                prompt_type="text",
                description="hello",
                created_at=AT,
                updated_at=AT,
                counter=2,
                latest_version=2,
                production_version=1,
                promotions=1,
            )
        )
        for number, status in ((1, "published"), (2, "draft")):
            connection.execute(
                insert(t["versions"]).values(
                    org=ORG,
                    prompt_id="pmt_1",
                    version=number,
                    version_id=f"v_{number}",
                    content=f"Hello {{{{ name }}}} v{number}",
                    variables=json.dumps(["name"]),
                    status=status,
                    metadata=json.dumps({"model": "m"}),
                    tags=json.dumps(["t"]),
                    created_at=AT,
                    updated_at=AT,
                    promoted_at=AT if number == 1 else None,
                    promoted_by=USER if number == 1 else None,
                    created_by=USER,
                )
            )
        connection.execute(
            insert(t["history"]).values(
                org=ORG,
                prompt_id="pmt_1",
                position=1,
                history_id="h_1",
                version_number=1,
                promoted_by=USER,
                promoted_at=AT,
                previous_version=None,
                notes="first",
            )
        )
        kinds = ("prompt.created", "version.created", "version.created", "version.promoted")
        for seq, kind in enumerate(kinds):
            connection.execute(
                insert(t["events"]).values(
                    org=ORG,
                    ms=ms,
                    seq=seq,
                    type=kind,
                    prompt_id="pmt_1",
                    prompt_name="greeting",
                    at=AT,
                )
            )
        # Revision 0001's event_logs has no "kept" column.
        connection.execute(
            text(
                "INSERT INTO event_logs (org, last_ms, last_seq, trimmed) "
                "VALUES (:org, :ms, 3, false)"
            ),
            {"org": ORG, "ms": ms},
        )
    engine.dispose()


def test_a_first_revision_database_with_data_is_upgraded(empty_url: str) -> None:
    _first_revision_data(empty_url)

    store = SqlStorage.from_url(empty_url)  # upgrades at start
    try:
        engine = make_engine(empty_url)
        assert schema.current(engine, "test") == schema.head() != "0001"
        with engine.connect() as connection:
            kept = connection.execute(select(event_logs.c.kept)).scalar()
        engine.dispose()
        assert kept == 4  # counted from the events by the migration
        production = store.get_production(ORG, "greeting")
        assert (production.version, production.content, production.variables) == (
            1,
            "Hello {{ name }} v1",
            ("name",),
        )
        assert production.metadata == {"model": "m"} and production.promoted_at == AT
        assert store.list_history(ORG, "greeting").items[0].notes == "first"
        assert [e.type for e in store.events_after(ORG, "0-0", 10)][-1] == "version.promoted"
        # Numbering and the log go on from where the old revision left them.
        assert store.create_version(ORG, "greeting", "v3", USER).version == 3
        promoted = store.promote(ORG, "greeting", "3", USER)
        assert promoted.record.previous_version == 1
        events = store.events_after(ORG, "0-0", 10)
        assert len(events) == 6 and events[-1].type == "version.promoted"
        assert store.event_log_bounds(ORG).newest == events[-1].id
    finally:
        store.close()


def test_db_commands_upgrade_once_and_print_the_revision(
    empty_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["db", "current", "--storage", empty_url]) == 0
    assert capsys.readouterr().out.startswith("(none): ")
    assert cli.main(["db", "upgrade", "--storage", empty_url]) == 0
    assert f"upgraded from revision (empty) to {schema.head()}" in capsys.readouterr().out
    assert cli.main(["db", "upgrade", "--storage", empty_url]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert cli.main(["db", "current", "--storage", empty_url]) == 0
    assert capsys.readouterr().out == f"{schema.head()} (the newest)\n"


def test_db_commands_on_storage_without_a_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["db", "upgrade", "--storage", "memory://"]) == 0
    assert "no schema to migrate" in capsys.readouterr().out


def _open(url: str) -> str:
    SqlStorage.from_url(url).close()
    engine = make_engine(url)
    revision = schema.current(engine, "test")
    engine.dispose()
    assert revision is not None
    return revision


@pytest.mark.slow
def test_processes_starting_at_once_upgrade_once(empty_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        revisions = pool.map(_open, [empty_url] * 4)
    assert revisions == [schema.head()] * 4


# --------------------------------------------------------------------------- refused


def _serve_fails(url: str) -> str:
    """``promptsvc serve`` on ``url``: its exit status must be 1; returns stderr."""
    result = subprocess.run(
        promptsvc_command("serve", "--port", str(free_port()), "--storage", url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("promptsvc: error: storage ")
    return result.stderr


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    err = _serve_fails(f"sqlite:///{path}")
    assert f"SQLite file {path} is not a SQLite database" in err
    assert path.read_text().startswith("these are my notes")


def test_a_database_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    err = _serve_fails(f"sqlite:///{path}")
    assert "is not a promptsvc database: it has other tables (invoices)" in err
    with sqlite3.connect(path) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    assert tables == [("invoices",)]


def test_a_newer_schema_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    url = f"sqlite:///{path}"
    SqlStorage.from_url(url).close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    err = _serve_fails(url)
    assert "has schema revision '9999', newer than this promptsvc knows" in err
    assert f"(its newest is '{schema.head()}')" in err


def test_a_read_only_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "read-only.db"
    url = f"sqlite:///{path}"
    SqlStorage.from_url(url).close()
    # root writes whatever the mode bits say: make the file immutable instead.
    made_read_only = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made_read_only.returncode != 0:
        path.chmod(0o444)
    try:
        err = _serve_fails(url)
    finally:
        if made_read_only.returncode == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    assert f"SQLite file {path} is read-only" in err


def test_a_sqlite_url_without_a_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--port", "0", "--storage", "sqlite://"]) == 1
    err = capsys.readouterr().err
    assert "names no file" in err and "Traceback" not in err
