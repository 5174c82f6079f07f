"""Rollouts on Redis: their start, change, completion and abort are decided by the
release engine (storage/release) and applied by apply_change.lua; list_rollouts.lua
serves the reads, and the environment read is read_version.lua, which adds the rollout
and its candidate while one runs."""

from __future__ import annotations

from storage.interface import RolloutStore
from storage.records import IncludeReads, InRollout, PromptVersion, Rollout
from storage.redis import codec, keys, scripts
from storage.redis.core import ClientT, check
from storage.redis.releases import RedisReleases
from storage.rollout_front import RolloutReads

# Names one page's script looks at at least (skipping prompts without a version in the
# environment) before it answers with what it found.
SCAN_AT_LEAST = 2000


class RedisRollouts(RedisReleases[ClientT], RolloutReads, RolloutStore):
    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        reply = self._prompt_script("list_rollouts", org, [prompt_ref, environment or ""])
        if reply[0] == "no_rollout":
            return []
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
        reply = self._prompt_script(
            "read_environment_page",
            org,
            [environment, after, count, max(4 * (count - 1), SCAN_AT_LEAST)],
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
