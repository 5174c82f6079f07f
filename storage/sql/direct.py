"""The hot statements of a change sent straight on its transaction's driver connection.

Why: SQLAlchemy's execution of a built statement costs the calling process about 50 us
(cache key, execution context, events, result wrapping) against a few for the driver,
and a promotion sends eight. Here a statement built once (from the second time the
same object runs: one built per call goes through SQLAlchemy, whose cache suits it) is
compiled by SQLAlchemy once per dialect and set of parameter names; a run binds through
the compiled statement's own type processors and sends the same SQL on the driver
connection of the SQLAlchemy connection, in its transaction. Driver errors become
SQLAlchemy's (storage/sql/core.py turns those into storage errors), and a connection
that lost its server is invalidated as SQLAlchemy would. While a listener watches the
engine's statements (the counts of bench/sql_round_trips.py, tests), statements go
through SQLAlchemy.
On PostgreSQL a write's statements whose rows it does not read (``defer``) wait, and go
in one round trip (libpq's pipeline mode) with the next statement whose rows it reads,
or with the COMMIT (storage/sql/engine.py ``writing``); one of SQLAlchemy's sends them
first (the engine's ``before_execute``). An error of one is raised then, in the same
transaction, which rolls back.
Single reads outside a transaction (storage/sql/core.py ``read_one``) run the same way
on the read lane's connections (storage/sql/read_lane.py).
On PostgreSQL, psycopg's cursors cost several times what the statements do (a cursor,
a transformer and a result per statement, a poll and a send for each in a pipeline),
so statements go to libpq through the connection's ``pgconn`` (:class:`Wire`): each
prepared once per connection, all of one round trip in one pipeline, a transaction's
BEGIN sent with its first statement instead of in a round trip of its own.
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections import namedtuple
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql import ClauseElement

from storage.memo import Memo

_REQUIRED = object()
# A statement prepared through libpq: its name, SQL, and parameters' names by position.
Statement = tuple[bytes, bytes, tuple[str, ...]]
# The statements a PostgreSQL transaction deferred (connection.info): _send's.
DEFERRED = "promptsvc_deferred"
# A pooled PostgreSQL connection's Wire (the pool record's info).
WIRE = "promptsvc_wire"


class _Compiled:
    """A statement compiled for one dialect and parameter names."""

    def __init__(self, dialect: Dialect, statement: ClauseElement, keys: list[str]) -> None:
        compiled: Any = statement.compile(dialect=dialect, column_keys=keys)
        self.sql: str = compiled.string
        self.positional: bool = compiled.positional
        processors = compiled._bind_processors
        order = compiled.positiontup if compiled.positional else compiled.binds
        # (name in the SQL, parameter key, its value when not given, type processor)
        self.binds = [
            (
                name,
                bind.key,
                _REQUIRED if bind.required else bind.effective_value,
                processors.get(name),
            )
            for name, bind in ((name, compiled.binds[name]) for name in order)
        ]
        columns = compiled._result_columns
        self.row: Any = namedtuple("Row", [c[0] for c in columns]) if columns else None
        self.results: list[Callable[[Any], Any] | None] = [
            c[3]._cached_result_processor(dialect, None) for c in columns
        ]
        self.wire_sql: bytes | None = None
        if dialect.name == "postgresql":  # for libpq: $1, $2... bound by position
            name = _WIRE_NAMES.setdefault(self.sql, b"promptsvc_w%d" % next(_WIRE_COUNT))
            self.name, self.wire_sql, names = numbered(name, self.sql, r"%%|%\((\w+)\)s")
            by_name = {bind[0]: bind for bind in self.binds}
            self.binds = [by_name[name] for name in names]
            self.positional = True
        # What this path cannot do as SQLAlchemy would: Python-side column defaults, IN
        # lists expanded at run time, escaped parameter names.
        self.usable = not (
            compiled.insert_prefetch
            or compiled.update_prefetch
            or compiled.escaped_bind_names
            or any(bind.expanding for bind in compiled.binds.values())
        )

    def bind(self, params: dict[str, Any]) -> Any:
        values = []
        for _name, key, default, process in self.binds:
            value = params.get(key, default)
            if value is _REQUIRED:
                raise sa_exc.ArgumentError(f"a value is required for bind parameter {key!r}")
            values.append(value if process is None else process(value))
        if self.positional:
            return tuple(values)
        return {bind[0]: value for bind, value in zip(self.binds, values, strict=True)}

    def rows(self, raw: Sequence[Sequence[Any]]) -> list[Any]:
        assert self.row is not None
        make, results = self.row._make, self.results
        if not any(results):
            return [make(values) for values in raw]
        return [
            make([v if f is None else f(v) for f, v in zip(results, values, strict=True)])
            for values in raw
        ]


def numbered(name: bytes, sql: str, parameter: str) -> Statement:
    """A statement for libpq, prepared as ``name``: ``sql`` with ``$1``, ``$2``... (bound
    by position) for the matches of ``parameter`` (group 1 the name; a match without one
    is ``%%``, a literal ``%``), and the names in that order (a name used twice is one
    parameter)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return "%"
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return name, re.sub(parameter, number, sql).encode(), tuple(names)


# The prepared statement's name of each SQL text sent through libpq.
_WIRE_NAMES: dict[str, bytes] = {}
_WIRE_COUNT = itertools.count()
# Per statement object (gone with it), per dialect and parameter names; None: seen once.
_compiled: weakref.WeakKeyDictionary[Any, dict[tuple[str, tuple[str, ...]], _Compiled]]
_compiled = weakref.WeakKeyDictionary()


def compiled_for(dialect: Dialect, statement: Any, params: dict[str, Any]) -> _Compiled | None:
    """``statement`` compiled for ``dialect`` and these parameter names, when it runs
    here: seen before, and nothing of SQLAlchemy's execution needed."""
    forms = _compiled.get(statement)
    if forms is None:
        _compiled[statement] = {}  # once: maybe built for this call alone
        return None
    key = (dialect.name, tuple(params))
    compiled = forms.get(key)
    if compiled is None:
        compiled = forms[key] = _Compiled(dialect, statement, list(params))
    return compiled if compiled.usable else None


def query(compiled: _Compiled, connection: Any, params: dict[str, Any]) -> list[Any]:
    """The rows of ``compiled`` run with ``params`` on a read lane's connection (on
    PostgreSQL its :class:`Wire`)."""
    if compiled.wire_sql is not None:  # PostgreSQL
        return connection.send([(compiled, compiled.bind(params), True)])[0]
    cursor = connection.cursor()
    try:
        cursor.execute(compiled.sql, compiled.bind(params))
        if compiled.row is None or cursor.description is None:
            return []
        return compiled.rows(cursor.fetchall())
    finally:
        cursor.close()


def run(
    connection: Connection,
    statement: Any,
    params: dict[str, Any] | list[dict[str, Any]],
    defer: bool = False,
) -> list[Any]:
    """Run ``statement`` (built once: see the module's docstring) with ``params`` (a
    list: one statement for every row, the driver's ``executemany``) in
    ``connection``'s transaction; the rows it returns, if any, with attribute access.
    ``defer``: the caller reads no rows; on PostgreSQL the statement waits to go with
    the next one sent, or with the COMMIT (:func:`flush`)."""
    (compiled, bound) = _bound(connection, statement, params)
    if compiled is None:
        result = connection.execute(statement, params)  # (sends the deferred first: flush)
        return list(result.all()) if result.returns_rows else []
    if defer and connection.dialect.name == "postgresql":
        connection.info.setdefault(DEFERRED, []).append((compiled, bound, False))
        return []
    return _send(connection, [*connection.info.pop(DEFERRED, ()), (compiled, bound, True)])[0]


def run_all(connection: Connection, statements: list[tuple[Any, dict[str, Any]]]) -> list[Any]:
    """The rows of each (statement, params), run in order as :func:`run` does; on
    PostgreSQL in one round trip."""
    sent = [(*_bound(connection, statement, params), True) for statement, params in statements]
    if connection.dialect.name != "postgresql" or any(c is None for c, _, _ in sent):
        return [run(connection, statement, params) for statement, params in statements]
    return _send(connection, [*connection.info.pop(DEFERRED, ()), *sent])


def _bound(
    connection: Connection, statement: Any, params: dict[str, Any] | list[dict[str, Any]]
) -> tuple[_Compiled | None, Any]:
    """``statement`` compiled and ``params`` bound for the driver (a list of more than
    one row: its ``executemany``); (None, None): it goes through SQLAlchemy (new, or
    the engine watched)."""
    rows = params if isinstance(params, list) else [params]
    compiled = compiled_for(connection.dialect, statement, rows[0])
    if compiled is None or connection.dispatch.before_cursor_execute:
        return None, None
    bound = [compiled.bind(row) for row in rows]
    return compiled, bound if len(bound) > 1 else bound[0]


def flush(connection: Connection, *_: Any, commit: bool = False) -> None:
    """Send the statements deferred on ``connection`` (before one of SQLAlchemy's);
    ``commit``: and the COMMIT with them (SQLAlchemy's commit that follows finds the
    transaction ended, and sends nothing)."""
    queued = connection.info.pop(DEFERRED, [])
    if queued:
        _send(connection, [*queued, (None, None, False)] if commit else queued)


def _send(connection: Connection, queued: list[tuple[Any, Any, bool]]) -> list[list[Any]]:
    """Run each (compiled, bound, rows wanted) of ``queued`` (compiled None: COMMIT),
    on PostgreSQL all in one round trip (:class:`Wire`); the rows of each wanted."""
    fairy: Any = connection.connection
    driver = fairy.dbapi_connection
    compiled, bound = queued[-1][:2]
    try:
        if connection.dialect.name == "postgresql":
            # Kept in the pool's record of the driver connection, cleared with it.
            wire = fairy.info.get(WIRE)
            if wire is None:
                wire = fairy.info[WIRE] = Wire(driver)
            return wire.send(queued)
        cursor = driver.cursor()
        try:
            if isinstance(bound, list):
                cursor.executemany(compiled.sql, bound)
            else:
                cursor.execute(compiled.sql, bound)
            rows = cursor.fetchall() if compiled.row and cursor.description else []
            return [compiled.rows(rows) if rows else []]
        finally:
            cursor.close()
    except connection.dialect.loaded_dbapi.Error as error:
        lost = connection.dialect.is_disconnect(error, driver, None)
        if lost:
            connection.invalidate(error)
        last = ("COMMIT" if compiled is None else compiled.sql, bound)
        statement, params = getattr(error, "promptsvc_statement", last)  # the one that failed
        raise sa_exc.DBAPIError.instance(
            statement,
            params,
            error,
            connection.dialect.loaded_dbapi.Error,
            connection_invalidated=lost,
            dialect=connection.dialect,
        ) from error


class Wire:
    """A psycopg connection's statements sent through libpq (see the module docstring)."""

    def __init__(self, driver: Any) -> None:
        from psycopg import errors, generators, pq
        from psycopg.adapt import PyFormat, Transformer

        self.driver, self.pgconn = driver, driver.pgconn
        self._transformer = Transformer(driver)
        self._prepared: set[bytes] = set()
        self._text, self._idle = PyFormat.TEXT, pq.TransactionStatus.IDLE
        self._ok, self._rows_ok = pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK
        self._failed = (pq.ExecStatus.FATAL_ERROR, pq.ExecStatus.PIPELINE_ABORTED)
        self._flush, self._fetch, self._error = generators.send, generators.fetch_many, errors

    def send(self, queued: list[tuple[Any, Any, bool]]) -> list[list[Any]]:
        """Each (compiled, bound, rows wanted) of ``queued`` (compiled None: COMMIT) in
        one pipeline, after a BEGIN when a transaction is to start; the rows of each
        wanted. An error raises the first failed statement's psycopg error."""
        pgconn, dump, text = self.pgconn, self._transformer.dump_sequence, self._text
        # Each command, with its statement (SQL, values) for an error's message; the
        # values all dumped before any is sent, so one that cannot be fails alone.
        sends: list[Callable[[], Any]] = []
        statements: list[tuple[str, Any]] = []
        prepared: dict[bytes, int] = {}  # name -> the command that prepares it
        wanted: list[tuple[Any, int | None]] = []  # (statement, its result; None: many)
        if not self.driver.autocommit and pgconn.transaction_status == self._idle:
            level = self.driver.isolation_level
            begin = "BEGIN" if level is None else f"BEGIN ISOLATION LEVEL {level.name}"
            sends.append(partial(pgconn.send_query_params, begin.replace("_", " ").encode(), None))
            statements.append((begin, None))
        for compiled, bound, rows_wanted in queued:
            if compiled is None:
                sends.append(partial(pgconn.send_query_params, b"COMMIT", None))
                statements.append(("COMMIT", None))
                continue
            if compiled.name not in self._prepared and compiled.name not in prepared:
                prepared[compiled.name] = len(sends)
                sends.append(partial(pgconn.send_prepare, compiled.name, compiled.wire_sql))
                statements.append((compiled.sql, None))
            many = isinstance(bound, list)
            for values in bound if many else [bound]:
                dumped = dump(values, [text] * len(values))
                sends.append(partial(pgconn.send_query_prepared, compiled.name, dumped))
                statements.append((compiled.sql, values))
            if rows_wanted:  # (an executemany answers no rows)
                wanted.append((compiled, None if many else len(sends) - 1))
        results = self._exchange(sends)
        self._prepared.update(name for name, i in prepared.items() if results[i].status == self._ok)
        for result, statement in zip(results, statements, strict=False):
            if result.status in self._failed:
                error = self._error.error_from_result(result, encoding="utf-8")
                error.promptsvc_statement = statement  # type: ignore[attr-defined]
                raise error
        return [[] if i is None else self._rows(compiled, results[i]) for compiled, i in wanted]

    def read(self, statement: Statement, params: dict[str, Any], memo: Memo[Any, Any]) -> list[Any]:
        """The rows of ``statement`` (prepared on first use) with ``params``, in one
        synchronous round trip: the read lane's
        (storage/sql/read_lane.py). A row is decoded only when ``memo`` does not have its
        raw values."""
        name, sql, names = statement
        if name not in self._prepared:
            prepared = self.pgconn.prepare(name, sql, None)
            if prepared.status != self._ok:
                raise self._error.error_from_result(prepared, encoding="utf-8")
            self._prepared.add(name)
        values = [None if params[n] is None else str(params[n]).encode() for n in names]
        result = self.pgconn.exec_prepared(name, values)
        if result.status != self._rows_ok:
            raise self._error.error_from_result(result, encoding="utf-8")
        return [self._row(result, i, memo) for i in range(result.ntuples)]

    def _row(self, result: Any, i: int, memo: Memo[Any, Any]) -> tuple[Any, ...]:
        raw = tuple([result.get_value(i, column) for column in range(result.nfields)])
        row = memo.get(raw)
        if row is None:
            self._transformer.set_pgresult(result)
            row = self._transformer.load_row(i, tuple)
            self._transformer.set_pgresult(None)
            row = memo.put(raw, row, sum(len(v) for v in raw if v is not None) + 256)
        return row

    def close(self) -> None:
        self.driver.close()

    def _rows(self, compiled: _Compiled, result: Any) -> list[Any]:
        if compiled.row is None:
            return []
        self._transformer.set_pgresult(result)
        try:
            return compiled.rows(self._transformer.load_rows(0, result.ntuples, tuple))
        finally:
            self._transformer.set_pgresult(None)

    def _exchange(self, sends: list[Callable[[], Any]]) -> list[Any]:
        """The result of each command, sent in one pipeline, and of its sync."""
        pgconn, wait = self.pgconn, self.driver.wait
        pgconn.enter_pipeline_mode()
        try:
            for send in sends:
                send()
            pgconn.pipeline_sync()
            wait(self._flush(pgconn))
            results = [wait(self._fetch(pgconn))[0] for _ in range(len(sends) + 1)]
            pgconn.exit_pipeline_mode()
        except BaseException:
            self.driver.close()  # left in the middle of a pipeline: of no more use
            raise
        return results
