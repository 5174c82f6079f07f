"""Environments and reviews on Redis: creating and changing an environment, and
deleting one, requesting a review and deciding one (these decided by the release
engine, storage/release) are applied by apply_change.lua; the reads are plain commands
or list_reviews.lua."""

from __future__ import annotations

from typing import Any

from storage import lifecycle, release
from storage.errors import (
    Conflict,
    EnvironmentExists,
    PromptNotFound,
)
from storage.interface import ReleaseStore
from storage.records import PRODUCTION, Environment, PromptVersion, Review
from storage.redis import change, codec, keys, scripts
from storage.redis.change import Write
from storage.redis.core import ATTEMPTS, RACE, REVIEW_ID, ClientT, check, guard
from storage.redis.prompts import RedisPrompts
from storage.redis.state import Guard


class RedisReleases(RedisPrompts[ClientT], ReleaseStore):
    """Environments, placements and reviews. Over RedisPrompts for its version read (an
    environment's version is read like production's)."""

    # -- environments

    def _stored_environments(self, org: str) -> dict[str, Environment]:
        # One round trip, and the hash and the order as of one moment.
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.hgetall(keys.environments(org))
            pipe.lrange(keys.environment_order(org), 0, -1)
            stored, order = pipe.execute()
        return {n: codec.environment(stored[n]) for n in [PRODUCTION, *order] if n in stored}

    def _set_environment(self, org: str, environment: Environment, replaced: str) -> bool:
        """Store ``environment`` unless what is stored under its name has changed from
        ``replaced`` ("": nothing), in one step (apply_change.lua); a new one (but
        production) joins the order of creation, and the environments' revision moves."""
        self._index_org(org)
        name = environment.name
        writes = [["HSET", "envs", name, codec.environment_json(environment)], ["INCR", "env-rev"]]
        if not replaced and name != PRODUCTION:
            writes.append(["RPUSH", "env-order", name])
        return self._apply(org, [["envs", name, replaced or None]], writes, [])

    def _add_environment(self, org: str, environment: Environment) -> Environment:
        if environment.name == PRODUCTION or not self._set_environment(org, environment, ""):
            raise EnvironmentExists(environment.name)
        return environment

    def _change_environment(
        self, org: str, name: str, change: lifecycle.EnvironmentChange
    ) -> Environment:
        for _ in range(ATTEMPTS):
            with guard():
                raw: Any = self.client.hget(keys.environments(org), name)
            stored = {} if raw is None else {name: codec.environment(raw)}
            changed = change.applied(lifecycle.environment_in(stored, name))
            if self._set_environment(org, changed, raw or ""):
                return changed
        raise Conflict(RACE)

    def _delete_environment(self, org: str, leave: release.LeaveEnvironment) -> None:
        """Every prompt leaves the environment as the release engine decides, and the
        environment goes, in one apply_change.lua guarded by every prompt's revision."""
        name = leave.environment
        for _ in range(ATTEMPTS):
            with guard():
                prompt_ids: Any = self.client.hvals(keys.names(org))
                revision: Any = self.client.get(keys.environment_revision(org))
            release.check_delete_environment(self._stored_environments(org), name)
            guards: list[Guard] = [["env-rev", None, revision]]
            writes: list[Write] = []
            events: list[list[str]] = []
            for prompt_id in prompt_ids:
                try:
                    loaded = self._load(org, prompt_id)
                except PromptNotFound:
                    continue  # deleted since: nothing of it to leave
                decided = release.decide(self._with_neighbours(org, loaded.state), leave)
                guards += loaded.guards
                writes += change.writes(loaded, decided, leave.now)
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

    def _review_of(self, org: str, review_id: str) -> Review | None:
        if not REVIEW_ID.fullmatch(review_id):
            return None
        with guard():
            raw: Any = self.client.get(keys.review(org, review_id))
        return None if raw is None else codec.review(raw)

    def _reviews_below(
        self,
        org: str,
        prompt_ref: str | None,
        status: str | None,
        environment: str | None,
        before: int | None,
        count: int,
    ) -> list[tuple[int, Review]]:
        args = [prompt_ref or "", status or "", environment or "", scripts.below(before), count]
        found = check(self._prompt_script("list_reviews", org, args), prompt_ref or "")[1:]
        return [(int(seq), codec.review(json_)) for seq, json_ in found]
