"""The calls ``promptsvc mcp`` makes for environments and reviews, on a stand-in
service (httpx's MockTransport): the real server has neither yet, so only this shows
what is sent to one that has them and what is made of its answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from promptsvc.client import PromptServiceError
from promptsvc.client.management import ServiceClient
from promptsvc.mcp import service

URL = "http://svc"
Handler = Callable[[httpx.Request], tuple[int, Any]]


def client_of(handler: Handler, seen: list[tuple[str, str, Any]]) -> ServiceClient:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/auth/sdk-token":
            return httpx.Response(200, json={"access_token": "t", "expires_in": 300})
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, body))
        status, payload = handler(request)
        return httpx.Response(status, json=payload)

    return ServiceClient(
        URL,
        account_id="acme",
        key_id="k",
        key_secret="s",
        cache_ttl=0,
        transport=httpx.MockTransport(answer),
    )


def test_a_protected_environment_gets_a_review_instead() -> None:
    review = {"review_id": "rv_1", "status": "open"}

    def handler(request: httpx.Request) -> tuple[int, Any]:
        if request.url.path.endswith("/promote"):
            return 409, {
                "code": "review_required",
                "reason": "review_required",
                "message": "staging needs 1 approval",
            }
        return 201, review

    seen: list[tuple[str, str, Any]] = []
    with client_of(handler, seen) as client:
        answer = service.request_promotion(client, "greeting", 3, "staging", "please")
    assert answer == {"outcome": "review_requested", "review": review}
    assert seen == [
        (
            "POST",
            "/api/v1/prompts/greeting/versions/3/promote",
            {"notes": "please", "environment": "staging"},
        ),
        (
            "POST",
            "/api/v1/prompts/greeting/reviews",
            {"version": 3, "environment": "staging", "notes": "please"},
        ),
    ]


def test_any_other_refusal_of_a_promotion_is_raised() -> None:
    def handler(request: httpx.Request) -> tuple[int, Any]:
        return 409, {"code": "conflict", "message": "version 3 is not a draft"}

    with client_of(handler, []) as client, pytest.raises(PromptServiceError) as error:
        service.request_promotion(client, "greeting", 3, "production", None)
    assert (error.value.code, error.value.message) == ("conflict", "version 3 is not a draft")


def test_an_environment_is_checked_against_the_services_list() -> None:
    def handler(request: httpx.Request) -> tuple[int, Any]:
        return 200, {"items": [{"name": "production"}, {"name": "staging"}]}

    with client_of(handler, []) as client:
        service.check_environment(client, "staging")
        with pytest.raises(service.EnvironmentUnknown) as error:
            service.check_environment(client, "qa")
    assert str(error.value) == "the service has no environment 'qa'; it has: production, staging"


def test_an_environments_version_is_read_from_its_path_and_absent_on_404() -> None:
    def handler(request: httpx.Request) -> tuple[int, Any]:
        if request.url.path.endswith("/environments/staging") and "greeting" in request.url.path:
            return 200, {"version": 4}
        return 404, {"code": "not_found", "message": "nothing in staging"}

    seen: list[tuple[str, str, Any]] = []
    with client_of(handler, seen) as client:
        prompt = {"name": "greeting", "production_version": None}
        assert service.served_version(client, prompt, "staging") == {"version": 4}
        other = {"name": "other", "production_version": 2}
        assert service.served_version(client, other, "staging") is None
        assert service.read_version(client, "greeting", "staging", None) == {"version": 4}
    assert [path for _, path, _ in seen] == [
        "/api/v1/prompts/greeting/environments/staging",
        "/api/v1/prompts/other/environments/staging",
        "/api/v1/prompts/greeting/environments/staging",
    ]
