"""The hot read (production, latest or one version of a prompt) on driver connections
of its own.

Why: through SQLAlchemy a one-row SELECT costs the calling process several times what
the database spends on it (pool checkout and its events, the transaction it begins,
building and compiling the statement, result processing), and the read path every LLM
call waits on must keep up with a bare Flask endpoint. As storage/redis/read_lane.py
does for Redis, the read goes through :class:`ReadLane`: a stack of idle driver
connections (made by the engine, so SQLite's pragmas are set, then detached from its
pool), taken and given back with ``list.pop``/``list.append`` (atomic under the GIL, no
lock), each in autocommit (a single SELECT is atomic by itself, and needs no BEGIN or
COMMIT round trip). The SQL is written once per dialect; psycopg prepares it on the
server after a few uses.

Failures: a connection the server closed while it sat idle (PostgreSQL restarted, or
ended the session) fails on first use; the read is sent once more on a new connection,
which is harmless for a read. Any other failure drops the connection and turns into
StorageUnavailable when the database does not answer.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

from sqlalchemy import Engine

from storage.errors import StorageUnavailable

# The columns of a version read: the prompt's name and type, then the version.
COLUMNS = (
    "p.name, p.prompt_type, v.prompt_id, v.version, v.version_id, v.content, v.variables, "
    "v.status, v.metadata, v.tags, v.created_at, v.updated_at, v.promoted_at, "
    "v.promoted_by, v.created_by, v.placements, v.variables_schema, v.examples, "
    "v.frozen, v.authors, v.config"
)
VERSION_WIDTH = COLUMNS.count(",") + 1
# An environment read adds the environment's rollout, if any (all null without one).
ROLLOUT_COLUMNS = (
    "r.rollout_id, r.baseline_version, r.candidate_version, r.percent, r.started_by, "
    "r.started_at, r.updated_at"
)
_JOIN = (
    f"SELECT {COLUMNS} FROM prompts p "
    "JOIN versions v ON v.org = p.org AND v.prompt_id = p.prompt_id"
)
_ROLLOUT_JOIN = (
    f"SELECT {COLUMNS}, {ROLLOUT_COLUMNS} FROM prompts p "
    "JOIN versions v ON v.org = p.org AND v.prompt_id = p.prompt_id "
    "LEFT JOIN rollouts r ON r.org = p.org AND r.prompt_id = p.prompt_id "
    "AND r.environment = :environment"
)
# By prompt name, then (on a miss, for a pmt_ ref) by prompt id; the version is picked
# by number, by id, or as the prompt's production or latest one.
READS = {
    (key, pick): f"{_JOIN} WHERE p.org = :org AND p.{column} = :ref AND {condition}"
    for key, column in (("name", "name"), ("id", "prompt_id"))
    for pick, condition in (
        ("number", "v.version = :number"),
        ("version_id", "v.version_id = :version_id"),
        ("production", "v.version = p.production_version"),
        ("latest", "v.version = p.latest_version"),
        (
            "environment",
            "v.version = (SELECT pl.version FROM placements pl WHERE pl.org = p.org "
            "AND pl.prompt_id = p.prompt_id AND pl.environment = :environment)",
        ),
    )
}
# The same environment reads with the rollout's columns after the version's.
READS.update(
    {
        (key, f"{pick}+rollout"): READS[key, pick].replace(_JOIN, _ROLLOUT_JOIN, 1)
        for key in ("name", "id")
        for pick in ("production", "environment")
    }
)


def _for_driver(sql: str, dialect: str) -> str:
    """``:name`` parameters as the driver spells them (psycopg: ``%(name)s``)."""
    if dialect == "postgresql":
        return re.sub(r":(\w+)", r"%(\1)s", sql)
    return sql


class ReadLane:
    """Runs the version reads on the lane's own driver connections."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        dialect = engine.dialect.name
        self._sql = {key: _for_driver(sql, dialect) for key, sql in READS.items()}
        self._postgres = dialect == "postgresql"
        self._errors: tuple[type[BaseException], ...] = (engine.dialect.loaded_dbapi.Error,)
        self._idle: list[Any] = []
        self._pid = os.getpid()

    def __call__(self, key: tuple[str, str], params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of read ``key`` (a READS key) with ``params``, or None."""
        if self._pid != os.getpid():
            # A forked child must not use its parent's connections.
            self._idle = []
            self._pid = os.getpid()
        sql = self._sql[key]
        try:
            connection, reused = self._idle.pop(), True
        except IndexError:
            connection, reused = self._new_connection(), False
        try:
            try:
                row = connection.execute(sql, params).fetchone()
            except self._errors:
                if not reused:
                    raise
                self._discard(connection)  # closed while idle: once more, on a new one
                connection = self._new_connection()
                row = connection.execute(sql, params).fetchone()
        except self._errors:
            self._discard(connection)
            raise StorageUnavailable("the database did not answer") from None
        except BaseException:
            self._discard(connection)
            raise
        self._idle.append(connection)
        return row

    def _new_connection(self) -> Any:
        try:
            pooled = self._engine.raw_connection()
        except Exception:
            raise StorageUnavailable("the database did not answer") from None
        connection = pooled.driver_connection
        assert connection is not None
        pooled.detach()  # ours from now on: the pool neither resets nor reuses it
        if self._postgres:
            connection.autocommit = True
        return connection

    @staticmethod
    def _discard(connection: Any) -> None:
        with contextlib.suppress(Exception):  # already broken: nothing more to release
            connection.close()

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            self._discard(connection)
