"""The read API (docs/api.md section 6) on every backend."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from identity.roles import SERVICE_READ

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
FIELD_TYPES: dict[str, Any] = {
    "prompt_id": str,
    "version_id": str,
    "name": str,
    "version": int,
    "content": str,
    "source_content": str,
    "includes": list,
    "variables": list,
    "status": str,
    "is_production": bool,
    "prompt_type": str,
    "metadata": dict,
    "tags": list,
    "created_at": str,
    "updated_at": str,
    "promoted_at": (str, type(None)),
    "promoted_by": (str, type(None)),
    "environments": list,
    "variables_schema": dict,
    "examples": list,
    "config": (dict, type(None)),
}


def assert_prompt_version(body: dict[str, Any]) -> None:
    """Exactly the PromptVersion fields, exactly typed; never created_by."""
    assert set(body) == set(FIELD_TYPES)
    for name, kind in FIELD_TYPES.items():
        assert isinstance(body[name], kind), name
    assert not isinstance(body["version"], bool)
    assert body["prompt_id"].startswith("pmt_")
    assert body["version_id"].startswith("v_")
    assert body["status"] in ("draft", "published", "archived")
    assert body["prompt_type"] in ("text", "chat")
    assert all(isinstance(v, str) for v in body["variables"])
    assert all(isinstance(t, str) for t in body["tags"])
    for stamp in ("created_at", "updated_at", "promoted_at"):
        if body[stamp] is not None:
            assert RFC3339_Z.match(body[stamp]), body[stamp]
    assert body["is_production"] is (body["status"] == "published")
    assert ("production" in body["environments"]) is body["is_production"]


@pytest.fixture
def published(api: Any) -> dict[str, Any]:
    """greeting: v1 published (metadata, tags), v2 draft."""
    api.create_prompt("greeting")
    v1 = api.create_version(
        content="Hello {{ name }}, meet {{product}}. Bye {{name}}.",
        body={"metadata": {"model": "gpt-x", "temperature": 0.2}, "tags": ["prod", "en"]},
    )
    api.promote("greeting", v1["version_id"], json={"notes": "first"})
    v2 = api.create_version(content="Hi {{name}}")
    return {"v1": v1, "v2": v2}


def test_production_returns_the_published_version(api: Any, published: dict[str, Any]) -> None:
    r = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    assert r.status_code == 200
    assert r.mimetype == "application/json"
    body = r.json
    assert_prompt_version(body)
    assert body["version_id"] == published["v1"]["version_id"]
    assert body["version"] == 1
    assert body["status"] == "published"
    assert body["is_production"] is True
    assert body["variables"] == ["name", "product"]
    assert body["metadata"] == {"model": "gpt-x", "temperature": 0.2}
    assert body["tags"] == ["prod", "en"]
    assert body["prompt_type"] == "text"
    assert body["name"] == "greeting"
    assert RFC3339_Z.match(body["promoted_at"])
    assert body["promoted_by"] == api.tokens.user_ids[("acme", "Service Admin")]
    assert "created_by" not in body


def test_latest_returns_the_newest_version_whatever_its_status(
    api: Any, published: dict[str, Any]
) -> None:
    body = api.get("/api/v1/prompts/greeting/latest", role=SERVICE_READ).json
    assert_prompt_version(body)
    assert body["version"] == 2
    assert body["status"] == "draft"
    assert body["is_production"] is False
    assert body["promoted_at"] is None
    assert body["promoted_by"] is None


@pytest.mark.parametrize("ref", ["v1_id", "1", "pmt"])
def test_specific_version_by_id_number_and_prompt_id(
    api: Any, published: dict[str, Any], ref: str
) -> None:
    v1 = published["v1"]
    name, version = "greeting", v1["version_id"]
    if ref == "1":
        version = "1"
    if ref == "pmt":
        name = v1["prompt_id"]
    r = api.get(f"/api/v1/prompts/{name}/versions/{version}", role=SERVICE_READ)
    assert r.status_code == 200
    assert_prompt_version(r.json)
    assert r.json["version_id"] == v1["version_id"]
    assert r.json["name"] == "greeting"


def test_production_and_latest_by_prompt_id(api: Any, published: dict[str, Any]) -> None:
    pid = published["v1"]["prompt_id"]
    assert api.get(f"/api/v1/prompts/{pid}/production").json["version"] == 1
    assert api.get(f"/api/v1/prompts/{pid}/latest").json["version"] == 2


def test_chat_prompt_variables_come_from_every_message(api: Any) -> None:
    api.create_prompt("support", prompt_type="chat")
    content = json.dumps(
        [
            {"role": "system", "content": "You help with {{product}}."},
            {"role": "user", "content": "{{question}} {{product}}"},
        ]
    )
    v = api.create_version("support", content=content)
    api.promote("support", v["version"])
    body = api.get("/api/v1/prompts/support/production", role=SERVICE_READ).json
    assert_prompt_version(body)
    assert body["prompt_type"] == "chat"
    assert body["content"] == content
    assert body["variables"] == ["product", "question"]


def test_metadata_and_unicode_survive_the_round_trip(api: Any) -> None:
    api.create_prompt("uni")
    meta = {"nested": {"list": [1, 2.5, None, True]}, "emoji": "🎉"}
    v = api.create_version("uni", content="Grüße {{name}} — 你好", body={"metadata": meta})
    body = api.get(f"/api/v1/prompts/uni/versions/{v['version_id']}").json
    assert body["content"] == "Grüße {{name}} — 你好"
    assert body["metadata"] == meta


@pytest.mark.parametrize(
    ("path", "missing"),
    [
        ("/api/v1/prompts/nope/production", "nope"),
        ("/api/v1/prompts/nope/latest", "nope"),
        ("/api/v1/prompts/nope/versions/1", "nope"),
        ("/api/v1/prompts/empty/production", "empty"),  # prompt without production version
        ("/api/v1/prompts/empty/latest", "empty"),  # prompt without any version
        ("/api/v1/prompts/greeting/versions/v_doesnotexist", "v_doesnotexist"),
        ("/api/v1/prompts/greeting/versions/99", "99"),
        ("/api/v1/prompts/greeting/versions/0", "0"),
        ("/api/v1/prompts/greeting/versions/-1", "-1"),
        ("/api/v1/prompts/greeting/versions/not-an-id", "not-an-id"),
        ("/api/v1/prompts/greeting/versions/99999999999999999999999", "99999999999999999999999"),
        ("/api/v1/prompts/pmt_0000/production", "pmt_0000"),
        ("/api/v1/prompts/bad%20name!/production", "bad name!"),
        ("/api/v1/prompts/gr%C3%BC%C3%9Fe/latest", "grüße"),
        ("/api/v1/prompts/" + "x" * 300 + "/latest", "x" * 300),
    ],
)
def test_read_endpoints_answer_404_naming_what_is_missing(
    api: Any, published: dict[str, Any], path: str, missing: str
) -> None:
    api.create_prompt("empty")
    r = api.get(path, role=SERVICE_READ)
    assert r.status_code == 404
    assert r.json["code"] == r.json["error"] == "not_found"
    assert missing in r.json["message"]
    # Only a prompt that exists without a production version says so in ``reason``.
    unreleased = path == "/api/v1/prompts/empty/production"
    assert set(r.json) == {"code", "message", "error"} | ({"reason"} if unreleased else set())
    assert r.json.get("reason") == ("no_production_version" if unreleased else None)


def test_read_endpoints_never_answer_400(api: Any, published: dict[str, Any]) -> None:
    for path in (
        "/api/v1/prompts/greeting/production?limit=abc&status=zzz",
        "/api/v1/prompts/greeting/latest?cursor=!!!",
        "/api/v1/prompts/greeting/versions/1?x=1",
    ):
        assert api.get(path, role=SERVICE_READ).status_code == 200
    r = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ, json={"junk": True})
    assert r.status_code == 200


def test_no_production_version_message(api: Any) -> None:
    api.create_prompt("draftonly")
    api.create_version("draftonly")
    r = api.get("/api/v1/prompts/draftonly/production")
    assert r.status_code == 404
    assert "draftonly" in r.json["message"]
    assert "production" in r.json["message"]


# --------------------------------------------------------------------------- ETag


@pytest.mark.parametrize("path", ["production", "latest", "versions/1"])
def test_strong_etag_and_if_none_match(api: Any, published: dict[str, Any], path: str) -> None:
    url = f"/api/v1/prompts/greeting/{path}"
    first = api.get(url, role=SERVICE_READ)
    etag = first.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)  # strong: no W/ prefix
    assert api.get(url, role=SERVICE_READ).headers["ETag"] == etag  # stable
    cached = api.get(url, role=SERVICE_READ, headers={"If-None-Match": etag})
    assert cached.status_code == 304
    assert cached.data == b""
    assert cached.headers["ETag"] == etag
    assert cached.headers["X-Request-ID"]
    for other in ('"0000"', 'W/"0000"', '"x", "y"'):
        assert api.get(url, role=SERVICE_READ, headers={"If-None-Match": other}).status_code == 200
    listed = api.get(url, role=SERVICE_READ, headers={"If-None-Match": f'"zz", {etag}'})
    assert listed.status_code == 304
    assert api.get(url, role=SERVICE_READ, headers={"If-None-Match": "*"}).status_code == 304
    # If-None-Match compares weakly (RFC 9110 13.1.2).
    weak = api.get(url, role=SERVICE_READ, headers={"If-None-Match": "W/" + etag})
    assert weak.status_code == 304


def test_etag_changes_when_production_changes(api: Any, published: dict[str, Any]) -> None:
    url = "/api/v1/prompts/greeting/production"
    before = api.get(url).headers["ETag"]
    api.promote("greeting", 2)
    after = api.get(url, headers={"If-None-Match": before})
    assert after.status_code == 200
    assert after.json["version"] == 2
    assert after.headers["ETag"] != before


def test_if_none_match_never_skips_auth(api: Any, published: dict[str, Any]) -> None:
    url = "/api/v1/prompts/greeting/production"
    etag = api.get(url).headers["ETag"]
    assert api.get(url, role=None, headers={"If-None-Match": etag}).status_code == 401
    other_org = api.get(url, org="other", headers={"If-None-Match": etag})
    assert other_org.status_code == 404


def test_etag_is_sensitive_to_the_body(api: Any, published: dict[str, Any]) -> None:
    url = f"/api/v1/prompts/greeting/versions/{published['v2']['version_id']}"
    before = api.get(url).headers["ETag"]
    api.patch(url, json={"content": "changed {{x}}"})
    assert api.get(url).headers["ETag"] != before
