"""The headers of every SDK request (docs/api.md section 13), checked where they arrive:
on the real server, for both clients."""

from __future__ import annotations

import uuid

import pytest

import promptsvc
from promptsvc.client import ServerError
from tests.client.sdk_support import MakeClient, Service
from tests.clock import FakeClock


def test_every_request_carries_the_sdk_headers(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=10)
    client.get_prompt_version("greeting")
    client.get_prompt_version("greeting", label="latest")
    clock.advance(11)
    client.get_prompt_version("greeting")  # a revalidation is a request too

    assert len(service.seen) == 4
    ids = set()
    for seen in service.seen:
        assert seen.headers["Accept"] == "application/json"
        assert seen.headers["User-Agent"] == f"promptsvc-python/{promptsvc.__version__}"
        request_id = uuid.UUID(seen.headers["X-Request-ID"])
        assert request_id.version == 4
        ids.add(request_id)
    assert len(ids) == 4  # fresh per request


def test_api_requests_carry_the_bearer_token(make_client: MakeClient, service: Service) -> None:
    make_client().get_prompt_version("greeting")

    (token_call,) = service.token_calls()
    (api_call,) = service.api_calls()
    assert "Authorization" not in token_call.headers
    scheme, _, token = api_call.headers["Authorization"].partition(" ")
    assert scheme == "Bearer"
    assert token.count(".") == 2  # a JWT, the one the token endpoint issued


def test_retries_get_new_request_ids_and_the_error_names_the_last(
    make_client: MakeClient, service: Service
) -> None:
    service.storage.down = True
    with pytest.raises(ServerError) as caught:
        make_client(max_retries=3).get_prompt_version("greeting")

    ids = [c.headers["X-Request-ID"] for c in service.api_calls()]
    assert len(ids) == len(set(ids)) == 4
    assert caught.value.request_id == ids[-1]
