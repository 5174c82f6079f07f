"""The WSGI fast path of the read API answers exactly like the Flask views, or not at all."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import Client

from identity.roles import SERVICE_READ
from storage.base import NoProductionVersion, StorageUnavailable


@pytest.fixture
def published(api: Any) -> dict[str, Any]:
    api.create_prompt("greeting")
    v1 = api.create_version(content="Grüße {{name}}", body={"metadata": {"k": [1]}, "tags": ["t"]})
    api.promote("greeting", v1["version_id"])
    api.create_version(content="draft {{x}}")
    return {"v1": v1}


@pytest.mark.parametrize("path", ["production", "latest", "versions/1", "versions/v_ID"])
@pytest.mark.parametrize("conditional", [False, True])
def test_both_paths_answer_byte_for_byte_alike(
    api: Any, app: Flask, published: dict[str, Any], path: str, conditional: bool
) -> None:
    url = "/api/v1/prompts/greeting/" + path.replace("v_ID", published["v1"]["version_id"])
    headers = {**api.tokens.headers(SERVICE_READ), "X-Request-ID": "same-id"}
    if conditional:
        headers["If-None-Match"] = api.get(url).headers["ETag"]
    fast = Client(app.wsgi_app).get(url, headers=headers)
    flask_views = Client(app.wsgi_app.fallback).get(url, headers=headers)  # type: ignore[attr-defined]
    assert fast.status == flask_views.status == ("304 NOT MODIFIED" if conditional else "200 OK")
    assert fast.data == flask_views.data
    assert dict(fast.headers) == dict(flask_views.headers)


@pytest.fixture
def flask_calls(app: Flask, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Requests the fast path passed on to the Flask app."""
    calls: list[str] = []
    fallback = app.wsgi_app.fallback  # type: ignore[attr-defined]

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        calls.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}")
        return fallback(environ, start_response)

    monkeypatch.setattr(app.wsgi_app, "fallback", counting)
    return calls


def test_successful_reads_never_reach_flask(
    api: Any, published: dict[str, Any], flask_calls: list[str]
) -> None:
    for path in ("production", "latest", "versions/2"):
        assert api.get(f"/api/v1/prompts/greeting/{path}", role=SERVICE_READ).status_code == 200
    assert flask_calls == []


@pytest.mark.parametrize(
    ("method", "path", "role", "status"),
    [
        ("HEAD", "/api/v1/prompts/greeting/production", SERVICE_READ, 200),
        ("GET", "/api/v1/prompts/greeting/production", None, 401),
        ("GET", "/api/v1/prompts/nope/production", SERVICE_READ, 404),
        ("GET", "/api/v1/prompts/greeting/versions/77", SERVICE_READ, 404),
        ("GET", "/api/v1/prompts/greeting/production/", SERVICE_READ, 404),
        ("GET", "/api/v1/prompts/gr%C3%BC%C3%9Fe/latest", SERVICE_READ, 404),
        ("DELETE", "/api/v1/prompts/greeting/versions/2", "Service Write", 204),
    ],
)
def test_everything_else_goes_to_flask(
    api: Any,
    published: dict[str, Any],
    flask_calls: list[str],
    method: str,
    path: str,
    role: str | None,
    status: int,
) -> None:
    assert api.request(method, path, role=role).status_code == status
    assert len(flask_calls) == 1


@pytest.fixture
def access_log_on() -> Iterator[None]:
    logger = logging.getLogger("promptsvc.access")
    before = logger.level
    logger.setLevel(logging.INFO)
    yield
    logger.setLevel(before)


def test_with_the_access_log_on_every_request_goes_through_flask(
    api: Any, published: dict[str, Any], flask_calls: list[str], access_log_on: None
) -> None:
    assert api.get("/api/v1/prompts/greeting/production").status_code == 200
    assert len(flask_calls) == 1


def test_an_unexpected_failure_is_answered_by_flask(
    api: Any, published: dict[str, Any], backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def flaky(*args: Any) -> Any:
        calls.append(args)
        raise RuntimeError("boom")

    monkeypatch.setattr(backend, "get_latest", flaky)
    r = api.get("/api/v1/prompts/greeting/latest")
    assert r.status_code == 500
    assert r.json == {
        "code": "internal_server_error",
        "message": "internal server error",
        "error": "internal_server_error",
    }
    assert len(calls) == 2  # tried by the fast path, then by the Flask view


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (NoProductionVersion("greeting"), 404, "not_found"),
        (StorageUnavailable("storage unavailable"), 503, "service_unavailable"),
    ],
)
def test_a_storage_error_is_answered_without_a_second_read(
    api: Any,
    published: dict[str, Any],
    backend: Any,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    status: int,
    code: str,
) -> None:
    calls = []

    def failing(*args: Any) -> Any:
        calls.append(args)
        raise error

    monkeypatch.setattr(backend, "get_production", failing)
    r = api.get("/api/v1/prompts/greeting/production")
    assert r.status_code == status
    assert r.json["code"] == code and r.json["error"] == code
    assert len(calls) == 1  # the fast path's read; the Flask view raised what it met


@pytest.mark.parametrize("kind", ["before_request", "after_request", "teardown_request"])
def test_foreign_request_hooks_make_the_fast_path_stand_aside(
    backend: Any, settings: Any, kind: str
) -> None:
    from promptsvc.app import create_app

    app = create_app(settings, storage=backend)
    seen: list[str] = []

    def hook(response: Any = None) -> Any:
        seen.append(kind)
        return response if kind == "after_request" else None

    getattr(app, kind)(hook)
    identity = app.extensions["identity"]
    key, secret = identity.create_key("acme", SERVICE_READ)
    token = identity.issue_token("acme", key.client_id, secret)["access_token"]
    backend.create_prompt("acme", "greeting")
    version = backend.create_version("acme", "greeting", "hi", key.user_id)
    backend.promote("acme", "greeting", version.version_id, key.user_id)
    r = app.test_client().get(
        "/api/v1/prompts/greeting/production", headers={"Authorization": f"Bearer {token}"}
    )
    assert r.status_code == 200
    assert seen == [kind]
