"""Reviews through the API with real tokens: a key or a person requests, only people
who are neither the requester nor the author approve or reject, the last approval
applies the promotion, and every refusal is a 4xx in the contract's shape."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from tests.api.test_api_people import person_headers
from tests.identity.people_support import PASSWORD

ENVS = "/api/v1/environments"
REVIEWS = "/api/v1/prompts/greeting/reviews"
PUBLIC = "https://93.184.215.14/hooks"  # a public address literal: no DNS needed


@pytest.fixture
def people(app: Flask) -> dict[str, Any]:
    """author, ada, bob (Service Write), boss (Service Admin), reader (Service Read)."""
    identity = app.extensions["identity"]
    made = {}
    for username, role in (
        ("author", SERVICE_WRITE),
        ("ada", SERVICE_WRITE),
        ("bob", SERVICE_WRITE),
        ("boss", SERVICE_ADMIN),
        ("reader", SERVICE_READ),
    ):
        made[username], _ = identity.create_user("acme", username, role, PASSWORD)
    return made


@pytest.fixture
def heads(app: Flask, people: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {name: person_headers(app, name) for name in people}


@pytest.fixture
def prompt(api: Any, heads: dict[str, dict[str, str]]) -> Any:
    """greeting v1-v2 written by author; production needs 2 approvals, staging 1."""
    api.create_prompt("greeting")
    for text in ["one", "two"]:
        api.create_version("greeting", text, role=None, headers=heads["author"])
    api.patch(f"{ENVS}/production", json={"required_approvals": 2})
    api.post(ENVS, json={"name": "staging", "required_approvals": 1})
    return api


def as_(api: Any, method: str, url: str, who: dict[str, str], **kw: Any) -> Any:
    return api.request(method, url, role=None, headers=who, **kw)


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["error"] == code and body["message"]
    return body


def test_the_whole_flow(prompt: Any, heads: dict[str, dict[str, str]], people: Any) -> None:
    opened = prompt.post(
        REVIEWS, json={"version": 2, "environment": "production", "notes": "go"}, role=SERVICE_WRITE
    )
    assert opened.status_code == 201, opened.json
    review = opened.json
    assert (review["status"], review["expected_version"], review["required_approvals"]) == (
        "open",
        None,
        2,
    )
    rid = review["review_id"]
    url = f"/api/v1/reviews/{rid}"
    first = as_(prompt, "POST", url + "/approve", heads["ada"], json={"comment": "ok"})
    assert first.status_code == 200, first.json
    assert first.json["status"] == "open"
    assert first.json["approvals"][0]["username"] == "ada"
    assert first.json["approvals"][0]["user_id"] == people["ada"].user_id
    error(prompt.get("/api/v1/prompts/greeting/production"), 404, "not_found")
    last = as_(prompt, "POST", url + "/approve", heads["bob"])
    assert last.status_code == 200 and last.json["status"] == "applied"
    production = prompt.get("/api/v1/prompts/greeting/production").json
    assert production["version"] == 2 and production["environments"] == ["production"]
    record = prompt.get("/api/v1/prompts/greeting/history").json["items"][0]
    assert record["review_id"] == rid and record["notes"] == "go"
    assert record["approved_by"] == [people["ada"].user_id, people["bob"].user_id]
    assert prompt.get(url, role=SERVICE_READ).json == last.json
    listed = prompt.get("/api/v1/reviews?status=applied", role=SERVICE_READ).json
    assert [r["review_id"] for r in listed["items"]] == [rid] and listed["next_cursor"] is None
    assert prompt.get(REVIEWS, role=SERVICE_READ).json["items"][0]["review_id"] == rid
    error(as_(prompt, "POST", url + "/approve", heads["boss"]), 409, "conflict")
    types = [e["type"] for e in prompt.get("/api/v1/events?after=0-0").json["items"]]
    assert types[-5:] == [
        "review.requested",
        "review.approved",
        "review.approved",
        "version.promoted",
        "review.applied",
    ]


def test_reviews_name_their_people(prompt: Any, heads: dict[str, dict[str, str]]) -> None:
    """requested_by_name and rejected_by_name beside the ids, as history's
    promoted_by_name (issue 30 item 12: the CLI printed user ids)."""
    body = {"version": 2, "environment": "staging"}
    opened = as_(prompt, "POST", REVIEWS, heads["bob"], json=body)
    assert opened.status_code == 201, opened.json
    assert (opened.json["requested_by_name"], opened.json["rejected_by_name"]) == ("bob", None)
    url = f"/api/v1/reviews/{opened.json['review_id']}"
    rejected = as_(prompt, "POST", url + "/reject", heads["ada"], json={"comment": "no"})
    assert rejected.status_code == 200, rejected.json
    assert (rejected.json["requested_by_name"], rejected.json["rejected_by_name"]) == ("bob", "ada")
    assert prompt.get(url, role=SERVICE_READ).json == rejected.json
    for listing in ("/api/v1/reviews?status=rejected", REVIEWS):
        items = prompt.get(listing, role=SERVICE_READ).json["items"]
        assert [(r["requested_by_name"], r["rejected_by_name"]) for r in items] == [("bob", "ada")]


def test_the_two_person_rule(prompt: Any, heads: dict[str, dict[str, str]]) -> None:
    rid = as_(prompt, "POST", REVIEWS, heads["ada"], json={"version": 1, "environment": "staging"})
    rid = rid.json["review_id"]
    url = f"/api/v1/reviews/{rid}"
    key = error(prompt.post(url + "/approve", role=SERVICE_ADMIN), 403, "forbidden")
    assert "person" in key["message"]
    mine = error(as_(prompt, "POST", url + "/approve", heads["ada"]), 403, "forbidden")
    assert "you requested" in mine["message"]
    author = error(as_(prompt, "POST", url + "/approve", heads["author"]), 403, "forbidden")
    assert "you wrote version 1" in author["message"]
    error(as_(prompt, "POST", url + "/reject", heads["author"]), 403, "forbidden")
    error(as_(prompt, "POST", url + "/approve", heads["reader"]), 403, "forbidden")
    error(as_(prompt, "POST", url + "/cancel", heads["bob"]), 403, "forbidden")
    rejected = as_(prompt, "POST", url + "/reject", heads["bob"], json={"comment": "no"})
    assert rejected.status_code == 200
    assert (rejected.json["status"], rejected.json["rejection_comment"]) == ("rejected", "no")
    error(as_(prompt, "POST", url + "/cancel", heads["ada"]), 409, "conflict")


def test_approving_twice_and_stale(prompt: Any, heads: dict[str, dict[str, str]]) -> None:
    body = {"version": 2, "environment": "production"}
    rid = prompt.post(REVIEWS, json=body, role=SERVICE_WRITE).json["review_id"]
    url = f"/api/v1/reviews/{rid}"
    as_(prompt, "POST", url + "/approve", heads["ada"])
    error(as_(prompt, "POST", url + "/approve", heads["ada"]), 409, "conflict")
    # Production moves under the review (a rollback needs no review, so unprotect it).
    prompt.patch(f"{ENVS}/production", json={"required_approvals": 0})
    prompt.promote("greeting", 1)
    stale = error(as_(prompt, "POST", url + "/approve", heads["bob"]), 409, "conflict")
    assert stale["current_version"] == 1 and stale["review_id"] == rid
    assert prompt.get(url).json["status"] == "stale"
    assert prompt.get("/api/v1/prompts/greeting/production").json["version"] == 1


def test_bad_review_requests(prompt: Any, heads: dict[str, dict[str, str]]) -> None:
    body = {"version": 2, "environment": "staging"}
    first = prompt.post(REVIEWS, json=body, role=SERVICE_WRITE).json
    dup = error(prompt.post(REVIEWS, json=body, role=SERVICE_WRITE), 409, "conflict")
    assert dup["review_id"] == first["review_id"]
    error(prompt.post(REVIEWS, json={**body, "environment": "nope"}), 404, "not_found")
    error(prompt.post(REVIEWS, json={**body, "version": 9}), 404, "not_found")
    error(prompt.post("/api/v1/prompts/nope/reviews", json=body), 404, "not_found")
    for bad in [{"environment": "staging"}, {**body, "version": True}, {**body, "version": 0}]:
        error(prompt.post(REVIEWS, json=bad), 400, "bad_request")
    for percent in (0, 100, "10", True):
        bad_percent = {**body, "rollout_percent": percent}
        error(prompt.post(REVIEWS, json=bad_percent), 400, "bad_request")
    error(prompt.post(REVIEWS, json=body, role=SERVICE_READ), 403, "forbidden")
    by_id = prompt.get("/api/v1/prompts/greeting/versions/1").json["version_id"]
    second = prompt.post(REVIEWS, json={"version": by_id, "environment": "staging"})
    assert second.status_code == 201 and second.json["version"] == 1
    error(prompt.get("/api/v1/reviews/rv_nope"), 404, "not_found")
    error(
        prompt.post("/api/v1/reviews/rv_nope/approve", role=None, headers=heads["bob"]),
        404,
        "not_found",
    )
    error(prompt.get("/api/v1/reviews?status=bogus"), 400, "bad_request")
    error(prompt.get("/api/v1/reviews?limit=0"), 400, "bad_request")
    cancelled = prompt.post(f"/api/v1/reviews/{second.json['review_id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json["status"] == "cancelled"  # admin key
    other_org = prompt.get(f"/api/v1/reviews/{first['review_id']}", org="globex")
    error(other_org, 404, "not_found")


def test_webhooks_get_review_events(prompt: Any, app: Flask) -> None:
    made = prompt.post(
        "/api/v1/webhooks",
        json={"url": PUBLIC, "events": ["review.requested", "review.cancelled"]},
    )
    assert made.status_code == 201, made.json
    rid = prompt.post(REVIEWS, json={"version": 1, "environment": "staging"}).json["review_id"]
    prompt.post(f"/api/v1/reviews/{rid}/cancel")
    storage = app.extensions["promptsvc.storage"]
    tasks = storage.claim_deliveries("acme", "test", 10, 60.0)
    assert [(t.event_type, t.payload["review_id"]) for t in tasks] == [
        ("review.requested", rid),
        ("review.cancelled", rid),
    ]
    assert tasks[0].payload["environment"] == "staging" and tasks[0].payload["status"] == "open"


def test_deleting_an_environment_tells_webhooks_which_reviews_it_cancelled(
    prompt: Any, app: Flask, heads: dict[str, dict[str, str]], people: Any
) -> None:
    made = prompt.post("/api/v1/webhooks", json={"url": PUBLIC, "events": ["review.cancelled"]})
    assert made.status_code == 201, made.json
    first = prompt.post(REVIEWS, json={"version": 1, "environment": "staging"}).json
    second = prompt.post(REVIEWS, json={"version": 2, "environment": "staging"}).json
    kept = prompt.post(REVIEWS, json={"version": 1, "environment": "production"}).json
    deleted = as_(prompt, "DELETE", f"{ENVS}/staging", heads["boss"])
    assert deleted.status_code == 204
    storage = app.extensions["promptsvc.storage"]
    tasks = storage.claim_deliveries("acme", "test", 10, 60.0)
    assert [(t.event_type, t.payload["review_id"]) for t in tasks] == [
        ("review.cancelled", first["review_id"]),
        ("review.cancelled", second["review_id"]),
    ]
    for task in tasks:
        payload = task.payload
        assert (payload["environment"], payload["status"]) == ("staging", "cancelled")
        assert payload["actor"] == people["boss"].user_id and payload["request_id"]
    for review in (first, second):
        found = prompt.get(f"/api/v1/reviews/{review['review_id']}").json
        assert found["status"] == "cancelled" and found["decided_at"]
    assert prompt.get(f"/api/v1/reviews/{kept['review_id']}").json["status"] == "open"
    events = prompt.get("/api/v1/events?after=0-0&limit=100").json["items"]
    assert [e["review_id"] for e in events if e["type"] == "review.cancelled"] == [
        first["review_id"],
        second["review_id"],
    ]


def test_a_shared_policy_changed_through_a_review(api: Any, heads: dict[str, Any]) -> None:
    """docs/composition.md's worked example: a safety policy included by three prompts,
    changed through a review that lists the three."""
    api.patch(f"{ENVS}/production", json={"required_approvals": 1})
    api.create_prompt("safety-policy")
    api.create_version(
        "safety-policy", "Never share personal data.", role=None, headers=heads["author"]
    )
    for name in ("support-bot", "sales-bot", "onboarding"):
        api.create_prompt(name)
        api.create_version(
            name, f"You are {name}. {{{{> safety-policy}}}}", role=None, headers=heads["author"]
        )
    for name in ("safety-policy", "support-bot", "sales-bot", "onboarding"):
        review = as_(
            api,
            "POST",
            f"/api/v1/prompts/{name}/reviews",
            heads["author"],
            json={"version": 1, "environment": "production"},
        )
        assert review.status_code == 201, review.json
        approved = as_(
            api,
            "POST",
            f"/api/v1/reviews/{review.json['review_id']}/approve",
            heads["ada"],
            json={},
        )
        assert approved.status_code == 200, approved.json
    read = api.get("/api/v1/prompts/support-bot/production").json
    assert read["content"] == "You are support-bot. Never share personal data."
    api.create_version(
        "safety-policy", "Never share personal data or secrets.", role=None, headers=heads["author"]
    )
    review = as_(
        api,
        "POST",
        "/api/v1/prompts/safety-policy/reviews",
        heads["author"],
        json={"version": 2, "environment": "production"},
    )
    assert review.status_code == 201, review.json
    assert review.json["affected_prompts"] == ["onboarding", "sales-bot", "support-bot"]
    as_(api, "POST", f"/api/v1/reviews/{review.json['review_id']}/approve", heads["ada"], json={})
    for name in ("support-bot", "sales-bot", "onboarding"):
        read = api.get(f"/api/v1/prompts/{name}/production").json
        assert read["content"] == f"You are {name}. Never share personal data or secrets."
        assert read["includes"][0]["version"] == 2
