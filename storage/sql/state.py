"""One prompt's release state (storage/release's ``State``), read inside the change's
transaction after the prompt's row is locked (storage/sql/core.py ``find_prompt``), so
nothing it holds moves before the change is applied.

Four statements: the versions a decision may read (the one the request names, the
published one, every placed one, the rollouts' and the reviews'; each carries the
environments that hold it, so the placements need no statement of their own), the
prompt's rollouts, its open reviews (and the one a decision names) and the org's
environments; and, for a rollback, its history. A version outside that set (a
rollback's line) is read when the decision asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import ColumnElement, Connection, Integer, Row, and_, literal, or_, select, union

from storage import lifecycle
from storage.errors import EnvironmentNotFound
from storage.ids import version_number
from storage.records import PRODUCTION, Environment, PromotionRecord, PromptVersion
from storage.release import State
from storage.sql.core import Database, prompt_record
from storage.sql.rows import history_record, review_record, rollout_record
from storage.sql.tables import environments, history, placements, reviews, rollouts, versions

# Version numbers are 32-bit columns: a larger one names no version.
MAX_NUMBER = 2**31 - 1


def of_prompt(table: Any, prompt: Row[Any]) -> ColumnElement[bool]:
    """The rows of ``table`` (versions, history, ...) that belong to ``prompt``."""
    return (table.c.org == prompt.org) & (table.c.prompt_id == prompt.prompt_id)


def named_version(version_ref: str) -> ColumnElement[bool] | None:
    """Which version ``version_ref`` names (a number or a ``v_`` id); None: none."""
    number = version_number(version_ref)
    if number is not None:
        return versions.c.version == number if number <= MAX_NUMBER else None
    if version_ref.startswith("v_"):
        return versions.c.version_id == version_ref
    return None


def with_candidate_id() -> Any:
    """``rollouts`` rows joined to their candidate's ``version_id``."""
    return select(rollouts, versions.c.version_id).join(
        versions,
        and_(
            versions.c.org == rollouts.c.org,
            versions.c.prompt_id == rollouts.c.prompt_id,
            versions.c.version == rollouts.c.candidate_version,
        ),
    )


def org_environments(connection: Connection, org: str) -> dict[str, Environment]:
    """The org's environments by name, production first, then in creation order."""
    rows = connection.execute(
        select(environments).where(environments.c.org == org).order_by(environments.c.seq)
    ).all()
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


class _Versions(Mapping[int, PromptVersion]):
    """The prompt's versions as a decision reads them: those the state loaded, and any
    other the first time it is asked for (None kept for a number that has none)."""

    def __init__(self, db: Database, connection: Connection, prompt: Row[Any]) -> None:
        self._db, self._connection, self._prompt = db, connection, prompt
        self.loaded: dict[int, PromptVersion | None] = {}

    def add(self, row: Row[Any]) -> PromptVersion:
        version = self._db.version(self._prompt.name, self._prompt.prompt_type, row)
        self.loaded[version.version] = version
        return version

    def __getitem__(self, number: int) -> PromptVersion:
        if number not in self.loaded:
            row = self._connection.execute(
                select(versions).where(
                    of_prompt(versions, self._prompt), versions.c.version == number
                )
            ).first()
            self.loaded[number] = None if row is None else self.add(row)
        found = self.loaded[number]
        if found is None:
            raise KeyError(number)
        return found

    def __iter__(self) -> Iterator[int]:
        return (number for number, found in self.loaded.items() if found is not None)

    def __len__(self) -> int:
        return sum(1 for found in self.loaded.values() if found is not None)


def load(
    db: Database,
    connection: Connection,
    prompt: Row[Any],
    *,
    version_ref: str | None = None,
    review_id: str | None = None,
    with_history: bool = False,
) -> tuple[State, int | None]:
    """The state of ``prompt`` (its row locked), and the number of the version
    ``version_ref`` names (None: no such version)."""
    named = None if version_ref is None else named_version(version_ref)
    wanted = None if version_ref is None else version_number(version_ref)
    review_matches = reviews.c.status == "open"
    if review_id is not None:
        review_matches = or_(review_matches, reviews.c.review_id == review_id)
    # One set of numbers, each then found by the primary key (no scan of the versions).
    numbers = union(
        select(placements.c.version).where(of_prompt(placements, prompt)),
        select(rollouts.c.candidate_version).where(of_prompt(rollouts, prompt)),
        select(rollouts.c.baseline_version).where(of_prompt(rollouts, prompt)),
        select(reviews.c.version).where(of_prompt(reviews, prompt), review_matches),
        *(
            ()
            if named is None
            else (select(versions.c.version).where(of_prompt(versions, prompt), named),)
        ),
        *(
            ()
            if prompt.production_version is None
            else (select(literal(prompt.production_version, Integer)),)
        ),
    )
    in_use = versions.c.version.in_(numbers)
    loaded = _Versions(db, connection, prompt)
    number = None
    placed: dict[str, int] = {}
    if prompt.production_version is not None:
        placed[PRODUCTION] = prompt.production_version
    for row in connection.execute(select(versions).where(of_prompt(versions, prompt), in_use)):
        version = loaded.add(row)
        placed.update((environment, version.version) for environment in version.placements)
        if named is not None and (version.version == wanted or version.version_id == version_ref):
            number = version.version
    found_rollouts = connection.execute(
        with_candidate_id().where(of_prompt(rollouts, prompt)).order_by(rollouts.c.environment)
    ).all()
    found_reviews = connection.execute(
        select(reviews).where(of_prompt(reviews, prompt), review_matches).order_by(reviews.c.seq)
    ).all()
    records: tuple[PromotionRecord, ...] = ()
    if with_history:
        records = tuple(
            history_record(row)
            for row in connection.execute(
                select(history).where(of_prompt(history, prompt)).order_by(history.c.position)
            )
        )
    state = State(
        prompt=prompt_record(prompt),
        versions=loaded,
        placements=placed,
        environments=org_environments(connection, prompt.org),
        rollouts={row.environment: rollout_record(row) for row in found_rollouts},
        reviews={row.review_id: review_record(row) for row in found_reviews},
        history=records,
    )
    return state, number
