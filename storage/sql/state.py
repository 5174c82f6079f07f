"""One prompt's release state (storage/release's ``State``), read inside the change's
transaction once the prompt's row is locked (storage/sql/core.py ``find_prompt``), so
nothing it holds moves before the change is applied; on PostgreSQL in the lock's round
trip (:func:`locked_state`).

One statement: the versions a decision may read (the one the request
names, the published one, every placed one, the rollouts' and the reviews'; each
carries the environments that hold it, so the placements need no statement of their
own), the versions of other prompts that include this one (what the rules of includes
ask first), the prompt's rollouts, its open reviews (and the one a decision names),
the org's environments and, for a rollback, its history. A version outside that set (a
rollback's line) is read when the decision asks for it, and the org's other prompts
through the storage's reads (storage/neighbours.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Row,
    Text,
    and_,
    bindparam,
    cast,
    func,
    literal_column,
    or_,
    select,
    union,
    union_all,
)

from storage import lifecycle
from storage.errors import EnvironmentNotFound
from storage.ids import version_number
from storage.records import PRODUCTION, Environment, PromptVersion
from storage.release import State
from storage.release.records import Versions
from storage.sql import direct, read_lane
from storage.sql.core import Database, prompt_by, prompt_record
from storage.sql.rows import history_record, review_record, rollout_record
from storage.sql.tables import (
    UtcDateTime,
    environments,
    history,
    includes,
    placements,
    prompts,
    reviews,
    rollouts,
    versions,
)

# Version numbers are 32-bit columns: a larger one names no version.
MAX_NUMBER = 2**31 - 1


def of_prompt(table: Any, prompt: Row[Any]) -> ColumnElement[bool]:
    """The rows of ``table`` (versions, history, ...) that belong to ``prompt``."""
    return (table.c.org == prompt.org) & (table.c.prompt_id == prompt.prompt_id)


def candidate_of(v: Any = versions) -> ColumnElement[bool]:
    """``versions`` (or its alias ``v``) joined to the ``rollouts`` rows whose candidate
    it is."""
    return and_(
        v.c.org == rollouts.c.org,
        v.c.prompt_id == rollouts.c.prompt_id,
        v.c.version == rollouts.c.candidate_version,
    )


_ENVIRONMENTS = (
    select(environments).where(environments.c.org == bindparam("org")).order_by(environments.c.seq)
)


def org_environments(connection: Connection, org: str) -> dict[str, Environment]:
    """The org's environments by name, production first, then in creation order."""
    return _environments(connection.execute(_ENVIRONMENTS, {"org": org}))


def _environments(rows: Iterable[Any]) -> dict[str, Environment]:
    """The ``environments`` rows (in creation order) by name, production first."""
    stored = {
        row.name: Environment(row.name, row.required_approvals, row.description, row.created_at)
        for row in rows
    }
    production = stored.pop(PRODUCTION, None) or lifecycle.default_production()
    return {PRODUCTION: production, **stored}


def environment_named(connection: Connection, org: str, name: str) -> Environment:
    """The org's environment ``name``; EnvironmentNotFound."""
    found = org_environments(connection, org).get(name)
    if found is None:
        raise EnvironmentNotFound(name)
    return found


# The prompt the parameters ``org`` and ``name`` name: so the load needs nothing of the
# locked row, and goes in the lock's round trip on PostgreSQL (:func:`locked_state`).
# A CTE read once, which keeps the load's SQL short: psycopg parses a statement of over
# 4 KB afresh each time it runs (its cache's bound), about 100 us.
_NAMED = (
    select(prompts.c.prompt_id, prompts.c.production_version)
    .where(prompts.c.org == bindparam("org"), prompts.c.name == bindparam("name"))
    .cte("n")
)
_PROMPT_ID = select(_NAMED.c.prompt_id).scalar_subquery()
# (and versions as ``v`` in it)
_v = versions.alias("v")


def _of_the_prompt(table: Any) -> ColumnElement[bool]:
    """The rows of ``table`` of the prompt the parameters ``org`` and ``name`` name."""
    return (table.c.org == bindparam("org")) & (table.c.prompt_id == _PROMPT_ID)


_VERSION = select(versions).where(
    _of_the_prompt(versions), versions.c.version == bindparam("number")
)


# The load is one statement: a row per thing it reads, each a kind and the thing as a
# JSON document made by the database (json_array / json_object on SQLite,
# json_build_array / json_build_object on PostgreSQL), so rows of every table travel
# in one result. Parameters: org, name (the prompt's, whose includers are read too),
# review_id (the review a decision names, or null), number and version_id (the version
# a request names, or null).
VERSION, INCLUDER, ROLLOUT, REVIEW, ENVIRONMENT, HISTORY = range(6)
_REVIEWED = or_(reviews.c.status == "open", reviews.c.review_id == bindparam("review_id"))
# One set of numbers, each then found by the primary key (no scan of the versions).
_IN_USE = union(
    select(placements.c.version).where(_of_the_prompt(placements)),
    select(rollouts.c.candidate_version).where(_of_the_prompt(rollouts)),
    select(rollouts.c.baseline_version).where(_of_the_prompt(rollouts)),
    select(reviews.c.version).where(_of_the_prompt(reviews), _REVIEWED),
    select(_v.c.version).where(
        _of_the_prompt(_v),
        or_(
            _v.c.version == bindparam("number"),
            _v.c.version_id == bindparam("version_id"),
        ),
    ),
    select(_NAMED.c.production_version),
)
# A version as the read lane reads it (read_lane.COLUMNS, without the prompt's name
# and type for the prompt's own versions).
_VERSION_COLUMNS = [_v.c[name] for name in read_lane.VERSION_FIELDS]
_TIMES = {
    table.name: tuple(c.name for c in table.c if isinstance(c.type, UtcDateTime))
    for table in (rollouts, reviews, environments, history)
}
_VERSION_TIMES = tuple(i for i, c in enumerate(_VERSION_COLUMNS) if isinstance(c.type, UtcDateTime))
_includer = prompts.alias("includer")


def _load_statement(dialect: str, with_history: bool) -> Any:
    """The load's statement for ``dialect`` (sqlite or postgresql)."""
    postgres = dialect == "postgresql"
    array = func.json_build_array if postgres else func.json_array
    pairs = func.json_build_object if postgres else func.json_object

    def document(kind: int, *columns: Any) -> Any:  # a JSON array
        return (literal_column(str(kind)).label("kind"), cast(array(*columns), Text).label("doc"))

    def record(kind: int, *columns: Any) -> Any:  # a JSON object, by column name
        named: list[Any] = []
        for column in columns:
            named += [literal_column(f"'{column.name}'"), column]
        return (literal_column(str(kind)).label("kind"), cast(pairs(*named), Text).label("doc"))

    branches = [
        select(*document(VERSION, *_VERSION_COLUMNS)).where(
            _of_the_prompt(_v), _v.c.version.in_(_IN_USE)
        ),
        select(*document(INCLUDER, _includer.c.name, _includer.c.prompt_type, *_VERSION_COLUMNS))
        .select_from(includes.join(_v).join(_includer))  # (on their foreign keys)
        .where(includes.c.org == bindparam("org"), includes.c.name == bindparam("name")),
        select(*record(ROLLOUT, *rollouts.c, _v.c.version_id))
        .select_from(rollouts.join(_v, candidate_of(_v)))
        .where(_of_the_prompt(rollouts)),
        select(*record(REVIEW, *reviews.c)).where(_of_the_prompt(reviews), _REVIEWED),
        select(*record(ENVIRONMENT, *environments.c)).where(environments.c.org == bindparam("org")),
    ]
    if with_history:
        branches.append(select(*record(HISTORY, *history.c)).where(_of_the_prompt(history)))
    return union_all(*branches)


# Per dialect, without and with the history.
_LOADS = {
    dialect: {
        with_history: _load_statement(dialect, with_history) for with_history in (False, True)
    }
    for dialect in ("sqlite", "postgresql")
}


def _utc(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


def _row(table: Any, document: dict[str, Any]) -> Any:
    """A row of ``table`` as rows.py reads it, from its JSON document."""
    for name in _TIMES[table.name]:
        document[name] = _utc(document[name])
    return SimpleNamespace(**document)


def _lane_row(values: list[Any]) -> tuple[Any, ...]:
    """A version's lane row (read_lane.COLUMNS) from its JSON array (name, type first)."""
    for i in _VERSION_TIMES:
        values[i + 2] = _utc(values[i + 2])
    return tuple(values)


def locked_state(
    db: Database,
    connection: Connection,
    org: str,
    prompt_ref: str,
    *,
    version_ref: str | None = None,
    review_id: str | None = None,
    with_history: bool = False,
) -> tuple[Row[Any], State, int | None]:
    """The prompt ``prompt_ref`` names, its row locked (storage/sql/core.py
    ``find_prompt``), its state, and the number of the version ``version_ref`` names
    (None: no such version). By name, on PostgreSQL the lock and the load go in one
    round trip: the load, a statement of its own, starts once the lock is held, and
    sees what was committed before."""
    number = None if version_ref is None else version_number(version_ref)
    params = {
        "org": org,
        "name": prompt_ref,
        "review_id": review_id,
        "number": None if number is None or number > MAX_NUMBER else number,
        "version_id": version_ref if version_ref and version_ref.startswith("v_") else None,
    }
    load = _LOADS[connection.dialect.name][with_history]
    lock = prompt_by(connection, prompts.c.name)
    found, sent = direct.run_all(
        connection, [(lock, {"org": org, "ref": prompt_ref}), (load, params)]
    )
    if not found:  # by id: then by its name
        found = [db.find_prompt(connection, org, prompt_ref)]
        sent = direct.run(connection, load, {**params, "name": found[0].name})
    return found[0], *_state(db, connection, found[0], params, sent)


def _state(
    db: Database, connection: Connection, prompt: Row[Any], params: dict[str, Any], sent: list[Any]
) -> tuple[State, int | None]:
    """The state of ``prompt`` from the rows the load ``sent``, and the version named."""
    found: dict[int, list[Any]] = {kind: [] for kind in range(6)}
    for kind, document in sent:
        found[kind].append(json.loads(document))
    loaded = {}
    placed: dict[str, int] = {}
    if prompt.production_version is not None:
        placed[PRODUCTION] = prompt.production_version
    named = None
    for values in found[VERSION]:
        version = db.lane_version(_lane_row([prompt.name, prompt.prompt_type, *values]))
        loaded[version.version] = version
        placed.update((environment, version.version) for environment in version.placements)
        if version.version == params["number"] or version.version_id == params["version_id"]:
            named = version.version

    def fetch(number: int) -> PromptVersion | None:  # a version the load did not bring
        key = {"org": prompt.org, "name": prompt.name, "number": number}
        row = connection.execute(_VERSION, key).first()
        return None if row is None else db.version(prompt.name, prompt.prompt_type, row)

    includers = sorted(
        (db.lane_version(_lane_row(values)) for values in found[INCLUDER]),
        key=lambda version: (version.name, version.version),
    )
    rows = {
        kind: sorted((_row(table, document) for document in found[kind]), key=order)
        for kind, table, order in (
            (ROLLOUT, rollouts, attrgetter("environment")),
            (REVIEW, reviews, attrgetter("seq")),
            (ENVIRONMENT, environments, attrgetter("seq")),
            (HISTORY, history, attrgetter("position")),
        )
    }
    state = State(
        neighbours=db.neighbours(prompt.org, includers={prompt.name: includers}),
        prompt=prompt_record(prompt),
        versions=Versions(loaded, fetch),
        placements=placed,
        environments=_environments(rows[ENVIRONMENT]),
        rollouts={row.environment: rollout_record(row) for row in rows[ROLLOUT]},
        reviews={row.review_id: review_record(row) for row in rows[REVIEW]},
        history=tuple(history_record(row) for row in rows[HISTORY]),
    )
    return state, named
