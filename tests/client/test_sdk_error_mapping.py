"""Answers no real promptsvc read endpoint can give, through httpx.MockTransport.

Allowed here by STYLE.md ("MockTransport only for what no real server can show"):

* 403: every role includes Service Read, so no key is refused a read, and
  the SDK has no write call; PermissionDeniedError can only be shown this way.
* 409 / 429 / a proxy's 502 HTML page: statuses the read API never sends.
* 200 with a body that is not a PromptVersion, or a token response without a token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from promptsvc.client import (
    AsyncPromptClient,
    InvalidResponseError,
    PermissionDeniedError,
    PromptClient,
    PromptServiceError,
    ServerError,
)

TOKEN = {"access_token": "t", "expires_in": 300, "token_type": "Bearer"}
# A well-formed read, for answers wrong in one field only.
ANSWER = {
    "prompt_id": "pmt_1",
    "version_id": "v_1",
    "name": "greeting",
    "version": 1,
    "content": "Hi",
    "variables": [],
    "status": "published",
    "is_production": True,
    "prompt_type": "text",
    "metadata": {},
    "tags": [],
    "created_at": "2026-01-02T03:04:05Z",
    "updated_at": "2026-01-02T03:04:05Z",
    "promoted_at": None,
    "promoted_by": None,
}
Handler = Callable[[httpx.Request], httpx.Response]


def answer(status: int, **kwargs: Any) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/auth/sdk-token":
            return httpx.Response(200, json=TOKEN)
        return httpx.Response(status, **kwargs)

    return handle


def fetch(kind: str, handler: Handler, **call: Any) -> Any:
    options: dict[str, Any] = {
        "account_id": "acme",
        "key_id": "k",
        "key_secret": "s",
        "transport": httpx.MockTransport(handler),
        "retry_backoff": 0,
    }
    if kind == "sync":
        with PromptClient("http://promptsvc.test", **options) as client:
            return client.get_prompt_version("greeting", **call)

    async def run() -> Any:
        async with AsyncPromptClient("http://promptsvc.test", **options) as client:
            return await client.get_prompt_version("greeting", **call)

    return asyncio.run(run())


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_403_is_permission_denied(kind: str) -> None:
    body = {"code": "forbidden", "message": "forbidden", "error": "forbidden"}
    handler = answer(403, json=body, headers={"X-Request-ID": "rid-403"})
    with pytest.raises(PermissionDeniedError) as caught:
        fetch(kind, handler)
    error = caught.value
    assert (error.status, error.code, error.message, error.request_id) == (
        403,
        "forbidden",
        "forbidden",
        "rid-403",
    )


def test_403_raises_despite_a_fallback(kind: str) -> None:
    body = {"code": "forbidden", "message": "forbidden", "error": "forbidden"}
    with pytest.raises(PermissionDeniedError):
        fetch(kind, answer(403, json=body), fallback="Hello {{name}}")


@pytest.mark.parametrize(("status", "code"), [(409, "conflict"), (429, "too_many_requests")])
@pytest.mark.parametrize("fallback", [None, "Hello {{name}}"])
def test_other_4xx_is_the_base_error(
    kind: str, status: int, code: str, fallback: str | None
) -> None:
    """An answer, not a failure to answer: a fallback does not hide it."""
    body = {"code": code, "message": f"{code} happened", "error": code}
    with pytest.raises(PromptServiceError) as caught:
        fetch(kind, answer(status, json=body), fallback=fallback)
    assert type(caught.value) is PromptServiceError
    assert (caught.value.status, caught.value.code) == (status, code)
    assert caught.value.message == f"{code} happened"


def test_a_proxy_5xx_page_gives_the_fallback(kind: str) -> None:
    handler = answer(502, text="<html>Bad Gateway</html>", headers={"Content-Type": "text/html"})
    assert fetch(kind, handler, fallback="Hello {{name}}").is_fallback is True


def test_non_json_5xx_gets_a_code_from_the_status(kind: str) -> None:
    handler = answer(502, text="<html>Bad Gateway</html>", headers={"Content-Type": "text/html"})
    with pytest.raises(ServerError) as caught:
        fetch(kind, handler)
    assert (caught.value.status, caught.value.code, caught.value.message) == (
        502,
        "http_502",
        "Bad Gateway",
    )
    assert caught.value.request_id  # none came back: the one the SDK sent


@pytest.mark.parametrize(
    ("kwargs", "detail"),
    [
        ({"text": "not json"}, "body is not a JSON object"),
        ({"json": {"name": "greeting"}}, "'prompt_id'"),
        ({"json": []}, "body is not a JSON object"),
        ({"json": {**ANSWER, "rollout": {"rollout_id": "ro_1", "percent": 5}}}, "'rollout'"),
        (
            {"json": {**ANSWER, "rollout": {"rollout_id": "ro_1", "percent": 5, "candidate": {}}}},
            "rollout candidate: field 'prompt_id'",
        ),
    ],
)
def test_200_that_is_not_a_prompt_version(kind: str, kwargs: dict[str, Any], detail: str) -> None:
    with pytest.raises(InvalidResponseError) as caught:
        fetch(kind, answer(200, **kwargs))
    assert (caught.value.status, caught.value.code) == (200, "invalid_response")
    assert detail in caught.value.message


def test_token_response_without_a_token(kind: str) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"token_type": "Bearer"})

    with pytest.raises(InvalidResponseError, match="access_token"):
        fetch(kind, handle)
