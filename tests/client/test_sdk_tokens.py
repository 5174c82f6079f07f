"""Tokens against the real server: first use, caching, refresh before expiry, the
client-credentials flow, and 401 -> refresh -> retry, for both clients."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from promptsvc.client import AuthenticationError
from tests.client.sdk_support import MakeClient, Service, ServiceFactory, build_app, new_key, seed
from tests.clock import FakeClock


def test_token_is_fetched_on_first_use_and_kept(make_client: MakeClient, service: Service) -> None:
    client = make_client(cache_ttl=0)
    assert service.seen == []  # constructing the client sends nothing

    for _ in range(3):
        client.get_prompt_version("greeting")

    tokens = service.token_calls()
    assert [(t.method, t.path) for t in tokens] == [("POST", "/v1/auth/sdk-token")]
    assert tokens[0].headers["Content-Type"] == "application/json"
    assert json.loads(tokens[0].body) == {
        "account_id": "acme",
        "key_id": service.key_id,
        "key_secret": service.key_secret,
    }
    assert tokens[0].status == 200
    bearer = {c.headers["Authorization"] for c in service.api_calls()}
    assert len(bearer) == 1 and bearer.pop().startswith("Bearer ")


@pytest.mark.parametrize(("buffer", "refresh_after"), [(60, 240), (10, 290), (0, 300)])
def test_token_is_refreshed_buffer_seconds_before_expiry(
    make_client: MakeClient, service: Service, clock: FakeClock, buffer: int, refresh_after: int
) -> None:
    # The server's token_lifetime is 300: the SDK reads expires_in, assumes nothing.
    client = make_client(cache_ttl=0, token_refresh_buffer=buffer)
    client.get_prompt_version("greeting")
    clock.advance(refresh_after - 0.5)
    client.get_prompt_version("greeting")
    assert len(service.token_calls()) == 1

    clock.advance(0.5)
    client.get_prompt_version("greeting")
    assert len(service.token_calls()) == 2
    first, _, last = service.api_calls()
    assert first.headers["Authorization"] != last.headers["Authorization"]


def test_lifetime_is_read_from_each_response(
    make_client: MakeClient, start_service: ServiceFactory, clock: FakeClock
) -> None:
    svc = start_service(token_lifetime=100)
    client = make_client(svc, cache_ttl=0)  # buffer 60: refresh 40 s after each fetch
    client.get_prompt_version("greeting")
    clock.advance(39)
    client.get_prompt_version("greeting")
    assert len(svc.token_calls()) == 1
    clock.advance(1)
    client.get_prompt_version("greeting")
    assert len(svc.token_calls()) == 2


def test_lifetime_within_buffer_refreshes_on_every_use(
    make_client: MakeClient, start_service: ServiceFactory
) -> None:
    svc = start_service(token_lifetime=30)  # expires_in 30 <= buffer 60
    client = make_client(svc, cache_ttl=0)
    for _ in range(3):
        client.get_prompt_version("greeting")

    assert len(svc.token_calls()) == 3
    assert len({c.headers["Authorization"] for c in svc.api_calls()}) == 3


def test_client_credentials_flow(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(client_credentials=True, cache_ttl=0)
    client.get_prompt_version("greeting")

    (token,) = service.token_calls()
    assert (token.method, token.path) == ("POST", "/realms/acme/protocol/openid-connect/token")
    assert token.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert parse_qs(token.body.decode()) == {
        "grant_type": ["client_credentials"],
        "client_id": [service.key_id],
        "client_secret": [service.key_secret],
    }
    assert token.status == 200

    clock.advance(269)  # lifetime 300, default buffer 30 for this flow
    client.get_prompt_version("greeting")
    assert len(service.token_calls()) == 1
    clock.advance(1)
    client.get_prompt_version("greeting")
    assert len(service.token_calls()) == 2


def test_client_credentials_wrong_secret(make_client: MakeClient, service: Service) -> None:
    client = make_client(client_credentials=True, secret="wrong-secret-0123456789")
    with pytest.raises(AuthenticationError) as caught:
        client.get_prompt_version("greeting")

    assert (caught.value.status, caught.value.code) == (401, "invalid_client")
    assert service.api_calls() == []


def test_refused_token_is_refreshed_once_and_the_call_retried(
    make_client: MakeClient, service: Service
) -> None:
    """A server restarted with memory storage has a new signing key: every token it
    issued before is refused (401). The SDK gets a new one and retries, once."""
    client = make_client()
    client.get_prompt_version("greeting")

    storage = type(service.storage)()
    seed(storage)
    restarted = build_app(storage, service.seen)
    new_key(restarted, service.key_id, service.key_secret)
    service.server.swap(restarted)
    client.clear_cache()
    v = client.get_prompt_version("greeting", label="latest")

    assert v.version == 2
    after = [(s.path.rsplit("/", 1)[-1], s.status) for s in service.seen[2:]]
    assert after == [("latest", 401), ("sdk-token", 200), ("latest", 200)]
    refused, retried = service.api_calls()[1:]
    assert refused.headers["Authorization"] != retried.headers["Authorization"]


def test_token_refused_twice_raises_authentication_error(
    make_client: MakeClient, service: Service, start_service: ServiceFactory
) -> None:
    """Tokens from another issuer (a wrong auth_url) are refused every time: the SDK
    refreshes and retries once, then raises."""
    elsewhere = start_service(own_signing_key=True)
    new_key(elsewhere.app, service.key_id, service.key_secret)
    client = make_client(client_credentials=True, auth_url=elsewhere.url)

    with pytest.raises(AuthenticationError) as caught:
        client.get_prompt_version("greeting")

    assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert [c.status for c in service.api_calls()] == [401, 401]
    assert len(elsewhere.token_calls()) == 2
    assert service.token_calls() == []
