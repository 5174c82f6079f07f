"""Single flight and one-refresh-at-a-time against the real server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from promptsvc.client import AsyncPromptClient, NoProductionVersionError, PromptClient
from tests.client.sdk_support import AUTHOR, ORG, Service
from tests.clock import FakeClock

THREADS = 32
C = TypeVar("C", PromptClient, AsyncPromptClient)


def run_together(count: int, call: Callable[[int], Any]) -> list[Any]:
    """Run ``call(i)`` in ``count`` threads that start at one barrier; results or errors."""
    barrier = threading.Barrier(count)

    def one(i: int) -> Any:
        barrier.wait()
        try:
            return call(i)
        except Exception as exc:  # returned for the test to inspect
            return exc

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def client_of(cls: type[C], service: Service, clock: FakeClock, **options: Any) -> C:
    return cls(
        service.url,
        account_id=ORG,
        key_id=service.key_id,
        key_secret=service.key_secret,
        clock=clock,
        **options,
    )


def gate_until_all_called(service: Service) -> tuple[Callable[[], None], threading.Thread]:
    """Hold the server's storage read until ``THREADS`` callers have called the SDK, so
    that without single flight they would all be at the server together. Returns the
    hook each caller runs just before its call, and the releasing thread."""
    service.storage.gate = gate = threading.Event()
    arrived = threading.Semaphore(0)

    def release_when_all_arrived() -> None:
        for _ in range(THREADS):
            arrived.acquire()
        gate.set()

    releaser = threading.Thread(target=release_when_all_arrived)
    releaser.start()
    return arrived.release, releaser


def test_32_threads_missing_one_key_make_one_request(service: Service, clock: FakeClock) -> None:
    arrive, releaser = gate_until_all_called(service)
    with client_of(PromptClient, service, clock) as client:

        def call(_: int) -> Any:
            arrive()
            return client.get_prompt_version("greeting")

        results = run_together(THREADS, call)
    releaser.join()

    assert len(service.api_calls()) == 1
    assert all(r is results[0] for r in results)
    assert results[0].version == 1


def test_concurrent_misses_share_an_error(service: Service, clock: FakeClock) -> None:
    arrive, releaser = gate_until_all_called(service)
    with client_of(PromptClient, service, clock) as client:

        def call(_: int) -> Any:
            arrive()
            return client.get_prompt_version("unreleased")

        results = run_together(THREADS, call)
    releaser.join()

    assert all(isinstance(r, NoProductionVersionError) for r in results)
    # Errors are not cached, so a thread descheduled past the flight's end could start
    # one more; whatever the timing, each request's error is shared by its waiters.
    assert len({id(r) for r in results}) == len(service.api_calls())
    assert len(service.api_calls()) < THREADS / 4


def test_one_token_refresh_across_threads(service: Service, clock: FakeClock) -> None:
    names = [f"p{i}" for i in range(16)]
    for name in names:
        service.storage.create_prompt(ORG, name)
        v = service.storage.create_version(ORG, name, "x", AUTHOR)
        service.storage.promote(ORG, name, v.version_id, AUTHOR)

    with client_of(PromptClient, service, clock, cache_ttl=0) as client:
        client.get_prompt_version("p0")
        clock.advance(241)  # the token is due for refresh (300 - 60)
        results = run_together(len(names), lambda i: client.get_prompt_version(names[i]))

    assert [r.name for r in results] == names
    assert len(service.token_calls()) == 2
    tokens = {c.headers["Authorization"] for c in service.api_calls()[1:]}
    assert len(tokens) == 1


def test_async_tasks_missing_one_key_make_one_request(service: Service, clock: FakeClock) -> None:
    async def main() -> list[Any]:
        async with client_of(AsyncPromptClient, service, clock) as client:
            return await asyncio.gather(
                *(client.get_prompt_version("greeting", label="latest") for _ in range(THREADS))
            )

    results = asyncio.run(main())
    assert len(service.api_calls()) == 1
    assert len(service.token_calls()) == 1
    assert all(r is results[0] for r in results)


def test_async_one_token_refresh_across_tasks(service: Service, clock: FakeClock) -> None:
    async def main() -> list[Any]:
        async with client_of(AsyncPromptClient, service, clock, cache_ttl=0) as client:
            calls = [("greeting", None), ("greeting", "latest"), ("chatty", None)]
            return await asyncio.gather(
                *(client.get_prompt_version(n, label) for n, label in calls)
            )

    results = asyncio.run(main())
    assert [r.name for r in results] == ["greeting", "greeting", "chatty"]
    assert len(service.token_calls()) == 1


def test_async_caller_cancelled_does_not_stop_the_fetch(service: Service, clock: FakeClock) -> None:
    async def main() -> Any:
        async with client_of(AsyncPromptClient, service, clock) as client:
            first = asyncio.ensure_future(client.get_prompt_version("greeting"))
            second = asyncio.ensure_future(client.get_prompt_version("greeting"))
            await asyncio.sleep(0)  # both are now waiting on the one fetch
            first.cancel()
            v = await second
            with pytest.raises(asyncio.CancelledError):
                await first
            return v

    assert asyncio.run(main()).version == 1
    assert len(service.api_calls()) == 1
