"""Environments and reviews on Redis: creating and changing an environment is
set_environment.lua; deleting one, requesting a review and deciding one are decided by
the release engine (storage/release) and applied by apply_change.lua; the reads are
plain commands or list_reviews.lua."""

from __future__ import annotations

from typing import Any

from storage import lifecycle, release
from storage.cursors import encode_cursor
from storage.errors import (
    Conflict,
    EnvironmentExists,
    EnvironmentNotFound,
    PromptNotFound,
    ReviewNotFound,
)
from storage.interface import ReleaseStore
from storage.records import (
    PRODUCTION,
    Environment,
    Page,
    PromptVersion,
    Review,
)
from storage.redis import change, codec, keys, scripts
from storage.redis.change import Write
from storage.redis.core import ATTEMPTS, RACE, REVIEW_ID, ClientT, check, guard
from storage.redis.prompts import RedisPrompts
from storage.redis.state import Guard


class RedisReleases(RedisPrompts[ClientT], ReleaseStore):
    """Environments, placements and reviews. Over RedisPrompts for its version read (an
    environment's version is read like production's)."""

    # -- environments

    def list_environments(self, org: str) -> list[Environment]:
        with guard():
            stored: Any = self.client.hgetall(keys.environments(org))
            order: Any = self.client.lrange(keys.environment_order(org), 0, -1)
        found = {n: codec.environment(stored[n]) for n in [PRODUCTION, *order] if n in stored}
        return list(lifecycle.with_production(found).values())

    def get_environment(self, org: str, name: str) -> Environment:
        with guard():
            raw: Any = self.client.hget(keys.environments(org), name)
        return lifecycle.environment_in({} if raw is None else {name: codec.environment(raw)}, name)

    def _set_environment(self, org: str, name: str, args: list[str]) -> Environment:
        self._index_org(org)
        reply = self._run(
            "set_environment",
            [keys.environments(org), keys.environment_order(org), keys.environment_revision(org)],
            [name, *args],
        )
        if reply[0] == "exists":
            raise EnvironmentExists(name)
        if reply[0] == "no_environment":
            raise EnvironmentNotFound(name)
        return codec.environment(reply[1])

    def _add_environment(self, org: str, environment: Environment) -> Environment:
        args = ["create", codec.environment_json(environment)]
        return self._set_environment(org, environment.name, args)

    def update_environment(
        self,
        org: str,
        name: str,
        *,
        required_approvals: int | None = None,
        description: str | None = None,
    ) -> Environment:
        what = "keep" if description is None else "set" if description else "clear"
        args = [
            "update",
            "" if required_approvals is None else str(required_approvals),
            what,
            description or "",
            codec.environment_json(lifecycle.default_production()),
        ]
        return self._set_environment(org, name, args)

    def delete_environment(
        self,
        org: str,
        name: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Every prompt leaves the environment as the release engine decides, and the
        environment goes, in one apply_change.lua guarded by every prompt's revision."""
        now = self.clock()
        for _ in range(ATTEMPTS):
            with guard():
                prompt_ids: Any = self.client.hvals(keys.names(org))
                revision: Any = self.client.get(keys.environment_revision(org))
            release.check_delete_environment({e.name: e for e in self.list_environments(org)}, name)
            guards: list[Guard] = [["env-rev", None, revision]]
            writes: list[Write] = []
            events: list[list[str]] = []
            for prompt_id in prompt_ids:
                try:
                    loaded = self._load(org, prompt_id)
                except PromptNotFound:
                    continue  # deleted since: nothing of it to leave
                leave = release.LeaveEnvironment(
                    now=now, actor=release.Actor(actor), request_id=request_id, environment=name
                )
                decided = release.decide(self._with_neighbours(org, loaded.state), leave)
                guards += loaded.guards
                writes += change.writes(loaded, decided, now)
                events += change.events(decided)
            writes += [
                ["HDEL", "envs", name],
                ["LREM", "env-order", "0", name],
                ["INCR", "env-rev"],
            ]
            if self._apply(org, guards, writes, events):
                return
        raise Conflict(RACE)

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        if environment == PRODUCTION:
            return self.get_production(org, prompt_ref)
        return self._read(org, prompt_ref, "environment", environment, environment)[0]

    # -- reviews

    def get_review(self, org: str, review_id: str) -> Review:
        if not REVIEW_ID.fullmatch(review_id):
            raise ReviewNotFound(review_id)
        with guard():
            raw: Any = self.client.get(keys.review(org, review_id))
        if raw is None:
            raise ReviewNotFound(review_id)
        return codec.review(raw)

    def list_reviews(
        self,
        org: str,
        *,
        prompt_ref: str | None = None,
        status: str | None = None,
        environment: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Review]:
        args = [
            prompt_ref or "",
            status or "",
            environment or "",
            scripts.position(cursor),
            limit + 1,
        ]
        found = check(self._prompt_script("list_reviews", org, args), prompt_ref or "")[1:]
        page = found[:limit]
        items = [codec.review(json_) for _, json_ in page]
        return Page(items, encode_cursor(str(page[-1][0])) if len(found) > limit else None)
