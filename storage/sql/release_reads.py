"""The reads of releases: promotion history, reviews, rollouts, and what an environment
serves: for one prompt, one statement on the read lane (storage/sql/read_lane.py); a
page of every prompt's, one statement too (:data:`_PAGES`). The changes are
storage/sql/releases.py."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text

from storage.errors import NoProductionVersion, NothingInEnvironment
from storage.records import PRODUCTION, InRollout, PromotionRecord, PromptVersion, Review, Rollout
from storage.rollout_front import RolloutReads
from storage.sql.core import Concern, event_id
from storage.sql.read_lane import COLUMNS, ROLLOUT_COLUMNS, VERSION_WIDTH, lane_in_rollout
from storage.sql.rows import history_record, review_record, rollout_record
from storage.sql.state import MAX_NUMBER, candidate_of, environment_named, of_prompt
from storage.sql.tables import event_logs, history, reviews, rollouts, versions
from storage.sql.versions import absent, lane_row

# An environment's page: every prompt's version there by name, the rollout running
# there and its candidate (joined, null without one), and the org's newest event id (a
# scalar subquery), so the page and the id are one snapshot.
_LAST_EVENT = "(SELECT el.{0} FROM event_logs el WHERE el.org = :org)"


def _page(join: str, version: str) -> Any:
    """The page's statement: each prompt's version ``version`` (after ``join``); the
    candidate's columns are its version joined as c."""
    return text(
        f"SELECT {COLUMNS}, {ROLLOUT_COLUMNS}, {COLUMNS.replace('v.', 'c.')}, "
        f"{_LAST_EVENT.format('last_ms')}, {_LAST_EVENT.format('last_seq')} "
        f"FROM prompts p {join}"
        "JOIN versions v ON v.org = p.org AND v.prompt_id = p.prompt_id "
        f"AND v.version = {version} "
        "LEFT JOIN rollouts r ON r.org = p.org AND r.prompt_id = p.prompt_id "
        "AND r.environment = :environment "
        "LEFT JOIN versions c ON c.org = p.org AND c.prompt_id = p.prompt_id "
        "AND c.version = r.candidate_version "
        "WHERE p.org = :org AND p.name > :after ORDER BY p.name LIMIT :limit"
    )


_PAGES = {
    "production": _page("", "p.production_version"),
    "environment": _page(
        "JOIN placements pl ON pl.org = p.org AND pl.prompt_id = p.prompt_id "
        "AND pl.environment = :environment ",
        "pl.version",
    ),
}
_ROLLOUT_END = VERSION_WIDTH + ROLLOUT_COLUMNS.count(",") + 1
_CANDIDATE_END = _ROLLOUT_END + VERSION_WIDTH


class SqlReleaseReads(Concern, RolloutReads):
    def history_below(
        self, org: str, prompt_ref: str, before: int | None, count: int
    ) -> list[tuple[int, PromotionRecord]]:
        with self.db.read() as connection:
            prompt = self.db.find_prompt(connection, org, prompt_ref)
            statement = select(history).where(of_prompt(history, prompt))
            if before is not None and before <= MAX_NUMBER:  # every row is below a larger one
                statement = statement.where(history.c.position < before)
            rows = connection.execute(
                statement.order_by(history.c.position.desc()).limit(count)
            ).all()
        return [(row.position, history_record(row)) for row in rows]

    def review_of(self, org: str, review_id: str) -> Review | None:
        row = self.db.read_one(
            select(reviews).where(reviews.c.org == org, reviews.c.review_id == review_id)
        )
        return None if row is None else review_record(row)

    def reviews_below(
        self,
        org: str,
        prompt_ref: str | None,
        status: str | None,
        environment: str | None,
        before: int | None,
        count: int,
    ) -> list[tuple[int, Review]]:
        with self.db.read() as connection:
            statement = select(reviews).where(reviews.c.org == org)
            if prompt_ref is not None:
                prompt = self.db.find_prompt(connection, org, prompt_ref)
                statement = statement.where(reviews.c.prompt_id == prompt.prompt_id)
            for column, value in (("status", status), ("environment", environment)):
                if value is not None:
                    statement = statement.where(reviews.c[column] == value)
            if before is not None:
                statement = statement.where(reviews.c.seq < before)
            rows = connection.execute(statement.order_by(reviews.c.seq.desc()).limit(count)).all()
        return [(row.seq, review_record(row)) for row in rows]

    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        with self.db.read() as connection:
            prompt = self.db.find_prompt(connection, org, prompt_ref)
            statement = (
                select(rollouts, versions.c.version_id)
                .join(versions, candidate_of())
                .where(of_prompt(rollouts, prompt))
            )
            if environment is not None:
                environment_named(connection, org, environment)
                statement = statement.where(rollouts.c.environment == environment)
            rows = connection.execute(statement).all()
        return [rollout_record(row) for row in rows]

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        pick = "production+rollout" if environment == PRODUCTION else "environment+rollout"
        params = {"org": org, "ref": prompt_ref, "environment": environment}
        row = lane_row(self.db, pick, params)
        if row is None:
            error: Exception = NothingInEnvironment(prompt_ref, environment)
            if environment == PRODUCTION:
                error = NoProductionVersion(prompt_ref)
            absent(self.db, org, prompt_ref, error, environment)
        version = self.db.lane_version(row)
        columns = row[VERSION_WIDTH:]
        if columns[0] is None:
            return version
        candidate_row = self.db.lane(
            ("id", "number"), {"org": org, "ref": version.prompt_id, "number": columns[2]}
        )
        if candidate_row is None:  # the candidate was deleted since: the rollout too
            return version
        return lane_in_rollout(version, environment, columns, self.db.lane_version(candidate_row))

    def environment_page(
        self, org: str, environment: str, after: str, count: int
    ) -> tuple[str | None, list[PromptVersion | InRollout], None]:
        pick = "production" if environment == PRODUCTION else "environment"
        params = {"org": org, "environment": environment, "after": after, "limit": count}
        with self.db.read() as connection:
            rows = [tuple(row) for row in connection.execute(_PAGES[pick], params)]
            if not rows:  # only here can the environment be unknown (placements need one)
                environment_named(connection, org, environment)
                last = connection.execute(
                    event_logs.select().where(event_logs.c.org == org)
                ).first()
                return None if last is None else event_id(last.last_ms, last.last_seq), [], None
        last_ms, last_seq = rows[0][_CANDIDATE_END:]
        newest = None if last_ms is None else event_id(last_ms, last_seq)
        return newest, [self._item(row, environment) for row in rows], None

    def _item(self, row: tuple[Any, ...], environment: str) -> PromptVersion | InRollout:
        version = self.db.lane_version(row[:VERSION_WIDTH])
        candidate_row = row[_ROLLOUT_END:_CANDIDATE_END]
        if row[VERSION_WIDTH] is None or candidate_row[2] is None:
            return version
        # The candidate's prompt columns are the baseline's (the same prompt).
        candidate = self.db.lane_version(candidate_row)
        return lane_in_rollout(version, environment, row[VERSION_WIDTH:_ROLLOUT_END], candidate)
