"""Usage counting's pieces, where a server adds nothing: the keys a version is tagged
with, the counter (take, give back, the bound), and the send's batches and refusals.
What arrives at a real server is in test_sdk_usage_live.py."""

from __future__ import annotations

import logging
import threading
from typing import Any

import httpx
import pytest

from promptsvc.cli.connection import connect
from promptsvc.client import PromptClient
from promptsvc.client.errors import PromptServiceError, ServerError
from promptsvc.client.flow import Done, resume
from promptsvc.client.models import PromptVersion
from promptsvc.client.usage import (
    MAX_ITEMS,
    Tally,
    UsageCounter,
    UsageKey,
    read_environment,
    report_flow,
    tag,
)
from tests.client.test_sdk_units import BODY

CANDIDATE = {**BODY, "version_id": "v_2", "version": 2, "is_production": False}
ROLLOUT = {**BODY, "rollout": {"rollout_id": "ro_1", "percent": 40, "candidate": CANDIDATE}}
KEY: UsageKey = ("pmt_1", 1, "production", None, None)


def tagged(body: dict[str, Any], environment: str | None, counter: UsageCounter) -> PromptVersion:
    version = PromptVersion.from_json(body)
    tag(version, environment, counter)
    return version


@pytest.mark.parametrize(
    ("path", "environment"),
    [
        ("/api/v1/prompts/greeting/production", "production"),
        ("/api/v1/prompts/greeting/environments/staging", "staging"),
        ("/api/v1/prompts/greeting/latest", None),
        ("/api/v1/prompts/greeting/versions/v_1", None),
        ("/api/v1/prompts/greeting/versions/production", None),
    ],
)
def test_the_environment_read_comes_from_the_path(path: str, environment: str | None) -> None:
    assert read_environment(path) == environment


def test_each_render_and_to_openai_adds_one_render_to_the_versions_key() -> None:
    counter = UsageCounter()
    version = tagged(BODY, "production", counter)
    for _ in range(3):
        version.render(name="Ada")
    version.to_openai(name="Ada")
    with pytest.raises(KeyError):
        version.render()  # a render that fails served nothing
    assert dict(counter.renders) == {KEY: 4}


def test_a_rollouts_baseline_and_candidate_count_under_their_arms() -> None:
    counter = UsageCounter()
    baseline = tagged(ROLLOUT, "production", counter)
    assert baseline.rollout is not None
    baseline.render(name="a")
    baseline.rollout.candidate.render(name="b")
    baseline.rollout.candidate.render(name="c")
    assert dict(counter.renders) == {
        ("pmt_1", 1, "production", "ro_1", "baseline"): 1,
        ("pmt_1", 2, "production", "ro_1", "candidate"): 2,
    }


def test_untagged_and_fallback_versions_count_nothing() -> None:
    counter = UsageCounter()
    fallback = PromptVersion.fallback("greeting", "Hi {{name}}")
    tag(fallback, "production", counter)
    fallback.render(name="a")
    PromptVersion.from_json(BODY).render(name="a")
    assert fallback._usage_key is None
    assert counter.take() == {}


def test_off_the_key_is_kept_but_nothing_is_counted() -> None:
    version = PromptVersion.from_json(BODY)
    tag(version, None, None)
    version.render(name="a")
    assert version._usage_key == ("pmt_1", 1, None, None, None)
    assert version._tally is None


def test_take_moves_renders_and_outcomes_out_and_counting_starts_again() -> None:
    counter = UsageCounter()
    version = tagged(BODY, "production", counter)
    version.render(name="a")
    counter.record(KEY, True, 0.5)
    counter.record(KEY, False, None)
    assert counter.take() == {KEY: Tally(renders=1, ok=1, errors=1, score_sum=0.5, score_count=1)}
    assert counter.take() == {}
    version.render(name="a")
    assert counter.take() == {KEY: Tally(renders=1)}


def test_renders_from_many_threads_are_all_counted() -> None:
    counter = UsageCounter()
    version = tagged(BODY, "production", counter)
    taken: list[int] = []

    def render() -> None:
        for _ in range(2_000):
            version.render(name="a")

    def take() -> None:
        for _ in range(200):
            taken.append(counter.take().get(KEY, Tally()).renders)

    threads = [threading.Thread(target=render) for _ in range(4)] + [threading.Thread(target=take)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(taken) + counter.take().get(KEY, Tally()).renders == 8_000


def test_what_is_given_back_is_sent_first_and_summed_with_newer_counts() -> None:
    counter = UsageCounter()
    old: UsageKey = ("pmt_old", 1, None, None, None)
    counter.record(old, True, None)
    unsent = counter.take()
    counter.record(KEY, True, None)
    counter.record(old, False, None)
    counter.give_back(unsent)
    assert list(counter.take().items()) == [
        (old, Tally(ok=1, errors=1)),
        (KEY, Tally(ok=1)),
    ]


def test_beyond_the_bound_the_oldest_keys_go_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counter = UsageCounter(max_keys=3)
    keys: list[UsageKey] = [(f"pmt_{n}", 1, None, None, None) for n in range(5)]
    for key in keys[:2]:
        counter.record(key, True, None)
    counter.give_back(counter.take())  # a failed send: kept
    for key in keys[2:]:
        counter.record(key, True, None)
    with caplog.at_level(logging.WARNING, "promptsvc.client"):
        kept = counter.take()
    assert list(kept) == keys[2:]
    assert "dropping the 2 oldest" in caplog.text


def drive(counter: UsageCounter, answer: Any) -> list[dict[str, Any]]:
    """Run ``report_flow`` with ``answer(body)`` as the service: a status, or an
    exception raised as a failed request raises it. Returns the bodies sent."""
    bodies: list[dict[str, Any]] = []

    def post(body: object) -> Any:
        assert isinstance(body, dict)
        bodies.append(body)
        outcome = answer(body)
        if isinstance(outcome, Exception):
            raise outcome
        request = httpx.Request("POST", "http://service/api/v1/usage")
        return httpx.Response(outcome, json={}, request=request)
        yield  # a flow that sends nothing itself

    step = resume(report_flow(counter, post), None)
    assert isinstance(step, Done)
    return bodies


def fill(counter: UsageCounter, keys: int) -> list[UsageKey]:
    made: list[UsageKey] = [(f"pmt_{n}", n, "production", None, None) for n in range(keys)]
    for key in made:
        counter.renders[key] += 1
    return made


def test_a_send_splits_into_posts_of_at_most_500_items() -> None:
    counter = UsageCounter()
    keys = fill(counter, 1_201)
    bodies = drive(counter, lambda body: 202)
    assert [len(body["items"]) for body in bodies] == [MAX_ITEMS, MAX_ITEMS, 201]
    first = bodies[0]["items"][0]
    assert first == {
        "prompt_id": keys[0][0],
        "version": 0,
        "environment": "production",
        "rollout_id": None,
        "arm": None,
        "renders": 1,
        "ok": 0,
        "errors": 0,
        "score_sum": 0.0,
        "score_count": 0,
    }
    assert counter.take() == {}


def test_a_failed_post_keeps_it_and_what_was_not_sent_yet() -> None:
    counter = UsageCounter()
    fill(counter, 1_100)
    answers = iter([202, ServerError("down", status=503, code="unavailable")])
    with pytest.raises(ServerError):
        drive(counter, lambda body: next(answers))
    assert len(counter.take()) == 600


def test_a_429_keeps_the_counts_another_refusal_drops_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counter = UsageCounter()
    fill(counter, 3)
    with pytest.raises(PromptServiceError) as refused:
        drive(counter, lambda body: 429)
    assert refused.value.status == 429
    assert len(counter.take()) == 3
    fill(counter, 3)
    with caplog.at_level(logging.WARNING, "promptsvc.client"):
        drive(counter, lambda body: 400)
    assert "dropping 3 items the service refused" in caplog.text
    assert counter.take() == {}


def test_the_command_line_reports_no_usage(tmp_path: Any) -> None:
    env = {
        "PROMPTSVC_CONFIG_DIR": str(tmp_path),  # no saved login: the API key
        "PROMPTSVC_URL": "http://127.0.0.1:9",
        "PROMPTSVC_ACCOUNT_ID": "acme",
        "PROMPTSVC_KEY_ID": "k",
        "PROMPTSVC_KEY_SECRET": "s",
    }
    with connect(env) as client:
        assert client._usage is None
    with PromptClient.from_env(env) as application:
        assert application._usage is not None  # an application's client does
