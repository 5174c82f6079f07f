"""The management API's client, shared by the command line and the MCP server.

:class:`ServiceClient` is a ``PromptClient`` (its token providers, request headers,
retry policy and error classes) with one method per management call, answering the
API's JSON as plain dicts. It is not part of the SDK's public surface
(``promptsvc.client``'s exports): applications read prompts with that, and the
management tools' needs (every endpoint, raw JSON for ``--json``) are not it.
promptsvc.cli.connection signs one in with the command line's saved login or API key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from promptsvc.client.errors import (
    PromptServiceError,
    error_for_response,
    invalid_response,
    json_or_none,
)
from promptsvc.client.sync import PromptClient

PAGE_SIZE = 200
# The largest page of an environment's whole read.
ENVIRONMENT_PAGE = 1000
LABELS = ("production", "latest")


# No expectation: a promotion or rollback that is not guarded.
UNGUARDED: object = object()


@dataclass(frozen=True)
class Credential:
    """What a command signs in with, as a refusal names it; what fixes a refusal; and
    another credential set but not used, said when this one is refused."""

    what: str
    fix: str
    unused: str | None = None


class Refused(PromptServiceError):
    """409: the service refused the change for ``reason``, one word of docs/api.md
    section 9 (``exists``, ``version_changed``, ``review_open``, ``frozen``, ...) that callers
    branch on; ``answer`` is the whole error body (the reason's extra fields)."""

    def __init__(self, error: PromptServiceError, reason: str, answer: dict[str, Any]) -> None:
        super().__init__(
            error.message, status=error.status, code=error.code, request_id=error.request_id
        )
        self.reason = reason
        self.answer = answer


class ProductionMoved(Refused):
    """``version_changed``: a guarded promotion or rollback found the environment
    (production unless another was named) holding another version than expected."""

    @property
    def current_production_version(self) -> int | None:
        current: int | None = self.answer.get("current_version")
        return current


class ReviewOpen(Refused):
    """``review_open``: an open review of that version and environment exists
    (``review_id``)."""

    @property
    def review_id(self) -> str:
        return str(self.answer["review_id"])


class BreakingPromotion(Refused):
    """``breaking_change`` from a promotion or a review request: the version would
    break callers of the one the environment holds (``changes``: ``[{variable, change,
    detail}]``); nothing was changed."""

    @property
    def changes(self) -> list[dict[str, Any]]:
        changes: list[dict[str, Any]] = self.answer.get("changes") or []
        return changes


# Reasons (docs/api.md section 9) the commands act on.
EXISTS = "exists"
STATUS = "status"
ALREADY_THERE = "already_there"
REVIEW_REQUIRED = "review_required"
_REFUSALS: dict[str, type[Refused]] = {
    "version_changed": ProductionMoved,
    "review_open": ReviewOpen,
    "breaking_change": BreakingPromotion,
}


def refused(exc: BaseException, reason: str) -> bool:
    """True when ``exc`` is the service's 409 for ``reason``."""
    return isinstance(exc, Refused) and exc.reason == reason


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


class ServiceClient(PromptClient):
    """One method per management endpoint (docs/api.md, section 7); JSON in, JSON out.

    Errors are the SDK's (``PromptServiceError`` and its subclasses), plus
    :class:`ProductionMoved` when a guard did not hold. ``credential`` says what it
    signs in with and ``org`` the org it acts in (both set by
    promptsvc.cli.connection.connect).
    """

    credential = Credential("the credentials", "check them")
    org = ""

    def call(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str | int] | None = None,
    ) -> Any:
        """The decoded answer of a 2xx (None for 204); raises the mapped error else."""
        response = self._drive(self._call_flow(method, path, body=body, params=params))
        if response.status_code >= 400:
            error = error_for_response(response)
            answer = json_or_none(response)
            if response.status_code == 409 and isinstance(answer, dict):
                reason = answer.get("reason")
                if isinstance(reason, str):
                    raise _REFUSALS.get(reason, Refused)(error, reason, answer)
            raise error
        if response.status_code == 204:
            return None
        decoded = json_or_none(response)
        if not isinstance(decoded, dict):
            raise invalid_response(response, "not a JSON object")
        return decoded

    def pages(
        self, path: str, params: Mapping[str, str] | None = None, *, limit: int = PAGE_SIZE
    ) -> Iterator[Any]:
        """Every item of a paginated listing, following ``next_cursor``."""
        query: dict[str, str | int] = {**(params or {}), "limit": limit}
        while True:
            page = self.call("GET", path, params=query)
            yield from page["items"]
            if not page.get("next_cursor"):
                return
            query["cursor"] = page["next_cursor"]

    @staticmethod
    def prompt_path(name: str) -> str:
        return f"/api/v1/prompts/{_segment(name)}"

    def version_path(self, name: str, ref: str | int) -> str:
        """The read path of the version ``ref`` names: a number, a ``v_`` id, or a label."""
        if ref in LABELS:
            return f"{self.prompt_path(name)}/{ref}"
        return f"{self.prompt_path(name)}/versions/{_segment(ref)}"

    def action_path(self, name: str, ref: str | int) -> str:
        """The path of a version to act on; a label is first resolved to its version."""
        if ref in LABELS:
            ref = self.get_version(name, ref)["version_id"]
        return f"{self.prompt_path(name)}/versions/{_segment(ref)}"

    def list_prompts(self) -> list[dict[str, Any]]:
        return list(self.pages("/api/v1/prompts"))

    def get_prompt(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", self.prompt_path(name))
        return result

    def get_version(self, name: str, ref: str | int) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", self.version_path(name, ref))
        return result

    def environment_prompts(self, environment: str) -> Iterator[dict[str, Any]]:
        """Each prompt's version in ``environment`` (by name), one request per page of
        ``GET /api/v1/environments/{environment}/prompts``."""
        return self.pages(
            f"/api/v1/environments/{_segment(environment)}/prompts", limit=ENVIRONMENT_PAGE
        )

    def list_versions(self, name: str) -> Iterator[dict[str, Any]]:
        """The prompt's versions, newest first, fetched page by page as iterated."""
        return self.pages(f"{self.prompt_path(name)}/versions")

    def history(self, name: str) -> list[dict[str, Any]]:
        return list(self.pages(f"{self.prompt_path(name)}/history"))

    def diff(self, name: str, from_ref: str, to_ref: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "GET", f"{self.prompt_path(name)}/diff", params={"from": from_ref, "to": to_ref}
        )
        return result

    def create_prompt(self, name: str, prompt_type: str, description: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name, "prompt_type": prompt_type}
        if description is not None:
            body["description"] = description
        result: dict[str, Any] = self.call("POST", "/api/v1/prompts", body=body)
        return result

    def create_version(
        self,
        name: str,
        content: str,
        metadata: dict[str, Any],
        tags: list[str],
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A new draft; ``variables_schema``, ``examples`` and ``config`` are sent when
        given."""
        body: dict[str, Any] = {"content": content, "metadata": metadata, "tags": tags}
        if variables_schema is not None:
            body["variables_schema"] = variables_schema
        if examples:
            body["examples"] = examples
        if config is not None:
            body["config"] = config
        result: dict[str, Any] = self.call("POST", f"{self.prompt_path(name)}/versions", body=body)
        return result

    def promote(
        self,
        name: str,
        ref: str | int,
        notes: str | None,
        expect: int | object | None,
        environment: str = "production",
        allow_breaking: bool = False,
    ) -> dict[str, Any]:
        """Promote into ``environment``; ``expect`` is the version the caller saw there
        (None: none), or :data:`UNGUARDED`; ``allow_breaking`` acknowledges breaking
        changes (the service wants ``notes`` with it)."""
        body: dict[str, Any] = {"environment": environment}
        if notes is not None:
            body["notes"] = notes
        if allow_breaking:
            body["allow_breaking"] = True
        if expect is not UNGUARDED:
            body["expected_version"] = expect
        result: dict[str, Any] = self.call(
            "POST", f"{self.action_path(name, ref)}/promote", body=body
        )
        return result

    def rollback(
        self,
        name: str,
        to_version: int | None,
        notes: str | None,
        expect: int | object | None,
        environment: str = "production",
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"environment": environment}
        if to_version is not None:
            body["to_version"] = to_version
        if notes is not None:
            body["notes"] = notes
        if expect is not UNGUARDED:
            body["expected_version"] = expect
        result: dict[str, Any] = self.call("POST", f"{self.prompt_path(name)}/rollback", body=body)
        return result

    def get_environment(self, environment: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", f"/api/v1/environments/{_segment(environment)}")
        return result

    def in_environment(self, name: str, environment: str) -> dict[str, Any] | None:
        """The version ``environment`` holds for the prompt, or None."""
        path = f"{self.prompt_path(name)}/environments/{_segment(environment)}"
        try:
            result: dict[str, Any] = self.call("GET", path)
        except PromptServiceError as exc:
            if exc.status == 404:
                return None
            raise
        return result

    def request_review(
        self,
        name: str,
        version: str | int,
        environment: str,
        notes: str | None,
        *,
        rollout_percent: int | None = None,
        allow_breaking: bool = False,
        rollout_guard: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Open a review; with ``rollout_percent`` its approval starts a rollout (with
        ``rollout_guard``, docs/usage.md); ``allow_breaking`` acknowledges breaking
        changes (with ``notes``)."""
        body: dict[str, Any] = {"version": version, "environment": environment}
        if notes is not None:
            body["notes"] = notes
        if rollout_percent is not None:
            body["rollout_percent"] = rollout_percent
        if rollout_guard is not None:
            body["rollout_guard"] = rollout_guard
        if allow_breaking:
            body["allow_breaking"] = True
        result: dict[str, Any] = self.call("POST", f"{self.prompt_path(name)}/reviews", body=body)
        return result

    def list_reviews(
        self, name: str | None, status: str | None, environment: str | None
    ) -> list[dict[str, Any]]:
        params = {"status": status, "environment": environment}
        path = "/api/v1/reviews" if name is None else f"{self.prompt_path(name)}/reviews"
        return list(self.pages(path, {k: v for k, v in params.items() if v is not None}))

    def get_review(self, review_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", f"/api/v1/reviews/{_segment(review_id)}")
        return result

    def decide_review(self, review_id: str, action: str, comment: str | None) -> dict[str, Any]:
        """``action``: approve, reject or cancel."""
        body = {} if comment is None else {"comment": comment}
        path = f"/api/v1/reviews/{_segment(review_id)}/{action}"
        result: dict[str, Any] = self.call("POST", path, body=body)
        return result

    def start_rollout(
        self,
        name: str,
        ref: str | int,
        environment: str,
        percent: int,
        notes: str | None,
        expect: int | object | None = UNGUARDED,
        allow_breaking: bool = False,
        guard: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A promotion with ``rollout_percent``: the Rollout it started. The candidate is
        checked against the environment's version as in a promotion (``allow_breaking``
        with ``notes`` acknowledges breaking changes); ``guard``: its rollout_guard
        (docs/usage.md)."""
        body: dict[str, Any] = {"environment": environment, "rollout_percent": percent}
        if guard is not None:
            body["rollout_guard"] = guard
        if notes is not None:
            body["notes"] = notes
        if allow_breaking:
            body["allow_breaking"] = True
        if expect is not UNGUARDED:
            body["expected_version"] = expect
        result: dict[str, Any] = self.call(
            "POST", f"{self.action_path(name, ref)}/promote", body=body
        )
        return result

    def rollout_path(self, name: str, environment: str) -> str:
        return f"{self.prompt_path(name)}/rollouts/{_segment(environment)}"

    def get_rollout(self, name: str, environment: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", self.rollout_path(name, environment))
        return result

    def set_rollout(self, name: str, environment: str, percent: int) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "PATCH", self.rollout_path(name, environment), body={"percent": percent}
        )
        return result

    def complete_rollout(
        self, name: str, environment: str, notes: str | None, allow_breaking: bool = False
    ) -> dict[str, Any]:
        """The candidate becomes the environment's version: ``{version, promotion}``."""
        body: dict[str, Any] = {} if notes is None else {"notes": notes}
        if allow_breaking:
            body["allow_breaking"] = True
        result: dict[str, Any] = self.call(
            "POST", f"{self.rollout_path(name, environment)}/complete", body=body
        )
        return result

    def abort_rollout(self, name: str, environment: str) -> dict[str, Any]:
        """The rollout ends, the baseline stays: the Rollout as it ended."""
        result: dict[str, Any] = self.call(
            "POST", f"{self.rollout_path(name, environment)}/abort", body={}
        )
        return result

    def set_status(self, name: str, ref: str | int, action: str) -> dict[str, Any]:
        """``action`` is ``archive`` or ``unarchive``."""
        result: dict[str, Any] = self.call("POST", f"{self.action_path(name, ref)}/{action}")
        return result

    def delete_prompt(self, name: str) -> None:
        self.call("DELETE", self.prompt_path(name))

    def delete_version(self, name: str, ref: str | int) -> None:
        self.call("DELETE", self.action_path(name, ref))
