"""The ways around the roles of usage and guards (issues 29 and 33), through the API:
``POST /api/v1/usage``, ``GET .../usage`` and a rollout's guard (PATCH) refuse a role
too low, another org's key, no token or a forged one, a revoked key's new token, and a
stale token of a person since disabled or demoted (the guard checks the user's
current record, as an approval does)."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from tests.api.conftest import Api
from tests.api.test_api_people import person_headers
from tests.api.test_api_rollouts import PROMPT, ROLLOUT, error, start
from tests.api.test_api_usage import GUARD, arm_items, item, report
from tests.identity.people_support import PASSWORD

USAGE = "/api/v1/usage"
OTHER = "globex"


@pytest.fixture
def rollout(api: Api, app: Flask) -> dict[str, Any]:
    """acme's greeting: v1 in production, v2 rolled out to 10% under GUARD; globex has
    a prompt of the same name. ada (Service Write) is a person of acme."""
    created = api.create_prompt("greeting")
    api.create_version("greeting", "one")
    api.create_version("greeting", "two")
    api.promote("greeting", 1)
    api.create_prompt("greeting", org=OTHER)
    app.extensions["identity"].create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    return {**start(api, rollout_guard=GUARD), "prompt_id": created["prompt_id"]}


def guard_now(api: Api) -> Any:
    return api.get(ROLLOUT, role=SERVICE_READ).json["guard"]


def test_service_read_cannot_change_or_drop_a_guard(api: Api, rollout: dict[str, Any]) -> None:
    looser = {**GUARD, "threshold": 0.9}
    for body in ({"guard": None}, {"guard": looser}, {"guard": None, "percent": 50}):
        error(api.patch(ROLLOUT, json=body, role=SERVICE_READ), 403, "forbidden")
    assert guard_now(api) == GUARD
    assert api.get(ROLLOUT, role=SERVICE_READ).json["percent"] == 10


def test_no_token_or_a_forged_one_gets_nothing(api: Api, rollout: dict[str, Any]) -> None:
    forged = {"Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."}
    for headers in ({}, forged):
        calls = [
            api.post(USAGE, json={"items": [item(rollout["prompt_id"])]}, role=None,
                     headers=headers),
            api.get(f"{PROMPT}/usage", role=None, headers=headers),
            api.patch(ROLLOUT, json={"guard": None}, role=None, headers=headers),
        ]  # fmt: skip
        for answer in calls:
            error(answer, 401, "unauthorized")
    assert guard_now(api) == GUARD


def test_another_orgs_key_cannot_read_record_or_abort(api: Api, rollout: dict[str, Any]) -> None:
    pid, rid = rollout["prompt_id"], rollout["rollout_id"]
    # Its own "greeting" has no usage: acme's is not what it reads.
    theirs = api.get(f"{PROMPT}/usage", role=SERVICE_READ, org=OTHER)
    assert theirs.status_code == 200 and theirs.json["items"] == []
    error(api.get(f"/api/v1/prompts/{pid}/usage", role=SERVICE_READ, org=OTHER), 404, "not_found")
    # A report naming acme's prompt and rollout, with figures that would end it: skipped.
    worse = arm_items(pid, rid, (10, 0), (0, 10))
    answer = api.post(USAGE, json={"items": worse}, role=SERVICE_READ, org=OTHER)
    assert answer.status_code == 202 and answer.json == {"accepted": 0, "skipped": 2}
    assert api.get(ROLLOUT, role=SERVICE_READ).json["arms"]["candidate"]["errors"] == 0
    assert api.get(f"{PROMPT}/usage", role=SERVICE_READ).json["items"] == []
    # Nor can its admin change acme's guard: acme's rollout is not in its org.
    patch = api.patch(ROLLOUT, json={"guard": None}, role=SERVICE_ADMIN, org=OTHER)
    error(patch, 404, "not_found")
    assert guard_now(api) == GUARD


def test_a_revoked_key_gets_no_new_token(api: Api, app: Flask, rollout: dict[str, Any]) -> None:
    identity = app.extensions["identity"]
    key, secret = identity.create_key("acme", SERVICE_WRITE)
    assert api.delete(f"/api/v1/keys/{key.client_id}").status_code == 204
    exchange = api.client.post(
        "/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": key.client_id, "key_secret": secret},
    )
    assert exchange.status_code == 401
    assert guard_now(api) == GUARD


@pytest.mark.parametrize("change", [{"disabled": True}, {"role": SERVICE_READ}])
def test_a_stale_persons_token_cannot_change_the_guard(
    api: Api, app: Flask, rollout: dict[str, Any], change: dict[str, Any]
) -> None:
    ada = person_headers(app, "ada")
    assert api.patch(ROLLOUT, json={"guard": GUARD}, role=None, headers=ada).status_code == 200
    assert api.patch("/api/v1/users/ada", json=change).status_code == 200
    error(api.patch(ROLLOUT, json={"guard": None}, role=None, headers=ada), 403, "forbidden")
    assert guard_now(api) == GUARD
    # The guard still does its work: a regression still ends the rollout.
    report(api, *arm_items(rollout["prompt_id"], rollout["rollout_id"], (10, 0), (0, 10)))
    error(api.get(ROLLOUT, role=SERVICE_READ), 404, "not_found")
