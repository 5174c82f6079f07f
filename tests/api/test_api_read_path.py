"""The read endpoints have one path: promptsvc.api.reads answers every case of them.

Each read request is answered by one call of ``reads.answer`` (errors included, raised
from it and mapped by promptsvc.api.errors), and never reaches Flask's dispatch, whatever
request hooks the app has.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from identity.roles import SERVICE_READ
from promptsvc.api import reads
from promptsvc.api.versions import blp
from promptsvc.http import LOG_FORMAT, RequestIdFilter, etag_of, json_body
from storage import NoProductionVersion, StorageUnavailable
from storage.memo import Memo
from storage.memory import MemoryStorage

USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def read_endpoints(app: Flask) -> reads.ReadEndpoints:
    """The ReadEndpoints middleware inside ``app.wsgi_app``'s wrappers."""
    layer: Any = app.wsgi_app
    while not isinstance(layer, reads.ReadEndpoints):
        layer = layer.app
    return layer


@pytest.fixture
def published(api: Any) -> dict[str, Any]:
    """greeting: v1 published (metadata, tags, non-ASCII content) and in staging, v2
    draft."""
    api.create_prompt("greeting")
    v1 = api.create_version(content="Grüße {{name}}", body={"metadata": {"k": [1]}, "tags": ["t"]})
    api.promote("greeting", v1["version_id"])
    assert api.post("/api/v1/environments", json={"name": "staging"}).status_code == 201
    staged = api.post(
        f"/api/v1/prompts/greeting/versions/{v1['version_id']}/promote",
        json={"environment": "staging"},
    )
    assert staged.status_code == 200, staged.json
    api.create_version(content="draft {{x}}")
    return {"v1": v1}


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Requests answered (or failed) by reads.answer, as "METHOD path"."""
    calls: list[str] = []
    real = reads.answer

    def counting(app: Flask, environ: dict[str, Any], read: Any, path: Any) -> Any:
        calls.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}")
        return real(app, environ, read, path)

    monkeypatch.setattr(reads, "answer", counting)
    return calls


@pytest.fixture
def dispatched(app: Flask, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Requests that reached Flask's own dispatch, as "METHOD path"."""
    endpoints = read_endpoints(app)
    calls: list[str] = []
    flask = endpoints.flask

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        calls.append(f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}")
        return flask(environ, start_response)

    monkeypatch.setattr(endpoints, "flask", counting)
    return calls


READS = [
    "production",
    "latest",
    "versions/1",
    "versions/v_ID",
    "by-id",
    "environments/production",
    "environments/staging",
]


def read_url(published: dict[str, Any], which: str) -> str:
    v1 = published["v1"]
    if which == "by-id":
        return f"/api/v1/prompts/{v1['prompt_id']}/production"
    return "/api/v1/prompts/greeting/" + which.replace("v_ID", v1["version_id"])


@pytest.mark.parametrize("which", READS)
def test_200_and_304_come_from_the_one_answer(
    api: Any, published: dict[str, Any], answered: list[str], dispatched: list[str], which: str
) -> None:
    url = read_url(published, which)
    first = api.get(url, role=SERVICE_READ)
    assert first.status_code == 200
    assert first.mimetype == "application/json"
    assert first.headers["Content-Length"] == str(len(first.data))
    assert re.fullmatch(r'"[0-9a-f]{32}"', first.headers["ETag"])
    again = api.get(url, role=SERVICE_READ, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    assert again.data == b""
    assert again.headers["ETag"] == first.headers["ETag"]
    assert "Content-Type" not in again.headers
    assert answered == [f"GET {url.split('?')[0]}"] * 2
    assert dispatched == []


def test_head_has_the_headers_of_get_and_no_body(
    api: Any, published: dict[str, Any], answered: list[str], dispatched: list[str]
) -> None:
    url = "/api/v1/prompts/greeting/production"
    get = api.get(url, role=SERVICE_READ)
    head = api.request("HEAD", url, role=SERVICE_READ)
    assert head.status_code == 200
    assert head.data == b""
    assert head.headers["ETag"] == get.headers["ETag"]
    assert head.headers["Content-Length"] == get.headers["Content-Length"]
    assert answered == [f"GET {url}", f"HEAD {url}"]
    assert dispatched == []


@pytest.mark.parametrize(
    ("headers", "description"),
    [
        ({}, "no bearer token given"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "scheme must be Bearer"),
        ({"Authorization": "Bearer not-a-jwt"}, ""),
        ({"Authorization": "Bearer a.b.c"}, ""),
    ],
)
def test_401_comes_from_the_one_answer(
    api: Any,
    published: dict[str, Any],
    answered: list[str],
    dispatched: list[str],
    headers: dict[str, str],
    description: str,
) -> None:
    r = api.get("/api/v1/prompts/greeting/production", role=None, headers=headers)
    assert r.status_code == 401
    assert r.json == {"code": "unauthorized", "message": "unauthorized", "error": "unauthorized"}
    assert r.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    assert description in r.headers["WWW-Authenticate"]
    assert UUID.match(r.headers["X-Request-ID"])
    assert len(answered) == 1
    assert dispatched == []


def test_403_for_a_principal_without_service_read(
    api: Any, app: Flask, published: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every role a token can carry today includes Service Read; the check must still
    # refuse a principal whose role does not.
    identity = app.extensions["identity"]
    real = identity.verify

    def no_role(header: str | None) -> Any:
        return dataclasses.replace(real(header), role="Auditor")

    api.tokens(SERVICE_READ)
    monkeypatch.setattr(identity, "verify", no_role)
    r = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    assert r.status_code == 403
    assert r.json["code"] == r.json["error"] == "forbidden"
    assert "Service Read" in r.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (NoProductionVersion("greeting"), 404, "not_found"),
        (StorageUnavailable("redis at 10.0.0.1 is down"), 503, "service_unavailable"),
        (RuntimeError("boom"), 500, "internal_server_error"),
    ],
)
def test_storage_failures_are_mapped_by_the_error_module(
    api: Any,
    published: dict[str, Any],
    backend: Any,
    monkeypatch: pytest.MonkeyPatch,
    answered: list[str],
    dispatched: list[str],
    error: Exception,
    status: int,
    code: str,
) -> None:
    reads_made = []

    def failing(*args: Any) -> Any:
        reads_made.append(args)
        raise error

    api.tokens(SERVICE_READ)
    # The production read is the environment read (it carries a rollout when one runs,
    # and on Redis what the version includes).
    monkeypatch.setattr(backend, "read_environment_including", failing)
    r = api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ)
    assert r.status_code == status
    assert r.json["code"] == r.json["error"] == code
    assert "10.0.0.1" not in r.get_data(as_text=True)
    assert len(reads_made) == 1
    assert len(answered) == 1
    assert dispatched == []


def test_request_id_is_echoed_or_made(
    api: Any, published: dict[str, Any], dispatched: list[str]
) -> None:
    url = "/api/v1/prompts/greeting/latest"
    assert api.get(url, headers={"X-Request-ID": "rid-1"}).headers["X-Request-ID"] == "rid-1"
    made = [api.get(url, headers={"X-Request-ID": "bad id"}).headers["X-Request-ID"]]
    made += [api.get(url).headers["X-Request-ID"], api.get(url).headers["X-Request-ID"]]
    assert all(UUID.match(rid) for rid in made)
    assert len(set(made)) == 3
    assert dispatched == []


@contextlib.contextmanager
def access_log_on() -> Iterator[io.StringIO]:
    """The access log, on and formatted as ``promptsvc serve`` prints it."""
    logger = logging.getLogger("promptsvc.access")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.setLevel(before)
        logger.removeHandler(handler)


def test_the_access_log_changes_nothing_but_the_log(
    api: Any, published: dict[str, Any], answered: list[str], dispatched: list[str]
) -> None:
    url = "/api/v1/prompts/greeting/production"
    quiet = api.get(url, headers={"X-Request-ID": "same"})
    with access_log_on() as stream:
        logged = api.get(url, headers={"X-Request-ID": "same"})
        api.get("/api/v1/prompts/nope/production", headers={"X-Request-ID": "rid-404"})
    assert (logged.status, logged.data) == (quiet.status, quiet.data)
    assert dict(logged.headers) == dict(quiet.headers)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.search(rf"\[same\] promptsvc.access: GET {url} 200 [\d.]+ms$", lines[0])
    assert "[rid-404] promptsvc.access: GET /api/v1/prompts/nope/production 404 " in lines[1]
    assert len(answered) == 3
    assert dispatched == []


# --------------------------------------------------------------------------- hooks


def fetch_all(client: FlaskClient, headers: dict[str, str], urls: list[str]) -> list[Any]:
    """Status, headers and body of each url, plain and conditional."""
    answers = []
    for url in urls:
        first = client.get(url, headers=headers)
        etag = {"If-None-Match": first.headers.get("ETag", '"none"')}
        for r in (first, client.get(url, headers={**headers, **etag})):
            answers.append((r.status, r.data, sorted(r.headers.items())))
    return answers


@pytest.mark.parametrize("scope", ["app", "blueprint"])
@pytest.mark.parametrize(
    "kind", ["before_request", "after_request", "teardown_request", "url_value_preprocessor"]
)
def test_request_hooks_change_neither_the_path_nor_the_answer(
    api: Any,
    app: Flask,
    published: dict[str, Any],
    answered: list[str],
    dispatched: list[str],
    kind: str,
    scope: str,
) -> None:
    headers = {**api.tokens.headers(SERVICE_READ), "X-Request-ID": "same-id"}
    urls = [read_url(published, which) for which in READS]
    urls += ["/api/v1/prompts/nope/latest", "/api/v1/prompts/greeting/versions/99"]
    client = app.test_client()
    before = fetch_all(client, headers, urls)
    assert dispatched == []

    seen: list[str] = []

    def hook(*args: Any) -> Any:
        seen.append(kind)
        return args[0] if kind == "after_request" else None

    # Straight into Flask's registries: the decorators refuse once the app has served.
    attribute = "url_value_preprocessors" if kind == "url_value_preprocessor" else f"{kind}_funcs"
    registry: dict[str | None, list[Any]] = getattr(app, attribute)
    registry.setdefault(None if scope == "app" else blp.name, []).append(hook)
    after = fetch_all(client, headers, urls)

    assert after == before
    assert seen == []  # documented: reads run no Flask hooks (promptsvc.api.reads)
    assert dispatched == []
    assert len(answered) == len(before) + len(after)
    # The hook is really registered: a request Flask dispatches runs it.
    assert client.get("/api/v1/prompts/greeting/versions", headers=headers).status_code == 200
    assert seen == [kind]


def test_other_methods_on_read_paths_go_to_flask(
    api: Any, published: dict[str, Any], answered: list[str], dispatched: list[str]
) -> None:
    options = api.request("OPTIONS", "/api/v1/prompts/greeting/versions/2")
    assert {"GET", "HEAD", "PATCH", "DELETE"} <= set(options.headers["Allow"].split(", "))
    wrong = api.post("/api/v1/prompts/greeting/production")
    assert wrong.status_code == 405
    assert "GET" in wrong.headers["Allow"]
    assert (
        api.patch("/api/v1/prompts/greeting/versions/2", json={"content": "x"}).status_code == 200
    )
    assert api.delete("/api/v1/prompts/greeting/versions/2").status_code == 204
    slash = api.get("/api/v1/prompts/greeting/production/")
    assert slash.status_code == 404
    assert answered == []
    assert len(dispatched) == 5


# --------------------------------------------------------------------------- memos


def test_the_body_memo_answers_for_that_very_object_only() -> None:
    storage = MemoryStorage()
    storage.create_prompt("acme", "greeting")
    storage.create_version("acme", "greeting", "one {{x}}", USER)
    version = storage.get_version("acme", "greeting", "1")
    body, etag = reads.version_body(version)
    assert body == json_body(version.to_json()) and etag == etag_of(body)
    assert reads.version_body(version) == (body, etag)
    # An equal-looking record that differs in one field is another object: its own body.
    changed = dataclasses.replace(version, status="archived")
    changed_body, changed_etag = reads.version_body(changed)
    assert b'"status":"archived"' in changed_body and changed_etag != etag
    assert reads.version_body(version) == (body, etag)


def test_the_body_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reads, "_bodies", Memo(3, 3 * reads.MAX_BODY))
    storage = MemoryStorage()
    storage.create_prompt("acme", "greeting")
    big = storage.create_version("acme", "greeting", "x" * (reads.MAX_BODY + 1), USER)
    assert reads.version_body(big)[0] == json_body(big.to_json())
    assert len(reads._bodies) == 0  # too large to keep
    small = [storage.create_version("acme", "greeting", f"v{i}", USER) for i in range(4)]
    for version in small:
        reads.version_body(version)
    # The fourth did not fit: the memo forgot the first three and kept it.
    assert len(reads._bodies) == 1
    kept = reads._bodies.get(id(small[3]))
    assert kept is not None and kept[0] is small[3]


def test_the_route_memo_is_bounded(
    api: Any, app: Flask, published: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoints = read_endpoints(app)
    monkeypatch.setattr(endpoints._routes, "max_entries", 2)
    endpoints._routes.clear()
    for name in ("a", "b", "c", "greeting"):
        api.get(f"/api/v1/prompts/{name}/production", role=SERVICE_READ)
    assert len(endpoints._routes) == 2
    assert endpoints._routes.get(("GET", "localhost", "/api/v1/prompts/greeting/production"))
    long_path = f"/api/v1/prompts/{'x' * reads.MAX_PATH}/latest"
    assert api.get(long_path, role=SERVICE_READ).status_code == 404
    assert endpoints._routes.get(("GET", "localhost", long_path)) is None
    # A remembered route answers as the URL map does.
    assert api.get("/api/v1/prompts/greeting/production", role=SERVICE_READ).status_code == 200
