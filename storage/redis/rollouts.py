"""Rollouts on Redis: start_rollout, set_rollout, complete_rollout and abort_rollout
(with lua/_rollout.lua), list_rollouts.lua for the reads; the environment read is
read_version.lua, which adds the rollout and its candidate while one runs."""

from __future__ import annotations

from typing import Any

from storage import lifecycle
from storage.errors import RolloutNotFound
from storage.ids import new_id
from storage.interface import RolloutStore
from storage.lifecycle import UNGUARDED, Expected
from storage.records import PRODUCTION, InRollout, Promotion, PromptVersion, Rollout
from storage.redis import codec, keys, scripts
from storage.redis.core import ClientT, check, guard, promotion_reply
from storage.redis.releases import RedisReleases


class RedisRollouts(RedisReleases[ClientT], RolloutStore):
    def start_rollout(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        percent: int,
        started_by: str,
        expected: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
        notes: str | None = None,
    ) -> Rollout:
        lifecycle.check_percent(percent)
        lifecycle.check_acknowledgement(allow_breaking, notes)
        now = self._now()
        args = [
            prompt_ref,
            *scripts.selector(version_ref),
            environment,
            str(percent),
            started_by,
            now,
            new_id("ro_"),
            scripts.expected(expected),
        ]
        reply = self._checked_change(
            "start_rollout",
            org,
            prompt_ref,
            lambda _: args,
            lambda changes, _: lifecycle.check_breaking(
                prompt_ref, environment, changes, allow_breaking
            ),
            started_by,
            request_id,
            now,
        )
        check(reply, prompt_ref, version_ref, "promote", expected, environment)
        return codec.rollout(reply[1])

    def get_rollout(self, org: str, prompt_ref: str, environment: str) -> Rollout:
        reply = self._listed(org, prompt_ref, environment)
        return codec.rollout(reply[1])

    def list_rollouts(self, org: str, prompt_ref: str) -> list[Rollout]:
        found = [codec.rollout(raw) for raw in self._listed(org, prompt_ref, "")[1:]]
        return sorted(found, key=lambda rollout: rollout.environment)

    def set_rollout_percent(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        percent: int,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        lifecycle.check_percent(percent)
        now = self._now()
        args = [prompt_ref, environment, rollout_id or "", str(percent), now]
        reply = self._prompt_change("set_rollout", org, args, actor, request_id, now)
        return codec.rollout(self._checked(reply, prompt_ref, environment, rollout_id)[1])

    def complete_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        *,
        rollout_id: str | None = None,
        request_id: str | None = None,
        allow_breaking: bool = False,
    ) -> Promotion:
        lifecycle.check_acknowledgement(allow_breaking, notes)
        now = self._now()
        args = [
            prompt_ref,
            environment,
            rollout_id or "",
            promoted_by,
            notes or "",
            "0" if notes is None else "1",
            "1" if archive_previous else "0",
            now,
            new_id("h_"),
        ]
        reply = self._checked_change(
            "complete_rollout",
            org,
            prompt_ref,
            lambda _: args,
            lambda changes, _: lifecycle.check_breaking(
                prompt_ref, environment, changes, allow_breaking
            ),
            promoted_by,
            request_id,
            now,
        )
        return promotion_reply(self._checked(reply, prompt_ref, environment, rollout_id))

    def abort_rollout(
        self,
        org: str,
        prompt_ref: str,
        environment: str,
        *,
        rollout_id: str | None = None,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Rollout:
        now = self._now()
        args = [prompt_ref, environment, rollout_id or "", now]
        reply = self._prompt_change("abort_rollout", org, args, actor, request_id, now)
        return codec.rollout(self._checked(reply, prompt_ref, environment, rollout_id)[1])

    def read_environment(
        self, org: str, prompt_ref: str, environment: str
    ) -> PromptVersion | InRollout:
        if environment == PRODUCTION:
            mode, value = "production", ""
        else:
            mode, value = "environment", environment
        with guard():
            reply = self._read_reply(
                [keys.names(org), keys.prompt_prefix(org)], [prompt_ref, mode, value]
            )
        check(reply, prompt_ref, environment, environment=environment)
        version = self._memoized(reply[1], reply[2])
        if len(reply) == 3:
            return version
        candidate = self._memoized(reply[1], reply[4])
        return InRollout(version, codec.rollout(reply[3]), candidate)

    # -- helpers

    def _listed(self, org: str, prompt_ref: str, environment: str) -> Any:
        reply = self._prompt_script("list_rollouts", org, [prompt_ref, environment])
        return self._checked(reply, prompt_ref, environment, None)

    @staticmethod
    def _checked(reply: Any, prompt_ref: str, environment: str, rollout_id: str | None) -> Any:
        if reply[0] == "no_rollout":
            raise RolloutNotFound(prompt_ref, environment, rollout_id)
        return check(reply, prompt_ref, action="promote", environment=environment)
