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
COMMIT round trip). The SQL is written once per dialect.

On PostgreSQL even psycopg's cursor costs more client CPU than the read itself (a
cursor, parameter adaptation, twenty column loaders per read), so the lane talks to
libpq through the connection's ``pgconn``: each statement is prepared once per
connection, and a read is one ``PQexecPrepared`` round trip (the GIL released while it
waits) whose raw values are decoded by psycopg's loaders only when that exact row was
not seen before (``Wire.read`` of storage/sql/direct.py, the connection's libpq side; a
memo keyed by the raw values, so a row that changed in any column is decoded afresh).
Every read goes to the database (on SQLite, every read but one made again before any
commit: see below), so a write acknowledged by any worker or host is seen by the next
read.

Failures: a connection the server closed while it sat idle (PostgreSQL restarted, or
ended the session) fails on first use; the read is sent once more on a new connection,
which is harmless for a read. Any other failure drops the connection and turns into
StorageUnavailable when the database does not answer.

On SQLite the sqlite3 module lets go of the GIL around every call into the library it
makes, one per column of a row among them, and on a busy worker each of them can hand
the GIL to another thread and cost a context switch (docs/benchmarks.md, "http"). So a
row comes back as one column, the JSON array SQLite's ``json_array`` makes of its
values (the same values, in the same order), bound by position, and is decoded only when
that exact text was not seen before: about a fifth of the calls. And a read made again
before any connection in any process committed is answered with the rows it had, without
a call into SQLite: storage/sql/wal_watch.py tells, from the WAL index header SQLite
shares through memory, read just before each read (so the rows remembered are at least
as new as that header).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from storage import forks
from storage.errors import StorageUnavailable
from storage.memo import Memo
from storage.records import InRollout, PromptVersion, Rollout
from storage.sql import direct
from storage.sql.direct import Statement
from storage.sql.wal_watch import WalWatch
from storage.stored import STORED, decoded

# The columns of a version read (stored_version's order): the prompt's name and type,
# then the ``versions`` columns VERSION_FIELDS.
VERSION_FIELDS = STORED[2:]
COLUMNS = ", ".join(["p.name", "p.prompt_type", *(f"v.{name}" for name in VERSION_FIELDS)])
VERSION_WIDTH = len(STORED)
# An environment read adds the environment's rollout, if any (all null without one).
ROLLOUT_FIELDS = (
    "rollout_id", "baseline_version", "candidate_version", "percent", "started_by",
    "started_at", "updated_at",
)  # fmt: skip
ROLLOUT_COLUMNS = ", ".join(f"r.{name}" for name in ROLLOUT_FIELDS)
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
# The most mixes of reads :meth:`ReadLane.many` keeps a statement for (each prepared on
# every PostgreSQL connection of the lane).
MAX_BATCHES = 256
# The parameters of one read, numbered in a batch (the org is every read's).
_PARAM = re.compile(r":(ref|number|version_id|environment)\b")

# A select list of one branch: what follows SELECT up to the prompts table, not across
# another SELECT (a subquery, or the next branch of a UNION ALL).
_SELECT_LIST = re.compile(r"SELECT ((?:(?!SELECT ).)+?) FROM prompts p")


class ReadLane:
    """Runs the version reads on the lane's own driver connections."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        self._statements = {
            key: self._statement(f"promptsvc_{key[0]}_{key[1]}", sql) for key, sql in READS.items()
        }
        # Decoded rows by their raw values (PostgreSQL) or JSON text (SQLite).
        self._rows: Memo[Any, tuple[Any, ...]] = Memo()
        self._errors: tuple[type[BaseException], ...] = (engine.dialect.loaded_dbapi.Error,)
        self._idle: forks.Idle[Any] = forks.Idle(self._new_connection)
        # The UNION ALL statements of :meth:`many`, by their reads' picks.
        self._batches: dict[tuple[str, ...], tuple[str, Statement]] = {}
        # SQLite: the rows of the reads made since the last commit (by their SQL and
        # parameters), and the WAL index header read before them.
        self._watch = None if self.postgres else WalWatch(self._new_connection)
        self._answers: tuple[bytes, Memo[tuple[Any, ...], list[tuple[Any, ...]]]] = (b"", Memo())

    def __call__(self, key: tuple[str, str], params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of read ``key`` (a READS key) with ``params``, or None."""
        statement = self._statements[key]
        rows = self._read(statement, params)
        return rows[0] if rows else None

    def many(self, reads: list[tuple[str, dict[str, Any]]]) -> list[tuple[Any, ...] | None]:
        """The row of each ``(pick, params)`` by prompt name (a READS key ``("name",
        pick)``, all of one org), or None; one statement (a UNION ALL of the reads, each
        row led by its read's position), so a read of includes costs one round trip."""
        picks = tuple(pick for pick, _ in reads)
        statement = self._batches.get(picks)
        if statement is None:
            if len(self._batches) >= MAX_BATCHES:  # an unusual mix: read by read
                return [self(("name", pick), read) for pick, read in reads]
            statement = self._batches[picks] = self._batch(picks)
        params: dict[str, Any] = {"org": reads[0][1]["org"]}
        for i, (_, read) in enumerate(reads):
            params.update({f"{name}{i}": v for name, v in read.items() if name != "org"})
        found: list[tuple[Any, ...] | None] = [None] * len(reads)
        for row in self._read(statement, params):
            found[row[0]] = row[1:]
        return found

    def _batch(self, picks: tuple[str, ...]) -> tuple[str, Statement]:
        """The UNION ALL of the reads ``picks``, their parameters numbered by position."""
        branches = []
        for i, pick in enumerate(picks):
            sql = _PARAM.sub(rf":\g<1>{i}", READS["name", pick])
            branches.append(sql.replace("SELECT ", f"SELECT {i}, ", 1))
        name = f"promptsvc_many_{len(self._batches)}"
        return self._statement(name, " UNION ALL ".join(branches))

    def _statement(self, name: str, sql: str) -> tuple[str, Statement]:
        """A read (``sql``) as :meth:`_execute` takes it: its SQL as SQLite runs it on the
        lane (parameters ``?1``, ``?2``... bound by position, each row as one column, the
        JSON array of its values; "" on PostgreSQL), and numbered for libpq as ``name``."""
        numbered = direct.numbered(name.encode(), sql, r":(\w+)")
        if self.postgres:
            return "", numbered
        sqlite = numbered[1].decode().replace("$", "?")
        return _SELECT_LIST.sub(r"SELECT json_array(\1) FROM prompts p", sqlite), numbered

    def driver(self, read: Callable[[Any], list[Any]]) -> list[Any]:
        """What ``read`` answers on one of the lane's connections (a lane connection:
        its driver connection is ``.driver`` on PostgreSQL), sent once more on a
        new connection when an idle one turns out closed."""
        connection, reused = self._idle.take()
        try:
            try:
                rows = read(connection)
            except self._errors:
                if not reused:
                    raise
                self._discard(connection)  # closed while idle: once more, on a new one
                connection = self._new_connection()
                rows = read(connection)
        except self._errors:
            self._discard(connection)
            raise StorageUnavailable("the database did not answer") from None
        except BaseException:
            self._discard(connection)
            raise
        self._idle.give(connection)
        return rows

    def _read(self, statement: tuple[str, Statement], params: dict[str, Any]) -> list[Any]:
        """The rows of ``statement`` with ``params``. On SQLite, those of the same read
        made since the last commit (storage/sql/wal_watch.py: no call into SQLite, so
        the GIL stays), else the database's."""
        if self._watch is None:
            return self.driver(lambda connection: self._execute(connection, statement, params))
        sql, (_, _, names) = statement
        key = (sql, *(params[name] for name in names))
        state = self._watch.state()  # before the read: its rows are at least this new
        seen, answers = self._answers
        if state is not None and state == seen:
            rows = answers.get(key)
            if rows is not None:
                return rows
        rows = self.driver(lambda connection: self._execute(connection, statement, params))
        if state is not None:
            if state != seen:
                answers = Memo()
                self._answers = (state, answers)
            size = 256 + sum(len(v) for row in rows for v in row if isinstance(v, str))
            answers.put(key, rows, size)
        return rows

    def _execute(
        self, connection: Any, statement: tuple[str, Statement], params: dict[str, Any]
    ) -> list[tuple[Any, ...]]:
        """The rows of ``statement`` (its SQL, and as numbered for PostgreSQL)."""
        if self.postgres:
            return connection.read(statement[1], params, self._rows)
        sql, (_, _, names) = statement
        found = connection.execute(sql, [params[name] for name in names]).fetchall()
        return [self._row(text) for (text,) in found]

    def _row(self, text: str) -> tuple[Any, ...]:
        """The values of a SQLite row from their JSON array (see the module docstring)."""
        row = self._rows.get(text)
        if row is None:
            row = self._rows.put(text, tuple(json.loads(text)), len(text) + 256)
        return row

    def _new_connection(self) -> Any:
        try:
            pooled = self._engine.raw_connection()
        except Exception:
            raise StorageUnavailable("the database did not answer") from None
        connection = pooled.driver_connection
        assert connection is not None
        pooled.detach()  # ours from now on: the pool neither resets nor reuses it
        if self.postgres:
            connection.autocommit = True
            return direct.Wire(connection)
        return connection

    @staticmethod
    def _discard(connection: Any) -> None:
        with contextlib.suppress(Exception):  # already broken: nothing more to release
            connection.close()

    def close(self) -> None:
        for connection in self._idle.drain():
            self._discard(connection)
        if self._watch is not None:
            self._watch.close()


def lane_in_rollout(
    version: PromptVersion, environment: str, columns: tuple[Any, ...], candidate: PromptVersion
) -> InRollout:
    """The read of ``environment`` during a rollout, from a lane row's ROLLOUT_COLUMNS."""
    rollout = decoded(
        Rollout,
        dict(zip(ROLLOUT_FIELDS, columns, strict=True)),
        prompt_id=version.prompt_id,
        environment=environment,
        candidate_id=candidate.version_id,
    )
    return InRollout(version, rollout, candidate)
