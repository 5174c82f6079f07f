"""The SQL schema: migrations from the first revision with data in it, the tables as
tables.py describes them, ``promptsvc db``, and databases ``promptsvc serve`` and
gunicorn refuse at start."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import insert, select, text

from promptsvc import cli
from storage.sql import schema, usage_tables  # noqa: F401  (their tables join metadata)
from storage.sql.engine import make_engine
from storage.sql.identity_tables import refresh_tokens
from storage.sql.storage import SqlStorage
from storage.sql.tables import event_logs, metadata
from tests import sql_support
from tests.servers import free_port, gunicorn_command, promptsvc_command

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
LATER = datetime(2999, 1, 1, tzinfo=UTC)


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
        # A live refresh family and a revoked one (before 0010 revoking set a flag).
        for family, revoked in (("live", False), ("revoked", True)):
            connection.execute(
                text(
                    "INSERT INTO refresh_families (org, family_id, expires_at, revoked) "
                    "VALUES (:org, :family, :at, :revoked)"
                ),
                {"org": ORG, "family": family, "at": LATER, "revoked": revoked},
            )
            connection.execute(
                insert(refresh_tokens).values(
                    org=ORG, token_hash=f"rt-{family}", family_id=family, client_id="cli",
                    user_id=USER, scope="openid", session_id=None, issued_at=AT,
                    expires_at=LATER, used=False,
                )
            )  # fmt: skip
    engine.dispose()


def test_a_first_revision_database_with_data_is_upgraded(empty_url: str) -> None:
    _first_revision_data(empty_url)

    store = SqlStorage.from_url(empty_url)  # upgrades at start
    try:
        engine = make_engine(empty_url)
        assert schema.current(engine, "test") == schema.head() != "0001"
        with engine.connect() as connection:
            kept = connection.execute(select(event_logs.c.kept)).scalar()
            tokens = connection.execute(select(refresh_tokens.c.token_hash)).scalars().all()
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
        # A revoked family stays revoked, its tokens gone with it; a live one lives.
        assert store.get_refresh_token(ORG, "rt-live") is not None
        assert store.get_refresh_token(ORG, "rt-revoked") is None
        assert tokens == ["rt-live"]
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


def test_processes_starting_at_once_upgrade_once(empty_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        revisions = pool.map(_open, [empty_url] * 4)
    assert revisions == [schema.head()] * 4


# --------------------------------------------------------------------------- refused
# Each database a server must refuse, refused by `promptsvc serve` and by gunicorn (whose
# master checks before it forks): one line saying why, no traceback, and a SQLite file
# left exactly as it was found.


@dataclass(frozen=True)
class Refused:
    url: str
    says: str  # what the one line must say
    path: Path | None = None  # the SQLite file, to be left byte for byte as it was
    # Nothing written beside it either (SQLite's read-only connection to a WAL file,
    # promptsvc's own, leaves a -wal and a -shm file there).
    nothing_beside: bool = True


def _sqlite_promptsvc_db(path: Path) -> str:
    url = f"sqlite:///{path}"
    SqlStorage.from_url(url).close()
    return url


def _not_sqlite(tmp_path: Path) -> Iterator[Refused]:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    yield Refused(f"sqlite:///{path}", f"SQLite file {path} is not a SQLite database", path)


def _other_app(tmp_path: Path) -> Iterator[Refused]:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        connection.execute("INSERT INTO invoices (total) VALUES (12.5)")
    says = "is not a promptsvc database: it has other tables (invoices)"
    yield Refused(f"sqlite:///{path}", says, path)


def _newer(tmp_path: Path) -> Iterator[Refused]:
    path = tmp_path / "newer.db"
    url = _sqlite_promptsvc_db(path)
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    says = (
        "has schema revision '9999', newer than this promptsvc knows "
        f"(its newest is '{schema.head()}')"
    )
    yield Refused(url, says, path)


def _read_only(tmp_path: Path) -> Iterator[Refused]:
    path = tmp_path / "read-only.db"
    url = _sqlite_promptsvc_db(path)
    # root writes whatever the mode bits say: make the file immutable instead.
    made_read_only = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made_read_only.returncode != 0:
        path.chmod(0o444)
    try:
        yield Refused(url, f"SQLite file {path} is read-only", path, nothing_beside=False)
    finally:
        if made_read_only.returncode == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)


def _postgres_newer(_tmp_path: Path) -> Iterator[Refused]:
    for made in sql_support.postgres_schema():
        engine = make_engine(made.url)
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        engine.dispose()
        yield Refused(made.url, "has schema revision '9999', newer than this promptsvc knows")


def _postgres_down(_tmp_path: Path) -> Iterator[Refused]:
    port = free_port()  # nothing listens there
    says = f"PostgreSQL database 'promptsvc' on 127.0.0.1:{port} did not answer"
    yield Refused(f"postgresql://postgres@127.0.0.1:{port}/promptsvc", says)


@pytest.fixture(
    params=[
        _not_sqlite,
        _other_app,
        _newer,
        _read_only,
        pytest.param(_postgres_newer, marks=pytest.mark.postgres),
        _postgres_down,
    ],
    ids=lambda make: make.__name__.strip("_"),
)
def refused(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Refused]:
    yield from request.param(tmp_path)


def _serve(url: str) -> str:
    """``promptsvc serve`` on ``url``: it must exit with status 1; returns its one line."""
    result = subprocess.run(
        promptsvc_command("serve", "--port", str(free_port()), "--storage", url),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("promptsvc: error: storage ")
    return result.stderr


def _gunicorn(url: str) -> str:
    """gunicorn with two workers on ``url``: its master must refuse before it forks a
    worker; returns stderr."""
    result = subprocess.run(
        gunicorn_command("wsgi:app"),
        env={
            **os.environ,
            "PROMPTSVC_BIND": f"127.0.0.1:{free_port()}",
            "PROMPTSVC_WORKERS": "2",
            "PROMPTSVC_STORAGE_URL": url,
        },
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Error: storage " in result.stderr
    assert "Booting worker" not in result.stderr
    return result.stderr


@pytest.mark.parametrize("start", [_serve, _gunicorn], ids=["serve", "gunicorn"])
def test_a_database_that_cannot_be_used_is_refused_in_one_line(
    start: Callable[[str], str], refused: Refused
) -> None:
    path = refused.path
    found = (sha256(path.read_bytes()).digest(), sorted(path.parent.iterdir())) if path else None
    err = start(refused.url)
    assert "Traceback" not in err, err
    assert err.count(refused.says) == 1, err
    if path is not None and found is not None:
        assert sha256(path.read_bytes()).digest() == found[0]
        if refused.nothing_beside:
            assert sorted(path.parent.iterdir()) == found[1]


def test_a_sqlite_url_without_a_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--port", "0", "--storage", "sqlite://"]) == 1
    err = capsys.readouterr().err
    assert "names no file" in err and "Traceback" not in err
