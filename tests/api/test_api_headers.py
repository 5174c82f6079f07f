"""Headers every answer carries, whichever part of the app gave it (the read endpoints
answer in front of Flask): nosniff everywhere, HSTS over https, and /docs framed by
nobody and running only its own scripts."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from promptsvc.app import create_app
from promptsvc.config import Settings
from storage.memory import MemoryStorage
from tests.api.conftest import SERVICE_READ


def answers(api: Any) -> dict[str, Any]:
    """One answer of each kind: fast reads (200, 304, 401, 404), the API, its errors,
    the documents, the realm's and the console's pages, the operations endpoints."""
    api.create_prompt("greeting")
    api.create_version("greeting")
    api.promote("greeting", 1)
    read = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    etag = read.headers["ETag"]
    return {
        "read 200": read,
        "read 304": api.get(
            "/api/v1/prompts/greeting/production",
            role=SERVICE_READ,
            headers={"If-None-Match": etag},
        ),
        "read 401": api.get("/api/v1/prompts/greeting/production", role=None),
        "read 404": api.get("/api/v1/prompts/nope/latest", role=SERVICE_READ),
        "list": api.get("/api/v1/prompts"),
        "error 400": api.post("/api/v1/prompts", json={"name": "../x"}),
        "no such path": api.get("/nope"),
        "openapi": api.get("/openapi.json", role=None),
        "docs": api.get("/docs", role=None),
        "docs asset": api.get("/docs/assets/swagger-ui.css", role=None),
        "discovery": api.get("/realms/acme/.well-known/openid-configuration", role=None),
        "login page": api.get("/realms/acme/protocol/openid-connect/auth", role=None),
        "console": api.get("/console/", role=None),
        "healthz": api.get("/healthz", role=None),
    }


def test_every_answer_has_nosniff_and_no_hsts_over_http(api: Any) -> None:
    for name, response in answers(api).items():
        nosniff = response.headers.getlist("X-Content-Type-Options")
        assert nosniff == ["nosniff"], (name, response.status_code, nosniff)
        assert "Strict-Transport-Security" not in response.headers, name


def test_hsts_over_https(api: Any) -> None:
    for path in ("/healthz", "/api/v1/prompts/nope/production", "/docs"):
        response = api.client.get(path, base_url="https://promptsvc.test")
        assert response.headers["Strict-Transport-Security"] == "max-age=31536000", path
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def _forwarded_https(trusted_proxies: int, signing_key_file: str) -> Any:
    settings = Settings(
        issuer_url="http://promptsvc.test",
        signing_key_file=signing_key_file,
        trusted_proxies=trusted_proxies,
    )
    app: Flask = create_app(settings, storage=MemoryStorage())
    return app.test_client().get("/healthz", headers={"X-Forwarded-Proto": "https"})


def test_hsts_through_a_trusted_proxy_only(signing_key_file: str) -> None:
    trusted = _forwarded_https(1, signing_key_file)
    assert trusted.headers["Strict-Transport-Security"] == "max-age=31536000"
    # Without a trusted proxy the header is the client's word: no HSTS from it.
    assert "Strict-Transport-Security" not in _forwarded_https(0, signing_key_file).headers


def test_docs_page_has_a_csp_without_inline_scripts_and_cannot_be_framed(api: Any) -> None:
    for path in ("/docs", "/docs?realm=acme"):
        page = api.get(path, role=None)
        csp = page.headers["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
        assert directives["default-src"] == "'none'"
        assert directives["frame-ancestors"] == "'none'"
        assert page.headers["X-Frame-Options"] == "DENY"
        script_src = directives["script-src"].split()
        assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
        nonces = [s for s in script_src if s.startswith("'nonce-")]
        assert len(nonces) == 1
        html = page.get_data(as_text=True)
        inline = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>", html)
        assert inline == [f' nonce="{nonces[0][7:-1]}"'], inline
    again = api.get("/docs", role=None).headers["Content-Security-Policy"]
    assert again != csp, "a fresh nonce for each page"


def json_answers(api: Any, app: Flask) -> dict[str, Any]:
    """One JSON answer of each part: the API (fast reads too), /v1, the realm's
    endpoints, the documents and the operations endpoints, successes and errors."""
    identity = app.extensions["identity"]
    key, secret = identity.create_key("acme", SERVICE_READ)
    realm = "/realms/acme/protocol/openid-connect"
    credentials = {"account_id": "acme", "key_id": key.client_id, "key_secret": secret}
    client_credentials = {
        "grant_type": "client_credentials",
        "client_id": key.client_id,
        "client_secret": secret,
    }
    token = identity.issue_token("acme", key.client_id, secret)["access_token"]
    made = {
        name: response
        for name, response in answers(api).items()
        if response.mimetype == "application/json"
    }
    post = api.client.post
    return made | {
        "sdk token": post("/v1/auth/sdk-token", json=credentials),
        "sdk token 401": post("/v1/auth/sdk-token", json={**credentials, "key_secret": "x"}),
        "sdk token 400": post("/v1/auth/sdk-token", json={}),
        "realm token": post(f"{realm}/token", data=client_credentials),
        "realm token 401": post(
            f"{realm}/token", data={**client_credentials, "client_secret": "x"}
        ),
        "realm token 400": post(f"{realm}/token", data={"grant_type": "nope"}),
        "device code": post(f"{realm}/auth/device", data={"client_id": "promptsvc-cli"}),
        "introspect": post(
            f"{realm}/token/introspect", data={"token": token, **client_credentials}
        ),
        "certs": api.get(f"{realm}/certs", role=None),
        "userinfo 401": api.get(f"{realm}/userinfo", role=None),
        "readyz": api.get("/readyz", role=None),
    }


TOKEN_ANSWERS = ("sdk token", "realm token", "device code", "introspect")


def test_every_json_answer_cannot_be_framed_or_leak_its_url(api: Any, app: Flask) -> None:
    for name, response in json_answers(api, app).items():
        assert response.mimetype == "application/json", (name, response.mimetype)
        headers = response.headers
        assert headers.getlist("X-Content-Type-Options") == ["nosniff"], name
        assert headers.getlist("X-Frame-Options") == ["DENY"], name
        assert headers.getlist("Referrer-Policy") == ["no-referrer"], name
        if name in TOKEN_ANSWERS:
            assert response.status_code == 200, (name, response.text[:300])
        if name.split(" 4")[0] in TOKEN_ANSWERS:
            assert headers["Cache-Control"] == "no-store", (name, response.status_code)
