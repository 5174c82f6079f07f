"""Every SDK error the real server can produce, for both clients; retries and the time
budget. (403 and odd statuses no read endpoint can give are in
test_sdk_error_mapping.py.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from promptsvc.client import (
    AuthenticationError,
    NoProductionVersionError,
    NotFoundError,
    PromptServiceError,
    ServerError,
    TransportError,
)
from tests.client.sdk_support import MakeClient, Service


def test_wrong_key_secret_is_authentication_error(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(secret="not-the-secret-123456")
    with pytest.raises(AuthenticationError) as caught:
        client.get_prompt_version("greeting")

    error = caught.value
    assert isinstance(error, PromptServiceError)
    assert (error.status, error.code, error.message) == (401, "unauthorized", "unauthorized")
    (token_call,) = service.token_calls()
    assert error.request_id == token_call.headers["X-Request-Id"]
    assert service.api_calls() == []  # 4xx: no retry


def test_unknown_version_is_not_found(make_client: MakeClient, service: Service) -> None:
    with pytest.raises(NotFoundError) as caught:
        make_client().get_prompt_version("greeting", version="v_doesnotexist")

    error = caught.value
    assert not isinstance(error, NoProductionVersionError)
    assert (error.status, error.code) == (404, "not_found")
    assert "v_doesnotexist" in error.message
    assert error.request_id == service.api_calls()[0].headers["X-Request-Id"]
    assert len(service.api_calls()) == 1  # 4xx: no retry


def test_unknown_prompt_latest_is_not_found(make_client: MakeClient, service: Service) -> None:
    with pytest.raises(NotFoundError) as caught:
        make_client().get_prompt_version("nope", label="latest")
    assert not isinstance(caught.value, NoProductionVersionError)
    assert "nope" in caught.value.message


def test_production_404_is_no_production_version(make_client: MakeClient, service: Service) -> None:
    with pytest.raises(NoProductionVersionError) as caught:
        make_client().get_prompt_version("unreleased")

    assert isinstance(caught.value, NotFoundError)
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert "unreleased" in caught.value.message
    assert len(service.api_calls()) == 1


def test_production_404_of_a_missing_prompt_is_not_found(
    make_client: MakeClient, service: Service
) -> None:
    """Not NoProductionVersionError: there is no prompt to have a production version."""
    with pytest.raises(NotFoundError) as caught:
        make_client().get_prompt_version("nope")

    assert not isinstance(caught.value, NoProductionVersionError)
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert "nope" in caught.value.message


def test_5xx_is_retried_then_server_error(make_client: MakeClient, service: Service) -> None:
    service.storage.down = True
    with pytest.raises(ServerError) as caught:
        make_client(max_retries=2).get_prompt_version("greeting")

    calls = service.api_calls()
    assert [c.status for c in calls] == [503, 503, 503]  # first attempt + max_retries
    assert len({c.headers["X-Request-Id"] for c in calls}) == 3  # a new id per attempt
    assert (caught.value.status, caught.value.code) == (503, "service_unavailable")
    assert caught.value.request_id == calls[-1].headers["X-Request-Id"]


def test_max_retries_zero_makes_one_attempt(make_client: MakeClient, service: Service) -> None:
    service.storage.down = True
    with pytest.raises(ServerError):
        make_client(max_retries=0).get_prompt_version("greeting")
    assert len(service.api_calls()) == 1


def test_retry_succeeds_when_the_service_recovers(
    make_client: MakeClient, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The storage fails once, then answers: the retry returns the version."""
    failures = iter([True])
    original = service.storage.read_environment  # what GET .../production reads

    def flaky(org: str, ref: str, environment: str) -> object:
        service.storage.down = next(failures, False)
        return original(org, ref, environment)

    monkeypatch.setattr(service.storage, "read_environment", flaky)
    v = make_client(max_retries=1).get_prompt_version("greeting")

    assert v.version == 1
    assert [c.status for c in service.api_calls()] == [503, 200]


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[socket.socket]:
    """A listening socket that accepts connections (kernel backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock


def connections_made(listener: socket.socket) -> int:
    """How many connections reached ``listener``'s backlog (each is taken off it)."""
    listener.setblocking(False)
    made = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return made
        connection.close()
        made += 1


def test_closed_port_is_transport_error(
    make_client: MakeClient, service: Service, closed_port: int
) -> None:
    with pytest.raises(TransportError) as caught:
        make_client(url=f"http://127.0.0.1:{closed_port}").get_prompt_version("greeting")

    error = caught.value
    assert (error.status, error.code) == (None, "transport")
    assert error.request_id and len(error.request_id) == 36


def test_stopped_server_is_transport_error(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    client.get_prompt_version("greeting")
    service.server.stop()
    client.clear_cache()

    with pytest.raises(TransportError):
        client.get_prompt_version("greeting")


def test_one_time_budget_covers_every_attempt(
    make_client: MakeClient, service: Service, silent_port: socket.socket
) -> None:
    port = silent_port.getsockname()[1]
    client = make_client(url=f"http://127.0.0.1:{port}", timeout=0.5, max_retries=5)
    with pytest.raises(TransportError) as caught:
        client.get_prompt_version("greeting")

    assert caught.value.code == "timeout"
    # A budget per attempt would have made six attempts (the first and five retries);
    # one budget for the call is spent by the first attempt that times out.
    assert connections_made(silent_port) == 1
