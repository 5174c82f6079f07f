"""Gradual rollouts through the API with real tokens: started by a promotion or a review
with rollout_percent, stepped, completed and aborted; environment reads that carry the
rollout and assign rollout keys by the sticky hash (checked against the formula written
out here, not the service's own function); what a rollout blocks; every refusal a 4xx
in the contract's shape."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from tests.api.conftest import Api, Tokens
from tests.api.test_api_people import person_headers
from tests.identity.people_support import PASSWORD

PROMPT = "/api/v1/prompts/greeting"
ROLLOUT = f"{PROMPT}/rollouts/production"
PUBLIC = "https://93.184.215.14/hooks"  # a public address literal: no DNS needed
# What a rollout's read adds while nothing was reported and no guard set (docs/usage.md).
NOTHING = {"renders": 0, "ok": 0, "errors": 0, "score_avg": None}
GUARDED = {"guard": None, "arms": {"baseline": NOTHING, "candidate": NOTHING}}


def gets_candidate(rollout_id: str, key: str, percent: int) -> bool:
    """The formula of docs/api.md section 18, spelled out apart from the service's."""
    digest = hashlib.sha256(f"{rollout_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10000 < percent * 100


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["error"] == code and body["message"]
    return body


@pytest.fixture
def prompt(api: Api) -> Api:
    """greeting v1 in production and staging, drafts v2 and v3."""
    api.create_prompt("greeting")
    for text in ["one", "two", "three"]:
        api.create_version("greeting", text)
    api.post("/api/v1/environments", json={"name": "staging"})
    api.promote("greeting", 1)
    api.promote("greeting", 1, json={"environment": "staging"})
    return api


def start(api: Api, version: int = 2, percent: int = 10, **body: Any) -> dict[str, Any]:
    r = api.post(f"{PROMPT}/versions/{version}/promote", json={"rollout_percent": percent, **body})
    assert r.status_code == 201, r.json
    started: dict[str, Any] = r.json
    return started


def test_promote_with_a_percent_starts_a_rollout(prompt: Api, tokens: Tokens) -> None:
    rollout = start(prompt)
    assert rollout["rollout_id"].startswith("ro_")
    assert rollout["environment"] == "production"
    assert (rollout["baseline_version"], rollout["candidate_version"]) == (1, 2)
    assert rollout["percent"] == 10
    assert rollout["started_by"] == tokens.user_ids[("acme", "Service Admin")]
    assert rollout["started_at"] == rollout["updated_at"]
    assert prompt.get(ROLLOUT, role=SERVICE_READ).json == {**rollout, **GUARDED}
    assert prompt.get(f"{PROMPT}/rollouts", role=SERVICE_READ).json == {"items": [rollout]}
    # Nothing else moved.
    assert prompt.get(f"{PROMPT}/versions/2").json["status"] == "draft"
    assert len(prompt.get(f"{PROMPT}/history").json["items"]) == 2
    event = prompt.get("/api/v1/events?after=0-0").json["items"][-1]
    assert event["type"] == "rollout.started"
    assert (event["rollout_id"], event["percent"], event["version"]) == (
        rollout["rollout_id"],
        10,
        2,
    )
    assert (event["previous_version"], event["environment"]) == (1, "production")


def test_a_rollout_names_who_started_it(prompt: Api, app: Flask) -> None:
    """started_by_name beside the id, as history's promoted_by_name (issue 30 item 12:
    the CLI printed a user id)."""
    rollout = start(prompt)
    keys = {key.user_id: key.client_id for key in app.extensions["identity"].list_keys("acme")}
    assert rollout["started_by_name"] == f"key {keys[rollout['started_by']]}"
    assert prompt.get(ROLLOUT, role=SERVICE_READ).json == {**rollout, **GUARDED}
    stepped = prompt.patch(ROLLOUT, json={"percent": 20})
    assert stepped.json["started_by_name"] == rollout["started_by_name"]
    assert (
        prompt.get(f"{PROMPT}/rollouts").json["items"][0]["started_by_name"]
        == (rollout["started_by_name"])
    )
    aborted = prompt.post(f"{ROLLOUT}/abort")
    assert aborted.json["started_by_name"] == rollout["started_by_name"]


def test_a_guarded_start(prompt: Api) -> None:
    body = {"rollout_percent": 10, "expected_version": 3}
    refused = error(prompt.post(f"{PROMPT}/versions/2/promote", json=body), 409, "conflict")
    assert refused["current_version"] == 1
    staged = start(prompt, 2, 20, environment="staging", expected_version=1)
    assert staged["environment"] == "staging"


@pytest.mark.parametrize("percent", [0, 100, -1, "10", True, 10.5])
def test_a_bad_percent_is_400(prompt: Api, percent: object) -> None:
    r = prompt.post(f"{PROMPT}/versions/2/promote", json={"rollout_percent": percent})
    body = error(r, 400, "bad_request")
    assert "rollout_percent" in body["errors"]


def test_refusals_to_start(prompt: Api) -> None:
    promote = f"{PROMPT}/versions/{{}}/promote"
    first = start(prompt)
    second = error(prompt.post(promote.format(3), json={"rollout_percent": 5}), 409, "conflict")
    assert second["rollout_id"] == first["rollout_id"]
    prompt.post("/api/v1/environments", json={"name": "qa"})
    empty = {"rollout_percent": 5, "environment": "qa"}
    assert (
        "needs a version"
        in error(prompt.post(promote.format(3), json=empty), 409, "conflict")["message"]
    )
    # Production's version is published, not a draft.
    error(
        prompt.post(promote.format(1), json={"rollout_percent": 5, "environment": "staging"}),
        409,
        "conflict",
    )
    error(prompt.post(promote.format(9), json={"rollout_percent": 5}), 404, "not_found")
    nowhere = {"rollout_percent": 5, "environment": "nope"}
    error(prompt.post(promote.format(3), json=nowhere), 404, "not_found")
    error(
        prompt.post(promote.format(3), json={"rollout_percent": 5}, role=SERVICE_READ),
        403,
        "forbidden",
    )
    prompt.patch("/api/v1/environments/staging", json={"required_approvals": 1})
    staged = {"rollout_percent": 5, "environment": "staging"}
    error(prompt.post(promote.format(3), json=staged), 409, "review_required")


def test_step_complete_and_abort(prompt: Api) -> None:
    rollout = start(prompt)
    stepped = prompt.patch(ROLLOUT, json={"percent": 50}, role=SERVICE_WRITE)
    assert stepped.status_code == 200, stepped.json
    assert stepped.json["percent"] == 50
    assert stepped.json["rollout_id"] == rollout["rollout_id"]
    guarded = prompt.patch(ROLLOUT, json={"percent": 60, "rollout_id": "ro_other"})
    error(guarded, 404, "not_found")
    for bad in [{"percent": 100}, {"percent": 0}, {}, {"percent": "5"}, {"percent": 5, "x": 1}]:
        error(prompt.patch(ROLLOUT, json=bad), 400, "bad_request")
    error(prompt.patch(ROLLOUT, json={"percent": 5}, role=SERVICE_READ), 403, "forbidden")
    error(prompt.post(f"{ROLLOUT}/complete", role=SERVICE_READ), 403, "forbidden")
    error(prompt.post(f"{ROLLOUT}/abort", role=SERVICE_READ), 403, "forbidden")
    done = prompt.post(
        f"{ROLLOUT}/complete",
        json={"notes": "all good", "rollout_id": rollout["rollout_id"]},
        role=SERVICE_WRITE,
    )
    assert done.status_code == 200, done.json
    assert done.json["version"]["version"] == 2
    assert done.json["version"]["status"] == "published"
    assert done.json["promotion"]["rollout_id"] == rollout["rollout_id"]
    assert done.json["promotion"]["notes"] == "all good"
    history = prompt.get(f"{PROMPT}/history").json["items"][0]
    assert history.items() >= done.json["promotion"].items()
    assert prompt.get(f"{PROMPT}/versions/1").json["status"] == "archived"
    error(prompt.get(ROLLOUT), 404, "not_found")
    error(prompt.post(f"{ROLLOUT}/complete"), 404, "not_found")
    error(prompt.post(f"{ROLLOUT}/abort"), 404, "not_found")
    types = [e["type"] for e in prompt.get("/api/v1/events?after=0-0").json["items"]][-4:]
    assert types == ["rollout.started", "rollout.updated", "version.promoted", "rollout.completed"]

    again = start(prompt, 3, 20)
    aborted = prompt.post(f"{ROLLOUT}/abort", role=SERVICE_WRITE)
    assert aborted.status_code == 200, aborted.json
    assert aborted.json["rollout_id"] == again["rollout_id"]
    assert prompt.get(f"{PROMPT}/production").json["version"] == 2
    assert "rollout" not in prompt.get(f"{PROMPT}/production").json


def test_keep_the_baseline_as_a_draft(prompt: Api) -> None:
    start(prompt)
    body = {"archive_previous_production": False}
    assert prompt.post(f"{ROLLOUT}/complete", json=body).status_code == 200
    assert prompt.get(f"{PROMPT}/versions/1").json["status"] == "draft"


def test_lookups_are_404(prompt: Api) -> None:
    error(prompt.get(ROLLOUT), 404, "not_found")
    error(prompt.get("/api/v1/prompts/nope/rollouts/production"), 404, "not_found")
    error(prompt.get("/api/v1/prompts/nope/rollouts"), 404, "not_found")
    error(prompt.get(f"{PROMPT}/rollouts/nope"), 404, "not_found")
    error(prompt.patch(f"{PROMPT}/rollouts/nope", json={"percent": 5}), 404, "not_found")
    start(prompt)
    error(prompt.get(ROLLOUT, org="globex"), 404, "not_found")


def test_a_rollout_blocks_promotion_and_rollback_there(prompt: Api) -> None:
    rollout = start(prompt, 2, 10, environment="staging")
    staging = f"{PROMPT}/rollouts/staging"
    body = {"environment": "staging"}
    blocked = error(prompt.post(f"{PROMPT}/versions/3/promote", json=body), 409, "conflict")
    assert (blocked["rollout_id"], blocked["reason"]) == (rollout["rollout_id"], "rollout_running")
    assert "abort" in blocked["message"]
    error(prompt.post(f"{PROMPT}/rollback", json=body), 409, "conflict")
    candidate = prompt.patch(f"{PROMPT}/versions/2", json={"content": "changed"})
    assert error(candidate, 409, "conflict")["reason"] == "frozen"
    # Production is free.
    assert prompt.post(f"{PROMPT}/versions/3/promote").status_code == 200
    # Archiving the candidate ends the rollout.
    assert prompt.post(f"{PROMPT}/versions/2/archive").status_code == 200
    error(prompt.get(staging), 404, "not_found")
    assert prompt.get("/api/v1/events?after=0-0").json["items"][-1]["type"] == "rollout.aborted"


def test_deleting_the_environment_ends_its_rollouts(prompt: Api) -> None:
    start(prompt, 2, 10, environment="staging")
    assert prompt.delete("/api/v1/environments/staging").status_code == 204
    assert prompt.get(f"{PROMPT}/rollouts").json == {"items": []}
    assert prompt.get("/api/v1/events?after=0-0").json["items"][-1]["type"] == "rollout.aborted"


# --------------------------------------------------------------------------- reads


@pytest.mark.parametrize("path", ["production", "environments/production"])
def test_reads_carry_the_rollout(prompt: Api, path: str) -> None:
    url = f"{PROMPT}/{path}"
    before = prompt.get(url, role=SERVICE_READ)
    assert "rollout" not in before.json
    rollout = start(prompt)
    candidate = prompt.get(f"{PROMPT}/versions/2").json
    read = prompt.get(url, role=SERVICE_READ)
    assert read.status_code == 200
    assert read.json == {
        **before.json,
        "rollout": {"rollout_id": rollout["rollout_id"], "percent": 10, "candidate": candidate},
    }
    assert read.headers["ETag"] != before.headers["ETag"]
    again = prompt.get(url, role=SERVICE_READ, headers={"If-None-Match": read.headers["ETag"]})
    assert again.status_code == 304
    # The percent is part of the answer, so of the ETag.
    prompt.patch(ROLLOUT, json={"percent": 20})
    stepped = prompt.get(url, headers={"If-None-Match": read.headers["ETag"]})
    assert stepped.status_code == 200 and stepped.json["rollout"]["percent"] == 20
    # An empty key is no key.
    assert prompt.get(url + "?rollout_key=").json == stepped.json
    prompt.post(f"{ROLLOUT}/abort")
    ended = prompt.get(url, headers={"If-None-Match": stepped.headers["ETag"]})
    assert ended.status_code == 200 and "rollout" not in ended.json
    assert ended.headers["ETag"] == before.headers["ETag"]


def test_keys_are_assigned_by_the_sticky_hash(prompt: Api) -> None:
    rollout = start(prompt, 2, 10, environment="staging")
    rid = rollout["rollout_id"]
    url = f"{PROMPT}/environments/staging?rollout_key="
    keys = [f"user-{i}" for i in range(1000)]
    by_percent: dict[int, set[str]] = {}
    for percent in (10, 35):
        prompt.patch(f"{PROMPT}/rollouts/staging", json={"percent": percent})
        got = set()
        for key in keys:
            body = prompt.get(url + key, role=SERVICE_READ).json
            assert body["rollout"]["percent"] == percent
            expected = gets_candidate(rid, key, percent)
            assert body["version"] == (2 if expected else 1), key
            if body["version"] == 2:
                got.add(key)
        by_percent[percent] = got
    # Raising the percent only moves keys from the baseline to the candidate, and the
    # shares are what the percent says (within sampling noise).
    assert by_percent[10] <= by_percent[35]
    assert 50 <= len(by_percent[10]) <= 150
    assert 280 <= len(by_percent[35]) <= 420


def test_an_escaped_key_is_the_key(prompt: Api) -> None:
    rollout = start(prompt, 2, 50)
    for key in ["tenant 7/é", "a&b=c", "x" * 300]:
        body = prompt.get(f"{PROMPT}/production?rollout_key={quote(key)}").json
        expected = gets_candidate(rollout["rollout_id"], key, 50)
        assert body["version"] == (2 if expected else 1), key


# --------------------------------------------------------------------------- reviews


@pytest.fixture
def heads(app: Flask) -> dict[str, dict[str, str]]:
    identity = app.extensions["identity"]
    for username in ("ada", "bob"):
        identity.create_user("acme", username, SERVICE_WRITE, PASSWORD)
    return {name: person_headers(app, name) for name in ("ada", "bob")}


def test_a_review_with_a_percent_starts_a_rollout(
    prompt: Api, heads: dict[str, dict[str, str]]
) -> None:
    prompt.patch("/api/v1/environments/production", json={"required_approvals": 1})
    body = {"version": 2, "environment": "production", "rollout_percent": 25}
    opened = prompt.post(f"{PROMPT}/reviews", json=body, role=None, headers=heads["ada"])
    assert opened.status_code == 201, opened.json
    assert opened.json["rollout_percent"] == 25
    rid = opened.json["review_id"]
    approved = prompt.post(f"/api/v1/reviews/{rid}/approve", role=None, headers=heads["bob"])
    assert approved.status_code == 200 and approved.json["status"] == "applied"
    rollout = prompt.get(ROLLOUT).json
    assert (rollout["candidate_version"], rollout["percent"]) == (2, 25)
    assert prompt.get(f"{PROMPT}/production").json["rollout"]["rollout_id"] == rollout["rollout_id"]
    # Stepping and completing need no review in the protected environment.
    assert prompt.patch(ROLLOUT, json={"percent": 75}).status_code == 200
    assert prompt.post(f"{ROLLOUT}/complete").status_code == 200
    assert prompt.get(f"{PROMPT}/production").json["version"] == 2


def test_webhooks_can_subscribe_to_rollout_events(prompt: Api, app: Flask) -> None:
    events = ["rollout.started", "rollout.updated", "rollout.completed", "rollout.aborted"]
    made = prompt.post("/api/v1/webhooks", json={"url": PUBLIC, "events": events})
    assert made.status_code == 201, made.json
    rollout = start(prompt)
    prompt.patch(ROLLOUT, json={"percent": 30})
    prompt.post(f"{ROLLOUT}/complete")
    storage = app.extensions["promptsvc.storage"]
    tasks = storage.claim_deliveries("acme", "test", 10, 60.0)
    assert [(t.event_type, t.payload["percent"]) for t in tasks] == [
        ("rollout.started", 10),
        ("rollout.updated", 30),
        ("rollout.completed", 30),
    ]
    assert {t.payload["rollout_id"] for t in tasks} == {rollout["rollout_id"]}


# --------------------------------------------------------------------------- contracts


def test_the_promotion_check_at_start_and_completion(api: Api) -> None:
    api.create_prompt("greeting")
    api.create_version("greeting", "Hi {{name}}")
    api.create_version("greeting", "Hi {{name}}, {{count}} new")  # count: newly required
    api.promote("greeting", 1)
    promote = f"{PROMPT}/versions/2/promote"
    refused = error(api.post(promote, json={"rollout_percent": 10}), 409, "breaking_change")
    assert [c["change"] for c in refused["changes"]] == ["newly_required"]
    unexplained = {"rollout_percent": 10, "allow_breaking": True}
    error(api.post(promote, json=unexplained), 400, "bad_request")
    acknowledged = {**unexplained, "notes": "callers send count"}
    started = api.post(promote, json=acknowledged)
    assert started.status_code == 201, started.json
    # The completion acknowledges again; until then the rollout goes on.
    error(api.post(f"{ROLLOUT}/complete"), 409, "breaking_change")
    assert api.get(ROLLOUT).json["rollout_id"] == started.json["rollout_id"]
    error(api.post(f"{ROLLOUT}/complete", json={"allow_breaking": True}), 400, "bad_request")
    done = api.post(f"{ROLLOUT}/complete", json={"allow_breaking": True, "notes": "done"})
    assert done.status_code == 200, done.json
    assert done.json["promotion"]["breaking"] is True
    assert done.json["promotion"]["rollout_id"] == started.json["rollout_id"]
