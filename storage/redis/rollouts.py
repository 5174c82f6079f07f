"""Rollouts on Redis: their start, change, completion and abort are decided by the
release engine (storage/release) and applied by apply_change.lua; list_rollouts.lua
serves the reads, and the environment read is read_version.lua, which adds the rollout
and its candidate while one runs."""

from __future__ import annotations

from storage.interface import RolloutStore
from storage.records import PRODUCTION, IncludeReads, InRollout, PromptVersion, Rollout
from storage.redis import codec, keys
from storage.redis.core import ClientT, check, guard
from storage.redis.releases import RedisReleases
from storage.rollout_front import RolloutReads

# Names one page's script looks at at least (skipping prompts without a version in the
# environment) before it answers with what it found.
SCAN_AT_LEAST = 2000


class RedisRollouts(RedisReleases[ClientT], RolloutReads, RolloutStore):
    def _rollouts(self, org: str, prompt_ref: str, environment: str | None) -> list[Rollout]:
        reply = self._prompt_script("list_rollouts", org, [prompt_ref, environment or ""])
        return [
            codec.rollout(raw)
            for raw in check(reply, prompt_ref, environment=environment or "")[1:]
        ]

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        return self._read_in(org, prompt_ref, environment, includes=False)[0]

    def read_environment_including(
        self, org: str, prompt_ref: str, environment: str
    ) -> tuple[PromptVersion | InRollout, IncludeReads]:
        return self._read_in(org, prompt_ref, environment, includes=True)

    def _read_in(
        self, org: str, prompt_ref: str, environment: str, includes: bool
    ) -> tuple[PromptVersion | InRollout, IncludeReads]:
        """read_version.lua's environment read; with ``includes``, what the includes
        of the versions read resolve to, read by the same script."""
        if environment == PRODUCTION:
            args = [prompt_ref, "production", ""]
        else:
            args = [prompt_ref, "environment", environment]
        with guard():
            reply = self._read_reply(
                [keys.names(org), keys.prompt_prefix(org)],
                [*args, environment] if includes else args,
            )
        check(reply, prompt_ref, environment, environment=environment)
        version = self._memoized(reply[1], reply[2])
        found: PromptVersion | InRollout = version
        if len(reply) > 3 and reply[3] is not None:
            found = InRollout(version, codec.rollout(reply[3]), self._memoized(reply[1], reply[4]))
        return found, self._included(reply)

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
