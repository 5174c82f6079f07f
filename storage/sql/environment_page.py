"""An environment's whole read, a page at a time, in one statement: every prompt's
version there by name, the rollout running there and its candidate (joined, null
without one), and the org's newest event id (a scalar subquery), so the page and the id
are one snapshot."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from storage.records import PRODUCTION, InRollout, PromptVersion
from storage.sql.core import Concern, event_id
from storage.sql.read_lane import COLUMNS, ROLLOUT_COLUMNS, VERSION_WIDTH, lane_in_rollout
from storage.sql.state import environment_named
from storage.sql.tables import event_logs

# The candidate's columns: the same prompt, its version joined as c.
_CANDIDATE_COLUMNS = COLUMNS.replace("v.", "c.")
_LAST_EVENT = "(SELECT el.{0} FROM event_logs el WHERE el.org = :org)"
_IN_ENVIRONMENT = {
    "production": "v.version = p.production_version",
    "environment": "v.version = pl.version",
}
_PLACEMENT_JOIN = (
    "JOIN placements pl ON pl.org = p.org AND pl.prompt_id = p.prompt_id "
    "AND pl.environment = :environment "
)


def _page_sql(pick: str) -> str:
    return (
        f"SELECT {COLUMNS}, {ROLLOUT_COLUMNS}, {_CANDIDATE_COLUMNS}, "
        f"{_LAST_EVENT.format('last_ms')}, {_LAST_EVENT.format('last_seq')} "
        "FROM prompts p "
        f"{_PLACEMENT_JOIN if pick == 'environment' else ''}"
        "JOIN versions v ON v.org = p.org AND v.prompt_id = p.prompt_id "
        f"AND {_IN_ENVIRONMENT[pick]} "
        "LEFT JOIN rollouts r ON r.org = p.org AND r.prompt_id = p.prompt_id "
        "AND r.environment = :environment "
        "LEFT JOIN versions c ON c.org = p.org AND c.prompt_id = p.prompt_id "
        "AND c.version = r.candidate_version "
        "WHERE p.org = :org AND p.name > :after ORDER BY p.name LIMIT :limit"
    )


_PAGES = {pick: text(_page_sql(pick)) for pick in _IN_ENVIRONMENT}
_ROLLOUT_END = VERSION_WIDTH + ROLLOUT_COLUMNS.count(",") + 1
_CANDIDATE_END = _ROLLOUT_END + VERSION_WIDTH


class SqlEnvironmentPages(Concern):
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
