"""Usage counting against the real server, for both clients: the counts arrive (read
back with ``GET /api/v1/prompts/{name}/usage``), outcomes too, nothing is sent with
``report_usage=False``, the background send and the one at close, and counts kept
across a send the server failed (its storage switched off: a real 503)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from promptsvc.client import ServerError
from tests.client.sdk_support import MakeClient, Service
from tests.client.test_sdk_rollout_live import Operator
from tests.client.test_sdk_watch import eventually

USAGE = "/api/v1/usage"


def posts(service: Service) -> list[list[dict[str, Any]]]:
    """The items of each ``POST /api/v1/usage`` the server received."""
    return [
        json.loads(seen.body)["items"]
        for seen in service.seen
        if seen.method == "POST" and seen.path == USAGE
    ]


def usage(service: Service, name: str = "greeting") -> dict[tuple[Any, ...], dict[str, Any]]:
    """``GET /api/v1/prompts/{name}/usage`` summed over buckets, by (version,
    environment, rollout_id, arm): ``{renders, ok, errors, score_avg}``."""
    answer = Operator(service).http.get(
        f"/api/v1/prompts/{name}/usage", headers=Operator(service).headers
    )
    assert answer.status_code == 200, answer.get_data(as_text=True)
    summed: dict[tuple[Any, ...], Counter[str]] = {}
    scores: dict[tuple[Any, ...], Any] = {}
    for item in answer.get_json()["items"]:
        key = (item["version"], item["environment"], item["rollout_id"], item["arm"])
        summed.setdefault(key, Counter()).update(
            {field: item[field] for field in ("renders", "ok", "errors")}
        )
        scores[key] = item["score_avg"]
    return {key: {**counts, "score_avg": scores[key]} for key, counts in summed.items()}


def figures(renders: int = 0, ok: int = 0, errors: int = 0, score_avg: Any = None) -> Any:
    return {"renders": renders, "ok": ok, "errors": errors, "score_avg": score_avg}


def test_renders_and_outcomes_arrive_at_close(make_client: MakeClient, service: Service) -> None:
    client = make_client(usage_interval=3600)
    production = client.get_prompt_version("greeting")
    latest = client.get_prompt_version("greeting", label="latest")
    for _ in range(3):
        production.render(name="Ada")
    latest.to_openai(name="Ada", place="here")
    client.record_outcome(production, ok=True, score=0.5)
    client.record_outcome(production, ok=True, score=1.0)
    client.record_outcome(production, ok=False)
    assert posts(service) == []  # nothing before the interval or close()
    client.close()
    assert len(posts(service)) == 1
    assert usage(service) == {
        (1, "production", None, None): figures(renders=3, ok=2, errors=1, score_avg=0.75),
        (2, None, None, None): figures(renders=1),
    }


def test_report_usage_false_sends_nothing(make_client: MakeClient, service: Service) -> None:
    client = make_client(report_usage=False, usage_interval=0.05)
    version = client.get_prompt_version("greeting")
    version.render(name="Ada")
    client.record_outcome(version, ok=False)
    client.flush_usage()
    client.close()
    assert posts(service) == []
    assert usage(service) == {}


def test_counts_are_sent_in_the_background(make_client: MakeClient, service: Service) -> None:
    client = make_client(usage_interval=0.05)
    version = client.get_prompt_version("greeting")
    version.render(name="Ada")
    eventually(lambda: len(posts(service)) == 1)
    assert usage(service) == {(1, "production", None, None): figures(renders=1)}
    version.render(name="Ada")
    client.close()
    assert usage(service) == {(1, "production", None, None): figures(renders=2)}


def test_a_failed_send_keeps_the_counts_for_the_next(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(usage_interval=3600)
    version = client.get_prompt_version("greeting")
    version.render(name="Ada")
    client.record_outcome(version, ok=False)
    service.storage.usage_down = True
    with pytest.raises(ServerError) as failed:
        client.flush_usage()
    assert failed.value.status == 503
    assert usage(service) == {}
    service.storage.usage_down = False
    version.render(name="Ada")
    client.close()
    assert [len(items) for items in posts(service)] == [1, 1]  # the same key, summed
    assert usage(service) == {(1, "production", None, None): figures(renders=2, errors=1)}


def test_a_rollouts_arms_arrive_apart(make_client: MakeClient, service: Service) -> None:
    rollout_id = Operator(service).start(service.versions.v2, 50)
    client = make_client()
    served = Counter()
    for n in range(200):
        version = client.get_prompt_version("greeting", rollout_key=f"user-{n}")
        version.render(name="Ada", place="here")
        client.record_outcome(version, ok=version.version == 1)
        served[version.version] += 1
    client.close()
    assert usage(service) == {
        (1, "production", rollout_id, "baseline"): figures(renders=served[1], ok=served[1]),
        (2, "production", rollout_id, "candidate"): figures(renders=served[2], errors=served[2]),
    }
