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

from sqlalchemy import ColumnElement, Connection, Integer, Row, and_, bindparam, or_, select, union

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


_ENVIRONMENTS = (
    select(environments).where(environments.c.org == bindparam("org")).order_by(environments.c.seq)
)


def org_environments(connection: Connection, org: str) -> dict[str, Environment]:
    """The org's environments by name, production first, then in creation order."""
    stored = {
        row.name: Environment(row.name, row.required_approvals, row.description, row.created_at)
        for row in connection.execute(_ENVIRONMENTS, {"org": org})
    }
    production = stored.pop(PRODUCTION, None) or lifecycle.default_production()
    return {PRODUCTION: production, **stored}


def environment_named(connection: Connection, org: str, name: str) -> Environment:
    """The org's environment ``name``; EnvironmentNotFound."""
    found = org_environments(connection, org).get(name)
    if found is None:
        raise EnvironmentNotFound(name)
    return found


def _of_the_prompt(table: Any) -> ColumnElement[bool]:
    """The rows of ``table`` of the prompt the parameters ``org`` and ``prompt_id`` name."""
    return (table.c.org == bindparam("org")) & (table.c.prompt_id == bindparam("prompt_id"))


_VERSION = select(versions).where(
    _of_the_prompt(versions), versions.c.version == bindparam("number")
)


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
            key = {"org": self._prompt.org, "prompt_id": self._prompt.prompt_id, "number": number}
            row = self._connection.execute(_VERSION, key).first()
            self.loaded[number] = None if row is None else self.add(row)
        found = self.loaded[number]
        if found is None:
            raise KeyError(number)
        return found

    def __iter__(self) -> Iterator[int]:
        return (number for number, found in self.loaded.items() if found is not None)

    def __len__(self) -> int:
        return sum(1 for found in self.loaded.values() if found is not None)


# The statements of a load, built once; parameters: org, prompt_id, review_id (the
# review a decision names, or null), number and version_id (the version a request
# names, or null) and production (the published number, or null).
_REVIEWED = or_(reviews.c.status == "open", reviews.c.review_id == bindparam("review_id"))
# One set of numbers, each then found by the primary key (no scan of the versions).
_IN_USE = union(
    select(placements.c.version).where(_of_the_prompt(placements)),
    select(rollouts.c.candidate_version).where(_of_the_prompt(rollouts)),
    select(rollouts.c.baseline_version).where(_of_the_prompt(rollouts)),
    select(reviews.c.version).where(_of_the_prompt(reviews), _REVIEWED),
    select(versions.c.version).where(
        _of_the_prompt(versions),
        or_(
            versions.c.version == bindparam("number"),
            versions.c.version_id == bindparam("version_id"),
        ),
    ),
    select(bindparam("production", type_=Integer)),
)
_VERSIONS = select(versions).where(_of_the_prompt(versions), versions.c.version.in_(_IN_USE))
_ROLLOUTS = with_candidate_id().where(_of_the_prompt(rollouts)).order_by(rollouts.c.environment)
_REVIEWS = select(reviews).where(_of_the_prompt(reviews), _REVIEWED).order_by(reviews.c.seq)
_HISTORY = select(history).where(_of_the_prompt(history)).order_by(history.c.position)


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
    number = None if version_ref is None else version_number(version_ref)
    version_id = version_ref if version_ref and version_ref.startswith("v_") else None
    params = {
        "org": prompt.org,
        "prompt_id": prompt.prompt_id,
        "review_id": review_id,
        "number": None if number is None or number > MAX_NUMBER else number,
        "version_id": version_id,
        "production": prompt.production_version,
    }
    loaded = _Versions(db, connection, prompt)
    named = None
    placed: dict[str, int] = {}
    if prompt.production_version is not None:
        placed[PRODUCTION] = prompt.production_version
    for row in connection.execute(_VERSIONS, params):
        version = loaded.add(row)
        placed.update((environment, version.version) for environment in version.placements)
        if version.version == params["number"] or version.version_id == version_id:
            named = version.version
    found_rollouts = connection.execute(_ROLLOUTS, params).all()
    found_reviews = connection.execute(_REVIEWS, params).all()
    records: tuple[PromotionRecord, ...] = ()
    if with_history:
        records = tuple(history_record(row) for row in connection.execute(_HISTORY, params))
    state = State(
        neighbours=db.neighbours(prompt.org),
        prompt=prompt_record(prompt),
        versions=loaded,
        placements=placed,
        environments=org_environments(connection, prompt.org),
        rollouts={row.environment: rollout_record(row) for row in found_rollouts},
        reviews={row.review_id: review_record(row) for row in found_reviews},
        history=records,
    )
    return state, named
