"""A release decision's ``Change`` (storage/release) as statements, in the transaction
that loaded the state (storage/sql/state.py): one UPDATE of the versions changed, the
placements, rollouts, reviews and history rows, one UPDATE of the prompt's row, and
the events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, bindparam, func, insert, select, update

from storage import release
from storage.records import PRODUCTION
from storage.release import Change
from storage.sql import dialect, direct
from storage.sql.core import Database
from storage.sql.rows import (
    history_values,
    include_values,
    review_values,
    rollout_values,
    version_columns,
)
from storage.sql.state import of_prompt
from storage.sql.tables import history, includes, placements, prompts, reviews, rollouts, versions
from storage.sql.usage import keep_guard, move_guard
from storage.sql.versions import present_includes


# Built once; the row is named by w_org, w_prompt_id (and w_number), the values set are
# the other parameters (names that are columns are reserved for the SET clause).
def _the_prompts(table: Any) -> ColumnElement[bool]:
    return (table.c.org == bindparam("w_org")) & (table.c.prompt_id == bindparam("w_prompt_id"))


_UPDATE_VERSION = update(versions).where(
    _the_prompts(versions), versions.c.version == bindparam("w_number")
)
_UPDATE_PROMPT = update(prompts).where(_the_prompts(prompts))
_INSERT_HISTORY = insert(history)
_DELETE_PLACEMENT, _DELETE_ROLLOUT = (
    table.delete().where(_the_prompts(table), table.c.environment == bindparam("w_environment"))
    for table in (placements, rollouts)
)
_UPDATE_REVIEW = update(reviews).where(
    reviews.c.org == bindparam("w_org"), reviews.c.review_id == bindparam("w_review_id")
)


def _upsert(dialect_name: str, table: Any, *changed: str) -> Any:
    """A row of ``table`` (every column a parameter) inserted, or ``changed`` set on
    the one there."""
    values: dict[str, Any] = {c.name: bindparam(c.name) for c in table.c}
    return dialect.upsert(dialect_name, table, values, **{name: values[name] for name in changed})


# The upserts, per dialect: a placement's version, a rollout's percent and time.
_UPSERTS = {
    name: (_upsert(name, placements, "version"), _upsert(name, rollouts, "percent", "updated_at"))
    for name in ("sqlite", "postgresql")
}


def apply(
    db: Database, connection: Connection, prompt: Row[Any], change: Change, now: datetime
) -> None:
    """Make ``change`` to ``prompt`` (its row locked by this transaction)."""
    org = prompt.org
    row = {"w_org": org, "w_prompt_id": prompt.prompt_id}
    for version in change.rewritten():  # what it includes may be gone since the checks
        if version.included_names:
            release.check_included_present(version, present_includes(connection, org, version))
    if change.versions:
        # One statement for every version changed: each row gets every field any of
        # them changed, from the version as the change leaves it.
        names = {name for fields in change.versions.values() for name in fields}
        direct.run(
            connection,
            _UPDATE_VERSION,
            [
                {
                    **row,
                    "w_number": number,
                    **version_columns(
                        {name: getattr(change.updated[number], name) for name in names}
                    ),
                }
                for number in change.versions
            ],
            defer=True,
        )
        for number, fields in change.versions.items():
            if "content" in fields:  # its includes may change: index them again
                connection.execute(
                    includes.delete().where(
                        of_prompt(includes, prompt), includes.c.version == number
                    )
                )
                if rows := include_values(org, change.updated[number]):
                    connection.execute(insert(includes), rows)
    moved: dict[str, Any] = {}
    if change.deleted_version is not None:
        connection.execute(
            versions.delete().where(
                of_prompt(versions, prompt), versions.c.version == change.deleted_version
            )
        )
        if change.deleted_version == prompt.latest_version:
            moved["latest_version"] = connection.execute(
                select(func.max(versions.c.version)).where(of_prompt(versions, prompt))
            ).scalar()
    place, roll = _UPSERTS[connection.dialect.name]
    for environment, held in change.placements.items():
        if environment == PRODUCTION:
            moved["production_version"] = held
        elif held is None:
            where = {**row, "w_environment": environment}
            direct.run(connection, _DELETE_PLACEMENT, where, defer=True)
        else:
            values = {"org": org, "prompt_id": prompt.prompt_id, "environment": environment}
            direct.run(connection, place, {**values, "version": held}, defer=True)
    for environment, rollout in change.rollouts.items():
        if rollout is None:
            where = {**row, "w_environment": environment}
            direct.run(connection, _DELETE_ROLLOUT, where, defer=True)
        else:
            direct.run(connection, roll, rollout_values(org, rollout), defer=True)
    if change.new_reviews:
        last = connection.execute(
            select(func.max(reviews.c.seq)).where(reviews.c.org == org)
        ).scalar()
        connection.execute(
            insert(reviews),
            [
                {**review_values(org, review), "seq": int(last or 0) + position}
                for position, review in enumerate(change.new_reviews, start=1)
            ],
        )
    for review in change.reviews:
        values = review_values(org, review)
        direct.run(
            connection,
            _UPDATE_REVIEW,
            {
                "w_org": org,
                "w_review_id": review.review_id,
                **{name: values[name] for name in ("status", "decided_at", "body")},
            },
            defer=True,
        )
    if change.history:
        first = prompt.promotions + 1
        direct.run(
            connection,
            _INSERT_HISTORY,
            [
                history_values(org, record, position)
                for position, record in enumerate(change.history, start=first)
            ],
            defer=True,
        )
        moved["promotions"] = prompt.promotions + len(change.history)
    for guarded_id, guard in change.guards.items():
        keep_guard(connection, org, guarded_id, guard)
    for review_id, rollout_id in change.moved_guards.items():
        move_guard(connection, org, review_id, rollout_id)
    if change.touched:
        moved["updated_at"] = now
    if moved:
        direct.run(connection, _UPDATE_PROMPT, {**row, **moved}, defer=True)
    if change.events:
        db.append_events(connection, org, change.events)
