"""The input attacks of issue 30, replayed against a live service on PostgreSQL (the
backend that refused them with a 500): NUL bytes in paths, queries, bodies and forms,
forged page cursors, a 5,000-digit version number, an IPv4-translated webhook target,
and the headers of JSON answers. tests/api/test_api_bad_input.py runs the same on every
backend through Flask's test client."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from tests.identity.people_support import Pkce, auth_params
from tests.reliability.rel_support import ORG, Report, Service, start_service
from tests.sql_support import PostgresSchema

REALM = f"/realms/{ORG}/protocol/openid-connect"


@pytest.fixture
def postgres_service(postgres_schema: PostgresSchema) -> Iterator[Service]:
    """The service on PostgreSQL with prompt ``greeting`` (version 1 in production)."""
    postgres_schema.empty()
    svc = start_service(postgres_schema.url)
    auth = svc.bearer(svc.write)
    assert svc.http.post("/api/v1/prompts", json={"name": "greeting"}, headers=auth).is_success
    versions = "/api/v1/prompts/greeting/versions"
    assert svc.http.post(versions, json={"content": "hi"}, headers=auth).status_code == 201
    assert svc.http.post(f"{versions}/1/promote", headers=auth).status_code == 200
    try:
        yield svc
    finally:
        svc.http.close()
        svc.server.stop()


NUL_PATHS = [
    ("GET", "/api/v1/prompts/a%00b"),
    ("GET", "/api/v1/prompts/a%00b/latest"),
    ("GET", "/api/v1/prompts/greeting/environments/production%00"),
    ("DELETE", "/api/v1/prompts/a%00b"),
    ("GET", "/api/v1/reviews/rv_%00"),
    ("GET", "/api/v1/environments/a%00"),
    ("GET", "/api/v1/environments/a%00/prompts"),
    ("DELETE", "/api/v1/keys/a%00"),
    ("DELETE", "/api/v1/webhooks/wh_%00"),
    ("GET", "/console/prompts/a%00b"),
    ("GET", "/realms/a%00b/.well-known/openid-configuration"),
]
NUL_QUERIES = [
    "/api/v1/reviews?environment=%00",
    "/api/v1/prompts/greeting/history?environment=%00",
    "/api/v1/prompts/greeting/production?rollout_key=%00",
    "/api/v1/environments/production/prompts?cursor=%00",
]
NUL_BODIES = [
    ("POST", "/api/v1/prompts", {"name": "x", "description": "a\x00"}),
    ("POST", "/api/v1/prompts/greeting/versions", {"content": "a\x00"}),
    ("POST", "/api/v1/prompts/greeting/versions/1/promote", {"notes": "a\x00"}),
    ("POST", "/api/v1/prompts/greeting/reviews", {"version": 1, "comment": "a\x00"}),
]


def test_nul_bytes_on_postgresql(postgres_service: Service, report: Report) -> None:
    """NUL bytes in paths, queries, JSON bodies, the realm's forms and authorize query."""
    svc, statuses = postgres_service, Counter[str]()
    auth = svc.bearer(svc.admin)

    def tried(kind: str, response: httpx.Response, expected: int) -> None:
        assert response.status_code == expected, (kind, response.request.url, response.text)
        statuses[f"{kind} {response.status_code}"] += 1

    for method, path in NUL_PATHS:
        tried("path", svc.http.request(method, path, headers=auth), 404)
    for path in NUL_QUERIES:
        tried("query", svc.http.get(path, headers=auth), 400)
    for method, path, body in NUL_BODIES:
        tried("body", svc.http.request(method, path, json=body, headers=auth), 400)
    form = {"grant_type": "client_credentials", "client_id": "a\x00", "client_secret": "x"}
    tried("form", svc.http.post(f"{REALM}/token", data=form), 400)
    for field in ("state", "nonce"):
        params = auth_params(Pkce.new(), nonce="n")
        params[field] += "\x00"
        tried("authorize", svc.http.get(f"{REALM}/auth", params=params), 400)
    report(
        input=f"PostgreSQL: NUL in {len(NUL_PATHS)} paths (API, console, realm), "
        f"{len(NUL_QUERIES)} queries, {len(NUL_BODIES)} JSON bodies, the realm's token form "
        "and its authorize state and nonce",
        result=", ".join(f"{kind}: {n}" for kind, n in sorted(statuses.items())) + "; no 5xx",
    )


def _cursor(position: str) -> str:
    return base64.urlsafe_b64encode(position.encode()).decode().rstrip("=")


def test_forged_cursors_and_huge_version_numbers_on_postgresql(
    postgres_service: Service, report: Report
) -> None:
    """Cursors that decode past 2^63-1 and a 5,000-digit version number in a path."""
    svc = postgres_service
    auth = svc.bearer(svc.admin)
    lists = [
        "/api/v1/reviews",
        "/api/v1/prompts/greeting/versions",
        "/api/v1/prompts/greeting/history",
        "/api/v1/prompts/greeting/reviews",
    ]
    cursors = [_cursor(str(2**63)), _cursor("9" * 5000)]
    for path in lists:
        for cursor in cursors:
            response = svc.http.get(path, params={"cursor": cursor}, headers=auth)
            assert response.status_code == 400, (path, response.text)
    version = "/api/v1/prompts/greeting/versions/" + "9" * 5000
    assert svc.http.get(version, headers=auth).status_code == 404
    assert svc.http.patch(version, json={"content": "x"}, headers=auth).status_code == 404
    report(
        input=f"PostgreSQL: cursors decoding to 2^63 and to 5,000 digits on {len(lists)} "
        "listings; GET and PATCH of version 9...9 (5,000 digits)",
        result=f"{len(lists) * len(cursors)} x 400 invalid cursor; 2 x 404",
    )


def test_webhook_target_in_the_ipv4_translated_prefix(
    postgres_service: Service, report: Report
) -> None:
    svc = postgres_service
    urls = ["https://[::ffff:0:7f00:1]/", "https://[::ffff:0:a9fe:a9fe]/latest/meta-data"]
    statuses = [
        svc.http.post(
            "/api/v1/webhooks", json={"url": url, "events": ["*"]}, headers=svc.bearer(svc.admin)
        ).status_code
        for url in urls
    ]
    assert statuses == [400, 400]
    report(
        input="POST /api/v1/webhooks with " + ", ".join(urls) + " (SIIT, ::ffff:0:0:0/96)",
        result="both answered 400 (webhook URL refused: not a public address)",
    )


def test_json_answers_cannot_be_framed_and_tokens_are_not_stored(
    postgres_service: Service, report: Report
) -> None:
    svc = postgres_service
    read = svc.bearer(svc.read)
    answers = {
        "/api/v1/prompts": svc.http.get("/api/v1/prompts", headers=read),
        "/api/v1/prompts/greeting/production": svc.http.get(
            "/api/v1/prompts/greeting/production", headers=read
        ),
        "/openapi.json": svc.http.get("/openapi.json"),
        "/healthz": svc.http.get("/healthz"),
        "realm discovery": svc.http.get(f"/realms/{ORG}/.well-known/openid-configuration"),
        "/v1/auth/sdk-token": svc.http.post(
            "/v1/auth/sdk-token",
            json={"account_id": ORG, "key_id": svc.read.client_id, "key_secret": "wrong"},
        ),
    }
    for name, response in answers.items():
        assert response.headers["X-Content-Type-Options"] == "nosniff", name
        assert response.headers["X-Frame-Options"] == "DENY", name
        assert response.headers["Referrer-Policy"] == "no-referrer", name
    assert answers["/v1/auth/sdk-token"].headers["Cache-Control"] == "no-store"
    report(
        input="GET of " + ", ".join(answers) + " (a refused token request)",
        result="every answer X-Content-Type-Options: nosniff, X-Frame-Options: DENY, "
        "Referrer-Policy: no-referrer; the token answer Cache-Control: no-store",
    )
