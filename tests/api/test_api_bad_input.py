"""Bad input never reaches storage (docs/api.md section 9), on every backend, PostgreSQL
included: a NUL byte in a path is a 404, in a query, a JSON body or a form a 400; a
forged page cursor is a 400 and a version number outside the 64-bit range a 404."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_WRITE
from storage import Storage
from storage.memory import MemoryStorage
from tests.console.console_support import csrf_token, sign_in
from tests.identity.people_support import CLI, Pkce, auth_params, form_of
from tests.sql_support import sql_storage

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """Every backend, PostgreSQL too: it is the one that refuses NUL in text itself."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    if request.param in ("sqlite", "postgres"):
        sql_backend = sql_storage(request.param, request)
        yield sql_backend
        sql_backend.close()
        return
    from storage.redis import RedisStorage

    redis_backend = RedisStorage.from_url(request.getfixturevalue("redis_url"))
    yield redis_backend
    redis_backend.close()


@pytest.fixture
def planted(api: Any) -> Any:
    """acme has prompt greeting (version 1 in production)."""
    api.create_prompt("greeting")
    api.create_version("greeting", content="Hi {{name}}")
    api.promote("greeting", 1)
    return api


@pytest.fixture
def ada(planted: Any, app: Flask) -> Any:
    """A person ``ada`` (admin) in acme, for the realm's and the console's forms."""
    app.extensions["identity"].create_user("acme", "ada", SERVICE_ADMIN, PASSWORD)
    return planted


def assert_error(response: Any, status: int, what: object) -> None:
    assert response.status_code == status, (what, response.status_code, response.text[:300])
    if response.mimetype == "application/json":
        assert response.json["code"] == response.json["error"], what


NUL_PATHS = [
    ("GET", "/api/v1/prompts/a%00b"),
    ("DELETE", "/api/v1/prompts/a%00b"),
    ("GET", "/api/v1/prompts/a%00b/latest"),
    ("GET", "/api/v1/prompts/greeting%00/production"),
    ("GET", "/api/v1/prompts/greeting/versions/1%00"),
    ("GET", "/api/v1/prompts/greeting/environments/production%00"),
    ("GET", "/api/v1/prompts/a%00b/versions"),
    ("GET", "/api/v1/prompts/a%00b/history"),
    ("GET", "/api/v1/prompts/a%00b/reviews"),
    ("GET", "/api/v1/prompts/a%00b/rollouts"),
    ("GET", "/api/v1/prompts/a%00b/rollouts/production"),
    ("GET", "/api/v1/prompts/a%00b/usage"),
    ("GET", "/api/v1/reviews/rv_%00"),
    ("POST", "/api/v1/reviews/rv_%00/approve"),
    ("POST", "/api/v1/reviews/rv_%00/cancel"),
    ("GET", "/api/v1/environments/a%00"),
    ("PATCH", "/api/v1/environments/a%00"),
    ("DELETE", "/api/v1/environments/a%00"),
    ("DELETE", "/api/v1/keys/a%00"),
    ("PATCH", "/api/v1/users/a%00"),
    ("DELETE", "/api/v1/webhooks/wh_%00"),
    ("GET", "/api/v1/webhooks/wh_%00/deliveries"),
    ("GET", "/realms/a%00b/.well-known/openid-configuration"),
    ("GET", "/realms/a%00b/protocol/openid-connect/certs"),
]


def test_nul_in_a_path_is_404(planted: Any) -> None:
    for method, path in NUL_PATHS:
        body = {"role": "Service Read"} if "/users/" in path else None
        body = {"description": "x"} if "/environments/" in path else body
        assert_error(planted.request(method, path, json=body), 404, path)


NUL_QUERIES = [
    "/api/v1/prompts/greeting/diff?from=1&to=1%00",
    "/api/v1/reviews?environment=%00",
    "/api/v1/reviews?status=open%00",
    "/api/v1/prompts?cursor=a%00",
    "/api/v1/prompts/greeting/history?environment=production%00",
    "/api/v1/prompts/greeting/reviews?status=%00",
    "/api/v1/events?after=1-0%00",
    "/api/v1/prompts/greeting/production?rollout_key=a%00",
    "/api/v1/prompts/greeting/latest?x%00=1",
    "/api/v1/prompts/greeting/usage?bucket=hour%00",
    "/api/v1/prompts/greeting/usage?since=2026-01-01T00:00:00Z%00",
]


def test_nul_in_a_query_is_400(planted: Any) -> None:
    for path in NUL_QUERIES:
        assert_error(planted.get(path), 400, path)


NUL_BODIES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/api/v1/prompts", {"name": "other", "description": "a\x00b"}),
    ("POST", "/api/v1/prompts/greeting/versions", {"content": "a\x00b"}),
    ("POST", "/api/v1/prompts/greeting/versions", {"content": "a", "metadata": {"k\x00": 1}}),
    ("POST", "/api/v1/prompts/greeting/versions", {"content": "a", "metadata": {"k": ["\x00"]}}),
    ("POST", "/api/v1/prompts/greeting/versions", {"content": "a", "tags": ["t\x00"]}),
    ("PATCH", "/api/v1/prompts/greeting/versions/1", {"content": "\x00"}),
    ("POST", "/api/v1/prompts/greeting/versions/1/promote", {"notes": "n\x00"}),
    ("POST", "/api/v1/prompts/greeting/rollback", {"notes": "n\x00"}),
    ("POST", "/api/v1/prompts/greeting/reviews", {"version": 1, "comment": "\x00"}),
    ("POST", "/api/v1/environments", {"name": "staging", "description": "\x00"}),
    ("POST", "/api/v1/keys", {"role": "Service Read", "description": "d\x00"}),
    ("POST", "/api/v1/users", {"username": "bo\x00b", "role": "Service Read"}),
    ("POST", "/api/v1/webhooks", {"url": "https://example.com/\x00", "description": "x"}),
    ("POST", "/api/v1/usage", {"items": [{"prompt_id": "pmt_\x00", "version": 1}]}),
]


def test_nul_in_a_json_body_is_400_naming_the_field(planted: Any) -> None:
    for method, path, body in NUL_BODIES:
        response = planted.request(method, path, json=body)
        assert_error(response, 400, (path, body))
        named = [name for name, value in body.items() if "\\u0000" in json.dumps(value)]
        assert list(response.json["errors"]) == named, (path, response.json)
    assert planted.get("/api/v1/prompts/other").status_code == 404


def test_nul_in_the_sdk_token_body_is_400(planted: Any, app: Flask) -> None:
    identity = app.extensions["identity"]
    key, secret = identity.create_key("acme", SERVICE_WRITE)
    for body in (
        {"account_id": "ac\x00me", "key_id": key.client_id, "key_secret": secret},
        {"account_id": "acme", "key_id": key.client_id + "\x00", "key_secret": secret},
        {"account_id": "acme", "key_id": key.client_id, "key_secret": secret + "\x00"},
    ):
        response = planted.client.post("/v1/auth/sdk-token", json=body)
        assert_error(response, 400, body)


REALM = "/realms/acme/protocol/openid-connect"


TOKEN_FORMS = [
    {"grant_type": "client_credentials", "client_id": "a\x00", "client_secret": "x"},
    {"grant_type": "password\x00", "client_id": CLI},
    {"grant_type": "refresh_token", "client_id": CLI, "refresh_token": "r\x00"},
]


def test_nul_in_the_realm_token_form_and_authorize_query_is_400(planted: Any) -> None:
    for form in TOKEN_FORMS:
        assert_error(planted.client.post(f"{REALM}/token", data=form), 400, form)
    for field in ("state", "nonce", "client_id", "redirect_uri"):
        params = auth_params(Pkce.new(), nonce="n-1")
        params[field] += "\x00"
        assert_error(planted.client.get(f"{REALM}/auth", query_string=params), 400, field)


def test_nul_in_the_realm_login_form_is_400(ada: Any) -> None:
    client = ada.client
    page = client.get(f"{REALM}/auth", query_string=auth_params(Pkce.new(), nonce="n-1"))
    assert page.status_code == 200
    action, fields = form_of(page)
    for name in ("username", "password", "state"):
        data = {**fields, "username": "ada", "password": PASSWORD}
        data[name] = data.get(name, "") + "\x00"
        assert_error(client.post(action, data=data), 400, name)


def test_nul_on_the_console_is_4xx(ada: Any, app: Flask) -> None:
    client = app.test_client()
    sign_in(client, "ada")
    for path in (
        "/console/prompts/a%00b",
        "/console/prompts/greeting/versions/1/edit%00",
        "/console/reviews/rv_%00",
        "/console/environments/a%00/delete",
        "/console/keys/a%00/revoke",
    ):
        assert_error(client.get(path), 404, path)
    for path in ("/console/reviews?environment=%00", "/console/prompts?q=%00"):
        assert_error(client.get(path), 400, path)
    page = client.get("/console/prompts")
    response = client.post(
        "/console/prompts",
        data={"csrf_token": csrf_token(page.text), "name": "fresh", "description": "\x00"},
    )
    assert_error(response, 400, "console form")
    assert ada.get("/api/v1/prompts/fresh").status_code == 404
    # The login form of the console itself.
    response = client.post(
        "/console/login", data={"org": "ac\x00me", "csrf_token": csrf_token(page.text)}
    )
    assert_error(response, 400, "console login form")


def _cursor(position: str) -> str:
    return base64.urlsafe_b64encode(position.encode()).decode().rstrip("=")


FORGED = [_cursor(str(2**63)), _cursor("9" * 40), _cursor("9" * 5000), _cursor("-1")]


LISTINGS = [
    "/api/v1/reviews",
    "/api/v1/prompts/greeting/versions",
    "/api/v1/prompts/greeting/history",
    "/api/v1/prompts/greeting/reviews",
]


def test_a_forged_cursor_is_400(planted: Any) -> None:
    for path in LISTINGS:
        for cursor in [*FORGED, _cursor("1\x00")]:
            response = planted.get(path, query_string={"cursor": cursor})
            assert_error(response, 400, (path, cursor[:40]))
        # The largest position a 64-bit listing can reach still reads.
        fine = planted.get(path, query_string={"cursor": _cursor(str(2**63 - 1))})
        assert fine.status_code == 200, (path, fine.text[:300])
    # The prompts' cursor holds a name: one with a NUL was never handed out.
    named = planted.get("/api/v1/prompts", query_string={"cursor": _cursor("a\x00")})
    assert_error(named, 400, "name cursor")


def test_a_forged_cursor_on_the_console_is_400(ada: Any, app: Flask) -> None:
    client = app.test_client()
    sign_in(client, "ada")
    for cursor in FORGED:
        response = client.get("/console/reviews", query_string={"cursor": cursor})
        assert_error(response, 400, cursor)


def test_a_version_number_out_of_range_is_404(ada: Any, app: Flask) -> None:
    console = app.test_client()
    sign_in(console, "ada")
    for number in (str(2**63), "9" * 40, "9" * 5000):
        base = "/api/v1/prompts/greeting/versions/" + number
        for method, path in (
            ("GET", base),
            ("PATCH", base),
            ("DELETE", base),
            ("POST", base + "/promote"),
            ("POST", base + "/archive"),
            ("POST", base + "/unarchive"),
        ):
            body = {"content": "x"} if method == "PATCH" else None
            assert_error(ada.request(method, path, json=body), 404, (method, number[:20]))
        page = f"/console/prompts/greeting/versions/{number}"
        assert_error(console.get(page), 404, page[:60])
        for body in ({"version": int(number[:4000])}, {"version": number[:4000]}):
            response = ada.post("/api/v1/prompts/greeting/reviews", json=body)
            assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])


def test_usage_of_the_largest_numbers_is_counted_or_skipped(planted: Any) -> None:
    """The largest version number and counts a report may hold reach every backend's
    storage (PostgreSQL's 32-bit version column included) without a 500."""
    prompt_id = planted.get("/api/v1/prompts/greeting").json["prompt_id"]
    most = 10**9
    items = [
        {"prompt_id": prompt_id, "version": 2**63 - 1, "renders": most},
        {"prompt_id": prompt_id, "version": 1, "renders": most, "ok": most, "errors": most,
         "score_sum": most, "score_count": most, "environment": "production"},
    ]  # fmt: skip
    for _ in range(3):
        response = planted.post("/api/v1/usage", json={"items": items})
        assert response.status_code == 202, response.json
        assert response.json == {"accepted": 1, "skipped": 1}
    (row,) = planted.get("/api/v1/prompts/greeting/usage").json["items"]
    assert row["renders"] == 3 * most and row["score_avg"] == 1.0
