"""Fixtures: a live server (``service``) and clients of both kinds (``make_client``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from promptsvc.client import AsyncPromptClient, PromptClient
from tests.client.sdk_support import (
    AsyncAdapter,
    Controlled,
    ControlledRedisStorage,
    ControlledStorage,
    Seen,
    Service,
    ServiceFactory,
    build_app,
    new_key,
    seed,
    shared_signing_key,
)
from tests.clock import FakeClock
from tests.servers import LiveServer


@pytest.fixture
def start_service(request: pytest.FixtureRequest) -> Iterator[ServiceFactory]:
    """Start seeded servers (``token_lifetime`` is passed to Settings); all stopped after.

    Servers share one signing key (so accept each other's tokens) unless
    ``own_signing_key`` is set. ``backend="redis"`` keeps the data in the flushed test
    Redis db instead of memory (one such server per test).
    """
    services: list[Service] = []

    def start(
        token_lifetime: int = 300, own_signing_key: bool = False, backend: str = "memory"
    ) -> Service:
        storage: Controlled
        if backend == "redis":
            storage = ControlledRedisStorage.from_url(request.getfixturevalue("redis_url"))
        else:
            storage = ControlledStorage()
        if not own_signing_key:
            storage.ensure_signing_key(shared_signing_key())
        versions = seed(storage)
        seen: list[Seen] = []
        app = build_app(storage, seen, token_lifetime)
        key_id, secret = new_key(app)
        server = LiveServer(app).start()
        services.append(Service(server, app, storage, versions, key_id, secret, seen))
        return services[-1]

    yield start
    for started in services:
        started.stop()


@pytest.fixture
def service(start_service: ServiceFactory) -> Service:
    return start_service()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_client(kind: str, service: Service, clock: FakeClock) -> Iterator[Callable[..., Any]]:
    """Build a PromptClient, or an AsyncPromptClient behind AsyncAdapter, for ``svc``
    (default: ``service``) with its key, on the fake clock; closed after the test.

    ``url`` overrides the base URL (auth_url too); ``client_credentials=True`` uses the
    realm token endpoint instead of the SDK one.
    """
    made: list[Any] = []

    def make(
        svc: Service | None = None,
        *,
        url: str | None = None,
        client_credentials: bool = False,
        secret: str | None = None,
        **options: Any,
    ) -> Any:
        cls = PromptClient if kind == "sync" else AsyncPromptClient
        options.setdefault("clock", clock)
        options.setdefault("retry_backoff", 0.01)
        svc = svc or service
        base = url or svc.url
        if client_credentials:
            options.setdefault("auth_url", base)
            client: Any = cls.with_client_credentials(
                base,
                org="acme",
                client_id=svc.key_id,
                client_secret=secret or svc.key_secret,
                **options,
            )
        else:
            client = cls(
                base,
                account_id="acme",
                key_id=svc.key_id,
                key_secret=secret or svc.key_secret,
                **options,
            )
        wrapped = client if kind == "sync" else AsyncAdapter(client)
        made.append(wrapped)
        return wrapped

    yield make
    for client in made:
        client.close()
