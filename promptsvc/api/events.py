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
The events come from the process's :class:`promptsvc.events.EventHub`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from flask import Response, current_app, request

from identity.roles import SERVICE_READ
from promptsvc.api.common import ApiBlueprint, View
from promptsvc.api.responses import EventPageSchema
from promptsvc.auth import current_principal
from promptsvc.events import EventHub, Follower, Reset
from promptsvc.http import json_body, json_response
from promptsvc.inputs import EventHeadersSchema, EventQuerySchema
from storage import Event, StorageError

log = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
# Silence after which a comment line goes out: under 15 s, so that the time it takes to
# wake and write cannot stretch a gap beyond 15 s.
HEARTBEAT_SECONDS = 14.0
STREAM_OPENED = b": stream open\n\n"
KEEP_ALIVE = b": keep-alive\n\n"

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
        if request.accept_mimetypes.best_match(["application/json", EVENT_STREAM]) == (
            EVENT_STREAM
        ):
            after = headers["last_event_id"] or query["after"]
            if request.method == "HEAD":
                stream: Iterator[bytes] = iter(())  # no body: nothing to follow
            else:
                # Joined here, before the answer starts: a storage error is still a 503.
                follower = events.follow(principal.org, after)
                heartbeat = current_app.config.get("EVENTS_HEARTBEAT", HEARTBEAT_SECONDS)
                stream = frames(follower, principal.expires_at, heartbeat)
            response = current_app.response_class(stream, mimetype=EVENT_STREAM)
            response.headers["Cache-Control"] = "no-store"
            # nginx buffers proxied answers unless told not to (docs/deployment.md).
            response.headers["X-Accel-Buffering"] = "no"
            return response
        poll = events.poll(principal.org, query["after"], query["wait"], query["limit"])
        return json_response(
            {
                "items": [event.to_json() for event in poll.items],
                "last_id": poll.last_id,
                "reset": poll.reset,
            }
        )


def frames(follower: Follower, until: float, heartbeat: float) -> Iterator[bytes]:
    """The SSE body: frames of what the follower reads, until ``until`` (epoch
    seconds, the token's expiry) or until the hub closes."""
    try:
        yield STREAM_OPENED
        while not follower.ended:
            left = until - time.time()
            if left <= 0:
                return
            items = follower.read(min(heartbeat, left))
            if items:
                yield b"".join(frame(item) for item in items)
            elif time.time() < until and not follower.ended:
                yield KEEP_ALIVE
    except StorageError:
        # The answer has started: all that is left is to end it. The client reconnects
        # with its last id and misses nothing still in the log.
        log.warning("event stream ended by a storage error", exc_info=True)
    finally:
        follower.close()


def frame(item: Event | Reset) -> bytes:
    if isinstance(item, Reset):
        data = json_body({"last_id": item.last_id}).decode()
        return f"id: {item.last_id}\nevent: reset\ndata: {data}\n\n".encode()
    return event_frame(item)


@lru_cache(maxsize=4096)
def event_frame(event: Event) -> bytes:
    """One event's frame, built once for all the streams that send it. JSON escapes
    line breaks inside strings, so ``data`` is one line."""
    data = json_body(event.to_json()).decode()
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n".encode()
