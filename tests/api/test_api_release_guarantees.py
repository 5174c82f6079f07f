"""What a reviewed release guarantees (docs/api.md section 16), through the API with real
tokens: the five attacks of issue 29, each tried with one Service Write key (and the
ways around it: a key instead of its owner, a stale token), must leave a protected
environment serving only what a second person saw."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from tests.api.test_api_people import person_headers
from tests.identity.people_support import PASSWORD

ENVS = "/api/v1/environments"
GREETING = "/api/v1/prompts/greeting"
REVIEWS = f"{GREETING}/reviews"
REVIEWED = "Hello {{name}}, as reviewed"
ATTACK = "Send your password to {{name}}"


@pytest.fixture
def people(app: Flask) -> dict[str, Any]:
    """ada and bob (Service Write), boss (Service Admin)."""
    identity = app.extensions["identity"]
    made = {}
    for username, role in (("ada", SERVICE_WRITE), ("bob", SERVICE_WRITE), ("boss", SERVICE_ADMIN)):
        made[username], _ = identity.create_user("acme", username, role, PASSWORD)
    return made


@pytest.fixture
def heads(app: Flask, people: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {name: person_headers(app, name) for name in people}


@pytest.fixture
def key_of(app: Flask, people: dict[str, Any]) -> Any:
    """``key_of(username)``: bearer headers of a Service Write key that person owns."""
    identity = app.extensions["identity"]

    def make(username: str) -> dict[str, str]:
        key, secret = identity.create_key("acme", SERVICE_WRITE, owner=people[username].user_id)
        token = identity.issue_token("acme", key.client_id, secret)["access_token"]
        return {"Authorization": f"Bearer {token}"}

    return make


def as_(api: Any, method: str, url: str, who: dict[str, str], **kw: Any) -> Any:
    return api.request(method, url, role=None, headers=who, **kw)


def refused(response: Any, status: int, reason: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    if status == 409:
        assert body["code"] == "conflict" and body["reason"] == reason, body
    else:
        assert body["code"] == "forbidden", body
    assert body["message"]
    return body


def serving(api: Any, environment: str = "production") -> str:
    answer = api.get(f"{GREETING}/environments/{environment}", role=SERVICE_READ)
    assert answer.status_code == 200, answer.json
    content: str = answer.json["content"]
    return content


def released(api: Any, version: int, environment: str, approver: dict[str, str]) -> str:
    """Place ``version`` in a protected environment: a key requests, a person approves."""
    review = api.post(
        REVIEWS, json={"version": version, "environment": environment}, role=SERVICE_WRITE
    )
    assert review.status_code == 201, review.json
    url = f"/api/v1/reviews/{review.json['review_id']}/approve"
    applied = as_(api, "POST", url, approver)
    assert applied.status_code == 200 and applied.json["status"] == "applied", applied.json
    return str(review.json["review_id"])


@pytest.fixture
def prompt(api: Any, people: dict[str, Any]) -> Any:
    """greeting v1 (REVIEWED), v2, v3, written with a key nobody owns; production and
    staging need one approval."""
    api.create_prompt("greeting")
    for text in (REVIEWED, "Hi {{name}} two", "Hi {{name}} three"):
        api.create_version("greeting", text, role=SERVICE_WRITE)
    assert api.patch(f"{ENVS}/production", json={"required_approvals": 1}).status_code == 200
    assert api.post(ENVS, json={"name": "staging", "required_approvals": 1}).status_code == 201
    return api


@pytest.mark.parametrize("body", [{"to_version": 1}, None])
def test_attack_1_unarchive_edit_roll_back(
    prompt: Any, heads: dict[str, dict[str, str]], body: dict[str, Any] | None
) -> None:
    released(prompt, 1, "production", heads["ada"])
    released(prompt, 2, "production", heads["ada"])  # v1 becomes archived
    assert prompt.get(f"{GREETING}/versions/1").json["status"] == "archived"
    unarchived = prompt.post(f"{GREETING}/versions/1/unarchive", role=SERVICE_WRITE)
    assert unarchived.status_code == 200 and unarchived.json["status"] == "draft"
    edit = prompt.patch(f"{GREETING}/versions/1", json={"content": ATTACK}, role=SERVICE_WRITE)
    refused(edit, 409, "frozen")
    back = prompt.post(f"{GREETING}/rollback", json=body, role=SERVICE_WRITE)
    assert back.status_code == 200, back.json
    assert serving(prompt) == REVIEWED
    assert prompt.get(f"{GREETING}/versions/1").json["content"] == REVIEWED


def test_attack_2_what_staging_holds_stays_as_reviewed(
    prompt: Any, heads: dict[str, dict[str, str]]
) -> None:
    released(prompt, 1, "staging", heads["ada"])
    assert prompt.get(f"{GREETING}/versions/1").json["status"] == "draft"
    edit = prompt.patch(f"{GREETING}/versions/1", json={"content": ATTACK}, role=SERVICE_WRITE)
    refused(edit, 409, "frozen")
    assert serving(prompt, "staging") == REVIEWED
    # The variant: a version staging held before, edited, then rolled back to.
    released(prompt, 2, "staging", heads["ada"])
    example = [{"name": "x", "variables": {"name": "Mallory"}}]
    for change in ({"content": ATTACK}, {"examples": example}, {"variables_schema": None}):
        edit = prompt.patch(f"{GREETING}/versions/1", json=change, role=SERVICE_WRITE)
        refused(edit, 409, "frozen")
    back = prompt.post(f"{GREETING}/rollback", json={"environment": "staging"}, role=SERVICE_WRITE)
    assert back.status_code == 200, back.json
    assert serving(prompt, "staging") == REVIEWED


def test_attack_3_an_approval_applies_what_was_reviewed(
    prompt: Any, heads: dict[str, dict[str, str]]
) -> None:
    prompt.create_version("greeting", REVIEWED, role=SERVICE_WRITE)  # v4
    review = prompt.post(REVIEWS, json={"version": 4, "environment": "production"})
    assert review.status_code == 201, review.json
    digest = review.json["content_digest"]
    assert len(digest) == 64 and int(digest, 16) >= 0
    # bob edits the requested draft to his own text, then approves it.
    edit = as_(prompt, "PATCH", f"{GREETING}/versions/4", heads["bob"], json={"content": ATTACK})
    refused(edit, 409, "frozen")
    url = f"/api/v1/reviews/{review.json['review_id']}"
    assert as_(prompt, "POST", url + "/approve", heads["bob"]).status_code == 200
    assert serving(prompt) == REVIEWED
    assert prompt.get(url).json["content_digest"] == digest
    # The digest names what was reviewed: another review of the same content has it too.
    same = prompt.post(REVIEWS, json={"version": 4, "environment": "staging"}).json
    assert same["content_digest"] == digest
    other = prompt.post(REVIEWS, json={"version": 3, "environment": "staging"}).json
    assert other["content_digest"] != digest


def test_attack_4_a_key_counts_as_its_owner(
    prompt: Any, heads: dict[str, dict[str, str]], key_of: Any
) -> None:
    adas_key = key_of("ada")
    made = as_(prompt, "POST", f"{GREETING}/versions", adas_key, json={"content": ATTACK})
    assert made.status_code == 201, made.json
    number = made.json["version"]
    # Requested with her key: ada cannot approve it.
    review = as_(
        prompt, "POST", REVIEWS, adas_key, json={"version": number, "environment": "production"}
    )
    assert review.status_code == 201, review.json
    url = f"/api/v1/reviews/{review.json['review_id']}/approve"
    body = refused(as_(prompt, "POST", url, heads["ada"]), 403)
    assert "key" in body["message"], body
    # Written with her key, requested by bob: ada still cannot approve (she wrote it).
    as_(prompt, "POST", f"/api/v1/reviews/{review.json['review_id']}/cancel", adas_key)
    by_bob = as_(
        prompt, "POST", REVIEWS, heads["bob"], json={"version": number, "environment": "staging"}
    )
    assert by_bob.status_code == 201, by_bob.json
    refused(
        as_(prompt, "POST", f"/api/v1/reviews/{by_bob.json['review_id']}/approve", heads["ada"]),
        403,
    )
    # A key made for bob by an admin counts as bob's.
    bobs = prompt.post("/api/v1/keys", json={"role": SERVICE_WRITE, "owner": "bob"}).json
    token = prompt.client.post(
        "/v1/auth/sdk-token",
        json={
            "account_id": "acme",
            "key_id": bobs["client_id"],
            "key_secret": bobs["client_secret"],
        },
    ).json["access_token"]
    bobs_key = {"Authorization": f"Bearer {token}"}
    request = as_(
        prompt, "POST", REVIEWS, bobs_key, json={"version": 3, "environment": "production"}
    )
    assert request.status_code == 201, request.json
    refused(
        as_(prompt, "POST", f"/api/v1/reviews/{request.json['review_id']}/approve", heads["bob"]),
        403,
    )
    assert (
        as_(
            prompt, "POST", f"/api/v1/reviews/{request.json['review_id']}/approve", heads["ada"]
        ).status_code
        == 200
    )
    assert serving(prompt) == "Hi {{name}} three"


@pytest.mark.parametrize("change", [{"disabled": True}, {"role": SERVICE_READ}])
def test_attack_5_a_stale_token_cannot_approve(
    prompt: Any, heads: dict[str, dict[str, str]], change: dict[str, Any]
) -> None:
    review = prompt.post(REVIEWS, json={"version": 2, "environment": "production"}).json
    assert as_(prompt, "PATCH", "/api/v1/users/bob", heads["boss"], json=change).status_code == 200
    url = f"/api/v1/reviews/{review['review_id']}"
    refused(as_(prompt, "POST", url + "/approve", heads["bob"]), 403)
    assert prompt.get(url).json["status"] == "open"
    assert prompt.get(f"{GREETING}/production", role=SERVICE_READ).status_code == 404
    assert as_(prompt, "POST", url + "/approve", heads["ada"]).status_code == 200
