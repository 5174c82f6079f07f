"""Event streams and waiting long polls are served on the process's stream loop
(promptsvc.streaming), not by a thread of the server each; where the connection cannot
be taken, the request's thread serves them as before.

Run on memory and on the real Redis (the ``backend`` fixture), through a real server
(werkzeug, in a thread: it makes one thread per connection, named after
``process_request_thread``, so the tests can see whether a connection still holds one).
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time

import httpx
import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from storage import Storage
from tests.api.conftest import Tokens
from tests.api.test_api_events import EVENTS, READ_TIMEOUT, open_stream
from tests.servers import LiveServer

STREAMS = 12


def request_threads() -> int:
    """Threads of the werkzeug server serving a connection right now."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + READ_TIMEOUT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)  # polling a condition, bounded by READ_TIMEOUT


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    received = b""
    while marker not in received:
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    return received


def roomy_app(settings: Settings, backend: Storage, **config: object) -> Flask:
    wide = dataclasses.replace(
        settings,
        event_streams=4 * STREAMS,
        event_streams_per_client=2 * STREAMS,
        event_streams_per_org=2 * STREAMS,
    )
    app = create_app(wide, storage=backend)
    app.config.update({"EVENTS_HEARTBEAT": 60.0, **config})
    return app


def create_prompt(app: Flask, tokens: Tokens, name: str) -> None:
    r = app.test_client().post(
        "/api/v1/prompts",
        json={"name": name, "prompt_type": "text"},
        headers=tokens.headers(SERVICE_WRITE),
    )
    assert r.status_code == 201, r.json


def test_open_streams_hold_no_server_thread(backend: Storage, settings: Settings) -> None:
    app = roomy_app(settings, backend)
    hub = app.extensions["promptsvc.events"]
    tokens = Tokens(app)
    opened: list[socket.socket] = []
    try:
        with LiveServer(app) as live:
            for _ in range(STREAMS):
                sock, status, head = open_stream(live, tokens(SERVICE_READ))
                opened.append(sock)
                assert status == 200, head
                assert "Transfer-Encoding: chunked" in head
                assert "X-Request-ID:" in head and "nosniff" in head  # the app's headers
            assert hub._followers == STREAMS
            # Every server thread is done with its connection, while the streams stay.
            wait_until(lambda: request_threads() == 0, "a stream still holds a thread")
            assert hub._followers == STREAMS
            create_prompt(app, tokens, "greeting")
            for sock in opened:
                read_until(sock, b'"prompt_name":"greeting"')
            for sock in opened:
                sock.close()
            wait_until(lambda: hub._followers == 0, "a closed stream kept its slot")
    finally:
        for sock in opened:
            sock.close()


def test_a_waiting_long_poll_holds_no_server_thread(backend: Storage, settings: Settings) -> None:
    app = roomy_app(settings, backend)
    hub = app.extensions["promptsvc.events"]
    tokens = Tokens(app)
    bearer = {"Authorization": f"Bearer {tokens(SERVICE_READ)}"}
    answers: list[httpx.Response] = []
    with LiveServer(app) as live:
        last_id = httpx.get(live.base_url + EVENTS, headers=bearer).json()["last_id"]
        waiting = threading.Thread(
            target=lambda: answers.append(
                httpx.get(
                    live.base_url + EVENTS,
                    params={"after": last_id, "wait": 30},
                    headers=bearer,
                    timeout=READ_TIMEOUT + 30,
                )
            )
        )
        waiting.start()
        wait_until(lambda: hub._followers == 1, "the poll does not wait")
        wait_until(lambda: request_threads() == 0, "a waiting poll holds a thread")
        create_prompt(app, tokens, "greeting")
        waiting.join(READ_TIMEOUT)
    assert len(answers) == 1
    answer = answers[0]
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json"
    body = answer.json()
    assert [e["prompt_name"] for e in body["items"]] == ["greeting"]
    assert body["last_id"] == body["items"][0]["id"] and body["reset"] is False
    assert hub._followers == 0


@pytest.mark.parametrize("http_version", ["HTTP/1.0", "HTTP/1.1"])
def test_a_stream_on_the_loop_speaks_the_clients_http_version(
    backend: Storage, settings: Settings, http_version: str
) -> None:
    """HTTP/1.1 gets a chunked body; HTTP/1.0 a plain one ended by closing."""
    app = roomy_app(settings, backend)
    tokens = Tokens(app)
    with LiveServer(app) as live, socket.create_connection(("127.0.0.1", live.port)) as sock:
        sock.settimeout(READ_TIMEOUT)
        sock.sendall(
            f"GET {EVENTS} {http_version}\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {tokens(SERVICE_READ)}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        received = read_until(sock, b"stream open")
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert b"Connection: close" in head
        if http_version == "HTTP/1.1":
            assert b"Transfer-Encoding: chunked" in head
            assert body.startswith(b"f\r\n: stream open\n\n\r\n")
        else:
            assert b"chunked" not in head
            assert body.startswith(b": stream open\n\n")


def test_without_the_loop_a_thread_serves_the_stream(backend: Storage, settings: Settings) -> None:
    """EVENTS_ASYNC off (as where the connection cannot be taken): the same answers,
    from the request's thread."""
    app = roomy_app(settings, backend, EVENTS_ASYNC=False)
    hub = app.extensions["promptsvc.events"]
    tokens = Tokens(app)
    with LiveServer(app) as live:
        sock, status, _ = open_stream(live, tokens(SERVICE_READ))
        try:
            assert status == 200
            assert request_threads() == 1  # held by the stream
            create_prompt(app, tokens, "greeting")
            read_until(sock, b'"prompt_name":"greeting"')
        finally:
            sock.close()
        wait_until(lambda: hub._followers == 0, "a closed stream kept its slot")
