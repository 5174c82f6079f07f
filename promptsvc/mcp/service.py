"""The service calls the MCP server makes, on the management client.

Everything goes through :class:`~promptsvc.client.management.ServiceClient` (the SDK's tokens,
retries and errors) and answers the API's JSON. Environments other than production and
reviews are the service's (docs/api.md): these functions send what the contract
describes and let the service's answer decide, so a service without them refuses
with its own error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from promptsvc.client import NotFoundError, PromptServiceError
from promptsvc.client.management import REVIEW_REQUIRED, ServiceClient, refused
from promptsvc.releasing import Release, release_kind

PRODUCTION = "production"
LABELS = ("production", "latest")


class EnvironmentUnknown(Exception):
    """``--environment`` names nothing the service has; the message says what it has."""


def check_environment(client: ServiceClient, environment: str) -> None:
    """Fail early, with a message a person can act on, when the credentials or the
    environment cannot work: one cheap call that needs Service Read."""
    if environment == PRODUCTION:
        client.call("GET", "/api/v1/prompts", params={"limit": 1})
        return
    try:
        answer = client.call("GET", "/api/v1/environments")
    except NotFoundError:
        raise EnvironmentUnknown(
            f"the service at {client.base_url} has no environments besides production "
            f"(GET /api/v1/environments answered 404), so it cannot serve {environment!r}"
        ) from None
    names = [item.get("name") for item in answer.get("items", []) if isinstance(item, dict)]
    if environment not in names:
        raise EnvironmentUnknown(
            f"the service has no environment {environment!r}; it has: {', '.join(map(str, names))}"
        )


def environment_path(client: ServiceClient, name: str, environment: str) -> str:
    """The read path of the version ``environment`` holds for prompt ``name``."""
    prompt = client.prompt_path(name)
    if environment == PRODUCTION:
        return f"{prompt}/production"
    return f"{prompt}/environments/{quote(environment, safe='')}"


def served_version(
    client: ServiceClient, prompt: dict[str, Any], environment: str
) -> dict[str, Any] | None:
    """The version of ``prompt`` (a Prompt) that ``environment`` holds, or None."""
    if environment == PRODUCTION and prompt.get("production_version") is None:
        return None  # the listing says so: no request needed
    try:
        version: dict[str, Any] = client.call(
            "GET", environment_path(client, prompt["name"], environment)
        )
    except NotFoundError:
        return None
    return version


def read_version(
    client: ServiceClient, name: str, label: str | None, version: str | int | None
) -> dict[str, Any]:
    """A version by ``label`` (production, latest or an environment) or ``version``
    (a number or a ``v_`` id); production when neither is given."""
    if label is not None and version is not None:
        raise ValueError("give label or version, not both")
    if version is not None:
        return client.get_version(name, version if isinstance(version, int) else str(version))
    label = label or PRODUCTION
    if label in LABELS:
        return client.get_version(name, label)
    answer: dict[str, Any] = client.call("GET", environment_path(client, name, label))
    return answer


def create_version(
    client: ServiceClient,
    name: str,
    content: str,
    variables_schema: dict[str, Any] | None,
    notes: str | None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A new draft version; ``notes`` go in its metadata as ``notes``; ``config`` (its
    model configuration) is sent when given."""
    body: dict[str, Any] = {"content": content}
    if notes is not None:
        body["metadata"] = {"notes": notes}
    if variables_schema is not None:
        body["variables_schema"] = variables_schema
    if config is not None:
        body["config"] = config
    answer: dict[str, Any] = client.call("POST", f"{client.prompt_path(name)}/versions", body=body)
    return answer


def request_promotion(
    client: ServiceClient,
    name: str,
    version: str | int,
    environment: str,
    notes: str | None,
) -> dict[str, Any]:
    """Promote ``version`` into ``environment``; where the environment is protected
    (409 ``review_required``) open a review instead.

    Answers ``{"outcome": "promoted", "version", "promotion"}`` or
    ``{"outcome": "review_requested", "review"}``.
    """
    if version in LABELS:  # production or latest: the version it names now
        version = client.get_version(name, str(version))["version_id"]
    body: dict[str, Any] = {} if notes is None else {"notes": notes}
    if environment != PRODUCTION:
        body["environment"] = environment  # production is the service's default
    path = f"{client.action_path(name, str(version))}/promote"
    # As promptsvc.releasing decides, learning from the service's 409 review_required
    # that the environment is protected.
    for protected in (False, True):
        if release_kind(protected=protected, rollout=False) is Release.REVIEW:
            review_body: dict[str, Any] = {"version": version, "environment": environment}
            if notes is not None:
                review_body["notes"] = notes
            review = client.call("POST", f"{client.prompt_path(name)}/reviews", body=review_body)
            return {"outcome": "review_requested", "review": review}
        try:
            promoted: dict[str, Any] = client.call("POST", path, body=body)
        except PromptServiceError as exc:
            if not refused(exc, REVIEW_REQUIRED):
                raise
        else:
            return {"outcome": "promoted", **promoted}
    raise AssertionError("a protected environment is entered through a review")
