"""Environments and reviews on Redis: the changes are Lua scripts (set_environment,
delete_environment, promote and rollback with an environment, request_review,
approve_review, decide_review), the reads plain commands or list_reviews.lua."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from storage import lifecycle
from storage.cursors import encode_cursor
from storage.errors import (
    EnvironmentExists,
    EnvironmentNotFound,
    LifecycleError,
    ReviewNotFound,
    ReviewStale,
    VersionNotFound,
)
from storage.ids import new_id
from storage.interface import ReleaseStore
from storage.records import (
    PRODUCTION,
    BreakingChange,
    Environment,
    Page,
    Promotion,
    PromptVersion,
    Review,
    Rollout,
)
from storage.redis import codec, keys, scripts
from storage.redis.core import ClientT, check, guard, promotion_reply
from storage.redis.prompts import RedisPrompts
from storage.times import rfc3339

# Review ids as new_id makes them: anything else names no review (and no other key).
_REVIEW_ID = re.compile(r"rv_[0-9a-f]{32}")


class RedisReleases(RedisPrompts[ClientT], ReleaseStore):
    """Environments, placements and reviews; the rules inside the scripts. Over
    RedisPrompts for its version read (an environment's version is read like
    production's)."""

    # -- environments

    def list_environments(self, org: str) -> list[Environment]:
        with guard():
            stored: Any = self.client.hgetall(keys.environments(org))
            order: Any = self.client.lrange(keys.environment_order(org), 0, -1)
        production = stored.get(PRODUCTION)
        first = codec.environment(production) if production else lifecycle.default_production()
        return [first, *(codec.environment(stored[name]) for name in order if name in stored)]

    def get_environment(self, org: str, name: str) -> Environment:
        with guard():
            raw: Any = self.client.hget(keys.environments(org), name)
        if raw is not None:
            return codec.environment(raw)
        if name == PRODUCTION:
            return lifecycle.default_production()
        raise EnvironmentNotFound(name)

    def _set_environment(self, org: str, name: str, args: list[str]) -> Environment:
        self._index_org(org)
        reply = self._run(
            "set_environment",
            [keys.environments(org), keys.environment_order(org)],
            [name, *args],
        )
        if reply[0] == "exists":
            raise EnvironmentExists(name)
        if reply[0] == "no_environment":
            raise EnvironmentNotFound(name)
        return codec.environment(reply[1])

    def create_environment(
        self, org: str, name: str, required_approvals: int = 0, description: str | None = None
    ) -> Environment:
        environment = Environment(name, required_approvals, description, self.clock())
        return self._set_environment(org, name, ["create", codec.environment_json(environment)])

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
        now = self._now()
        reply = self._prompt_change("delete_environment", org, [name, now], actor, request_id, now)
        if reply[0] == "production":
            raise LifecycleError("production cannot be deleted")
        check(reply, "", environment=name)

    def get_in_environment(self, org: str, prompt_ref: str, environment: str) -> PromptVersion:
        if environment == PRODUCTION:
            return self.get_production(org, prompt_ref)
        return self._read(org, prompt_ref, "environment", environment, environment)

    # -- reviews

    def request_review(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        environment: str,
        requested_by: str,
        notes: str | None = None,
        rollout_percent: int | None = None,
        *,
        request_id: str | None = None,
        allow_breaking: bool = False,
    ) -> Review:
        if rollout_percent is not None:
            lifecycle.check_percent(rollout_percent)
        lifecycle.check_acknowledgement(allow_breaking, notes)
        now = self.clock()
        review_id = new_id("rv_")

        def args(changes: list[BreakingChange]) -> list[Any]:
            known = codec.review_request(
                review_id, requested_by, now, notes, rollout_percent, allow_breaking, changes
            )
            return [prompt_ref, *scripts.selector(version_ref), environment, known]

        reply = self._checked_change(
            "request_review",
            org,
            prompt_ref,
            args,
            lambda changes, _: lifecycle.check_breaking(
                prompt_ref, environment, changes, allow_breaking
            ),
            requested_by,
            request_id,
            rfc3339(now),
        )
        check(reply, prompt_ref, version_ref, "promote", environment=environment)
        return codec.review(reply[1])

    def get_review(self, org: str, review_id: str) -> Review:
        if not _REVIEW_ID.fullmatch(review_id):
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

    def approve_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        username: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> tuple[Review, Promotion | Rollout | None]:
        if not _REVIEW_ID.fullmatch(review_id):
            raise ReviewNotFound(review_id)
        now = self._now()
        args = [review_id, user_id, username, comment or "", _flag(comment), now, new_id("h_")]
        args.append(new_id("ro_"))

        def decide(changes: list[BreakingChange], reply: Sequence[Any]) -> bool:
            review = codec.review(reply[5])
            return lifecycle.check_breaking(
                review.prompt_name, review.environment, changes, review.allow_breaking
            )

        reply = self._checked_change(
            "approve_review", org, review_id, lambda _: args, decide, user_id, request_id, now
        )
        if reply[0] == "stale":
            review = codec.review(reply[2])
            current = int(reply[1]) if reply[1] != "" else None
            raise ReviewStale(
                review_id, review.prompt_name, review.expected_version, current, review.environment
            )
        if reply[0] == "no_version":
            raise VersionNotFound(reply[1], reply[2])
        if reply[0] in ("rollout_busy", "no_baseline"):  # rare: worth a read for the name
            check(reply, self.get_review(org, review_id).prompt_name)
        # The prompt's name is only known from the review: refusals name the review.
        check(reply, review_id, action="promote", review_id=review_id)
        review = codec.review(reply[1])
        if len(reply) == 2:
            return review, None
        if reply[2] == "rollout":
            return review, codec.rollout(reply[3])
        return review, promotion_reply(reply[1:])

    def reject_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        comment: str | None = None,
        *,
        request_id: str | None = None,
    ) -> Review:
        return self._decide(org, review_id, "reject", user_id, comment, False, request_id)

    def cancel_review(
        self,
        org: str,
        review_id: str,
        user_id: str,
        admin: bool = False,
        *,
        request_id: str | None = None,
    ) -> Review:
        return self._decide(org, review_id, "cancel", user_id, None, admin, request_id)

    def _decide(
        self,
        org: str,
        review_id: str,
        action: str,
        user_id: str,
        comment: str | None,
        admin: bool,
        request_id: str | None,
    ) -> Review:
        if not _REVIEW_ID.fullmatch(review_id):
            raise ReviewNotFound(review_id)
        now = self._now()
        args = [review_id, action, user_id, comment or "", _flag(comment), _flag(admin), now]
        reply = self._prompt_change("decide_review", org, args, user_id, request_id, now)
        return codec.review(check(reply, review_id, review_id=review_id)[1])


def _flag(value: object) -> str:
    return "0" if value is None or value is False else "1"
