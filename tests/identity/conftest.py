"""Fixtures for the identity tests: a clock, storages, an app with identity wired in.

``storage`` is a MemoryStorage that already holds one signing key (generating an RSA
key per test would dominate the run); tests about key generation and sharing make
their own storages through ``make_storage``.
"""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest
from flask import Flask
from flask.testing import FlaskClient

import identity
from identity import Identity
from storage.base import Storage
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, StorageFactory, seed_signing_key


@pytest.fixture
def make_storage(request: pytest.FixtureRequest) -> Iterator[StorageFactory]:
    """Empty storages by backend name: memory, fakeredis (one shared fake server per
    test, so two storages made here see the same data) or redis (the real server)."""
    server = fakeredis.FakeServer()
    made: list[Storage] = []

    def make(backend: str) -> Storage:
        store: Storage
        if backend == "memory":
            store = MemoryStorage()
        elif backend == "fakeredis":
            store = RedisStorage(fakeredis.FakeRedis(server=server, decode_responses=True))
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
