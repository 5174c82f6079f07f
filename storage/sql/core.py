"""What every concern of the SQL backend shares, one :class:`Database` object: the
engines, transactions whose driver errors become storage errors, the clock, the
records rows decode to, and the event log's append (every change writes its event in
its own transaction).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Engine,
    Integer,
    Row,
    bindparam,
    case,
    insert,
    select,
    tuple_,
    update,
)
from sqlalchemy import exc as sa_exc

from storage.errors import PromptNotFound, StorageUnavailable
from storage.event_records import Event
from storage.ids import event_id
from storage.interface import EVENT_LOG_SIZE
from storage.memo import Memo
from storage.records import Prompt, PromptVersion
from storage.release.records import Neighbours
from storage.sql import dialect, direct, read_lane
from storage.sql.engine import reading, writing
from storage.sql.read_lane import VERSION_FIELDS, ReadLane
from storage.sql.tables import event_logs, events, prompts
from storage.stored import decoded, stored_version
from storage.times import Clock, utcnow

# Driver errors that mean "the database did not answer" (down, unreachable, a lock
# held past the busy timeout, a full pool): 503, never with connection details.
UNAVAILABLE = (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError)


@contextmanager
def answered() -> Iterator[None]:
    """Raise :data:`UNAVAILABLE` errors as StorageUnavailable."""
    try:
        yield
    except UNAVAILABLE:
        raise StorageUnavailable("the database did not answer") from None


# Set on a connection whose transaction appended an event (waiters are woken at commit).
APPENDED = "promptsvc_appended"


# The columns of ``events`` an Event's fields fill as they are (the id is ms and seq;
# the guard's figures are JSON).
_EVENT_FIELDS = tuple(c.name for c in events.c if c.name not in ("org", "ms", "seq", "guard"))


_INSERT_EVENTS = insert(events)
_TRIMMED_LOG = (
    update(event_logs)
    .where(event_logs.c.org == bindparam("w_org"))
    .values(kept=bindparam("kept"), trimmed=True)
)
# A prompt's row by name, or by id (parameters org and ref), and the same locked, as a
# writing transaction on PostgreSQL reads it (the lock every change of a prompt takes
# first).
PROMPT_BY = {
    column: select(prompts).where(prompts.c.org == bindparam("org"), column == bindparam("ref"))
    for column in (prompts.c.name, prompts.c.prompt_id)
}
_LOCKED_PROMPT_BY = {column: statement.with_for_update() for column, statement in PROMPT_BY.items()}


def ref_columns(prompt_ref: str) -> tuple[Any, ...]:
    """The columns a prompt ref names a prompt by, in the order to try them: a pmt_ ref
    by id first (a name never starts so: the API refuses it), then by name."""
    if prompt_ref.startswith("pmt_"):
        return (prompts.c.prompt_id, prompts.c.name)
    return (prompts.c.name,)


def prompt_by(connection: Connection, column: Any) -> Any:
    """The statement of a prompt's row by ``column`` (name or prompt_id), locked in a
    PostgreSQL transaction; parameters org and ref."""
    return (_LOCKED_PROMPT_BY if dialect.is_postgres(connection) else PROMPT_BY)[column]


def prompt_record(row: Row[Any]) -> Prompt:
    return decoded(Prompt, row)


def event_record(row: Row[Any]) -> Event:
    return decoded(Event, row, id=event_id(row.ms, row.seq))


class Database:
    """One per storage, handed to each concern object (storage/sql/storage.py)."""

    def __init__(self, engine: Engine, clock: Clock = utcnow) -> None:
        self.clock = clock
        # The least number of events kept per org (storage/interface/core.py).
        self.event_log_size = EVENT_LOG_SIZE
        self.engine = engine
        # The org's event log row advanced past ``n`` events at ``at`` (ms), made if
        # missing and locked (PostgreSQL) as it is written; it answers the new last id.
        # A later millisecond starts its sequence again at 0; the same or an earlier
        # one (the clock went back) continues the last millisecond's sequence.
        at, n = bindparam("at", type_=BigInteger), bindparam("n", type_=Integer)
        later = at > event_logs.c.last_ms
        first = {"org": bindparam("org"), "last_ms": at, "trimmed": False}
        self._log_advance = dialect.upsert(
            engine.dialect.name,
            event_logs,
            {**first, "last_seq": n - 1, "kept": n},
            last_ms=case((later, at), else_=event_logs.c.last_ms),
            last_seq=case((later, n - 1), else_=event_logs.c.last_seq + n),
            kept=event_logs.c.kept + n,
        ).returning(*event_logs.c, *dialect.notified(engine.dialect.name, bindparam("org")))
        # Single reads go without BEGIN/COMMIT round trips: one statement is atomic.
        self.read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.lane = ReadLane(engine)
        # What a release decision reads of an org's other prompts, given the org and
        # the includers already read (the storage sets it: storage/neighbours.py
        # reads through its own methods).
        self.neighbours: Callable[..., Neighbours]
        self._versions_memo: Memo[tuple[Any, ...], PromptVersion] = Memo()
        # Woken after every commit of an event in this process (storage/sql/events.py).
        self.appended = threading.Condition()

    # -- transactions

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One atomic change: the write lock from the start, commit at the end."""
        with answered(), writing(self.engine) as connection:
            yield connection
            appended = connection.info.pop(APPENDED, False)
        if appended:
            with self.appended:
                self.appended.notify_all()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """Several reads that see one snapshot."""
        with answered(), reading(self.engine) as connection:
            yield connection

    def read_one(self, statement: Any, params: dict[str, Any] | None = None) -> Row[Any] | None:
        """One statement's first row, outside any transaction; sent once more on a new
        connection when a pooled one turns out closed (the server restarted). A
        statement built once runs on the read lane's connections (storage/sql/direct.py)."""
        params = params or {}
        compiled = direct.compiled_for(self.engine.dialect, statement, params)
        if compiled is not None and not self.engine.dispatch.before_cursor_execute:
            rows = self.lane.driver(lambda lane: direct.query(compiled, lane, params))
            return rows[0] if rows else None
        with answered():
            try:
                with self.read_engine.connect() as connection:
                    return connection.execute(statement, params).first()
            except sa_exc.DBAPIError as exc:
                if not exc.connection_invalidated:
                    raise
            with self.read_engine.connect() as connection:
                return connection.execute(statement, params).first()

    # -- records

    def find_prompt(self, connection: Connection, org: str, prompt_ref: str) -> Row[Any]:
        """The prompt's row, locked for the transaction when it writes (PostgreSQL):
        every change of a prompt or its versions takes this lock first."""
        params = {"org": org, "ref": prompt_ref}
        for column in ref_columns(prompt_ref):
            rows = direct.run(connection, prompt_by(connection, column), params)
            if rows:
                return rows[0]
        raise PromptNotFound(prompt_ref)

    def version(self, name: str, prompt_type: str, row: Row[Any]) -> PromptVersion:
        """The version a ``versions`` row holds; memoized by the whole row, so any
        change (a new ``updated_at`` at least) is decoded afresh (storage/memo.py)."""
        key = (name, prompt_type, *row)
        found = self._versions_memo.get(key)
        if found is not None:  # before any getattr: a Row's cost about 1 us each
            return found
        return self._decoded(key, (name, prompt_type, *(getattr(row, f) for f in VERSION_FIELDS)))

    def lane_version(self, row: tuple[Any, ...]) -> PromptVersion:
        """The version a read lane row holds (read_lane.COLUMNS, first), memoized by
        those columns."""
        if len(row) > read_lane.VERSION_WIDTH:
            row = row[: read_lane.VERSION_WIDTH]
        found = self._versions_memo.get(row)
        return self._decoded(row, row) if found is None else found

    def _decoded(self, key: tuple[Any, ...], values: tuple[Any, ...]) -> PromptVersion:
        """The version of ``values`` (in STORED's order), memoized under ``key``."""
        size = 512 + sum(len(values[i] or "") for i in (5, 8, 9, 16, 17, 20))  # its text
        return self._versions_memo.put(key, stored_version(values), size)

    # -- the event log

    def append_events(self, connection: Connection, org: str, found: list[Event]) -> None:
        """Write ``found`` (one change's events, ``id`` unset) in its transaction.
        Ids as Redis makes them (ms-seq, never lower than the last whatever the clock
        does); the upsert of the org's ``event_logs`` row locks it until commit, so ids
        are handed out in commit order and no reader sees a higher id before a lower."""
        at = int(found[0].at.timestamp() * 1000)
        params = {"org": org, "at": at, "n": len(found)}
        (log,) = direct.run(connection, self._log_advance, params)
        first = log.last_seq - len(found) + 1
        rows = [
            {
                "org": org,
                "ms": log.last_ms,
                "seq": first + offset,
                **{name: getattr(event, name) for name in _EVENT_FIELDS},
                "guard": None if event.guard is None else json.dumps(event.guard),
            }
            for offset, event in enumerate(found)
        ]
        direct.run(connection, _INSERT_EVENTS, rows, defer=True)
        # Trim in batches (a tenth of the bound at a time), not on every write.
        if log.kept > self.event_log_size + max(self.event_log_size // 10, 1):
            oldest_kept = (
                select(events.c.ms, events.c.seq)
                .where(events.c.org == org)
                .order_by(events.c.ms.desc(), events.c.seq.desc())
                .offset(self.event_log_size - 1)
                .limit(1)
            )
            dropped = connection.execute(
                events.delete().where(
                    events.c.org == org,
                    tuple_(events.c.ms, events.c.seq) < oldest_kept.scalar_subquery(),
                )
            ).rowcount
            connection.execute(_TRIMMED_LOG, {"w_org": org, "kept": log.kept - dropped})
        connection.info[APPENDED] = True


class Concern:
    """One concern of the backend (prompts, identity, webhooks, ...) over the shared
    :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db
