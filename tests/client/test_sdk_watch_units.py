"""The watcher's state machine (promptsvc.client.watch.Watch) on its own: no I/O, just
answers and events handed to it, for what the real server never sends (an unreadable
event, a stream that is not SSE, a token refused twice) and for the backoff's timing
on a clock the test moves."""

from __future__ import annotations

import httpx
import pytest
from httpx_sse import ServerSentEvent

from promptsvc.client import AuthenticationError, InvalidResponseError, ServerError
from promptsvc.client.cache import PromptCache, cache_key
from promptsvc.client.flow import RetryPolicy
from promptsvc.client.watch import EVENT_STREAM, HEALTHY_SECONDS, Watch
from tests.client.test_sdk_units import BODY, version

SSE_HEADERS = {"Content-Type": f"{EVENT_STREAM}; charset=utf-8"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_watch(clock: Clock | None = None) -> Watch:
    cache = PromptCache(60)
    for name in ("greeting", BODY["prompt_id"], "greeting2", "chatty"):
        for label in ("production", "latest"):
            cache.put(
                cache_key(name, label, None), name, version(), None, cache.generation, path=""
            )
    reconnect = RetryPolicy(backoff=0.1, backoff_cap=1.0, jitter=lambda: 1.0)
    return Watch("http://svc", cache, 10.0, reconnect=reconnect, clock=clock or Clock())


def answer(status: int, headers: dict[str, str] | None = None, **kwargs: object) -> httpx.Response:
    request = httpx.Request("GET", "http://svc/api/v1/events")
    return httpx.Response(status, headers=headers, request=request, **kwargs)  # type: ignore[arg-type]


def cached(watch: Watch, name: str) -> bool:
    return watch.cache.get(cache_key(name, None, None)) is not None


def test_the_request_resumes_after_the_last_id() -> None:
    watch = make_watch()
    assert "Last-Event-ID" not in watch.request("t").headers
    watch.last_id = "17-0"
    request = watch.request("t")
    assert request.headers["Last-Event-ID"] == "17-0"
    assert request.headers["Accept"] == EVENT_STREAM
    assert request.headers["Authorization"] == "Bearer t"
    assert request.extensions["timeout"]["read"] > 15  # longer than the heartbeat


def test_positioned_starts_from_the_newest_id_and_hands_back_the_cache_to_check() -> None:
    watch = make_watch()
    cached = len(watch.cache)
    unchecked = watch.positioned(answer(200, json={"items": [], "last_id": "42-1", "reset": False}))
    assert watch.last_id == "42-1"
    assert len(unchecked) == len(watch.cache) == cached  # nothing thrown away

    with pytest.raises(InvalidResponseError):
        make_watch().positioned(answer(200, json={"items": []}))
    with pytest.raises(ServerError):
        make_watch().positioned(answer(503, json={"code": "service_unavailable"}))


def test_an_event_drops_its_prompt_by_name_and_id() -> None:
    watch = make_watch()
    data = '{"id": "5-0", "type": "version.promoted", "prompt_name": "greeting", "prompt_id": "%s"}'
    watch.apply(ServerSentEvent("version.promoted", data % BODY["prompt_id"], "5-0"))

    assert not cached(watch, "greeting")
    assert not cached(watch, BODY["prompt_id"])
    assert cached(watch, "greeting2") and cached(watch, "chatty")
    assert watch.last_id == "5-0"


def test_reset_clears_everything_and_moves_to_its_id() -> None:
    watch = make_watch()
    watch.apply(ServerSentEvent("reset", '{"last_id": "9-0"}', "9-0"))
    assert (len(watch.cache), watch.last_id) == (0, "9-0")


def test_a_heartbeat_and_an_event_of_no_prompt_change_nothing() -> None:
    watch = make_watch()
    size = len(watch.cache)
    watch.apply(ServerSentEvent("message", "", "5-0"))  # a comment after an event
    watch.apply(ServerSentEvent("key.created", '{"id": "6-0", "type": "key.created"}', "6-0"))
    assert (len(watch.cache), watch.last_id) == (size, "6-0")


def test_an_unreadable_event_clears_the_cache() -> None:
    """It may have been about anything cached: forgetting all is the safe answer."""
    watch = make_watch()
    watch.apply(ServerSentEvent("version.promoted", "{not json", "7-0"))
    assert (len(watch.cache), watch.last_id) == (0, "7-0")


def test_a_refused_token_is_refreshed_at_once_once_then_backed_off() -> None:
    watch = make_watch()
    assert watch.opened(answer(401), "t1") is False
    assert watch.stale == "t1"
    assert watch.ended() == 0.0  # retry now, with a fresh token
    with pytest.raises(AuthenticationError):
        watch.opened(answer(401, json={"code": "unauthorized"}), "t2")
    assert watch.stale == "t2"  # the next try refreshes again
    assert watch.ended() > 0

    assert watch.opened(answer(200, headers=SSE_HEADERS), "t3") is True
    assert (watch.stale, watch.connected) == (None, True)
    assert watch.opened(answer(401), "t3") is False  # after a success: at once again


def test_an_answer_that_is_not_an_event_stream_is_a_failure() -> None:
    watch = make_watch()
    with pytest.raises(InvalidResponseError):
        watch.opened(answer(200, headers={"Content-Type": "text/html"}, text="<html>"), "t")
    assert watch.connected is False


def test_backoff_grows_over_failures_and_starts_over_after_a_healthy_stream() -> None:
    clock = Clock()
    watch = make_watch(clock)
    assert [watch.ended() for _ in range(5)] == [0.1, 0.2, 0.4, 0.8, 1.0]

    watch.opened(answer(200, headers=SSE_HEADERS), "t")
    clock.now += HEALTHY_SECONDS / 2  # ended at once: still failing
    assert watch.ended() == 1.0
    watch.opened(answer(200, headers=SSE_HEADERS), "t")
    clock.now += HEALTHY_SECONDS  # a stream that lived, ended by its token's expiry
    assert watch.ended() == 0.1
    assert watch.connected is False


@pytest.mark.parametrize(
    ("retry_after", "waits"), [("5", 5.0), ("3600", 60.0), ("Wed, 21 Oct 2026 07:28:00 GMT", 0.1)]
)
def test_a_refusals_retry_after_is_honoured_when_longer_up_to_a_cap(
    retry_after: str, waits: float
) -> None:
    watch = make_watch()
    with pytest.raises(ServerError):
        watch.opened(answer(503, headers={"Retry-After": retry_after}), "t")
    assert watch.ended() == waits
    assert watch.ended() == 0.2  # only that once


def test_on_change_hears_every_change_after_the_cache_and_survives_its_own_failure() -> None:
    heard: list[object] = []

    def listener(body: object) -> None:
        heard.append((body, cached(watch, "greeting")))
        raise RuntimeError("a listener's bug")

    watch = make_watch()
    watch.on_change = listener
    data = '{"id": "5-0", "type": "version.promoted", "prompt_name": "greeting"}'
    watch.apply(ServerSentEvent("version.promoted", data, "5-0"))
    watch.apply(ServerSentEvent("message", "", "5-0"))  # a heartbeat: no change
    watch.apply(ServerSentEvent("reset", "", "9-0"))
    watch.apply(ServerSentEvent("version.created", "not json", "10-0"))

    promoted = {"id": "5-0", "type": "version.promoted", "prompt_name": "greeting"}
    assert heard == [(promoted, False), (None, False), (None, False)]
    assert watch.last_id == "10-0"  # the listener's failures stopped nothing
