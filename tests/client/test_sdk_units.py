"""The pieces under the clients, where a server adds nothing: cache, keys, backoff,
which failures are retried."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest

from promptsvc.client.cache import DROPS_KEPT, CacheEntry, PromptCache, cache_key
from promptsvc.client.errors import TransportError
from promptsvc.client.flow import RetryPolicy, Sleep, send_with_retries
from promptsvc.client.models import ModelError, PromptVersion

BODY = {
    "prompt_id": "pmt_1",
    "version_id": "v_1",
    "name": "greeting",
    "version": 1,
    "content": "Hi {{name}}",
    "variables": ["name"],
    "status": "published",
    "is_production": True,
    "prompt_type": "text",
    "metadata": {"a": 1},
    "tags": [],
    "created_at": "2026-01-02T03:04:05.678901Z",
    "updated_at": "2026-01-02T03:04:05Z",
    "promoted_at": None,
    "promoted_by": None,
}


def version() -> PromptVersion:
    return PromptVersion.from_json(BODY)


def test_cache_keys() -> None:
    assert cache_key("greeting", None, None) == "prompt:greeting:production"
    assert cache_key("greeting", "production", None) == "prompt:greeting:production"
    assert cache_key("greeting", "latest", None) == "prompt:greeting:latest"
    assert cache_key("greeting", None, "v_1") == "prompt:greeting:v_1"
    assert cache_key("greeting", None, 3) == cache_key("greeting", None, "3")
    with pytest.raises(ValueError):
        cache_key("greeting", "latest", "v_1")


def test_entry_expiry() -> None:
    entry = CacheEntry(version(), None, expires_at=10.0)
    assert not entry.is_expired(9.999)
    assert entry.is_expired(10.0)


def test_put_from_before_a_clear_is_dropped() -> None:
    now = [0.0]
    cache = PromptCache(60, clock=lambda: now[0])
    generation = cache.generation
    cache.clear()  # a clear_cache() while that fetch was in flight
    cache.put("k", "greeting", version(), None, generation, path="")
    assert cache.get("k") is None
    cache.put("k", "greeting", version(), '"e"', cache.generation, path="")
    assert cache.fresh("k") is not None
    now[0] = 60.0
    assert cache.fresh("k") is None
    assert cache.get("k") is not None  # kept for revalidation and stale-if-error


def test_a_fetch_begun_before_the_watchs_mark_is_kept_expired_and_asked_again() -> None:
    now = [0.0]
    cache = PromptCache(60, clock=lambda: now[0])
    cache.put("a", "greeting", version(), '"a"', cache.generation, path="/a")
    in_flight = cache.generation

    before = cache.mark()

    assert list(before) == ["a"] and before["a"].path == "/a"  # to be checked
    assert cache.fresh("a") is not None  # and served meanwhile
    assert cache.put("b", "chatty", version(), '"b"', in_flight, path="/b") is False
    assert cache.fresh("b") is None and cache.get("b") is not None  # kept for stale-if-error
    assert cache.put("b", "chatty", version(), '"b"', cache.generation, path="/b") is True
    assert cache.fresh("b") is not None
    cache.expire("a", before["a"])
    assert cache.fresh("a") is None and cache.get("a") is not None


def test_ttl_zero_stores_nothing() -> None:
    cache = PromptCache(0)
    cache.put("k", "greeting", version(), None, cache.generation, path="")
    assert len(cache) == 0


def fill(cache: PromptCache, *names: str) -> None:
    for name in names:
        for label in ("production", "latest"):
            cache.put(
                cache_key(name, label, None), name, version(), None, cache.generation, path=""
            )


def test_drop_forgets_one_prompt_by_its_reference_not_by_prefix() -> None:
    cache = PromptCache(60)
    fill(cache, "greeting", "greeting2", "greeting.x", "pmt_1", "other")

    cache.drop({"greeting", "pmt_1"})  # an event names the prompt both ways

    assert cache.get("prompt:greeting:production") is None
    assert cache.get("prompt:greeting:latest") is None
    assert cache.get("prompt:pmt_1:latest") is None
    kept = {"greeting2", "greeting.x", "other"}
    assert len(cache) == 2 * len(kept)
    assert all(cache.fresh(cache_key(name, "latest", None)) for name in kept)
    cache.drop({"unknown"})
    assert len(cache) == 2 * len(kept)


def test_put_from_before_a_drop_of_its_prompt_is_refused_others_are_kept() -> None:
    cache = PromptCache(60)
    before = cache.generation
    cache.drop({"greeting", "pmt_1"})
    cache.drop({"chatty"})

    cache.put("prompt:greeting:production", "greeting", version(), None, before, path="")
    cache.put("prompt:pmt_1:production", "pmt_1", version(), None, before, path="")
    cache.put("prompt:other:production", "other", version(), None, before, path="")

    assert cache.get("prompt:greeting:production") is None
    assert cache.get("prompt:pmt_1:production") is None
    assert cache.get("prompt:other:production") is not None

    after_first = before + 1  # began between the two drops: only "chatty" came later
    cache.put("prompt:greeting:latest", "greeting", version(), None, after_first, path="")
    assert cache.get("prompt:greeting:latest") is not None


def test_put_older_than_the_kept_drops_is_refused() -> None:
    cache = PromptCache(60)
    before = cache.generation
    for n in range(DROPS_KEPT + 1):
        cache.drop({f"p{n}"})
    cache.put("prompt:other:production", "other", version(), None, before, path="")
    assert cache.get("prompt:other:production") is None  # cannot tell: not stored

    recent = cache.generation - DROPS_KEPT + 1
    cache.put("prompt:other:production", "other", version(), None, recent, path="")
    assert cache.get("prompt:other:production") is not None


def test_clear_refuses_every_earlier_put_even_after_later_drops() -> None:
    cache = PromptCache(60)
    fill(cache, "greeting")
    before = cache.generation
    cache.clear()
    cache.drop({"chatty"})
    assert len(cache) == 0
    cache.put("prompt:other:production", "other", version(), None, before, path="")
    assert len(cache) == 0
    fill(cache, "greeting")
    cache.drop({"greeting"})  # its index was rebuilt after the clear
    assert len(cache) == 0


def test_backoff_doubles_with_jitter_and_a_cap() -> None:
    low = RetryPolicy(backoff=0.25, backoff_cap=1.0, jitter=lambda: 0.0)
    high = RetryPolicy(backoff=0.25, backoff_cap=1.0, jitter=lambda: 1.0)
    assert [low.delay(n) for n in range(4)] == [0.125, 0.25, 0.5, 0.5]
    assert [high.delay(n) for n in range(4)] == [0.25, 0.5, 1.0, 1.0]


def _attempts(idempotent: bool, outcomes: list[object]) -> tuple[int, object]:
    """Drive send_with_retries, answering each attempt with the next outcome (a status
    code or an httpx error); the number of attempts and the flow's result or error."""
    policy = RetryPolicy(timeout=10, max_retries=3, jitter=lambda: 0.0)
    flow = send_with_retries(
        lambda: httpx.Request("POST", "http://svc.test/x"),
        policy,
        time.monotonic() + 10,
        idempotent=idempotent,
    )
    attempts, step = 0, next(flow)
    try:
        while True:
            if isinstance(step, Sleep):
                step = flow.send(None)
                continue
            assert isinstance(step, httpx.Request)
            outcome = outcomes[attempts]
            attempts += 1
            if isinstance(outcome, Exception):
                step = flow.throw(outcome)
            else:
                step = flow.send(httpx.Response(int(str(outcome)), request=step))
    except StopIteration as stop:
        return attempts, stop.value.status_code
    except TransportError as exc:
        return attempts, exc.code


@pytest.mark.parametrize(
    ("outcomes", "idempotent", "attempts", "result"),
    [
        ([503, 503, 200], True, 3, 200),
        ([httpx.ReadError("reset"), 200], True, 2, 200),
        # A POST may have acted before the answer was lost: one attempt only...
        ([503, 200], False, 1, 503),
        ([httpx.ReadError("reset"), 200], False, 1, "transport"),
        ([httpx.ReadTimeout("slow"), 200], False, 1, "timeout"),
        # ...unless it never left.
        ([httpx.ConnectError("refused"), 201], False, 2, 201),
        ([httpx.ConnectTimeout("no route"), httpx.ConnectError("refused"), 201], False, 3, 201),
        ([404], False, 1, 404),
    ],
)
def test_what_is_retried(
    outcomes: list[object], idempotent: bool, attempts: int, result: object
) -> None:
    assert _attempts(idempotent, outcomes) == (attempts, result)


def test_model_parses_times_and_freezes_collections() -> None:
    v = version()
    assert v.created_at == datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert v.variables == ("name",)
    with pytest.raises(TypeError):
        v.metadata["a"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"version": "1"}, "version"),
        ({"version": True}, "version"),
        ({"is_production": 1}, "is_production"),
        ({"tags": [1]}, "tags"),
        ({"created_at": "yesterday"}, "created_at"),
        ({"promoted_by": 5}, "promoted_by"),
    ],
)
def test_model_names_a_bad_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ModelError, match=field):
        PromptVersion.from_json({**BODY, **change})
