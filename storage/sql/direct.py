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
in one round trip (psycopg's pipeline mode) with the next statement whose rows it reads,
or with the COMMIT (storage/sql/engine.py ``writing``); one of SQLAlchemy's sends them
first (the engine's ``before_execute``). An error of one is raised then, in the same
transaction, which rolls back.
Single reads outside a transaction (storage/sql/core.py ``read_one``) run the same way
on the read lane's connections (storage/sql/read_lane.py).
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql import ClauseElement

_REQUIRED = object()
# The statements a PostgreSQL transaction deferred (connection.info): _send's.
DEFERRED = "promptsvc_deferred"


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
        # psycopg prepares a statement run often; not on the read lane's connections,
        # which hold the statements they prepare themselves (storage/sql/read_lane.py).
        self.no_prepare = {"prepare": False} if dialect.name == "postgresql" else {}
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


def query(compiled: _Compiled, driver: Any, params: dict[str, Any]) -> list[Any]:
    """The rows of ``compiled`` run with ``params`` on a driver connection."""
    cursor = driver.cursor()
    try:
        cursor.execute(compiled.sql, compiled.bind(params), **compiled.no_prepare)
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
    more than one in one round trip (psycopg's pipeline mode); the rows of each wanted."""
    fairy: Any = connection.connection
    driver = fairy.dbapi_connection
    cursors = [driver.cursor() for _ in queued]
    compiled, bound = None, None
    try:
        with driver.pipeline() if len(queued) > 1 else nullcontext():
            for cursor, (compiled, bound, _) in zip(cursors, queued, strict=True):
                if compiled is None:  # psycopg tracks the transaction's end from the server
                    cursor.execute("COMMIT")
                elif isinstance(bound, list):  # (psycopg's prepares the statement)
                    cursor.executemany(compiled.sql, bound)
                else:
                    cursor.execute(compiled.sql, bound)
        return [
            []  # (a text statement's rows are not asked for)
            if compiled is None or compiled.row is None or cursor.description is None
            else compiled.rows(cursor.fetchall())
            for cursor, (compiled, bound, wanted) in zip(cursors, queued, strict=True)
            if wanted
        ]
    except connection.dialect.loaded_dbapi.Error as error:
        lost = connection.dialect.is_disconnect(error, driver, cursors[-1])
        if lost:
            connection.invalidate(error)
        raise sa_exc.DBAPIError.instance(
            "COMMIT" if compiled is None else compiled.sql,
            bound,
            error,
            connection.dialect.loaded_dbapi.Error,
            connection_invalidated=lost,
            dialect=connection.dialect,
        ) from error
    finally:
        for cursor in cursors:
            cursor.close()
