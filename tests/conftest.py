"""Shared fixtures: the real Redis, a local Redis Cluster, PostgreSQL, and a fake clock.

``PROMPTSVC_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/15``) names the db the
tests own; they flush only that db. With ``PROMPTSVC_TEST_REQUIRE_REDIS=1`` (set by
``.ci/run``) a missing Redis fails the run instead of skipping. PostgreSQL and SQLite:
tests/sql_support.py.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from argon2 import PasswordHasher

from identity import passwords, signing
from identity import secrets as client_secrets
from tests import sql_support
from tests.clock import FakeClock
from tests.cluster_support import LocalCluster, running_cluster, skip_or_fail


def _db_of_this_worker(url: str) -> str:
    """Each pytest-xdist worker flushes a Redis db of its own: the given db for the
    first worker, the next ones (modulo 16) for the others."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(db + int(worker[2:])) % 16}"))


REDIS_URL = _db_of_this_worker(
    os.environ.get("PROMPTSVC_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
)


def _redis_reachable(url: str) -> str | None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return f"no Redis at {url}: {exc}"
    return None


_REDIS_PROBLEM = _redis_reachable(REDIS_URL)


@pytest.fixture
def redis_url() -> str:
    """The real Redis URL, flushed before the test; skips (or fails in CI) without it."""
    if _REDIS_PROBLEM:
        skip_or_fail(_REDIS_PROBLEM)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    return REDIS_URL


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[sql_support.PostgresSchema]:
    """A PostgreSQL schema of the session's own (tests/sql_support.py); skips (or fails
    in CI) without a server."""
    yield from sql_support.postgres_schema()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file to copy (tests/sql_support.py)."""
    return sql_support.sqlite_template(tmp_path_factory.mktemp("sqlite"))


@pytest.fixture
def clock() -> FakeClock:
    """A clock at the current second that moves only when told (tests/storage sets its own)."""
    return FakeClock()


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """A 3-primary local cluster (tests/cluster_support.py) for the whole session, stopped
    at its end; for the storage suite and tests/cluster."""
    yield from running_cluster()


@pytest.fixture(scope="session")
def redis_cluster_url(local_cluster: LocalCluster) -> str:
    """``redis+cluster://`` URL of the session's local cluster."""
    return local_cluster.url


@pytest.fixture
def flushed_cluster_url(local_cluster: LocalCluster) -> str:
    """The cluster URL with every node up and every primary flushed, before the test
    (a test that stopped or froze a node and failed half-way leaves no trace)."""
    for node in local_cluster.nodes:
        if node.frozen:
            local_cluster.thaw_node(node)
        if not node.running():
            local_cluster.restart_node(node)
    local_cluster.wait_healthy(10)
    local_cluster.flush()
    return local_cluster.url


@pytest.fixture(autouse=True)
def no_saved_login(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Commands run by tests never find the login of whoever runs them (``promptsvc
    login`` saves it under PROMPTSVC_CONFIG_DIR)."""
    monkeypatch.setenv("PROMPTSVC_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(autouse=True)
def default_storage_per_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server a test starts without naming storage keeps its data in a SQLite file of
    that test's own, not in the default promptsvc.db of the working directory (shared
    by every test, and by whoever runs them there).

    memory:// while the SQL backend lacks its identity concerns (storage/sql/pending.py).
    """
    if importlib.util.find_spec("storage.sql.pending") is not None:
        monkeypatch.setenv("PROMPTSVC_STORAGE_URL", "memory://")
        return
    monkeypatch.setenv("PROMPTSVC_STORAGE_URL", f"sqlite:///{tmp_path / 'promptsvc.db'}")


@pytest.fixture
def receiver() -> Iterator[Any]:
    """A webhook receiver on loopback (tests/webhooks/receiver.py)."""
    from tests.webhooks.receiver import running

    yield from running()


# httpx gives a request 5 s unless told otherwise; on a loaded machine a test's server
# (an argon2 check, a gunicorn worker starting) can take longer to answer. In the tests,
# a client or call that names no timeout gets this one: only a failing test waits it out.
HTTP_TIMEOUT = 60.0
_HTTPX_DEFAULT = httpx.Timeout(5.0)


def _patient(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def patched(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("timeout", _HTTPX_DEFAULT) == _HTTPX_DEFAULT:
            kwargs["timeout"] = HTTP_TIMEOUT
        init(self, *args, **kwargs)

    return patched


@pytest.fixture(scope="session", autouse=True)
def patient_http_clients() -> Iterator[None]:
    """httpx clients made by the tests (``httpx.get`` makes one too) wait HTTP_TIMEOUT
    for an answer, unless the test names a timeout."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx.Client, "__init__", _patient(httpx.Client.__init__))
        patch.setattr(httpx.AsyncClient, "__init__", _patient(httpx.AsyncClient.__init__))
        yield


# The key-derivation functions cost what they cost in production on purpose: argon2id
# for people's passwords (19 MiB, t=2: identity/passwords.py) and scrypt for chosen
# client secrets (16 MiB: identity/secrets.py) take 50 ms or more per hash or check on
# an idle core, several times that on a busy one, and the suite makes people and keys
# and signs them in thousands of times. In this process the tests use the cheapest
# parameters of the same functions; the tests of the parameters themselves (and of the
# rehash they cause) ask for ``production_kdf_cost``. Servers the tests start as
# processes keep the production cost.
PRODUCTION_HASHER = passwords.HASHER
CHEAP_HASHER = PasswordHasher(
    time_cost=1,
    memory_cost=8,  # KiB, argon2's minimum for one lane
    parallelism=1,
    hash_len=PRODUCTION_HASHER.hash_len,
    salt_len=PRODUCTION_HASHER.salt_len,
    type=PRODUCTION_HASHER.type,
)
PRODUCTION_SCRYPT_N = client_secrets._SCRYPT_N
CHEAP_SCRYPT_N = 2**4


@pytest.fixture(scope="session", autouse=True)
def cheap_kdfs() -> Iterator[None]:
    """Passwords and chosen client secrets hashed in this process cost next to nothing
    (the stored hashes name their parameters, so checks follow them)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords, "HASHER", CHEAP_HASHER)
        patch.setattr(client_secrets, "_SCRYPT_N", CHEAP_SCRYPT_N)
        yield


@pytest.fixture
def production_kdf_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """identity/passwords.py's and identity/secrets.py's own parameters for this test."""
    monkeypatch.setattr(passwords, "HASHER", PRODUCTION_HASHER)
    monkeypatch.setattr(client_secrets, "_SCRYPT_N", PRODUCTION_SCRYPT_N)


@pytest.fixture(scope="session", autouse=True)
def signing_keys_parsed_once() -> Iterator[None]:
    """Parsing an RSA key (with its consistency checks) takes 40 ms of CPU, and every
    app a test makes parses its signing keys: mostly the same few shared keys. In the
    test process a key record (frozen) is parsed once; a key that does not parse
    raises each time, as nothing is kept for it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(signing, "parse_key", functools.lru_cache(maxsize=256)(signing.parse_key))
        yield
