"""Versions: numbering (a new draft) and the reads (production, latest, by ref, in an
environment, the list); every other change of a version is a release change
(storage/sql/releases.py).

The hot read (production, latest or one version of a prompt) is one indexed statement
outside any transaction, on the read lane's own connections (storage/sql/read_lane.py):
the prompt row joined to the version row, decoded through a memo keyed by the whole row
(storage/sql/core.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from sqlalchemy import Connection, bindparam, insert, select, tuple_, update

from promptsvc.templating.includes import Include
from storage import release
from storage.drafts import numbered
from storage.errors import NoProductionVersion, NothingInEnvironment, VersionNotFound
from storage.event_records import created_event
from storage.ids import version_number
from storage.records import PRODUCTION, PromptVersion
from storage.sql import dialect, direct
from storage.sql.core import Concern, Database
from storage.sql.rows import include_values, version_values
from storage.sql.state import MAX_NUMBER, environment_named, of_prompt
from storage.sql.tables import includes, prompts, versions

# A new version's statements, built once (building one costs more than running it).
_INSERT_VERSION = insert(versions)
_NUMBERED = (
    update(prompts)
    .where(prompts.c.org == bindparam("w_org"), prompts.c.prompt_id == bindparam("w_prompt_id"))
    .values(counter=bindparam("number"), latest_version=bindparam("number"))
)


def present_includes(
    connection: Connection, org: str, version: PromptVersion
) -> Callable[[Include], bool]:
    """Whether each include of ``version`` names a prompt (and an ``@N`` version) that
    exists, the prompts' rows locked against deletion until commit (PostgreSQL)."""
    names = sorted(version.included_names)
    statement = select(prompts.c.name, prompts.c.prompt_id).where(
        prompts.c.org == org, prompts.c.name.in_(names)
    )
    found: dict[str, str] = dict(
        connection.execute(
            dialect.locked(connection, statement.order_by(prompts.c.name), read=True)
        ).all()
    )
    pins = [i for i in version.own_includes if isinstance(i.ref, int)]
    kept: set[tuple[str, int]] = set()
    if pinned := {(found[i.name], i.ref) for i in pins if i.name in found}:
        key = (versions.c.prompt_id, versions.c.version)
        held = select(*key).where(versions.c.org == org, tuple_(*key).in_(sorted(pinned)))
        by_id = {prompt_id: name for name, prompt_id in found.items()}
        kept = {(by_id[prompt_id], number) for prompt_id, number in connection.execute(held)}

    def present(include: Include) -> bool:
        if isinstance(include.ref, int):
            return (include.name, include.ref) in kept
        return include.name in found

    return present


def lane_row(db: Database, pick: str, params: dict[str, Any]) -> Any:
    """The read lane's row for ``pick`` (storage/sql/read_lane.py) of the prompt named
    ``params["ref"]``, else of the one with that ``pmt_`` id; None when there is none.
    One statement per try."""
    row = db.lane(("name", pick), params)
    if row is None and params["ref"].startswith("pmt_"):
        row = db.lane(("id", pick), params)
    return row


def absent(
    db: Database, org: str, prompt_ref: str, error: Exception, environment: str | None = None
) -> NoReturn:
    """After a version read missed: raise PromptNotFound (or EnvironmentNotFound) if
    the prompt (or ``environment``) does not exist, else ``error``."""
    with db.read() as connection:
        db.find_prompt(connection, org, prompt_ref)
        if environment is not None:
            environment_named(connection, org, environment)
    raise error


class SqlVersions(Concern):
    # -- reads

    def read_version(
        self, org: str, prompt_ref: str, pick: str, **params: Any
    ) -> PromptVersion | None:
        """The version ``pick`` names (:func:`lane_row`); None when there is none."""
        row = lane_row(self.db, pick, {"org": org, "ref": prompt_ref, **params})
        return None if row is None else self.db.lane_version(row)

    def read_many(self, org: str, reads: Sequence[tuple[str, str]]) -> list[PromptVersion | None]:
        """The reads of a version's includes (Storage.read_many) in one statement on the
        read lane; a ``pmt_`` ref not found by name is read again by id."""
        if not reads:
            return []
        picks: list[tuple[str, dict[str, Any]]] = []
        for name, where in reads:
            read = {"org": org, "ref": name}
            if where.isdigit():
                number = int(where) if int(where) <= MAX_NUMBER else None  # past the column
                picks.append(("number", {**read, "number": number}))
            elif where == PRODUCTION:
                picks.append(("production", read))
            else:
                picks.append(("environment", {**read, "environment": where}))
        found: list[PromptVersion | None] = []
        for (pick, params), row in zip(picks, self.db.lane.many(picks), strict=True):
            if row is None and params["ref"].startswith("pmt_"):
                row = self.db.lane(("id", pick), params)
            found.append(None if row is None else self.db.lane_version(row))
        return found

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        number = version_number(version_ref)
        found = None
        if number is not None and number <= MAX_NUMBER:
            found = self.read_version(org, prompt_ref, "number", number=number)
        elif number is None and version_ref.startswith("v_"):
            found = self.read_version(org, prompt_ref, "version_id", version_id=version_ref)
        return found or absent(self.db, org, prompt_ref, VersionNotFound(prompt_ref, version_ref))

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        found = self.read_version(org, prompt_ref, "latest")
        return found or absent(self.db, org, prompt_ref, VersionNotFound(prompt_ref, "latest"))

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        found = self.read_version(org, prompt_ref, "production")
        return found or absent(self.db, org, prompt_ref, NoProductionVersion(prompt_ref))

    def versions_below(
        self, org: str, prompt_ref: str, status: str | None, before: int | None, count: int
    ) -> list[PromptVersion]:
        with self.db.read() as connection:
            prompt = self.db.find_prompt(connection, org, prompt_ref)
            statement = select(versions).where(of_prompt(versions, prompt))
            if before is not None and before <= MAX_NUMBER:  # every row is below a larger one
                statement = statement.where(versions.c.version < before)
            if status is not None:
                statement = statement.where(versions.c.status == status)
            rows = connection.execute(
                statement.order_by(versions.c.version.desc()).limit(count)
            ).all()
        return [self.db.version(prompt.name, prompt.prompt_type, row) for row in rows]

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        if environment == PRODUCTION:
            return self.get_production(org, prompt_ref)
        found = self.read_version(org, prompt_ref, "environment", environment=environment)
        return found or absent(
            self.db, org, prompt_ref, NothingInEnvironment(prompt_ref, environment), environment
        )

    def list_includers(self, org: str, name: str) -> list[PromptVersion]:
        """Every version of ``org`` whose content includes prompt ``name`` (the reverse
        index), by prompt name and number."""
        statement = (
            select(versions, prompts.c.name.label("p_name"), prompts.c.prompt_type.label("p_type"))
            .join(
                includes,
                (includes.c.org == versions.c.org)
                & (includes.c.prompt_id == versions.c.prompt_id)
                & (includes.c.version == versions.c.version),
            )
            .join(
                prompts,
                (prompts.c.org == versions.c.org) & (prompts.c.prompt_id == versions.c.prompt_id),
            )
            .where(includes.c.org == org, includes.c.name == name)
            .order_by(prompts.c.name, versions.c.version)
        )
        with self.db.read() as connection:
            rows = connection.execute(statement).all()
        return [self.db.version(row.p_name, row.p_type, row) for row in rows]

    def add_version(
        self, org: str, prompt_ref: str, draft: PromptVersion, request_id: str | None
    ) -> PromptVersion:
        with self.db.write() as connection:
            prompt = self.db.find_prompt(connection, org, prompt_ref)
            number = prompt.counter + 1
            version = numbered(draft, number, prompt.prompt_id, prompt.name, prompt.prompt_type)
            direct.run(connection, _INSERT_VERSION, version_values(org, version), defer=True)
            direct.run(
                connection,
                _NUMBERED,
                {
                    "w_org": org,
                    "w_prompt_id": prompt.prompt_id,
                    "number": number,
                    "updated_at": draft.created_at,
                },
                defer=True,
            )
            if version.included_names:
                release.check_included_present(version, present_includes(connection, org, version))
                connection.execute(insert(includes), include_values(org, version))
            event = created_event(version, draft.created_by, request_id)
            self.db.append_events(connection, org, [event])
        return version
