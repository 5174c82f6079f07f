"""Fixtures for the identity tests: a clock, storages, an app with identity wired in.

``storage`` is a MemoryStorage that already holds one signing key (generating an RSA
key per test would dominate the run); tests about key generation and sharing make
their own storages through ``make_storage``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import fakeredis
import pytest
from flask import Flask
from flask.testing import FlaskClient

import identity
from identity import ConsoleUris, Identity, Lifetimes, RateLimits
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import Storage
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from storage.sql.storage import SqlStorage
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, StorageFactory, seed_signing_key
from tests.identity.people_support import CONSOLE_CALLBACK, CONSOLE_HOME, People


@pytest.fixture
def make_storage(request: pytest.FixtureRequest) -> Iterator[StorageFactory]:
    """Empty storages by backend name: memory, fakeredis (one shared fake server per
    test, so two storages made here see the same data), redis (the real server), sqlite
    (one file per test) or postgres (the session's schema, emptied once per test); on
    all but memory the storages made in one test share their data, as workers do."""
    server = fakeredis.FakeServer()
    made: list[Storage] = []
    sql_urls: dict[str, str] = {}

    def sql_url(backend: str) -> str:
        if backend not in sql_urls:
            if backend == "sqlite":
                path = request.getfixturevalue("tmp_path") / "identity.db"
                shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
                sql_urls[backend] = f"sqlite:///{path}"
            else:
                schema = request.getfixturevalue("postgres_schema")
                schema.empty()
                sql_urls[backend] = schema.url
        return sql_urls[backend]

    def make(backend: str) -> Storage:
        store: Storage
        if backend == "memory":
            store = MemoryStorage()
        elif backend == "fakeredis":
            store = RedisStorage(fakeredis.FakeRedis(server=server, decode_responses=True))
        elif backend in ("sqlite", "postgres"):
            store = SqlStorage.from_url(sql_url(backend))
        else:
            store = RedisStorage.from_url(request.getfixturevalue("redis_url"))
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def storage() -> Storage:
    store = MemoryStorage()
    seed_signing_key(store)
    return store


@pytest.fixture
def app(storage: Storage, clock: FakeClock) -> Flask:
    app = Flask("identity-test")
    identity.init_app(app, storage, issuer_url=ISSUER, clock=clock)
    return app


@pytest.fixture
def ident(app: Flask) -> Identity:
    found = app.extensions["identity"]
    assert isinstance(found, Identity)
    return found


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


# fakeredis runs the same RedisStorage as the real Redis, which CI requires: the people
# flows run on the real one only (make_storage still offers fakeredis to tests that ask).
BACKENDS = [
    "memory",
    "redis",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each storage backend in turn, for tests of the people flows."""
    name: str = request.param
    return name


@pytest.fixture
def lifetimes() -> Lifetimes:
    return Lifetimes()


@pytest.fixture
def people(
    backend: str, make_storage: StorageFactory, clock: FakeClock, lifetimes: Lifetimes
) -> People:
    """An app on ``backend`` with org acme: a key, ada (Write) and bob (Read). Storage
    runs on the test clock too, so sessions, codes and refresh tokens age with it (on
    Redis their TTL also runs in real time)."""
    store = make_storage(backend)
    store.clock = clock.utc
    seed_signing_key(store)
    app = Flask("people-test")
    ident = identity.init_app(
        app,
        store,
        issuer_url=ISSUER,
        clock=clock,
        console=ConsoleUris(redirect=(CONSOLE_CALLBACK,), post_logout=(CONSOLE_HOME,)),
        login_rate_limits=RateLimits(None, None),
        lifetimes=lifetimes,
    )
    ident.create_key("acme", SERVICE_ADMIN, client_id="acme-admin", client_secret="s" * 20)
    world = People(app, ident, app.test_client())
    world.user("ada", SERVICE_WRITE)
    world.user("bob", SERVICE_READ)
    return world
