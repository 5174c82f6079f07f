"""Environments, reviews and rollouts on Redis: creating, changing and deleting an
environment, requesting or deciding a review, and a rollout's start, change, completion
and abort are applied by apply_change.lua; all but creating and changing an environment
are decided by the release engine (storage/release). The reads are plain commands,
list_reviews.lua or list_rollouts.lua; the environment read is read_version.lua, which
adds the rollout and its candidate while one runs."""

from __future__ import annotations

from typing import Any

from storage import lifecycle, release
from storage.errors import Conflict, EnvironmentExists, PromptNotFound
from storage.event_records import Event
from storage.interface import ReleaseStore, RolloutStore
from storage.records import (
    PRODUCTION,
    Environment,
    IncludeReads,
    InRollout,
    PromptVersion,
    Review,
    Rollout,
)
from storage.redis import change, codec, keys, scripts
from storage.redis.change import Write
from storage.redis.core import ATTEMPTS, RACE, REVIEW_ID, ClientT, check, guard
from storage.redis.prompts import RedisPrompts
from storage.redis.state import Guard
from storage.release.methods import Target
from storage.rollout_front import RolloutReads

# Names one page's script looks at at least (skipping prompts without a version in the
# environment) before it answers with what it found.
SCAN_AT_LEAST = 2000


class RedisReleases(RedisPrompts[ClientT], RolloutReads, ReleaseStore, RolloutStore):
    """Over RedisPrompts for its version read (an environment's version is read like
    production's)."""

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
        writes = [["HSET", "envs", name, codec.stored_json(environment)], ["INCR", "env-rev"]]
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
            events: list[Event] = []
            for prompt_id in prompt_ids:
                try:
                    loaded = self._load(org, Target(prompt_id))
                except PromptNotFound:
                    continue  # deleted since: nothing of it to leave
                decided = release.decide(self._with_neighbours(org, loaded), leave)
                guards += loaded.guards
                writes += change.writes(loaded, decided, leave.now)
                events += decided.events
            writes += [
                ["HDEL", "envs", name],
                ["LREM", "env-order", "0", name],
                ["INCR", "env-rev"],
            ]
            if self._apply(org, guards, writes, events):
                return
        raise Conflict(RACE)

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        return self._read(org, prompt_ref, *scripts.environment(environment), environment)[0]

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

    # -- rollouts

    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        reply = self._prompt_script("list_rollouts", org, [prompt_ref, environment or ""])
        return [
            codec.rollout(raw)
            for raw in check(reply, prompt_ref, environment=environment or "")[1:]
        ]

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        return self.read_environment_including(org, prompt_ref, environment, includes=False)[0]

    def read_environment_including(
        self, org: str, prompt_ref: str, environment: str, includes: bool = True
    ) -> tuple[PromptVersion | InRollout, IncludeReads]:
        version, reply = self._read(
            org, prompt_ref, *scripts.environment(environment), environment, includes
        )
        if len(reply) > 3 and reply[3]:
            candidate = self._memoized(reply[1], reply[4])
            return InRollout(version, codec.rollout(reply[3]), candidate), self._included(reply)
        return version, self._included(reply)

    def _environment_page(
        self, org: str, environment: str, after: str, count: int
    ) -> tuple[str | None, list[PromptVersion | InRollout], str | None]:
        cap = max(4 * (count - 1), SCAN_AT_LEAST)
        reply = self._prompt_script(
            "read_environment_page",
            org,
            [environment, f"({after}" if after else "-", count, cap],
            keys.prompt_list(org),
            keys.events(org),
        )
        check(reply, "", environment=environment)
        items: list[PromptVersion | InRollout] = []
        for entry in reply[3:]:
            version = self._memoized(entry[0], entry[1])
            if len(entry) == 2:
                items.append(version)
            else:
                candidate = self._memoized(entry[0], entry[3])
                items.append(InRollout(version, codec.rollout(entry[2]), candidate))
        # A scan stopped by its cap goes on after the last name it looked at.
        return reply[1] or None, items, reply[2] or None
