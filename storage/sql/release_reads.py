"""The reads of releases: promotion history, reviews, rollouts, and what an environment
serves (one statement on the read lane, storage/sql/read_lane.py). The changes are
storage/sql/releases.py."""

from __future__ import annotations

from sqlalchemy import select

from storage.errors import (
    NoProductionVersion,
    NothingInEnvironment,
)
from storage.records import (
    PRODUCTION,
    InRollout,
    PromotionRecord,
    PromptVersion,
    Review,
    Rollout,
)
from storage.rollout_front import RolloutReads
from storage.sql.core import Concern
from storage.sql.read_lane import VERSION_WIDTH, lane_in_rollout
from storage.sql.rows import history_record, review_record, rollout_record
from storage.sql.state import MAX_NUMBER, environment_named, of_prompt, with_candidate_id
from storage.sql.tables import history, reviews, rollouts
from storage.sql.versions import absent, lane_row


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
            statement = with_candidate_id().where(of_prompt(rollouts, prompt))
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
