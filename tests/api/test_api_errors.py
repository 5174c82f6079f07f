"""Error shapes for every path (docs/api.md section 9), request ids, logging, storage outages."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder, run_wsgi_app

from promptsvc.http import LOG_FORMAT, RequestIdFilter, new_request_id
from storage import Storage, StorageUnavailable

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def assert_error(r: Any, status: int, code: str) -> None:
    assert r.status_code == status
    assert r.mimetype == "application/json"
    assert r.json["code"] == r.json["error"] == code
    assert isinstance(r.json["message"], str) and r.json["message"]
    assert set(r.json) <= {"code", "message", "error", "errors"}


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What promptsvc logs, formatted as configure_logging formats it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("promptsvc")
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


# --------------------------------------------------------------------------- routing


@pytest.mark.parametrize(
    "path", ["/api/v1/nope", "/api/v1/prompts/a/b/c/d/e", "/v1/nope", "/api/v2/prompts", "/nope"]
)
def test_unknown_path_is_404_in_our_shape(api: Any, path: str) -> None:
    r = api.get(path)
    assert_error(r, 404, "not_found")
    assert r.headers["X-Request-ID"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/api/v1/prompts/greeting", {"GET", "DELETE"}),
        ("DELETE", "/api/v1/prompts", {"GET", "POST"}),
        ("POST", "/api/v1/prompts/greeting/production", {"GET"}),
        ("GET", "/api/v1/prompts/greeting/versions/1/promote", {"POST"}),
        ("GET", "/v1/auth/sdk-token", {"POST"}),
        ("POST", "/healthz", {"GET"}),
    ],
)
def test_wrong_method_is_405_with_allow(
    api: Any, method: str, path: str, allowed: set[str]
) -> None:
    r = api.request(method, path)
    assert_error(r, 405, "method_not_allowed")
    assert allowed <= {m.strip() for m in r.headers["Allow"].split(",")}


# --------------------------------------------------------------------------- bodies


def test_body_over_1_mib_is_413(api: Any) -> None:
    api.create_prompt("greeting")
    big = {"content": "x" * (1024 * 1024)}
    r = api.post("/api/v1/prompts/greeting/versions", json=big)
    assert_error(r, 413, "payload_too_large")
    # Auth still comes first.
    assert api.post("/api/v1/prompts/greeting/versions", json=big, role=None).status_code == 401


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/xml", None],
)
def test_non_json_body_is_415(api: Any, content_type: str | None) -> None:
    api.create_prompt("greeting")
    api.create_version()
    headers = {"Content-Type": content_type} if content_type else {}
    for path in (
        "/api/v1/prompts",
        "/api/v1/prompts/greeting/versions",
        "/api/v1/prompts/greeting/versions/1/promote",
        "/api/v1/prompts/greeting/versions/1/archive",
    ):
        r = api.post(path, data=b'{"name": "x"}', headers=headers)
        assert_error(r, 415, "unsupported_media_type")
    r = api.patch("/api/v1/prompts/greeting/versions/1", data="content=x", headers=headers)
    assert_error(r, 415, "unsupported_media_type")


def test_json_content_type_variants_are_accepted(api: Any) -> None:
    for i, content_type in enumerate(
        ["application/json", "application/json; charset=utf-8", "application/vnd.api+json"]
    ):
        r = api.post("/api/v1/prompts", data=f'{{"name": "p{i}"}}', content_type=content_type)
        assert r.status_code == 201, content_type


@pytest.mark.parametrize("raw", ["{", '{"name": }', "{'name': 'x'}", "\xff\xfe", "nul"])
def test_malformed_json_is_400(api: Any, raw: str) -> None:
    r = api.post("/api/v1/prompts", data=raw.encode("latin-1"), content_type="application/json")
    assert_error(r, 400, "bad_request")
    assert "JSON" in r.json["message"]


def test_validation_errors_list_fields(api: Any) -> None:
    r = api.post("/api/v1/prompts", json={"name": "", "prompt_type": "x"})
    assert_error(r, 400, "bad_request")
    assert set(r.json["errors"]) == {"name", "prompt_type"}
    for messages in r.json["errors"].values():
        assert messages and all(isinstance(m, str) for m in messages)


# --------------------------------------------------------------------------- 500 / 503


def test_unhandled_exception_is_a_generic_500_logged_with_traceback(
    api: Any, app: Flask, backend: Storage, monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    api.tokens()  # the token is made before storage starts failing

    def explode(*_: Any, **__: Any) -> None:
        raise RuntimeError("password=hunter2 at redis://10.0.0.1")

    monkeypatch.setattr(backend, "read_environment_including", explode)
    r = api.get("/api/v1/prompts/greeting/production", headers={"X-Request-ID": "req-500"})
    assert_error(r, 500, "internal_server_error")
    assert r.json["message"] == "internal server error"
    assert "hunter2" not in r.get_data(as_text=True)
    assert r.headers["X-Request-ID"] == "req-500"
    logged = log_lines.getvalue()
    assert "[req-500]" in logged
    assert "Traceback" in logged
    assert "hunter2" in logged


@pytest.fixture
def storage_down(api: Any, app: Flask, backend: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the API's storage unreachable: a Redis on a closed port, or a dead memory.

    The admin token is made first, while storage works.
    """
    api.tokens()
    if type(backend).__name__ == "RedisStorage":
        from storage.redis import RedisStorage

        dead = RedisStorage.from_url("redis://127.0.0.1:1/0")
        monkeypatch.setitem(app.extensions, "promptsvc.storage", dead)
        return

    def unavailable(*_: Any, **__: Any) -> None:
        raise StorageUnavailable("memory backend switched off by the test")

    for name in ("ping", "read_environment", "list_prompts", "create_prompt", "promote"):
        monkeypatch.setattr(backend, name, unavailable)


def test_storage_down_is_503_everywhere(api: Any, app: Flask, storage_down: None) -> None:
    # Token verification needs no storage round trip for a token already verified.
    for method, path, body in (
        ("GET", "/api/v1/prompts/greeting/production", None),
        ("GET", "/api/v1/prompts", None),
        ("POST", "/api/v1/prompts", {"name": "x"}),
        ("POST", "/api/v1/prompts/greeting/versions/1/promote", None),
    ):
        r = api.request(method, path, json=body) if body else api.request(method, path)
        assert_error(r, 503, "service_unavailable")
        assert "127.0.0.1" not in r.get_data(as_text=True)
    assert_error(api.client.get("/readyz"), 503, "service_unavailable")
    assert api.client.get("/healthz").status_code == 200


# --------------------------------------------------------------------------- request id


def test_request_id_is_echoed_when_safe(api: Any) -> None:
    for given in ("abc", "7f1c2b9e-1111-4222-8333-944445555666", "a.b:c_d-e", "x" * 128):
        assert (
            api.client.get("/healthz", headers={"X-Request-ID": given}).headers["X-Request-ID"]
            == given
        )


@pytest.mark.parametrize("given", ["x" * 129, "has space", "a\tb", "<script>", "", "ü"])
def test_unsafe_request_id_is_replaced(api: Any, given: str) -> None:
    r = api.client.get("/healthz", headers={"X-Request-ID": given})
    assert UUID.match(r.headers["X-Request-ID"])


def test_request_id_generated_on_every_kind_of_response(api: Any) -> None:
    responses = [
        api.client.get("/healthz"),
        api.client.get("/nope"),
        api.get("/api/v1/prompts/nope/production"),
        api.get("/api/v1/prompts/nope/production", role=None),
        api.client.get("/openapi.json"),
        api.client.post("/v1/auth/sdk-token", json={}),
    ]
    ids = [r.headers["X-Request-ID"] for r in responses]
    assert all(UUID.match(i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_a_forked_worker_makes_request_ids_of_its_own() -> None:
    # gunicorn forks its workers: were the ids' random state not reseeded in each,
    # two workers would hand out the same ids.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, new_request_id().encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    assert UUID.match(child)
    assert child != new_request_id()


def test_log_lines_carry_the_request_id(api: Any, app: Flask, log_lines: io.StringIO) -> None:
    @app.get("/_test/log")
    def log_something() -> str:
        logging.getLogger("promptsvc.test").warning("inside the request")
        return "ok"

    rid = str(uuid.uuid4())
    api.client.get("/_test/log", headers={"X-Request-ID": rid})
    logging.getLogger("promptsvc.test").warning("outside any request")
    lines = log_lines.getvalue().splitlines()
    assert any(f"[{rid}]" in line and "inside the request" in line for line in lines)
    assert any("[-]" in line and "outside any request" in line for line in lines)


# --------------------------------------------------------------------------- strict JSON

NESTED = {
    "arrays": "[" * 100_000 + "]" * 100_000,
    "objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "inside a field": '{"content": "x", "metadata": ' + '{"a":' * 50_000 + "1" + "}" * 50_001,
}


@pytest.mark.parametrize("body", NESTED.values(), ids=NESTED.keys())
def test_deeply_nested_json_is_400(api: Any, body: str) -> None:
    api.create_prompt("greeting")
    r = api.post("/api/v1/prompts/greeting/versions", data=body, content_type="application/json")
    assert_error(r, 400, "bad_request")
    assert "nested too deeply" in r.json["message"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/prompts/greeting/versions", '{"content": "\\ud800 hi"}'),
        ("/api/v1/prompts/greeting/versions", '{"content": "x", "metadata": {"\\udfff": 1}}'),
        ("/api/v1/prompts/greeting/versions", '{"content": "x", "tags": ["\\ud83d"]}'),
        ("/api/v1/prompts", '{"name": "other", "description": "\\udbff"}'),
        ("/api/v1/keys", '{"role": "Service Read", "description": "\\ud800"}'),
    ],
)
def test_lone_surrogate_escapes_are_400(api: Any, path: str, body: str) -> None:
    api.create_prompt("greeting")
    r = api.post(path, data=body, content_type="application/json")
    assert_error(r, 400, "bad_request")
    assert "surrogate" in r.json["message"]


def test_surrogate_pairs_and_escaped_backslashes_are_fine(api: Any) -> None:
    api.create_prompt("greeting")
    body = '{"content": "smile \\ud83d\\ude00 and a literal \\\\ud800"}'
    r = api.post("/api/v1/prompts/greeting/versions", data=body, content_type="application/json")
    assert r.status_code == 201
    assert r.json["content"] == "smile \U0001f600 and a literal \\ud800"


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity", "-Infinity"])
def test_numbers_json_cannot_represent_are_400(api: Any, number: str) -> None:
    api.create_prompt("greeting")
    body = '{"content": "x", "metadata": {"n": ' + number + "}}"
    r = api.post("/api/v1/prompts/greeting/versions", data=body, content_type="application/json")
    assert_error(r, 400, "bad_request")
    assert number.lstrip("-") in r.json["message"]


def _chunked(api: Any, app: Flask, size: int) -> tuple[int, Any]:
    """POST a body of ``size`` bytes as a server hands over a chunked request: no
    Content-Length, ``wsgi.input_terminated`` set."""
    body = b'{"content": "' + b"x" * (size - 15) + b'"}'
    assert len(body) == size
    environ = EnvironBuilder(
        path="/api/v1/prompts/greeting/versions",
        method="POST",
        headers=api.tokens.headers(),
        content_type="application/json",
        input_stream=io.BytesIO(body),
    ).get_environ()
    del environ["CONTENT_LENGTH"]
    environ["wsgi.input_terminated"] = True
    answer, status, _ = run_wsgi_app(app, environ)
    return int(status.split()[0]), json.loads(b"".join(answer))


def test_streamed_body_over_1_mib_is_413(api: Any, app: Flask) -> None:
    api.create_prompt("greeting")
    status, body = _chunked(api, app, 1024 * 1024 + 1)
    assert (status, body["code"]) == (413, "payload_too_large")
    # Exactly at the limit the body is read whole (and is then too long a content: 400).
    status, body = _chunked(api, app, 1024 * 1024)
    assert (status, body["code"]) == (400, "bad_request")
    assert "content" in body["errors"]
    status, body = _chunked(api, app, 2000)
    assert status == 201
    assert len(body["content"]) == 2000 - 15
