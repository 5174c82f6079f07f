"""``fallback=`` against the real server (stopped, or answering 503), both clients.

(403 with a fallback is in test_sdk_error_mapping.py: no read endpoint answers 403.)
"""

from __future__ import annotations

import logging

import pytest

from promptsvc.client import (
    AuthenticationError,
    NoProductionVersionError,
    NotFoundError,
    ServerError,
    TransportError,
)
from tests.client.sdk_support import ORG, MakeClient, Service
from tests.clock import FakeClock

TEXT = "Hello {{ name }}, from the fallback"
CHAT = [
    {"role": "system", "content": "You help {{ name }}."},
    {"role": "user", "content": "{{question}}"},
]


def test_text_fallback_while_the_server_is_down(
    make_client: MakeClient, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(max_retries=0)
    service.server.stop()

    with caplog.at_level(logging.WARNING, logger="promptsvc.client"):
        found = client.get_prompt_version("greeting", fallback=TEXT)

    assert found.is_fallback is True
    assert (found.name, found.prompt_type, found.content) == ("greeting", "text", TEXT)
    assert (found.version, found.version_id, found.prompt_id) == (0, "", "")
    assert (found.status, found.is_production) == ("fallback", False)
    assert found.variables == ("name",)
    assert found.render(name="Ada") == "Hello Ada, from the fallback"
    (record,) = [r for r in caplog.records if r.name == "promptsvc.client"]
    assert "prompt:greeting:production" in record.getMessage()
    with pytest.raises(TransportError):  # not cached: without a fallback the call fails
        client.get_prompt_version("greeting")


def test_chat_fallback_on_5xx_and_the_real_version_once_the_service_is_back(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(max_retries=1)
    service.storage.down = True

    found = client.get_prompt_version("chatty", label="latest", fallback=CHAT)

    assert [c.status for c in service.api_calls()] == [503, 503]  # retried first
    assert (found.is_fallback, found.prompt_type) == (True, "chat")
    assert found.variables == ("name", "question")
    assert found.render(name="Ada", question="Why?") == [
        {"role": "system", "content": "You help Ada."},
        {"role": "user", "content": "Why?"},
    ]

    service.storage.down = False
    real = client.get_prompt_version("chatty", label="latest", fallback=CHAT)
    assert real.is_fallback is False
    assert real.version_id == service.versions.chat


def test_a_cached_version_is_served_before_the_fallback(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=60, max_retries=0)
    first = client.get_prompt_version("greeting")
    assert first.is_fallback is False

    service.storage.down = True
    assert client.get_prompt_version("greeting", fallback=TEXT) is first  # fresh hit
    clock.advance(61)
    assert client.get_prompt_version("greeting", fallback=TEXT) is first  # stale-if-error


def test_the_fallback_replaces_an_expired_entry_when_stale_is_refused(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=60, max_retries=0, stale_if_error=False)
    client.get_prompt_version("greeting")
    clock.advance(61)
    service.storage.down = True

    assert client.get_prompt_version("greeting", fallback=TEXT).is_fallback is True
    with pytest.raises(ServerError):
        client.get_prompt_version("greeting")


def test_404_raises_despite_a_fallback(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    with pytest.raises(NoProductionVersionError):
        client.get_prompt_version("unreleased", fallback=TEXT)
    with pytest.raises(NotFoundError):
        client.get_prompt_version("missing", version=7, fallback=CHAT)

    service.storage.delete_prompt(ORG, "greeting")
    with pytest.raises(NotFoundError) as gone:  # the prompt is gone, not unreleased
        client.get_prompt_version("greeting", fallback=TEXT)
    assert not isinstance(gone.value, NoProductionVersionError)


def test_401_raises_despite_a_fallback(make_client: MakeClient) -> None:
    client = make_client(secret="not-the-secret-at-all")
    with pytest.raises(AuthenticationError):
        client.get_prompt_version("greeting", fallback=TEXT)


@pytest.mark.parametrize(
    "bad",
    [
        [{"role": "user"}],  # no content
        [{"role": "user", "content": "hi", "name": "x"}],  # an extra field
        [],  # no messages
        ["hello"],  # not a message
        [{"role": "user", "content": object()}],  # not JSON
        {"role": "user", "content": "hi"},  # one message, not a list
        42,
    ],
)
def test_a_bad_fallback_is_a_value_error_on_the_first_call(
    make_client: MakeClient, service: Service, bad: object
) -> None:
    """Found while the service is up, not in the outage it was meant for."""
    client = make_client()
    with pytest.raises(ValueError):
        client.get_prompt_version("greeting", fallback=bad)
    assert service.api_calls() == []
