"""A real promptsvc server for SDK tests: create_app + MemoryStorage (or the test
Redis) on a loopback port.

Nothing here imitates the server: requests go over TCP to the app the service ships.
The only test additions are WSGI middleware that records what arrived (to count
requests and check headers server-side; Flask hooks do not see the read endpoints) and
a storage subclass whose prompt reads can be made unavailable (503) or held at a gate,
and whose event log can be made unavailable.
"""

from __future__ import annotations

import asyncio
import functools
import io
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flask import Flask
from werkzeug.datastructures import EnvironHeaders, Headers

from identity.signing import new_signing_key
from promptsvc.app import create_app
from promptsvc.client import AsyncPromptClient, PromptVersion
from promptsvc.config import Settings
from promptsvc.events import EventHub
from storage import (
    Event,
    EventLogBounds,
    SigningKey,
    Storage,
    StorageUnavailable,
    utcnow,
)
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from tests.servers import LiveServer

T = TypeVar("T")
ORG = "acme"
AUTHOR = str(uuid.uuid4())


class Controlled(Storage):
    """A backend whose prompt reads can fail (``down``) or wait at ``gate``, whose
    event log reads can fail (``events_down``), and whose usage writes can fail
    (``usage_down``: ``POST /api/v1/usage`` answers 503).

    Only the reads the SDK's endpoints use are affected by ``down``, so tokens still
    work; ``events_down`` makes ``GET /api/v1/events`` answer 503.
    """

    down = False
    events_down = False
    usage_down = False
    gate: threading.Event | None = None

    def _before_read(self) -> None:
        if self.down:
            raise StorageUnavailable("storage switched off by the test")
        if self.gate is not None:
            self.gate.wait(60)  # the test opens it long before

    def _before_events(self) -> None:
        if self.events_down:
            raise StorageUnavailable("event log switched off by the test")

    def get_production(self, org: str, prompt_ref: str) -> Any:
        self._before_read()
        return super().get_production(org, prompt_ref)

    def get_latest(self, org: str, prompt_ref: str) -> Any:
        self._before_read()
        return super().get_latest(org, prompt_ref)

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> Any:
        self._before_read()
        return super().get_version(org, prompt_ref, version_ref)

    def read_environment(self, org: str, prompt_ref: str, environment: str) -> Any:
        self._before_read()
        return super().read_environment(org, prompt_ref, environment)

    def read_environment_page(self, org: str, environment: str, *args: Any) -> Any:
        self._before_read()
        return super().read_environment_page(org, environment, *args)

    def record_usage(self, org: str, items: Any) -> int:
        if self.usage_down:
            raise StorageUnavailable("usage storage switched off by the test")
        return int(super().record_usage(org, items))

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        self._before_events()
        return super().events_after(org, after, limit)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        self._before_events()
        return super().event_log_bounds(org)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        self._before_events()
        return super().wait_for_events(org, after, timeout, limit)


class ControlledStorage(Controlled, MemoryStorage):
    """MemoryStorage, controlled."""


class ControlledRedisStorage(Controlled, RedisStorage):
    """RedisStorage on the test db, controlled."""


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str  # raw, still percent-encoded
    headers: Headers  # case-insensitive
    body: bytes
    status: int | None = None
    etag: str | None = None  # the response's


@dataclass
class Versions:
    v1: str  # greeting v1, production
    v2: str  # greeting v2, draft (latest)
    chat: str  # chatty v1, production
    draft_only: str  # unreleased v1, draft


@functools.cache
def shared_signing_key() -> SigningKey:
    """One RSA key for most test servers: generating one per server is the slow part."""
    return new_signing_key(utcnow())


def seed(storage: Storage) -> Versions:
    """greeting (v1 published, v2 draft), chatty (chat, published), unreleased (draft)."""
    storage.create_prompt(ORG, "greeting")
    v1 = storage.create_version(
        ORG, "greeting", "Hello {{ name }}!", AUTHOR, {"team": "a"}, ["t"], variables=["name"]
    )
    storage.promote(ORG, "greeting", v1.version_id, AUTHOR, notes="first")
    # `place` is optional, so v2 breaks no caller of v1 and promotes without an
    # acknowledgement (storage/contracts.py).
    v2 = storage.create_version(
        ORG,
        "greeting",
        "Hi {{name}}, welcome to {{place}}",
        AUTHOR,
        variables=["name", "place"],
        variables_schema={
            "name": {"type": "string"},
            "place": {"type": "string", "required": False},
        },
    )
    storage.create_prompt(ORG, "chatty", prompt_type="chat")
    chat = storage.create_version(
        ORG,
        "chatty",
        '[{"role": "system", "content": "You help {{name}}."},'
        ' {"role": "user", "content": "{{question}}"}]',
        AUTHOR,
        variables=["name", "question"],
    )
    storage.promote(ORG, "chatty", chat.version_id, AUTHOR)
    storage.create_prompt(ORG, "unreleased")
    draft = storage.create_version(ORG, "unreleased", "soon", AUTHOR)
    return Versions(v1.version_id, v2.version_id, chat.version_id, draft.version_id)


def build_app(storage: Storage, seen: list[Seen], token_lifetime: int = 300) -> Flask:
    """The real app, wrapped in middleware recording each request and its answer."""
    app = create_app(Settings(token_lifetime=token_lifetime), storage=storage)
    inner = app.wsgi_app

    def record(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        query = environ.get("QUERY_STRING", "")
        path = environ.get("REQUEST_URI") or environ["PATH_INFO"] + (f"?{query}" if query else "")
        entry = Seen(environ["REQUEST_METHOD"], path, Headers(EnvironHeaders(environ)), body)
        seen.append(entry)

        def start(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            entry.status = int(status.split()[0])
            entry.etag = Headers(headers).get("ETag")
            return start_response(status, headers, *args)

        return inner(environ, start)

    app.wsgi_app = record  # type: ignore[method-assign]
    return app


def new_key(app: Flask, client_id: str | None = None, secret: str | None = None) -> tuple[str, str]:
    """(client_id, secret) of a new Service Read key of ORG."""
    key, plain = app.extensions["identity"].create_key(
        ORG, "Service Read", client_id=client_id, client_secret=secret
    )
    return key.client_id, plain


@dataclass
class Service:
    """A running server with its storage, seeded data, key and request log."""

    server: LiveServer
    app: Flask
    storage: Controlled
    versions: Versions
    key_id: str
    key_secret: str
    seen: list[Seen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.base_url

    def api_calls(self) -> list[Seen]:
        return [s for s in self.seen if s.path.startswith("/api/")]

    def token_calls(self) -> list[Seen]:
        return [s for s in self.seen if not s.path.startswith("/api/")]

    def stream_calls(self) -> list[Seen]:
        """The requests that opened (or tried to open) an events stream."""
        return [
            s
            for s in self.seen
            if s.path.startswith("/api/v1/events") and "Last-Event-ID" in s.headers
        ]

    def stop(self) -> None:
        """Stop serving and end open streams. (The storage is left open: the event
        hub's reader may still be in a read, and ends by itself.)"""
        self.app.extensions["promptsvc.events"].close()
        self.server.stop()

    def drop_streams(self) -> None:
        """End every open events stream, as a restarted server does: the app gets a new
        event hub and the old one is closed."""
        old: EventHub = self.app.extensions["promptsvc.events"]
        self.app.extensions["promptsvc.events"] = EventHub(self.storage)
        old.close()


ServiceFactory = Callable[..., Service]  # start_service(token_lifetime=300, own_signing_key=False)
MakeClient = Callable[..., Any]  # make_client(svc=None, *, client_credentials, secret, **options)


class AsyncAdapter:
    """Drives an AsyncPromptClient from synchronous test code, so every behaviour test
    runs against both clients. It uses the client as ``async with`` does (entered here,
    left by ``close``), on a loop that runs in a thread of its own between calls too, as
    an application's would: the client's background task (``watch=True``) goes on while
    the test waits. ``enter=False`` leaves the client as it was made."""

    def __init__(self, client: AsyncPromptClient, enter: bool = True) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        if enter:
            self.run(client.__aenter__())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def get_prompt_version(self, *args: Any, **kwargs: Any) -> PromptVersion:
        return self.run(self.client.get_prompt_version(*args, **kwargs))

    def clear_cache(self) -> None:
        self.client.clear_cache()

    def record_outcome(self, *args: Any, **kwargs: Any) -> None:
        self.client.record_outcome(*args, **kwargs)

    def flush_usage(self) -> None:
        self.run(self.client.flush_usage())

    def cache_info(self) -> dict[str, int]:
        return self.client.cache_info()

    @property
    def stale_if_error(self) -> bool:
        return self.client.stale_if_error

    @property
    def watching(self) -> bool:
        return self.client.watching

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.run(self.client.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
