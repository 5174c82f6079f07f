"""GET /api/v1/events: the long poll (JSON) and the stream (Server-Sent Events).

Every test runs on memory and on the real Redis (the ``app`` fixture). Streams are read
from a real server (werkzeug, in a thread) by httpx-sse, a parser nobody here wrote, so
the stream is proven to be standard SSE. httpx's read timeout bounds every read: a
frame that does not come fails the test instead of hanging it.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import jwt
import pytest
from flask import Flask
from httpx_sse import EventSource, ServerSentEvent, connect_sse

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from promptsvc.inputs import MAX_WAIT
from storage import Storage
from tests.api.conftest import Api, Tokens
from tests.servers import LiveServer

EVENTS = "/api/v1/events"
SSE = {"Accept": "text/event-stream"}
# How long a test waits for a frame, an answer or a freed slot: generous on a loaded
# machine (only a failing test waits it out) and shorter than the 60 s heartbeat the
# tests' streams keep quiet for. How fast things come is bench/'s to measure.
READ_TIMEOUT = 30.0


@pytest.fixture
def server(app: Flask) -> Iterator[LiveServer]:
    # No comment lines unless a test asks for them: httpx's read timeout then catches a
    # frame that never comes.
    app.config["EVENTS_HEARTBEAT"] = 60.0
    with LiveServer(app) as live:
        yield live


class Stream:
    """An open stream, read through one iterator of httpx-sse (it can make only one)."""

    def __init__(self, source: EventSource) -> None:
        self.response = source.response
        self._events = source.iter_sse()

    def take(self, count: int) -> list[ServerSentEvent]:
        return [next(self._events) for _ in range(count)]

    def rest(self) -> list[ServerSentEvent]:
        """Every event until the server ends the stream."""
        return list(self._events)


@contextmanager
def stream(
    server: LiveServer, token: str, headers: dict[str, str] | None = None, **params: str
) -> Iterator[Stream]:
    with (
        httpx.Client(base_url=server.base_url, timeout=READ_TIMEOUT) as client,
        connect_sse(
            client,
            "GET",
            EVENTS,
            params=params,
            headers={"Authorization": f"Bearer {token}", **(headers or {})},
        ) as source,
    ):
        yield Stream(source)


def poll(api: Api, **params: Any) -> Any:
    r = api.get(EVENTS, query_string=params, role=SERVICE_READ)
    assert r.status_code == 200, r.json
    return r.json


def make_changes(api: Api) -> None:
    """One change of each kind, in this order."""
    api.create_prompt("greeting")
    api.create_version("greeting")
    api.create_version("greeting")
    versions = "/api/v1/prompts/greeting/versions"
    assert api.patch(f"{versions}/2", json={"content": "Yo"}).status_code == 200
    api.promote("greeting", 1)
    api.promote("greeting", 2)
    assert api.post("/api/v1/prompts/greeting/rollback").status_code == 200
    assert api.post(f"{versions}/2/unarchive").status_code == 200
    assert api.post(f"{versions}/2/archive").status_code == 200
    assert api.delete(f"{versions}/2").status_code == 204
    assert api.delete("/api/v1/prompts/greeting").status_code == 204


CHANGE_TYPES = [
    "prompt.created",
    "version.created",
    "version.created",
    "version.updated",
    "version.promoted",
    "version.promoted",
    "version.promoted",  # the rollback
    "version.unarchived",
    "version.archived",
    "version.deleted",
    "prompt.deleted",
]


# --------------------------------------------------------------------------- long poll


def test_every_api_change_writes_one_event(api: Api, tokens: Tokens) -> None:
    start = poll(api)
    assert start == {"items": [], "last_id": "0-0", "reset": False}
    make_changes(api)
    answer = poll(api, after=start["last_id"], limit=200)
    items = answer["items"]
    assert [e["type"] for e in items] == CHANGE_TYPES
    assert answer["last_id"] == items[-1]["id"] and answer["reset"] is False
    admin = tokens.user_ids[("acme", "Service Admin")]
    assert {e["actor"] for e in items} == {admin}
    promoted = [e for e in items if e["type"] == "version.promoted"]
    assert [(e["version"], e["previous_version"], e["status"]) for e in promoted] == [
        (1, None, "published"),
        (2, 1, "published"),
        (1, 2, "published"),
    ]
    assert [e["version"] for e in items if e["type"] == "version.deleted"] == [2]
    assert {e["prompt_name"] for e in items} == {"greeting"}


def test_an_event_carries_the_request_id(api: Api) -> None:
    api.create_prompt("greeting", headers={"X-Request-ID": "deploy-42"})
    [event] = poll(api, after="0-0")["items"]
    assert event["request_id"] == "deploy-42"


def test_a_refused_change_writes_no_event(api: Api) -> None:
    api.create_prompt("greeting")
    api.create_version("greeting")
    api.promote("greeting", 1)
    before = poll(api, after="0-0")
    versions = "/api/v1/prompts/greeting/versions"
    assert api.post("/api/v1/prompts", json={"name": "greeting"}).status_code == 409
    assert api.post(f"{versions}/1/archive").status_code == 409
    assert api.post(f"{versions}/9/promote").status_code == 404
    assert api.post("/api/v1/prompts/nope/versions", json={"content": "x"}).status_code == 404
    assert api.post(f"{versions}/1/promote", role=SERVICE_READ).status_code == 403
    assert poll(api, after="0-0") == before


def test_without_after_a_poll_starts_from_now(api: Api) -> None:
    api.create_prompt("greeting")
    answer = poll(api)
    assert answer["items"] == [] and answer["last_id"] != "0-0"
    api.create_prompt("farewell")
    assert [e["prompt_name"] for e in poll(api, after=answer["last_id"])["items"]] == ["farewell"]


def test_limit_pages_through_the_log(api: Api) -> None:
    for i in range(5):
        api.create_prompt(f"p{i}")
    first = poll(api, after="0-0", limit=2)
    second = poll(api, after=first["last_id"], limit=2)
    third = poll(api, after=second["last_id"], limit=2)
    names = [e["prompt_name"] for page in (first, second, third) for e in page["items"]]
    assert names == ["p0", "p1", "p2", "p3", "p4"]
    assert poll(api, after=third["last_id"])["items"] == []


def test_a_poll_waits_for_the_first_event(api: Api, app: Flask) -> None:
    last_id = poll(api)["last_id"]
    writer = Api(app.test_client(), api.tokens)
    timer = threading.Timer(0.5, lambda: writer.create_prompt("greeting"))
    started = time.monotonic()
    timer.start()
    answer = poll(api, after=last_id, wait=MAX_WAIT)
    took = time.monotonic() - started
    timer.join()
    assert [e["prompt_name"] for e in answer["items"]] == ["greeting"]
    assert took < MAX_WAIT  # woken by the change, not by the end of the wait


def test_a_poll_with_nothing_new_waits_then_answers_empty(api: Api) -> None:
    last_id = poll(api)["last_id"]
    started = time.monotonic()
    assert poll(api, after=last_id, wait=1) == {"items": [], "last_id": last_id, "reset": False}
    assert 1 <= time.monotonic() - started < MAX_WAIT  # the wait asked for, not the most


def test_a_poll_after_an_id_the_log_dropped_resets(api: Api, backend: Storage) -> None:
    backend.event_log_size = 20
    api.create_prompt("greeting")
    gone = poll(api, after="0-0")["items"][0]["id"]
    for i in range(300):
        backend.create_prompt("acme", f"p{i:03d}")
    answer = poll(api, after=gone)
    newest = backend.event_log_bounds("acme").newest
    assert answer == {"items": [], "last_id": newest, "reset": True}
    # Going on from last_id is a normal poll again.
    api.create_prompt("after-reset")
    answer = poll(api, after=answer["last_id"])
    assert [e["prompt_name"] for e in answer["items"]] == ["after-reset"]
    assert answer["reset"] is False


def test_a_log_that_never_dropped_replays_everything(api: Api) -> None:
    for i in range(3):
        api.create_prompt(f"p{i}")
    answer = poll(api, after="0-0")
    assert len(answer["items"]) == 3 and answer["reset"] is False


def test_orgs_see_only_their_own_events(api: Api) -> None:
    api.create_prompt("greeting", org="other")
    api.create_prompt("greeting")
    mine = poll(api, after="0-0")["items"]
    theirs = api.get(EVENTS, query_string={"after": "0-0"}, org="other").json["items"]
    assert len(mine) == len(theirs) == 1
    assert mine[0]["prompt_id"] != theirs[0]["prompt_id"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"after": "abc"}, "after"),
        ({"after": "1"}, "after"),
        ({"after": "1-2-3"}, "after"),
        ({"after": f"{2**64}-0"}, "after"),
        ({"wait": "-1"}, "wait"),
        ({"wait": "31"}, "wait"),
        ({"wait": "1.5"}, "wait"),
        ({"wait": "soon"}, "wait"),
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
    ],
)
def test_bad_parameters_are_400(api: Api, params: dict[str, str], field: str) -> None:
    r = api.get(EVENTS, query_string=params, role=SERVICE_READ)
    assert r.status_code == 400
    assert r.json["code"] == r.json["error"] == "bad_request"
    assert list(r.json["errors"]) == [field]


def test_a_bad_last_event_id_is_400(api: Api) -> None:
    r = api.get(EVENTS, headers={**SSE, "Last-Event-ID": "yesterday"}, role=SERVICE_READ)
    assert r.status_code == 400 and list(r.json["errors"]) == ["Last-Event-ID"]


def test_the_token_is_checked_before_the_parameters(api: Api) -> None:
    r = api.get(EVENTS, query_string={"wait": "99"}, role=None)
    assert r.status_code == 401
    r = api.get(EVENTS, query_string={"wait": "99"}, headers={"Authorization": "Bearer x"})
    assert r.status_code == 401


# --------------------------------------------------------------------------- stream


def test_the_stream_is_standard_sse(server: LiveServer, api: Api, tokens: Tokens) -> None:
    with stream(server, tokens(SERVICE_READ)) as source:
        response = source.response
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["x-request-id"]
        make_changes(api)
        received = source.take(len(CHANGE_TYPES))
    assert [sse.event for sse in received] == CHANGE_TYPES
    polled = poll(api, after="0-0", limit=200)["items"]
    assert [sse.id for sse in received] == [e["id"] for e in polled]
    assert [sse.json() for sse in received] == polled


def test_last_event_id_replays_then_streams_live(
    server: LiveServer, api: Api, tokens: Tokens
) -> None:
    for i in range(3):
        api.create_prompt(f"p{i}")
    first = poll(api, after="0-0")["items"][0]["id"]
    with stream(server, tokens(SERVICE_READ), {"Last-Event-ID": first}) as source:
        replayed = source.take(2)
        api.create_prompt("live")
        [live] = source.take(1)
    assert [sse.json()["prompt_name"] for sse in replayed] == ["p1", "p2"]
    assert live.json()["prompt_name"] == "live"


def test_after_replays_and_last_event_id_wins_over_it(
    server: LiveServer, api: Api, tokens: Tokens
) -> None:
    for i in range(3):
        api.create_prompt(f"p{i}")
    ids = [e["id"] for e in poll(api, after="0-0")["items"]]
    with stream(server, tokens(SERVICE_READ), after=ids[0]) as source:
        assert [sse.id for sse in source.take(2)] == ids[1:]
    with stream(server, tokens(SERVICE_READ), {"Last-Event-ID": ids[1]}, after=ids[0]) as source:
        assert [sse.id for sse in source.take(1)] == ids[2:]


def test_a_stream_after_an_id_the_log_dropped_starts_with_reset(
    server: LiveServer, api: Api, tokens: Tokens, backend: Storage
) -> None:
    backend.event_log_size = 20
    api.create_prompt("greeting")
    gone = poll(api, after="0-0")["items"][0]["id"]
    for i in range(300):
        backend.create_prompt("acme", f"p{i:03d}")
    newest = backend.event_log_bounds("acme").newest
    with stream(server, tokens(SERVICE_READ), {"Last-Event-ID": gone}) as source:
        [reset] = source.take(1)
        api.create_prompt("after-reset")
        [live] = source.take(1)
    assert (reset.event, reset.id, reset.json()) == ("reset", newest, {"last_id": newest})
    assert live.event == "prompt.created" and live.json()["prompt_name"] == "after-reset"


def test_a_quiet_stream_sends_comment_lines(server: LiveServer, app: Flask, tokens: Tokens) -> None:
    app.config["EVENTS_HEARTBEAT"] = 0.2
    headers = {"Authorization": f"Bearer {tokens(SERVICE_READ)}", **SSE}
    lines: list[str] = []
    started = time.monotonic()
    with (
        httpx.Client(base_url=server.base_url, timeout=READ_TIMEOUT) as client,
        client.stream("GET", EVENTS, headers=headers) as response,
    ):
        for line in response.iter_lines():
            lines.append(line)
            if lines.count(": keep-alive") == 3:
                break
    # Three comments after about three heartbeats, and nothing else but blank lines.
    assert time.monotonic() - started >= 0.5
    assert {line for line in lines if line} == {": stream open", ": keep-alive"}


def test_the_stream_ends_when_the_token_expires(backend: Storage, settings: Settings) -> None:
    app = create_app(dataclasses.replace(settings, token_lifetime=2), storage=backend)
    app.config["EVENTS_HEARTBEAT"] = 0.5
    token = Tokens(app)(SERVICE_READ)
    with LiveServer(app) as live, stream(live, token) as source:
        started = time.monotonic()
        assert source.rest() == []  # it ends, with nothing to say
        ended = time.monotonic() - started
    assert ended < READ_TIMEOUT  # its heartbeats alone would keep it open for ever
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 2


def test_closing_the_hub_ends_its_streams(server: LiveServer, app: Flask, tokens: Tokens) -> None:
    with stream(server, tokens(SERVICE_READ)) as source:
        threading.Timer(0.3, app.extensions["promptsvc.events"].close).start()
        assert source.rest() == []  # ended: a stream left open would time out the read


def test_a_write_key_may_follow_too(server: LiveServer, api: Api, tokens: Tokens) -> None:
    with stream(server, tokens(SERVICE_WRITE)) as source:
        api.create_prompt("greeting")
        [event] = source.take(1)
    assert event.event == "prompt.created"


def test_openapi_documents_both_answers(api: Api) -> None:
    spec = api.client.get("/openapi.json").json
    operation = spec["paths"][EVENTS]["get"]
    content = operation["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/EventPage"}
    assert "text/event-stream" in content
    params = {(p["in"], p["name"]) for p in operation["parameters"]}
    assert params == {
        ("query", "after"),
        ("query", "wait"),
        ("query", "limit"),
        ("header", "Last-Event-ID"),
    }
    assert set(spec["components"]["schemas"]["Event"]["properties"]) == {
        "id",
        "type",
        "prompt_id",
        "prompt_name",
        "version",
        "version_id",
        "status",
        "previous_version",
        "actor",
        "at",
        "request_id",
        "environment",
        "review_id",
        "rollout_id",
        "percent",
        "reason",
        "guard",
    }


def test_streams_beyond_the_limit_are_503(backend: Storage, settings: Settings) -> None:
    wide = dataclasses.replace(
        settings, event_streams=1, event_streams_per_client=5, event_streams_per_org=5
    )
    app = create_app(wide, storage=backend)
    app.config["EVENTS_HEARTBEAT"] = 60.0
    token = Tokens(app)(SERVICE_READ)
    bearer = {"Authorization": f"Bearer {token}"}
    with LiveServer(app) as live, stream(live, token) as first:
        assert first.response.status_code == 200
        refused = httpx.get(live.base_url + EVENTS, headers={**bearer, **SSE}, timeout=5)
        assert refused.status_code == 503
        assert refused.headers["Retry-After"] == "5"
        assert refused.json()["code"] == "service_unavailable"
        # A waiting long poll holds a thread as a stream does; one that waits not, does not.
        waiting = httpx.get(live.base_url + EVENTS, params={"wait": 1}, headers=bearer)
        assert waiting.status_code == 503
        assert httpx.get(live.base_url + EVENTS, headers=bearer).status_code == 200


def open_stream(live: LiveServer, token: str) -> tuple[socket.socket, int, str]:
    """A stream opened on a raw socket (so the test decides when the connection
    closes): the socket, the answer's status and its head."""
    sock = socket.create_connection(("127.0.0.1", live.port), timeout=READ_TIMEOUT)
    sock.sendall(
        f"GET {EVENTS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    return sock, int(head.split(b" ", 2)[1]), head.decode(errors="replace")


def test_streams_are_capped_per_subject_and_per_org(backend: Storage, settings: Settings) -> None:
    """One read token cannot take every stream of the server: a subject holds at most a
    quarter and an org half of PROMPTSVC_EVENT_STREAMS (429), so another org still gets
    its streams and long polls."""
    app = create_app(dataclasses.replace(settings, event_streams=8), storage=backend)
    app.config["EVENTS_HEARTBEAT"] = 60.0
    tokens = Tokens(app)
    reader, writer, admin = (tokens(role) for role in (SERVICE_READ, SERVICE_WRITE, SERVICE_ADMIN))
    other = tokens(SERVICE_READ, org="other")
    opened: list[socket.socket] = []
    try:
        with LiveServer(app) as live:
            for _ in range(2):  # a quarter of 8
                sock, status, _ = open_stream(live, reader)
                opened.append(sock)
                assert status == 200
            sock, status, head = open_stream(live, reader)
            opened.append(sock)
            assert status == 429, head
            assert "Retry-After: 5" in head
            for _ in range(2):
                sock, status, _ = open_stream(live, writer)
                opened.append(sock)
                assert status == 200
            # The org holds half of 8 now: its third subject is refused too.
            sock, status, head = open_stream(live, admin)
            opened.append(sock)
            assert status == 429, head
            # Another org is not affected: streams and waiting long polls.
            sock, status, _ = open_stream(live, other)
            opened.append(sock)
            assert status == 200
            waiting = httpx.get(
                live.base_url + EVENTS,
                params={"wait": 1},
                headers={"Authorization": f"Bearer {other}"},
            )
            assert waiting.status_code == 200
    finally:
        for sock in opened:
            sock.close()


def test_a_closed_connection_frees_its_slot_within_5_seconds(
    backend: Storage, settings: Settings
) -> None:
    """A client that closes its socket gives its stream back at once, not at the next
    15-second comment line: the stream looks at its connection while it is quiet."""
    app = create_app(dataclasses.replace(settings, event_streams=4), storage=backend)
    app.config["EVENTS_HEARTBEAT"] = 60.0  # no comment line would find it out
    hub = app.extensions["promptsvc.events"]
    token = Tokens(app)(SERVICE_READ)
    with LiveServer(app) as live:
        sock, status, _ = open_stream(live, token)
        assert status == 200
        refused, status, _ = open_stream(live, token)  # a quarter of 4: one stream
        refused.close()
        assert status == 429
        assert hub._followers == 1
        sock.close()
        closed_at = time.monotonic()
        while hub._followers and time.monotonic() - closed_at < READ_TIMEOUT:
            time.sleep(0.05)
        assert hub._followers == 0  # found out long before the 60 s comment line
        again, status, _ = open_stream(live, token)
        again.close()
        assert status == 200


def test_head_of_the_stream_follows_nothing(api: Api) -> None:
    r = api.request("HEAD", EVENTS, headers=SSE, role=SERVICE_READ)
    assert r.status_code == 200 and r.data == b""
    assert r.headers["Content-Type"].startswith("text/event-stream")
    assert api.client.application.extensions["promptsvc.events"]._feeds == {}
