"""GET /api/v1/environments/{env}/prompts with real tokens on each backend: every
prompt's version in the environment as its single read answers it, pages, event_id,
ETag and 304, and every refusal in the contract's shape."""

from __future__ import annotations

from typing import Any

import pytest

from identity.roles import SERVICE_READ
from tests.api.conftest import Api

PAGE = "/api/v1/environments/{}/prompts"


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.json
    body: dict[str, Any] = response.json
    assert body["code"] == code and body["error"] == code and body["message"]
    return body


def newest_event(api: Api) -> str:
    r = api.get("/api/v1/events?after=0-0&wait=0", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.json
    last: str = r.json["last_id"]
    return last


@pytest.fixture
def org(api: Api) -> Api:
    """b (v1) and a (v2) in production; c with a draft only; staging holds b v2."""
    api.post("/api/v1/environments", json={"name": "staging"})
    for name in ("b", "a", "c"):
        api.create_prompt(name)
        api.create_version(name, f"{name} one {{{{who}}}}")
        api.create_version(name, f"{name} two")
    api.promote("b", 1)
    api.promote("a", 2)
    api.promote("b", 2, json={"environment": "staging"})
    return api


def test_every_prompt_in_production_as_its_own_read_answers_it(org: Api) -> None:
    r = org.get(PAGE.format("production"), role=SERVICE_READ)
    assert r.status_code == 200, r.json
    body = r.json
    singles = [org.get(f"/api/v1/prompts/{n}/production", role=SERVICE_READ).json for n in "ab"]
    assert body == {
        "environment": "production",
        "event_id": newest_event(org),
        "items": singles,
        "next_cursor": None,
    }
    staging = org.get(PAGE.format("staging"), role=SERVICE_READ).json
    assert [(i["name"], i["version"]) for i in staging["items"]] == [("b", 2)]


def test_a_running_rollout_is_in_the_item(org: Api) -> None:
    r = org.post("/api/v1/prompts/b/versions/2/promote", json={"rollout_percent": 25})
    assert r.status_code == 201, r.json
    item = org.get(PAGE.format("production"), role=SERVICE_READ).json["items"][1]
    assert item == org.get("/api/v1/prompts/b/production", role=SERVICE_READ).json
    assert item["version"] == 1 and item["rollout"]["percent"] == 25
    assert item["rollout"]["candidate"]["version"] == 2


def test_pages_follow_next_cursor(org: Api) -> None:
    first = org.get(PAGE.format("production") + "?limit=1", role=SERVICE_READ).json
    assert [i["name"] for i in first["items"]] == ["a"] and first["next_cursor"]
    url = PAGE.format("production") + f"?limit=1&cursor={first['next_cursor']}"
    second = org.get(url, role=SERVICE_READ).json
    assert [i["name"] for i in second["items"]] == ["b"] and second["next_cursor"] is None


def test_etag_and_304_until_something_changes(org: Api) -> None:
    url = PAGE.format("production")
    first = org.get(url, role=SERVICE_READ)
    etag = first.headers["ETag"]
    assert etag.startswith('"')
    again = org.get(url, role=SERVICE_READ, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    org.create_version("c", "c three")  # a new event: event_id moves, and so the ETag
    changed = org.get(url, role=SERVICE_READ, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


def test_an_unknown_environment_is_404(org: Api) -> None:
    error(org.get(PAGE.format("nowhere"), role=SERVICE_READ), 404, "not_found")


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=x", "cursor=%25%25"])
def test_bad_limit_or_cursor_is_400(org: Api, query: str) -> None:
    error(org.get(PAGE.format("production") + "?" + query, role=SERVICE_READ), 400, "bad_request")


def test_a_thousand_is_the_largest_page(org: Api) -> None:
    r = org.get(PAGE.format("production") + "?limit=1000", role=SERVICE_READ)
    assert r.status_code == 200 and len(r.json["items"]) == 2


def test_a_token_is_needed_and_another_org_sees_its_own(org: Api) -> None:
    error(org.get(PAGE.format("production"), role=None), 401, "unauthorized")
    theirs = org.get(PAGE.format("production"), role=SERVICE_READ, org="other").json
    assert theirs["items"] == [] and theirs["event_id"] is None
