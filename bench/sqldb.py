"""The SQL databases the benches run on: a fresh SQLite file, an emptied PostgreSQL
database, and a private PostgreSQL server that a bench may stop and start.

The PostgreSQL database of ``--postgres-url`` (default ``PROMPTSVC_BENCH_POSTGRES_URL``
or ``postgresql://postgres@127.0.0.1:5432/ps_bench``) is emptied before and after a
run (its ``public`` schema dropped and made again): give the benches a database nobody
else uses. A server shared with others is never stopped: :class:`PrivatePostgres`
makes one of its own for that.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import Column, Engine, Integer, MetaData, Table, Text, insert, make_url, text

from storage.sql.engine import make_engine, writing
from tests.servers import free_port

POSTGRES_URL = os.environ.get(
    "PROMPTSVC_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/ps_bench"
)


# The benches' bare write: one row of this table, in one transaction of its own.
bare_writes = Table(
    "bench_bare_writes",
    MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("body", Text, nullable=False),
)
_BARE_INSERT = insert(bare_writes).returning(bare_writes.c.id)


def make_bare_writes(engine: Engine) -> None:
    """The bare write's table, made if missing (:func:`empty_postgres` drops it)."""
    with writing(engine) as connection:
        bare_writes.create(connection, checkfirst=True)


def bare_write(engine: Engine, body: str) -> int:
    """One INSERT in one transaction, as promptsvc's writes take theirs
    (storage/sql/engine.py ``writing``); the new row's id."""
    with writing(engine) as connection:
        row_id: int = connection.execute(_BARE_INSERT, {"body": body}).scalar_one()
    return row_id


def sqlite_url(directory: Path, name: str = "bench.db") -> str:
    return f"sqlite:///{directory / name}"


def _ensure_database(url: str) -> None:
    """Make the database of ``url`` when it is missing (a new machine has none)."""
    target = make_url(url)
    admin = target.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        if not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (target.database,)
        ).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(target.database)))


def empty_postgres(url: str) -> None:
    """Drop every table of the database at ``url`` (its ``public`` schema), making the
    database first if it is missing."""
    _ensure_database(url)
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    finally:
        engine.dispose()


def _postgres_bin(program: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}")) or [
        shutil.which(program) or ""
    ]
    if not found[-1]:
        raise SystemExit(f"{program} not found: install the PostgreSQL server package")
    return found[-1]


def _as_postgres_user(directory: Path) -> list[str]:
    """The command prefix that runs PostgreSQL's programs: they refuse to run as root,
    so as root they run as the ``postgres`` user, owning ``directory``."""
    if os.geteuid() != 0:
        return []
    shutil.chown(directory, "postgres", "postgres")
    return ["runuser", "-u", "postgres", "--"]


class PrivatePostgres:
    """A PostgreSQL server of our own (initdb in a temporary directory, loopback, a free
    port, trust auth, fsync on), that can be stopped and started, and is removed by
    :meth:`cleanup`."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self._pg_ctl = _postgres_bin("pg_ctl")
        self._as = _as_postgres_user(self.directory)
        subprocess.run(
            [*self._as, _postgres_bin("initdb"), "-D", str(self.data), "-U", "postgres",
             "-A", "trust", "--no-sync"],
            check=True,
            capture_output=True,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> PrivatePostgres:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        self._ctl("start", "-w", "-o", options, "-l", str(self.directory / "log"))
        return self

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; ``immediate`` ends it without a clean shutdown (a crash, as
        far as the data is concerned: it replays its WAL when started again)."""
        self._ctl("stop", "-w", "-m", mode)

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self._as, self._pg_ctl, "-D", str(self.data), *args], check=True, capture_output=True
        )

    def cleanup(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*self._as, self._pg_ctl, "-D", str(self.data), "stop", "-m", "immediate"],
                capture_output=True,
            )
        shutil.rmtree(self.directory, ignore_errors=True)
