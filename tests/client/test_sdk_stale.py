"""Stale-if-error against the real server (stopped, or answering 503), both clients."""

from __future__ import annotations

import logging

import pytest

from promptsvc.client import (
    NoProductionVersionError,
    NotFoundError,
    ServerError,
    TransportError,
)
from tests.client.sdk_support import ORG, MakeClient, Service
from tests.clock import FakeClock


def test_expired_entry_is_served_while_the_server_is_down(
    make_client: MakeClient, service: Service, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(cache_ttl=60)
    first = client.get_prompt_version("greeting")
    clock.advance(61)
    service.server.stop()

    with caplog.at_level(logging.WARNING, logger="promptsvc.client"):
        assert client.get_prompt_version("greeting") is first

    (record,) = [r for r in caplog.records if r.name == "promptsvc.client"]
    assert record.levelno == logging.WARNING
    assert "prompt:greeting:production" in record.getMessage()


def test_expired_entry_is_served_on_5xx(
    make_client: MakeClient, service: Service, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(cache_ttl=60, max_retries=1)
    first = client.get_prompt_version("greeting", label="latest")
    clock.advance(61)
    service.storage.down = True

    with caplog.at_level(logging.WARNING, logger="promptsvc.client"):
        assert client.get_prompt_version("greeting", label="latest") is first

    retries = service.api_calls()[1:]
    assert [c.status for c in retries] == [503, 503]
    assert all(c.headers["If-None-Match"] == service.api_calls()[0].etag for c in retries)
    (record,) = [r for r in caplog.records if r.name == "promptsvc.client"]
    assert "503" in record.getMessage()

    service.storage.down = False  # back: the next call revalidates and renews
    assert client.get_prompt_version("greeting", label="latest") is first
    assert service.api_calls()[-1].status == 304


def test_stale_if_error_false_raises(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=60, stale_if_error=False)
    assert client.stale_if_error is False
    client.get_prompt_version("greeting")
    clock.advance(61)
    service.storage.down = True
    with pytest.raises(ServerError):
        client.get_prompt_version("greeting")

    service.server.stop()
    with pytest.raises(TransportError):
        client.get_prompt_version("greeting")


def test_a_real_answer_is_not_hidden_by_the_stale_entry(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    """Only unreachable / 5xx serve stale: a 404 after expiry (prompt deleted) raises."""
    client = make_client(cache_ttl=60)
    client.get_prompt_version("greeting")
    service.storage.delete_prompt(ORG, "greeting")
    clock.advance(61)

    with pytest.raises(NotFoundError) as gone:  # the prompt is gone, not unreleased
        client.get_prompt_version("greeting")
    assert not isinstance(gone.value, NoProductionVersionError)
