"""``watch=True`` against the real server (its events stream), on memory and on the real
Redis, for both clients.

The cache runs on the fake clock, which no test moves: an entry that goes away went
because an event (or a reset) dropped it, never because its TTL ran out. Propagation
itself is real time, so the tests poll for it, each with its own bound.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from promptsvc.client import AsyncPromptClient
from promptsvc.client.watch import READ_TIMEOUT
from tests.client.sdk_support import (
    AUTHOR,
    ORG,
    AsyncAdapter,
    MakeClient,
    Seen,
    Service,
    ServiceFactory,
)
from tests.clock import FakeClock

WATCHER = "promptsvc-watch"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def token_lifetime() -> int:
    return 300


@pytest.fixture
def service(start_service: ServiceFactory, backend: str, token_lifetime: int) -> Service:
    return start_service(token_lifetime=token_lifetime, backend=backend)


# How long a test waits for what it expects: generous on a loaded machine, and still
# far short of what would make it true otherwise (the cache's TTL is 300 s on a clock
# that does not move; a stream's read gives up after READ_TIMEOUT). How fast a change
# arrives is measured in bench/, not asserted here.
PATIENCE = 30.0
assert PATIENCE < READ_TIMEOUT


def eventually(check: Callable[[], bool], within: float = PATIENCE) -> None:
    """Wait until ``check()`` holds; fails the test when it does not within ``within``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not so within {within} s")
        time.sleep(0.01)


def production(client: Any, ref: str = "greeting") -> int:
    """The version number ``client`` serves as production of ``ref`` now."""
    return int(client.get_prompt_version(ref).version)


def answered_streams(service: Service, status: int | None = None) -> list[Seen]:
    """The stream requests the server has answered (with ``status``, when given)."""
    return [
        call
        for call in service.stream_calls()
        if call.status is not None and status in (None, call.status)
    ]


def calls_for(service: Service, name: str) -> int:
    return len([c for c in service.api_calls() if c.path.startswith(f"/api/v1/prompts/{name}/")])


def test_a_promotion_is_served_once_its_event_arrives(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    by_name = client.get_prompt_version("greeting")
    by_id = client.get_prompt_version(by_name.prompt_id)
    client.get_prompt_version("chatty")
    assert (by_name.version, by_id.version) == (1, 1)

    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)

    eventually(lambda: production(client) == 2)
    assert client.get_prompt_version(by_name.prompt_id).version == 2  # both forms dropped
    assert client.get_prompt_version("greeting").status == "published"
    assert calls_for(service, "chatty") == 1  # another prompt's entry was kept


def test_an_event_drops_its_prompt_only_not_others_sharing_a_prefix(
    make_client: MakeClient, service: Service
) -> None:
    service.storage.create_prompt(ORG, "greeting2")
    other = service.storage.create_version(ORG, "greeting2", "Yo", AUTHOR)
    service.storage.promote(ORG, "greeting2", other.version_id, AUTHOR)
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    client.get_prompt_version("greeting")
    assert client.get_prompt_version("greeting", label="latest").version == 2
    client.get_prompt_version("greeting2")
    client.get_prompt_version("greeting2", label="latest")

    service.storage.create_version(ORG, "greeting", "v3", AUTHOR)  # version.created

    eventually(lambda: client.get_prompt_version("greeting", label="latest").version == 3)
    assert calls_for(service, "greeting") == 3
    client.get_prompt_version("greeting")  # its production entry went with the event too
    assert calls_for(service, "greeting") == 4
    client.get_prompt_version("greeting2")
    client.get_prompt_version("greeting2", label="latest")
    assert calls_for(service, "greeting2") == 2  # still cached


def test_a_watch_that_starts_keeps_what_was_cached_before(
    make_client: MakeClient, service: Service
) -> None:
    """The first call races the watcher's start: what it cached stays cached, and a
    client in an outage right after start-up serves it, as one without watch does."""
    client = make_client(watch=True)
    assert client.get_prompt_version("greeting").version == 1  # before the stream opened
    eventually(lambda: client.watching)
    asked = calls_for(service, "greeting")  # the fetch, and the watcher's check of it
    assert asked <= 2
    assert client.get_prompt_version("greeting").version == 1
    assert calls_for(service, "greeting") == asked  # a cache hit

    service.stop()  # an outage
    assert client.get_prompt_version("greeting").version == 1


def test_a_change_before_the_watch_knew_where_the_log_ended_is_not_missed(
    make_client: MakeClient, service: Service
) -> None:
    """An entry cached before the watcher found its starting point is checked once the
    watcher has it: a promotion in between is served too."""
    service.storage.events_down = True  # the watcher cannot find its starting point yet
    client = make_client(watch=True)
    assert production(client) == 1
    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)
    service.storage.events_down = False  # it starts after the promotion's event

    eventually(lambda: client.watching)
    eventually(lambda: production(client) == 2)


def test_an_answer_to_a_call_sent_before_the_watch_started_is_asked_for_again(
    make_client: MakeClient, service: Service
) -> None:
    service.storage.events_down = True
    service.storage.gate = threading.Event()  # holds the call at the server
    client = make_client(watch=True)
    answers: list[int] = []
    call = threading.Thread(target=lambda: answers.append(production(client)))
    call.start()
    eventually(lambda: calls_for(service, "greeting") == 1)
    service.storage.events_down = False
    eventually(lambda: client.watching)  # its starting point is after the call

    service.storage.gate.set()
    call.join(PATIENCE)

    assert answers == [1]
    assert calls_for(service, "greeting") == 2  # asked again, from after the starting point
    assert production(client) == 1
    assert calls_for(service, "greeting") == 2  # and cached


def test_reconnects_after_the_server_drops_the_stream_and_replays_what_it_missed(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    assert client.get_prompt_version("greeting").version == 1
    (first,) = service.stream_calls()

    # The server restarts and its event log stays unreachable a while: the promotion
    # happens while the client has no stream.
    service.storage.events_down = True
    service.drop_streams()
    eventually(lambda: not client.watching)
    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)
    eventually(lambda: len(answered_streams(service, 503)) >= 2)  # it kept trying
    assert production(client) == 1  # nothing told the client yet
    service.storage.events_down = False

    eventually(lambda: production(client) == 2)
    assert client.watching
    resumed = service.stream_calls()[-1]
    assert resumed.status == 200
    # It resumed after the last event it had: the one its first stream started from.
    assert resumed.headers["Last-Event-ID"] == first.headers["Last-Event-ID"]


def test_reset_clears_the_cache(make_client: MakeClient, service: Service) -> None:
    service.storage.event_log_size = 3
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    client.get_prompt_version("greeting")
    client.get_prompt_version("chatty")

    service.storage.events_down = True
    service.drop_streams()
    eventually(lambda: not client.watching)
    # More changes than the log keeps (Redis trims whole stream nodes of 100 entries):
    # the client's last id falls out of it, with the promotion.
    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)
    for n in range(250):
        service.storage.create_version(ORG, "unreleased", f"draft {n}", AUTHOR)
    service.storage.events_down = False

    eventually(lambda: production(client) == 2)
    client.get_prompt_version("chatty")
    assert calls_for(service, "chatty") == 2  # no event named it: the reset cleared it


@pytest.mark.parametrize("token_lifetime", [2])
def test_a_fresh_token_when_the_streams_token_expires(
    make_client: MakeClient, service: Service
) -> None:
    # The real clock: the SDK refreshes its token when its lifetime is over.
    client = make_client(watch=True, clock=time.monotonic)
    eventually(lambda: client.watching)
    client.get_prompt_version("greeting")

    eventually(lambda: len(answered_streams(service)) >= 3)  # two tokens ran out
    streams = answered_streams(service)
    assert [call.status for call in streams] == [200] * len(streams)
    tokens = [call.headers["Authorization"] for call in streams]
    assert len(set(tokens)) == len(tokens)
    assert all(call.headers["Last-Event-ID"] for call in streams)

    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)
    eventually(lambda: production(client) == 2)


def watcher_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == WATCHER}


async def watcher_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == WATCHER]


def test_close_stops_the_watcher_promptly(
    make_client: MakeClient, service: Service, kind: str
) -> None:
    # The stream stays silent (no keep-alive) for longer than the watcher's read waits:
    # only close() interrupting it can end the watcher within PATIENCE.
    service.app.config["EVENTS_HEARTBEAT"] = 10 * READ_TIMEOUT
    before = watcher_threads()
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    client.get_prompt_version("greeting")
    if kind == "sync":
        (thread,) = watcher_threads() - before
    else:
        assert isinstance(client, AsyncAdapter)
        assert len(client.run(watcher_tasks())) == 1

    if kind == "sync":
        client.close()
        eventually(lambda: not thread.is_alive())
    else:
        client.run(asyncio.wait_for(client.client.aclose(), PATIENCE))
        assert client.run(watcher_tasks()) == []
    assert not client.watching

    opened = len(service.stream_calls())
    time.sleep(0.3)  # a running watcher would have reconnected by now (backoff 0.1 s)
    assert len(service.stream_calls()) == opened


def test_without_watch_there_is_no_stream(make_client: MakeClient, service: Service) -> None:
    before = watcher_threads()
    client = make_client()
    client.get_prompt_version("greeting")
    assert client.watching is False
    assert watcher_threads() == before
    assert [c for c in service.seen if c.path.startswith("/api/v1/events")] == []


def async_client(service: Service, clock: FakeClock) -> AsyncPromptClient:
    return AsyncPromptClient(
        service.url,
        account_id=ORG,
        key_id=service.key_id,
        key_secret=service.key_secret,
        clock=clock,
        watch=True,
    )


def test_an_async_client_made_outside_a_loop_watches_from_its_first_call(
    service: Service, clock: FakeClock
) -> None:
    adapter = AsyncAdapter(async_client(service, clock), enter=False)
    try:
        assert adapter.run(watcher_tasks()) == []
        assert adapter.get_prompt_version("greeting").version == 1
        assert len(adapter.run(watcher_tasks())) == 1
        eventually(lambda: adapter.watching)
    finally:
        adapter.close()


def test_an_async_client_made_in_a_running_loop_watches_at_once(
    service: Service, clock: FakeClock
) -> None:
    async def main() -> None:
        client = async_client(service, clock)
        try:
            assert len(await watcher_tasks()) == 1
            for _ in range(500):
                if client.watching:
                    break
                await asyncio.sleep(0.01)
            assert client.watching
        finally:
            await client.aclose()
        assert await watcher_tasks() == []

    asyncio.run(main())


def test_a_server_at_its_limit_of_streams_is_asked_again_after_its_retry_after(
    make_client: MakeClient, service: Service
) -> None:
    service.app.extensions["promptsvc.events"].max_followers = 1
    first = make_client(watch=True)
    first.get_prompt_version("greeting")
    eventually(lambda: first.watching)

    second = make_client(watch=True)
    second.get_prompt_version("greeting")
    eventually(lambda: len(answered_streams(service, 503)) == 1)
    refused = answered_streams(service, 503)[0]
    assert refused.headers["Authorization"] != first_stream_token(service)
    # Retry-After: 5. Backoff alone would have tried four more times in 1.5 s.
    time.sleep(1.5)
    assert len(answered_streams(service, 503)) == 1
    assert not second.watching


def first_stream_token(service: Service) -> str:
    return str(answered_streams(service, 200)[0].headers["Authorization"])


def test_an_event_about_an_included_prompt_drops_its_includers(
    make_client: MakeClient, service: Service
) -> None:
    """The SDK files an entry under the prompts it includes: a change of one of them
    is served to the includer once its event arrives (docs/composition.md)."""
    service.storage.create_prompt(ORG, "policy")
    first = service.storage.create_version(ORG, "policy", "Be safe.", AUTHOR)
    service.storage.promote(ORG, "policy", first.version_id, AUTHOR)
    service.storage.create_prompt(ORG, "desk")
    desk = service.storage.create_version(ORG, "desk", "{{> policy}} Help.", AUTHOR)
    service.storage.promote(ORG, "desk", desk.version_id, AUTHOR)
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    read = client.get_prompt_version("desk")
    assert (read.content, read.source_content) == ("Be safe. Help.", "{{> policy}} Help.")
    assert [(i["name"], i["version"]) for i in read.includes] == [("policy", 1)]
    assert read.included_prompts == {"policy"}

    second = service.storage.create_version(ORG, "policy", "Be safer.", AUTHOR)
    service.storage.promote(ORG, "policy", second.version_id, AUTHOR)

    eventually(lambda: client.get_prompt_version("desk").content == "Be safer. Help.")
