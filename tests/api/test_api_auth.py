"""Bearer auth, roles, check order and tenancy on every endpoint (docs/api.md sections 2, 9)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from flask import Flask

from identity.core import Identity
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE, role_includes
from storage import Webhook, utcnow

# Every /api/v1 endpoint: (method, path, role needed, body, success status). The fixture
# `world` makes the state each call needs: greeting v1 published, v2 draft, v3 archived,
# v4 archived after being production before v1 (so a rollback has a target), the key
# "doomed" and the user "ada".
ENDPOINTS: list[tuple[str, str, str, Any, int]] = [
    ("GET", "/api/v1/prompts/greeting/production", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts/greeting/latest", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts/greeting/versions/1", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts", SERVICE_READ, None, 200),
    ("POST", "/api/v1/prompts", SERVICE_WRITE, {"name": "fresh"}, 201),
    ("GET", "/api/v1/prompts/greeting", SERVICE_READ, None, 200),
    ("DELETE", "/api/v1/prompts/greeting", SERVICE_WRITE, None, 204),
    ("GET", "/api/v1/prompts/greeting/versions", SERVICE_READ, None, 200),
    ("POST", "/api/v1/prompts/greeting/versions", SERVICE_WRITE, {"content": "x"}, 201),
    ("PATCH", "/api/v1/prompts/greeting/versions/6", SERVICE_WRITE, {"content": "y"}, 200),
    ("DELETE", "/api/v1/prompts/greeting/versions/2", SERVICE_WRITE, None, 204),
    ("POST", "/api/v1/prompts/greeting/versions/2/promote", SERVICE_WRITE, None, 200),
    ("POST", "/api/v1/prompts/greeting/versions/2/archive", SERVICE_WRITE, None, 200),
    ("POST", "/api/v1/prompts/greeting/versions/3/unarchive", SERVICE_WRITE, None, 200),
    ("GET", "/api/v1/prompts/greeting/history", SERVICE_READ, None, 200),
    ("POST", "/api/v1/prompts/greeting/rollback", SERVICE_WRITE, None, 200),
    ("GET", "/api/v1/prompts/greeting/diff?from=4&to=production", SERVICE_READ, None, 200),
    ("GET", "/api/v1/keys", SERVICE_ADMIN, None, 200),
    ("POST", "/api/v1/keys", SERVICE_ADMIN, {"role": SERVICE_READ}, 201),
    ("DELETE", "/api/v1/keys/doomed", SERVICE_ADMIN, None, 204),
    ("GET", "/api/v1/users", SERVICE_ADMIN, None, 200),
    ("POST", "/api/v1/users", SERVICE_ADMIN, {"username": "fresh", "role": SERVICE_READ}, 201),
    ("PATCH", "/api/v1/users/ada", SERVICE_ADMIN, {"disabled": True}, 200),
    ("GET", "/api/v1/events", SERVICE_READ, None, 200),
    ("GET", "/api/v1/webhooks", SERVICE_ADMIN, None, 200),
    (
        "POST",
        "/api/v1/webhooks",
        SERVICE_ADMIN,
        {"url": "https://93.184.215.14/h", "events": ["*"]},
        201,
    ),
    ("DELETE", "/api/v1/webhooks/wh_doomed", SERVICE_ADMIN, None, 204),
    ("GET", "/api/v1/webhooks/wh_doomed/deliveries", SERVICE_ADMIN, None, 200),
    ("POST", "/api/v1/webhooks/wh_doomed/test", SERVICE_ADMIN, None, 202),
    ("GET", "/api/v1/environments", SERVICE_READ, None, 200),
    ("POST", "/api/v1/environments", SERVICE_ADMIN, {"name": "fresh"}, 201),
    ("GET", "/api/v1/environments/staging", SERVICE_READ, None, 200),
    ("GET", "/api/v1/environments/production/prompts", SERVICE_READ, None, 200),
    ("PATCH", "/api/v1/environments/staging", SERVICE_ADMIN, {"description": "d"}, 200),
    ("DELETE", "/api/v1/environments/staging", SERVICE_ADMIN, None, 204),
    ("GET", "/api/v1/prompts/greeting/environments/production", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts/greeting/reviews", SERVICE_READ, None, 200),
    (
        "POST",
        "/api/v1/prompts/greeting/reviews",
        SERVICE_WRITE,
        {"version": 2, "environment": "production"},
        201,
    ),
    ("GET", "/api/v1/reviews", SERVICE_READ, None, 200),
    ("GET", "/api/v1/reviews/rv_world", SERVICE_READ, None, 200),
    # Only a person decides a review: with enough role, a key's token is refused too.
    ("POST", "/api/v1/reviews/rv_world/approve", SERVICE_WRITE, None, 403),
    ("POST", "/api/v1/reviews/rv_world/reject", SERVICE_WRITE, None, 403),
    ("POST", "/api/v1/reviews/rv_world/cancel", SERVICE_WRITE, None, 200),
    ("GET", "/api/v1/prompts/greeting/rollouts", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts/greeting/rollouts/staging", SERVICE_READ, None, 200),
    ("PATCH", "/api/v1/prompts/greeting/rollouts/staging", SERVICE_WRITE, {"percent": 20}, 200),
    ("POST", "/api/v1/prompts/greeting/rollouts/staging/complete", SERVICE_WRITE, None, 200),
    ("POST", "/api/v1/prompts/greeting/rollouts/staging/abort", SERVICE_WRITE, None, 200),
    ("POST", "/api/v1/usage", SERVICE_READ, {"items": []}, 202),
    ("GET", "/api/v1/prompts/greeting/usage", SERVICE_READ, None, 200),
    ("GET", "/api/v1/prompts/greeting/history/rollouts", SERVICE_READ, None, 200),
]
IDS = [f"{m} {p}" for m, p, *_ in ENDPOINTS]


@pytest.fixture
def world(api: Any, app: Flask) -> None:
    api.create_prompt("greeting")
    for _ in range(4):
        api.create_version()
    api.promote("greeting", 4)
    api.promote("greeting", 1)
    api.post("/api/v1/prompts/greeting/versions/3/archive")
    app.extensions["identity"].create_key("acme", SERVICE_READ, client_id="doomed")
    app.extensions["identity"].create_user("acme", "ada", SERVICE_READ)
    hook = Webhook("wh_doomed", "https://93.184.215.14/h", ("*",), None, "whsec_eA==", utcnow())
    app.extensions["promptsvc.storage"].add_webhook("acme", hook)
    api.post("/api/v1/environments", json={"name": "staging"})
    # Requested by the Service Write key, so that key may cancel it as its requester.
    opened = api.post(
        "/api/v1/prompts/greeting/reviews",
        json={"version": 2, "environment": "staging"},
        role=SERVICE_WRITE,
    )
    api.review_id = opened.json["review_id"]
    # A rollout of a version of its own (v5) in staging, over v1.
    api.create_version()
    api.promote("greeting", 1, json={"environment": "staging"})
    started = api.post(
        "/api/v1/prompts/greeting/versions/5/promote",
        json={"environment": "staging", "rollout_percent": 10},
    )
    assert started.status_code == 201, started.json
    api.create_version()  # v6: a draft nothing froze, to edit


def call(api: Any, endpoint: tuple[str, str, str, Any, int], **kwargs: Any) -> Any:
    method, path, _, body, _ = endpoint
    path = path.replace("rv_world", getattr(api, "review_id", "rv_world"))
    if body is not None:
        kwargs.setdefault("json", body)
    return api.request(method, path, **kwargs)


def test_endpoint_table_covers_every_documented_endpoint(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    documented = {
        (method.upper(), path.replace("{name}", "greeting"))
        for path, item in spec["paths"].items()
        if path.startswith("/api/v1/")
        for method in item
        if method != "parameters"
    }
    normalized = {
        (
            m,
            re.sub(r"versions/\d", "versions/{versionId}", p)
            .replace("keys/doomed", "keys/{client_id}")
            .replace("users/ada", "users/{username}")
            .replace("webhooks/wh_doomed", "webhooks/{webhook_id}")
            .replace("environments/staging", "environments/{environment}")
            .replace("environments/production", "environments/{environment}")
            .replace("reviews/rv_world", "reviews/{review_id}")
            .replace("rollouts/staging", "rollouts/{environment}")
            .partition("?")[0],
        )
        for m, p, *_ in ENDPOINTS
    }
    assert normalized == documented


# Who may call what is decided before storage is asked (promptsvc/auth.py): the
# role matrices below run on memory; every backend answers each endpoint to the role
# it needs (test_the_role_an_endpoint_needs_succeeds_on_every_backend).
ON_MEMORY = pytest.mark.parametrize("backend", ["memory"], indirect=True)


@ON_MEMORY
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
@pytest.mark.parametrize("role", ROLES)
def test_roles(api: Any, world: None, endpoint: Any, role: str) -> None:
    r = call(api, endpoint, role=role)
    needed, success = endpoint[2], endpoint[4]
    if role_includes(role, needed):
        assert r.status_code == success, r.json
    else:
        assert r.status_code == 403
        assert r.json == {"code": "forbidden", "message": "forbidden", "error": "forbidden"}
        challenge = r.headers["WWW-Authenticate"]
        assert challenge.startswith('Bearer error="insufficient_scope"')
        assert needed in challenge


@pytest.mark.parametrize("backend", ["redis", "sqlite"], indirect=True)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_the_role_an_endpoint_needs_succeeds_on_every_backend(
    api: Any, world: None, endpoint: Any
) -> None:
    """test_roles' successes on the other backends (memory's are test_roles' own)."""
    r = call(api, endpoint, role=endpoint[2])
    assert r.status_code == endpoint[4], r.json


@ON_MEMORY
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
@pytest.mark.parametrize("scope", ["prompts:read", "prompts:read prompts:write"])
def test_a_narrowed_token_acts_as_its_scopes_role(
    api: Any, app: Flask, world: None, endpoint: Any, scope: str
) -> None:
    """An Admin key asking for fewer scopes gets a token the API treats as the highest
    role those scopes cover: Read, or Write."""
    key, secret = app.extensions["identity"].create_key("acme", SERVICE_ADMIN)
    issued = api.client.post(
        "/realms/acme/protocol/openid-connect/token",
        data={"grant_type": "client_credentials", "scope": scope},
        auth=(key.client_id, secret),
    )
    assert issued.status_code == 200
    acts_as = SERVICE_WRITE if "prompts:write" in scope else SERVICE_READ
    headers = {"Authorization": f"Bearer {issued.json['access_token']}"}
    r = call(api, endpoint, role=None, headers=headers)
    needed, success = endpoint[2], endpoint[4]
    if role_includes(acts_as, needed) and endpoint[1].endswith("/cancel"):
        # The narrowed key is neither the review's requester nor (now) an Admin.
        assert r.status_code == 403 and "requester" in r.json["message"]
    elif role_includes(acts_as, needed):
        assert r.status_code == success, r.json
    else:
        assert r.status_code == 403
        assert needed in r.headers["WWW-Authenticate"]


@ON_MEMORY
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_no_token_is_401_everywhere(api: Any, world: None, endpoint: Any) -> None:
    r = call(api, endpoint, role=None)
    assert r.status_code == 401
    assert r.json == {"code": "unauthorized", "message": "unauthorized", "error": "unauthorized"}
    assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    assert "error_description=" in r.headers["WWW-Authenticate"]
    assert r.headers["X-Request-ID"]


@pytest.mark.parametrize(
    "header",
    [
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "bearer",
        "Bearer not-a-jwt",
        "Bearer a.b.c",
        "Bearer  TOKEN",  # two spaces
        "Token TOKEN",
    ],
)
def test_malformed_authorization_is_401(api: Any, world: None, header: str) -> None:
    header = header.replace("TOKEN", api.tokens(SERVICE_READ))
    r = api.get("/api/v1/prompts/greeting/production", role=None, headers={"Authorization": header})
    assert r.status_code == 401
    assert r.json["message"] == "unauthorized"
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]


def test_tampered_signature_is_401(api: Any, world: None) -> None:
    token = api.tokens(SERVICE_ADMIN)
    head, body, sig = token.split(".")
    forged = f"{head}.{body}.{sig[:-4]}{'AAAA' if not sig.endswith('AAAA') else 'BBBB'}"
    r = api.get(
        "/api/v1/prompts/greeting/production",
        role=None,
        headers={"Authorization": f"Bearer {forged}"},
    )
    assert r.status_code == 401


def _other_identity(app: Flask, **kwargs: Any) -> Identity:
    settings = app.extensions["promptsvc.settings"]
    options = {
        "issuer_url": settings.issuer_url,
        "signing_key_file": settings.signing_key_file,
        **kwargs,
    }
    return Identity(app.extensions["promptsvc.storage"], **options)


def _token(identity: Identity, app: Flask, role: str = SERVICE_ADMIN) -> str:
    key, secret = app.extensions["identity"].create_key("acme", role)
    token: str = identity.issue_token("acme", key.client_id, secret)["access_token"]
    return token


def test_expired_token_is_401(api: Any, app: Flask, world: None) -> None:
    past = _other_identity(app, clock=lambda: time.time() - 3600)
    r = api.get(
        "/api/v1/prompts/greeting/production",
        role=None,
        headers={"Authorization": f"Bearer {_token(past, app)}"},
    )
    assert r.status_code == 401
    assert r.json["message"] == "unauthorized"
    assert "expired" in r.headers["WWW-Authenticate"]


def test_wrong_issuer_is_401(api: Any, app: Flask, world: None) -> None:
    foreign = _other_identity(app, issuer_url="http://elsewhere.test")
    r = api.get(
        "/api/v1/prompts/greeting/production",
        role=None,
        headers={"Authorization": f"Bearer {_token(foreign, app)}"},
    )
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]


def test_revoked_key_keeps_issued_tokens_but_gets_no_new_ones(
    api: Any, app: Flask, world: None
) -> None:
    identity = app.extensions["identity"]
    key, secret = identity.create_key("acme", SERVICE_READ)
    token = identity.issue_token("acme", key.client_id, secret)["access_token"]
    assert api.delete(f"/api/v1/keys/{key.client_id}").status_code == 204
    r = api.get(
        "/api/v1/prompts/greeting/production",
        role=None,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200
    exchange = api.client.post(
        "/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": key.client_id, "key_secret": secret},
    )
    assert exchange.status_code == 401


def test_sdk_token_exchange_then_read(api: Any, app: Flask, world: None) -> None:
    key, secret = app.extensions["identity"].create_key("acme", SERVICE_READ)
    r = api.client.post(
        "/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": key.client_id, "key_secret": secret},
    )
    assert r.status_code == 200
    assert r.json["token_type"] == "Bearer"
    token = r.json["access_token"]
    read = api.client.get(
        "/api/v1/prompts/greeting/production", headers={"Authorization": f"Bearer {token}"}
    )
    assert read.status_code == 200
    assert read.json["version"] == 1


# --------------------------------------------------------------------------- order


def test_401_before_everything(api: Any) -> None:
    # Missing prompt, invalid body, wrong content type: still 401 first.
    r = api.post("/api/v1/prompts/nope/versions", role=None, data="x", content_type="text/plain")
    assert r.status_code == 401


def test_403_before_validation_and_404(api: Any) -> None:
    r = api.post("/api/v1/prompts/nope/versions", role=SERVICE_READ, json={"bad": 1})
    assert r.status_code == 403
    r = api.post("/api/v1/prompts", role=SERVICE_READ, data="x", content_type="text/plain")
    assert r.status_code == 403


def test_400_before_404(api: Any) -> None:
    r = api.post("/api/v1/prompts/nope/versions", json={"content": ""})
    assert r.status_code == 400
    r = api.post("/api/v1/prompts/nope/versions/1/promote", json={"notes": 1})
    assert r.status_code == 400
    r = api.get("/api/v1/prompts/nope/versions?limit=0")
    assert r.status_code == 400


def test_404_before_409(api: Any) -> None:
    api.create_prompt("greeting")
    api.create_version()
    api.promote("greeting", 1)
    # Version 1 is published (archiving it would be 409) but the prompt named is missing.
    assert api.post("/api/v1/prompts/missing/versions/1/archive").status_code == 404
    assert api.post("/api/v1/prompts/greeting/versions/1/archive").status_code == 409


# --------------------------------------------------------------------------- tenancy


def test_other_orgs_prompt_looks_exactly_like_a_missing_one(api: Any, world: None) -> None:
    pid = api.get("/api/v1/prompts/greeting").json["prompt_id"]
    vid = api.get("/api/v1/prompts/greeting/versions/1").json["version_id"]
    for path in (
        "/api/v1/prompts/greeting/production",
        "/api/v1/prompts/greeting/latest",
        f"/api/v1/prompts/greeting/versions/{vid}",
        f"/api/v1/prompts/{pid}/production",
        "/api/v1/prompts/greeting",
        "/api/v1/prompts/greeting/history",
        "/api/v1/prompts/greeting/versions",
        "/api/v1/prompts/greeting/diff?from=1&to=2",
    ):
        theirs = api.get(path, org="globex")
        missing = api.get(path.replace("greeting", "no-such").replace(pid, "pmt_none"))
        assert theirs.status_code == 404
        assert theirs.json["code"] == missing.json["code"] == "not_found"
        assert set(theirs.json) == set(missing.json)
        assert theirs.json["message"] == missing.json["message"].replace(
            "no-such", "greeting"
        ).replace("pmt_none", pid)


def test_other_org_cannot_change_anything(api: Any, world: None) -> None:
    for method, path, _, body, _ in ENDPOINTS:
        own = (
            "/api/v1/prompts",
            "/api/v1/users",
            "/api/v1/events",
            "/api/v1/webhooks",
            "/api/v1/environments",
            "/api/v1/reviews",
            "/api/v1/environments/production/prompts",  # every org has production
            "/api/v1/usage",  # a report names prompt ids: another org's are skipped (202)
        )
        if "/keys" in path or path in own:
            continue
        r = (
            api.request(method, path, org="globex", json=body)
            if body
            else api.request(method, path, org="globex")
        )
        # A key may not decide any review: refused before the review is looked up, so
        # the answer says nothing of acme's.
        expected = 403 if path.endswith(("/approve", "/reject")) else 404
        assert r.status_code == expected, (method, path)
    # acme's data is untouched.
    assert api.get("/api/v1/prompts/greeting/production").json["version"] == 1
    assert len(api.get("/api/v1/prompts/greeting/versions").json["items"]) == 6
    assert api.get("/api/v1/prompts/greeting/rollouts/staging").json["percent"] == 10
    assert api.get("/api/v1/prompts", org="globex").json["items"] == []
    assert api.get("/api/v1/environments/production/prompts", org="globex").json["items"] == []
    assert api.get("/api/v1/users").json["items"][0]["disabled"] is False
    # The events path is not a prompt's: each org sees its own log.
    assert api.get("/api/v1/events?after=0-0", org="globex").json["items"] == []


def test_keys_are_per_org(api: Any, world: None) -> None:
    theirs = api.get("/api/v1/keys", org="globex").json["items"]
    assert "doomed" not in {k["client_id"] for k in theirs}
    assert api.delete("/api/v1/keys/doomed", org="globex").status_code == 404
    assert "doomed" in {k["client_id"] for k in api.get("/api/v1/keys").json["items"]}
