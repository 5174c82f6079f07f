"""Change events: ``GET /api/v1/events`` as Server-Sent Events or as a JSON long poll.

The org is the token's, like everywhere in the API; the role is Service Read. With
``Accept: text/event-stream`` the answer is a stream of SSE frames (``id:``,
``event: <type>``, ``data: <event JSON>``): first what came after ``Last-Event-ID`` (or
``?after=``), then every change as it happens, a comment line whenever nothing was sent
for ``EVENTS_HEARTBEAT`` seconds (app config; 14 by default, so never 15 s without a
line), an ``event: reset`` frame when the asked id is older than the log keeps, and the
end of the stream when the token expires (the client reconnects with a fresh token and
its last id). Otherwise it is a long
poll: ``{items, last_id, reset}``, waiting up to ``?wait=`` seconds for the first event.
The events come from the process's :class:`promptsvc.events.EventHub`, which caps the
streams of one token subject and of one org (429) besides the process's own (503).

Streams and waiting long polls are served on the process's stream loop, not by a
thread each (promptsvc.streaming: the answer takes the connection from the WSGI server;
promptsvc.event_streams: each org's events are written to all of its streams in one
pass). The loop hears at once when a client closes its connection, and the answer's
slot is free again. Where the connection cannot be taken (TLS in the WSGI server,
another server, ``EVENTS_ASYNC`` off in the app config), the request's thread serves the
answer as before: then every ``EVENTS_CLIENT_CHECK`` seconds (app config; 2 by default)
of silence a stream looks at its connection (:func:`client_gone`) and ends when the
client closed it; where the socket cannot be looked at, it writes a comment line
instead, and the write to a closed connection fails by the second one.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

from flask import Response, current_app, request

from identity.roles import SERVICE_READ
from promptsvc.api.common import ApiBlueprint, View
from promptsvc.api.responses import EventPageSchema
from promptsvc.auth import current_principal
from promptsvc.event_streams import (
    KEEP_ALIVE,
    STREAM_OPENED,
    frame,
    serve_stream,
    wait_for_events,
)
from promptsvc.events import EventHub, Follower, Poll, as_poll
from promptsvc.http import json_body, json_response
from promptsvc.inputs import EventHeadersSchema, EventQuerySchema
from promptsvc.streaming import SOCKET_KEYS, Connection, HandoffResponse
from storage import StorageError

log = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
# Silence after which a comment line goes out: under 15 s, so that the time it takes to
# wake and write cannot stretch a gap beyond 15 s.
HEARTBEAT_SECONDS = 14.0
# Silence after which a stream looks whether its client is still there.
CLIENT_CHECK_SECONDS = 2.0

blp = ApiBlueprint(
    "events",
    __name__,
    url_prefix="/api/v1/events",
    description="Follow every change of the org's prompts and versions.",
)

SSE_EXAMPLE = (
    "id: 1767323045678-0\n"
    "event: version.promoted\n"
    'data: {"id":"1767323045678-0","type":"version.promoted","prompt_id":"pmt_...",'
    '"prompt_name":"greeting","version":3,"version_id":"v_...","status":"published",'
    '"previous_version":2,"actor":"0b6a4bd2-...","at":"2026-01-02T03:04:05.678901Z",'
    '"request_id":"..."}\n\n'
    ": keep-alive\n\n"
)


def hub() -> EventHub:
    """The app's event hub (promptsvc.app.create_app makes it)."""
    found: EventHub = current_app.extensions["promptsvc.events"]
    return found


@blp.route("")
class Events(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(EventQuerySchema, location="query")
    @blp.arguments(EventHeadersSchema, location="headers")
    @blp.returns(200, EventPageSchema)
    @blp.errors(429)
    @blp.alt_response(
        200,
        schema={"type": "string"},
        content_type=EVENT_STREAM,
        description="application/json: a long poll's answer. text/event-stream: one "
        "SSE frame per event (id, event: <type>, data: the event as in the JSON "
        "answer), a comment line at least every 15 s, event: reset when the asked id "
        "is older than the log keeps; the stream ends when the token expires.",
        example=SSE_EXAMPLE,
        success=True,
    )
    def get(self, query: dict[str, Any], headers: dict[str, Any]) -> Response:
        """Follow changes (Server-Sent Events or long poll)

        Every change of the org's prompts and versions is an event: prompt.created,
        prompt.deleted, version.created, version.updated (a draft edited),
        version.promoted (rollbacks too), version.archived, version.unarchived,
        version.deleted. Ask with Accept: text/event-stream for a live stream, or with
        Accept: application/json for a long poll (after, wait, limit).
        """
        principal = current_principal()
        events = hub()
        config = current_app.config
        handoff = config.get("EVENTS_ASYNC", True)
        if request.accept_mimetypes.best_match(["application/json", EVENT_STREAM]) == (
            EVENT_STREAM
        ):
            after = headers["last_event_id"] or query["after"]
            if request.method == "HEAD":
                response = current_app.response_class(iter(()), mimetype=EVENT_STREAM)
            else:
                # Joined here, before the answer starts: a storage error is still a 503.
                follower = events.follow(principal.org, after, principal.user_id)
                heartbeat = config.get("EVENTS_HEARTBEAT", HEARTBEAT_SECONDS)
                check = config.get("EVENTS_CLIENT_CHECK", CLIENT_CHECK_SECONDS)
                gone = client_check(request.environ)
                until = principal.expires_at
                response = HandoffResponse(
                    frames(follower, until, heartbeat, check, gone),
                    serve=serve_stream(follower, until, heartbeat),
                    release=follower.close,
                    enabled=handoff,
                    mimetype=EVENT_STREAM,
                )
            response.headers["Cache-Control"] = "no-store"
            # nginx buffers proxied answers unless told not to (docs/deployment.md).
            response.headers["X-Accel-Buffering"] = "no"
            return response
        org, limit, wait = principal.org, query["limit"], query["wait"]
        cursor = events.newest(org) if query["after"] is None else query["after"]
        items = events.read_log(org, cursor, limit)
        if items or wait <= 0 or events.closed:
            return json_response(poll_json(as_poll(cursor, items)))
        # Nothing yet: the wait is served on the stream loop (its slot is taken here, so
        # that a refusal is still a 429 or 503).
        follower = events.follow(org, cursor, principal.user_id)

        def waited() -> Iterator[bytes]:
            yield json_body(poll_json(as_poll(cursor, follower.read(wait, limit))))

        async def wait_async(connection: Connection) -> None:
            try:
                found = await wait_for_events(follower, wait, limit)
            except StorageError:
                found = []  # an empty answer: the client asks again from the same id
            finally:
                follower.close()
            connection.send(json_body(poll_json(as_poll(cursor, found))))

        return HandoffResponse(
            waited(),
            serve=wait_async,
            release=follower.close,
            enabled=handoff,
            mimetype="application/json",
        )


def poll_json(poll: Poll) -> dict[str, Any]:
    return {
        "items": [event.to_json() for event in poll.items],
        "last_id": poll.last_id,
        "reset": poll.reset,
    }


def frames(
    follower: Follower,
    until: float,
    heartbeat: float,
    check: float = CLIENT_CHECK_SECONDS,
    gone: Callable[[], bool | None] = lambda: None,
) -> Iterator[bytes]:
    """The SSE body: frames of what the follower reads, until ``until`` (epoch
    seconds, the token's expiry), until the hub closes, or until the client is gone.

    ``gone()`` says whether the client closed its connection (None: cannot tell, so
    every ``check`` seconds of silence a comment line goes out, whose write fails once
    the connection is closed); otherwise a comment line goes out after ``heartbeat``
    seconds of silence."""
    try:
        yield STREAM_OPENED
        quiet_since = time.monotonic()
        while not follower.ended:
            left = until - time.time()
            if left <= 0:
                return
            items = follower.read(min(check, heartbeat, left))
            if items:
                yield b"".join(frame(item) for item in items)
                quiet_since = time.monotonic()
                continue
            if time.time() >= until or follower.ended:
                return
            closed = gone()
            if closed:
                return
            if closed is None or time.monotonic() - quiet_since >= heartbeat:
                yield KEEP_ALIVE
                quiet_since = time.monotonic()
    except StorageError:
        # The answer has started: all that is left is to end it. The client reconnects
        # with its last id and misses nothing still in the log.
        log.warning("event stream ended by a storage error", exc_info=True)
    finally:
        follower.close()


def client_check(environ: dict[str, Any]) -> Callable[[], bool | None]:
    """``gone()`` for the request's connection: True once the client closed it, False
    while it is open, None when this server's socket cannot be looked at."""
    sock = next((environ[key] for key in SOCKET_KEYS if key in environ), None)
    flags = socket.MSG_PEEK | getattr(socket, "MSG_DONTWAIT", 0)
    if (
        not isinstance(sock, socket.socket)
        or isinstance(sock, ssl.SSLSocket)
        or (flags == socket.MSG_PEEK)
    ):
        return lambda: None
    return lambda: client_gone(sock, flags)


def client_gone(sock: socket.socket, flags: int) -> bool:
    """Whether the peer of ``sock`` closed the connection, looked at without reading:
    an SSE client sends nothing after its request, so end of input means it left."""
    try:
        return sock.recv(1, flags) == b""
    except BlockingIOError:
        return False  # open, nothing to read
    except OSError:
        return True  # reset, or the socket is closed already
