"""Usage and guarded rollouts through the API (docs/usage.md): reports counted per
bucket and read back, every bad report a 400, unknown prompts and versions skipped; a
guard set at the start (promote, review) or by PATCH, shown with the arms; a guard's
abort with its figures in the event, a person's abort manual."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.api.conftest import Api
from tests.api.test_api_people import person_headers
from tests.api.test_api_rollouts import PROMPT, PUBLIC, ROLLOUT, error, start
from tests.identity.people_support import PASSWORD

USAGE = "/api/v1/usage"
GUARD = {"metric": "error_rate", "threshold": 0.1, "min_samples": 10}


@pytest.fixture
def prompt(api: Api) -> dict[str, Any]:
    """greeting: v1 in production, draft v2."""
    created = api.create_prompt("greeting")
    api.create_version("greeting", "one")
    api.create_version("greeting", "two")
    api.promote("greeting", 1)
    return created


def report(api: Api, *items: dict[str, Any], status: int = 202) -> dict[str, Any]:
    r = api.post(USAGE, json={"items": list(items)}, role=SERVICE_READ)
    assert r.status_code == status, r.json
    body: dict[str, Any] = r.json
    return body


def item(prompt_id: str, version: int = 1, **counts: Any) -> dict[str, Any]:
    return {"prompt_id": prompt_id, "version": version, **counts}


def test_reports_are_counted_and_read_by_bucket(api: Api, prompt: dict[str, Any]) -> None:
    pid = prompt["prompt_id"]
    answer = report(
        api,
        item(
            pid, environment="production", renders=3, ok=2, errors=1, score_sum=1.5, score_count=2
        ),
        item(pid, environment="production", renders=1),
        item(pid, 2, renders=4),
        item(pid, 9, renders=1),
        item("pmt_" + "0" * 32, renders=1),
    )
    assert answer == {"accepted": 3, "skipped": 2}
    found = api.get(f"{PROMPT}/usage", role=SERVICE_READ)
    assert found.status_code == 200, found.json
    rows = found.json["items"]
    assert [(r["version"], r["environment"], r["renders"], r["ok"], r["errors"]) for r in rows] == [
        (1, "production", 4, 2, 1),
        (2, None, 4, 0, 0),
    ]
    assert rows[0]["score_avg"] == 0.75 and rows[1]["score_avg"] is None
    assert rows[0]["rollout_id"] is None and rows[0]["arm"] is None
    assert rows[0]["bucket_start"].endswith(":00:00.000000Z")
    daily = api.get(f"{PROMPT}/usage?bucket=day", role=SERVICE_READ).json["items"]
    assert daily[0]["bucket_start"].endswith("T00:00:00.000000Z")
    assert [r["renders"] for r in daily] == [4, 4]
    # Before the reports: nothing.
    past = api.get(
        f"{PROMPT}/usage?since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z", role=SERVICE_READ
    )
    assert past.status_code == 200 and past.json["items"] == []
    # Another org's reports name prompts it lacks.
    other = api.post(USAGE, json={"items": [item(pid, renders=1)]}, role=SERVICE_READ, org="other")
    assert other.json == {"accepted": 0, "skipped": 1}


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"items": "x"},
        {"items": [{"version": 1}]},
        {"items": [{"prompt_id": "pmt_1"}]},
        {"items": [{"prompt_id": "pmt_1", "version": 0}]},
        {"items": [{"prompt_id": "pmt_1", "version": 2**63}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "renders": -1}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "renders": 10**9 + 1}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "renders": 1.5}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "score_sum": 2, "score_count": 1}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "arm": "other"}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "rollout_id": "x\u0000"}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "environment": "Prod"}]},
        {"items": [{"prompt_id": "p" * 41, "version": 1}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1, "extra": 1}]},
        {"items": [{"prompt_id": "pmt_1", "version": 1}] * 501},
    ],
)
def test_bad_reports_are_400(api: Api, prompt: dict[str, Any], bad: dict[str, Any]) -> None:
    error(api.post(USAGE, json=bad, role=SERVICE_READ), 400, "bad_request")


def test_usage_needs_a_token_and_a_known_prompt(api: Api, prompt: dict[str, Any]) -> None:
    error(api.post(USAGE, json={"items": []}, role=None), 401, "unauthorized")
    error(api.get(f"{PROMPT}/usage", role=None), 401, "unauthorized")
    error(api.get("/api/v1/prompts/nothing/usage", role=SERVICE_READ), 404, "not_found")
    for query in ["bucket=week", "since=yesterday", "since=2026-01-02T00:00:00"]:
        error(api.get(f"{PROMPT}/usage?{query}", role=SERVICE_READ), 400, "bad_request")
    backwards = "since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z"
    error(api.get(f"{PROMPT}/usage?{backwards}", role=SERVICE_READ), 400, "bad_request")


def arm_items(pid: str, rollout_id: str, base: tuple[int, int], cand: tuple[int, int]) -> list[Any]:
    return [
        item(pid, 1, environment="production", rollout_id=rollout_id, arm="baseline",
             renders=sum(base), ok=base[0], errors=base[1]),
        item(pid, 2, environment="production", rollout_id=rollout_id, arm="candidate",
             renders=sum(cand), ok=cand[0], errors=cand[1]),
    ]  # fmt: skip


def test_a_guard_set_at_the_start_is_shown_with_the_arms(api: Api, prompt: dict[str, Any]) -> None:
    rollout = start(api, rollout_guard=GUARD)
    shown = api.get(ROLLOUT, role=SERVICE_READ).json
    assert shown["guard"] == GUARD
    empty = {"renders": 0, "ok": 0, "errors": 0, "score_avg": None}
    assert shown["arms"] == {"baseline": empty, "candidate": empty}
    # Within the threshold: the rollout goes on.
    report(api, *arm_items(prompt["prompt_id"], rollout["rollout_id"], (19, 1), (17, 3)))
    shown = api.get(ROLLOUT, role=SERVICE_READ).json
    assert shown["arms"]["baseline"] == {"renders": 20, "ok": 19, "errors": 1, "score_avg": None}
    assert shown["arms"]["candidate"]["errors"] == 3
    error(
        api.post(f"{PROMPT}/versions/2/promote", json={"rollout_guard": GUARD}), 400, "bad_request"
    )


def test_a_guard_aborts_a_worse_candidate_once(api: Api, prompt: dict[str, Any]) -> None:
    rollout = start(api, rollout_guard=GUARD)
    rid, pid = rollout["rollout_id"], prompt["prompt_id"]
    # Too few outcomes in the candidate's arm: no decision yet.
    report(api, *arm_items(pid, rid, (20, 0), (0, 9)))
    assert api.get(ROLLOUT, role=SERVICE_READ).status_code == 200
    report(api, *arm_items(pid, rid, (0, 0), (0, 1)))
    error(api.get(ROLLOUT, role=SERVICE_READ), 404, "not_found")
    assert api.get(f"{PROMPT}/production", role=SERVICE_READ).json["version"] == 1
    report(api, *arm_items(pid, rid, (0, 0), (0, 5)))  # after the end: counted, no new abort
    events = api.get("/api/v1/events?after=0-0&limit=200", role=SERVICE_READ).json["items"]
    (aborted,) = [e for e in events if e["type"] == "rollout.aborted"]
    assert aborted["reason"] == "guard" and aborted["actor"] is None
    assert aborted["guard"] == {
        "metric": "error_rate",
        "threshold": 0.1,
        "baseline": 0.0,
        "candidate": 1.0,
        "samples": 10,
    }


def test_a_guard_set_by_patch_is_checked_at_once(api: Api, prompt: dict[str, Any]) -> None:
    rollout = start(api)
    rid, pid = rollout["rollout_id"], prompt["prompt_id"]
    assert api.get(ROLLOUT, role=SERVICE_READ).json["guard"] is None
    score = {"metric": "score", "threshold": 0.2, "min_samples": 10}
    set_ = api.patch(ROLLOUT, json={"guard": score}, role=SERVICE_WRITE)
    assert set_.status_code == 200, set_.json
    assert set_.json["guard"] == score and set_.json["percent"] == 10
    both = api.patch(ROLLOUT, json={"guard": None, "percent": 20}, role=SERVICE_WRITE)
    assert both.json["guard"] is None and both.json["percent"] == 20
    error(api.patch(ROLLOUT, json={"guard": score}, role=SERVICE_READ), 403, "forbidden")
    for bad in [
        {"metric": "latency", "threshold": 0.1},
        {"metric": "score", "threshold": 2},
        {"metric": "score", "threshold": 0.1, "min_samples": 9},
        {"metric": "score"},
    ]:
        error(api.patch(ROLLOUT, json={"guard": bad}), 400, "bad_request")
    scored = [
        item(pid, 1, environment="production", rollout_id=rid, arm="baseline", ok=10,
             score_sum=9.0, score_count=10),
        item(pid, 2, environment="production", rollout_id=rid, arm="candidate", ok=10,
             score_sum=5.0, score_count=10),
    ]  # fmt: skip
    report(api, *scored)
    assert api.get(ROLLOUT, role=SERVICE_READ).json["arms"]["candidate"]["score_avg"] == 0.5
    api.patch(ROLLOUT, json={"guard": score}, role=SERVICE_WRITE)
    error(api.get(ROLLOUT, role=SERVICE_READ), 404, "not_found")
    events = api.get("/api/v1/events?after=0-0&limit=200", role=SERVICE_READ).json["items"]
    (aborted,) = [e for e in events if e["type"] == "rollout.aborted"]
    assert aborted["guard"]["metric"] == "score"
    assert (aborted["guard"]["baseline"], aborted["guard"]["candidate"]) == (0.9, 0.5)


def test_a_persons_abort_is_manual(api: Api, prompt: dict[str, Any]) -> None:
    rollout = start(api, rollout_guard=GUARD)
    api.post(f"{ROLLOUT}/abort", json={"rollout_id": rollout["rollout_id"]}, role=SERVICE_WRITE)
    events = api.get("/api/v1/events?after=0-0&limit=200", role=SERVICE_READ).json["items"]
    (aborted,) = [e for e in events if e["type"] == "rollout.aborted"]
    assert (aborted["reason"], aborted["guard"]) == ("manual", None)


def test_a_review_carries_the_guard_of_the_rollout_it_starts(
    api: Api, prompt: dict[str, Any], app: Flask
) -> None:
    identity = app.extensions["identity"]
    for username in ("ada", "bob"):
        identity.create_user("acme", username, SERVICE_WRITE, PASSWORD)
    heads = {name: person_headers(app, name) for name in ("ada", "bob")}
    api.patch("/api/v1/environments/production", json={"required_approvals": 1})
    body = {"version": 2, "environment": "production", "rollout_percent": 25}
    unrolled = {**body, "rollout_percent": None, "rollout_guard": GUARD}
    error(api.post(f"{PROMPT}/reviews", json=unrolled), 400, "bad_request")
    opened = api.post(
        f"{PROMPT}/reviews", json={**body, "rollout_guard": GUARD}, role=None, headers=heads["ada"]
    )
    assert opened.status_code == 201, opened.json
    rid = opened.json["review_id"]
    approved = api.post(f"/api/v1/reviews/{rid}/approve", role=None, headers=heads["bob"])
    assert approved.status_code == 200, approved.json
    assert api.get(ROLLOUT, role=SERVICE_READ).json["guard"] == GUARD


def test_webhooks_get_the_guards_figures(api: Api, prompt: dict[str, Any], app: Flask) -> None:
    made = api.post("/api/v1/webhooks", json={"url": PUBLIC, "events": ["rollout.aborted"]})
    assert made.status_code == 201, made.json
    rollout = start(api, rollout_guard=GUARD)
    report(api, *arm_items(prompt["prompt_id"], rollout["rollout_id"], (10, 0), (5, 5)))
    storage = app.extensions["promptsvc.storage"]
    (task,) = storage.claim_deliveries("acme", "test", 10, 60.0)
    assert task.event_type == "rollout.aborted"
    assert task.payload["reason"] == "guard"
    assert task.payload["guard"]["candidate"] == 0.5 and task.payload["guard"]["samples"] == 10
