"""Fixtures of the reliability suite: a live service per backend, a Redis of our own, and
``report`` (what a test tried and saw, for docs/reliability.md).

``python -m bench.reliability`` runs this suite with ``--junitxml`` and turns every
test's ``report`` properties into a row of docs/reliability.md, so each row there comes
from a real run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.reliability.rel_support import RedisServer, Report, Service, start_service


@pytest.fixture(autouse=True)
def _describe(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None]
) -> None:
    """Every test's first docstring line, for its row in docs/reliability.md."""
    doc = (request.function.__doc__ or "").strip().split("\n\n")[0]
    record_property("doc", " ".join(doc.split()))


@pytest.fixture
def report(record_property: Callable[[str, object], None]) -> Report:
    """``report(input=..., result=...)``: the row this test adds to docs/reliability.md."""

    def add(**fields: object) -> None:
        for name, value in fields.items():
            record_property(name, value)

    return add


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend_url(request: pytest.FixtureRequest) -> str:
    """``memory://`` or the real Redis test db (flushed)."""
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
def service(backend_url: str) -> Iterator[Service]:
    """The service on each backend."""
    svc = start_service(backend_url)
    try:
        yield svc
    finally:
        svc.http.close()
        svc.server.stop()


@pytest.fixture
def memory_service() -> Iterator[Service]:
    """The service on memory:// only (for checks that do not depend on storage)."""
    svc = start_service("memory://")
    try:
        yield svc
    finally:
        svc.http.close()
        svc.server.stop()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own on a free port, always stopped afterwards."""
    server = RedisServer()
    try:
        yield server.start()
    finally:
        server.cleanup()
