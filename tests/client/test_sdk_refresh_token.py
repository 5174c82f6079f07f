"""RefreshTokenProvider: a person's rotating refresh token, seen at the HTTP layer (a
mock transport plays the realm and the API, so each request is counted exactly)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from promptsvc.client import NotFoundError, PromptClient, RefreshTokenProvider, ServerError
from tests.clock import FakeClock

TOKEN_PATH = "/realms/acme/protocol/openid-connect/token"


class Realm:
    """Answers the token endpoint with ``answers`` in turn, and the API with 404."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.presented: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == TOKEN_PATH:
            form = parse_qs(request.content.decode())
            assert form["grant_type"] == ["refresh_token"]
            assert form["client_id"] == ["promptsvc-cli"]
            self.presented.append(form["refresh_token"][0])
            return self.answers.pop(0)
        return httpx.Response(404, json={"code": "not_found", "message": "no such prompt"})


def tokens(n: int) -> httpx.Response:
    return httpx.Response(
        200, json={"access_token": f"a{n}", "refresh_token": f"r{n}", "expires_in": 300}
    )


def client_for(realm: Realm, provider: RefreshTokenProvider) -> PromptClient:
    return PromptClient(
        "http://svc.test",
        auth=provider,
        cache_ttl=0,
        retry_backoff=0,
        transport=httpx.MockTransport(realm),
    )


def test_each_rotation_is_kept_and_reported() -> None:
    clock = FakeClock()
    kept: list[tuple[dict[str, Any], float]] = []
    provider = RefreshTokenProvider(
        "http://svc.test", "acme", "promptsvc-cli", "r0",
        on_tokens=lambda body, expires_at: kept.append((body, expires_at)), clock=clock,
    )  # fmt: skip
    realm = Realm(tokens(1), tokens(2))
    with client_for(realm, provider) as client:
        with pytest.raises(NotFoundError):
            client.get_prompt_version("greeting")
        clock.advance(271)  # within 30 s of expiry: the next call refreshes
        with pytest.raises(NotFoundError):
            client.get_prompt_version("greeting")
    assert realm.presented == ["r0", "r1"]  # each refresh presents the rotated token
    assert provider.refresh_token == "r2"
    assert [body["refresh_token"] for body, _ in kept] == ["r1", "r2"]
    assert kept[1][1] - kept[0][1] == 271


def test_a_held_token_is_used_until_its_expiry() -> None:
    clock = FakeClock()
    provider = RefreshTokenProvider(
        "http://svc.test", "acme", "promptsvc-cli", "r0",
        access_token="a0", expires_at=clock() + 100, clock=clock,
    )  # fmt: skip
    realm = Realm(tokens(1))
    with client_for(realm, provider) as client:
        with pytest.raises(NotFoundError):
            client.get_prompt_version("greeting")
        assert realm.presented == []
        clock.advance(70)
        with pytest.raises(NotFoundError):
            client.get_prompt_version("greeting")
    assert realm.presented == ["r0"]


def test_a_refresh_that_may_have_arrived_is_never_resent() -> None:
    # A second send of a spent refresh token would revoke the whole sign-in.
    provider = RefreshTokenProvider(
        "http://svc.test", "acme", "promptsvc-cli", "r0", clock=FakeClock()
    )
    realm = Realm(httpx.Response(503, json={"code": "unavailable", "message": "down"}), tokens(1))
    with client_for(realm, provider) as client, pytest.raises(ServerError):
        client.get_prompt_version("greeting")
    assert realm.presented == ["r0"]
