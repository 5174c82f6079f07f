"""Hostile inputs: oversized and deeply nested bodies, strings JSON allows but UTF-8 does
not, non-finite numbers, header injection through X-Request-ID, path traversal and
unicode in names. None may give a 5xx; every error is in the
API's error shape (docs/api.md section 9)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from identity.roles import SERVICE_WRITE
from tests.reliability.rel_contract import SAFE_REQUEST_ID, error_problems
from tests.reliability.rel_support import ORG, RawResponse, Report, Service, raw_request
from tests.servers import Gunicorn, bootstrap_file, free_port

MIB = 1024 * 1024
PROMPT = "target"
GUNICORN_KEY = ("gunicorn-writer", "gunicorn-writer-secret-0123456789")


def shape_ok(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, f"{response.request.url}: {response.text[:300]}"
    problems = error_problems(
        status, response.request.url.path, response.headers["content-type"], response.content
    )
    assert not problems, problems


@pytest.fixture
def planted(service: Service) -> Service:
    """ORG has prompt PROMPT with version 1 (draft)."""
    auth = service.bearer(service.write)
    assert service.http.post("/api/v1/prompts", json={"name": PROMPT}, headers=auth).is_success
    created = service.http.post(
        f"/api/v1/prompts/{PROMPT}/versions", json={"content": "hi"}, headers=auth
    )
    assert created.status_code == 201
    return service


def body_endpoints(svc: Service) -> list[tuple[str, str, dict[str, str]]]:
    """(method, path, headers) of every endpoint that reads a JSON body."""
    write, admin = svc.bearer(svc.write), svc.bearer(svc.admin)
    version = f"/api/v1/prompts/{PROMPT}/versions/1"
    return [
        ("POST", "/api/v1/prompts", write),
        ("POST", f"/api/v1/prompts/{PROMPT}/versions", write),
        ("PATCH", version, write),
        ("POST", f"{version}/promote", write),
        ("POST", f"{version}/archive", write),
        ("POST", f"{version}/unarchive", write),
        ("POST", "/api/v1/keys", admin),
        ("POST", "/v1/auth/sdk-token", {}),
    ]


def test_oversized_bodies_are_413(planted: Service, report: Report) -> None:
    big = json.dumps({"content": "x" * MIB}).encode()
    tried = 0
    for method, path, headers in body_endpoints(planted):
        response = planted.http.request(
            method, path, content=big, headers={**headers, "Content-Type": "application/json"}
        )
        shape_ok(response, 413)
        assert response.json()["code"] == "payload_too_large"
        tried += 1
    realm = planted.http.post(
        f"/realms/{ORG}/protocol/openid-connect/token",
        content=b"grant_type=client_credentials&client_secret=" + b"x" * MIB,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    shape_ok(realm, 413)
    report(
        input=f"1 MiB + 14 B JSON bodies on {tried} JSON endpoints and a 1 MiB form on the "
        "realm token endpoint (with Content-Length)",
        result=f"all {tried + 1} answered 413 payload_too_large",
    )


NESTED = {
    "100,000 nested arrays": "[" * 100_000 + "]" * 100_000,
    "50,000 nested objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "nesting inside a field": '{"content": "x", "metadata": '
    + '{"a":' * 50_000
    + "1"
    + "}" * 50_001,
}


def test_deeply_nested_json_is_400(planted: Service, report: Report) -> None:
    count = 0
    for method, path, headers in body_endpoints(planted):
        for text in NESTED.values():
            response = planted.http.request(
                method, path, content=text, headers={**headers, "Content-Type": "application/json"}
            )
            shape_ok(response, 400)
            count += 1
    realm = planted.http.post(
        f"/realms/{ORG}/protocol/openid-connect/token",
        content=NESTED["100,000 nested arrays"],
        headers={"Content-Type": "application/json"},
    )
    shape_ok(realm, 400)
    report(
        input=f"{', '.join(NESTED)} on {len(body_endpoints(planted))} JSON endpoints and the "
        "realm token endpoint",
        result=f"all {count + 1} answered 400 (no RecursionError, no 500)",
    )


# JSON allows escapes of lone UTF-16 surrogates; they cannot be encoded as UTF-8.
SURROGATE_BODIES = {
    "content": ("versions", '{"content": "\\ud800 hello"}'),
    "metadata key": ("versions", '{"content": "x", "metadata": {"\\udfff": 1}}'),
    "metadata value": ("versions", '{"content": "x", "metadata": {"k": "\\ud800"}}'),
    "tag": ("versions", '{"content": "x", "tags": ["\\ud83d"]}'),
    "prompt description": ("prompts", '{"name": "other", "description": "\\ud800"}'),
    "promotion notes": ("promote", '{"notes": "\\ud800"}'),
    "draft edit": ("edit", '{"content": "\\udbff"}'),
    "key description": ("keys", '{"role": "Service Read", "description": "\\ud800"}'),
}


def _surrogate_target(kind: str) -> tuple[str, str]:
    return {
        "versions": ("POST", f"/api/v1/prompts/{PROMPT}/versions"),
        "prompts": ("POST", "/api/v1/prompts"),
        "promote": ("POST", f"/api/v1/prompts/{PROMPT}/versions/1/promote"),
        "edit": ("PATCH", f"/api/v1/prompts/{PROMPT}/versions/1"),
        "keys": ("POST", "/api/v1/keys"),
    }[kind]


def test_lone_surrogates_are_400(planted: Service, report: Report) -> None:
    """JSON allows escapes of lone UTF-16 surrogates; UTF-8 cannot encode them."""
    statuses: dict[str, int] = {}
    for field, (kind, body) in SURROGATE_BODIES.items():
        method, path = _surrogate_target(kind)
        credentials = planted.admin if kind == "keys" else planted.write
        headers = {**planted.bearer(credentials), "Content-Type": "application/json"}
        statuses[field] = planted.http.request(
            method, path, content=body, headers=headers
        ).status_code
    report(
        input=f"lone surrogate escapes in: {', '.join(SURROGATE_BODIES)}",
        result=", ".join(f"{field}: {status}" for field, status in statuses.items()),
    )
    assert statuses == dict.fromkeys(SURROGATE_BODIES, 400)


def test_lone_surrogates_in_credentials_are_refused(planted: Service) -> None:
    body = {"account_id": ORG, "key_id": planted.read.client_id, "key_secret": "x"}
    text = json.dumps(body).replace('"x"', '"\\ud800\\ud800"')
    response = planted.http.post("/v1/auth/sdk-token", content=text)
    shape_ok(response, 401)


NON_FINITE = ["1e999", "-1e999", "NaN", "Infinity", "-Infinity"]


def test_non_finite_numbers_are_400(planted: Service, report: Report) -> None:
    """Python's json accepts these; no JSON parser elsewhere reads them back."""
    headers = {**planted.bearer(planted.write), "Content-Type": "application/json"}
    statuses = {}
    for number in NON_FINITE:
        body = '{"content": "x", "metadata": {"n": ' + number + "}}"
        path = f"/api/v1/prompts/{PROMPT}/versions"
        statuses[number] = planted.http.post(path, content=body, headers=headers).status_code
    report(
        input=f"metadata numbers {', '.join(NON_FINITE)}",
        result=", ".join(f"{n}: {s}" for n, s in statuses.items()),
    )
    assert statuses == dict.fromkeys(NON_FINITE, 400)


HUGE_INTEGER = "9" * 5000  # over Python's 4,300-digit limit for int <-> str


def test_huge_integers_are_400(planted: Service, report: Report) -> None:
    """A 5,000-digit integer in a JSON body is a 400, never a 500."""
    statuses = {}
    for method, path, headers in body_endpoints(planted):
        for body in (HUGE_INTEGER, '{"metadata": {"n": ' + HUGE_INTEGER + "}}"):
            response = planted.http.request(
                method, path, content=body, headers={**headers, "Content-Type": "application/json"}
            )
            statuses[f"{method} {path}"] = response.status_code
            shape_ok(response, 400)
    report(
        input=f"a {len(HUGE_INTEGER)}-digit integer, bare and inside metadata, on "
        f"{len(statuses)} JSON endpoints",
        result=f"all {2 * len(statuses)} answered 400",
    )


# ----------------------------------------------------------------- raw HTTP: headers, paths


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    """The deployment server (one worker, memory://) for the raw HTTP checks."""
    directory = tmp_path_factory.mktemp("gunicorn")
    client_id, secret = GUNICORN_KEY
    boot = bootstrap_file(directory, {ORG: {client_id: (secret, SERVICE_WRITE)}})
    env = {
        "PROMPTSVC_STORAGE_URL": "memory://",
        "PROMPTSVC_BOOTSTRAP_FILE": str(boot),
        "PROMPTSVC_WORKERS": "1",
    }
    with Gunicorn(free_port(), env, workers=1) as server:
        yield server


class Target:
    """A server reached with raw bytes, with a write token and PROMPT planted."""

    def __init__(self, name: str, base_url: str, token: str) -> None:
        self.name = name
        self.port = int(base_url.rsplit(":", 1)[1])
        self.token = token
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base_url, timeout=10) as http:
            http.post("/api/v1/prompts", json={"name": PROMPT}, headers=auth)
            http.post(f"/api/v1/prompts/{PROMPT}/versions", json={"content": "hi"}, headers=auth)

    def get(self, target: bytes, *headers: bytes) -> RawResponse:
        request = b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        request += b"Authorization: Bearer " + self.token.encode() + b"\r\n"
        request += b"".join(h + b"\r\n" for h in headers) + b"Connection: close\r\n\r\n"
        return raw_request(self.port, request)


@pytest.fixture(params=["werkzeug", "gunicorn"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "werkzeug":
        svc: Service = request.getfixturevalue("memory_service")
        return Target("werkzeug", svc.base_url, svc.token(svc.write))
    server: Gunicorn = request.getfixturevalue("gunicorn")
    client_id, secret = GUNICORN_KEY
    token = httpx.post(
        server.base_url + "/v1/auth/sdk-token",
        json={"account_id": ORG, "key_id": client_id, "key_secret": secret},
        timeout=10,
    ).json()["access_token"]
    return Target("gunicorn", server.base_url, token)


def refused_by_http_server(response: RawResponse) -> bool:
    """A 4xx the HTTP server itself sent (gunicorn's request line and header checks)
    before the app saw the request: no request id, no JSON body. Safe: nothing echoed."""
    return (
        400 <= response.status_code < 500
        and response.header("X-Request-ID") is None
        and not response.body.startswith(b"{")
    )


REQUEST_IDS: dict[str, bytes] = {
    "CRLF + Set-Cookie": b"abc\r\nSet-Cookie: pwned=1",
    "obs-fold continuation": b"abc\r\n Set-Cookie: pwned=1",
    "lone CR": b"abc\rSet-Cookie: pwned=1",
    "lone LF": b"abc\nX-Injected: 1",
    "NUL byte": b"abc\x00def",
    "8 KiB value": b"a" * 8192,
    "129 characters": b"b" * 129,
    "UTF-8 unicode": "ünïcødé-ид-🔥".encode(),
    "RTL override": "abc\u202edef".encode(),
    "spaces and quotes": b'a b "c" <script>',
    "comma list": b"one, two",
    "empty": b"",
}
SAFE_IDS = [b"req-123", b"a" * 128, b"trace:abc.DEF_1-2"]


def test_request_id_header_injection(target: Target, report: Report) -> None:
    outcomes: dict[str, str] = {}
    path = f"/api/v1/prompts/{PROMPT}/latest".encode()
    for name, value in REQUEST_IDS.items():
        response = target.get(path, b"X-Request-ID: " + value)
        names = {k.lower() for k, _ in response.headers}
        assert "set-cookie" not in names and "x-injected" not in names, (name, response.headers)
        if refused_by_http_server(response):
            outcomes[name] = f"refused by the HTTP server ({response.status_code})"
            continue
        echoed = response.header("X-Request-ID")
        assert echoed is not None and SAFE_REQUEST_ID.match(echoed), (name, echoed)
        assert echoed.encode() != value or SAFE_REQUEST_ID.match(value.decode("latin-1"))
        assert response.status_code < 500, (name, response.status_code)
        outcomes[name] = "echoed as is" if echoed.encode() == value else "replaced by a new id"
    for value in SAFE_IDS:
        assert target.get(path, b"X-Request-ID: " + value).header("X-Request-ID") == value.decode()
    report(
        input=f"{target.name}: X-Request-ID values: {', '.join(REQUEST_IDS)}",
        result="; ".join(f"{k}: {v}" for k, v in outcomes.items())
        + f"; {len(SAFE_IDS)} safe ids echoed unchanged",
    )


def test_oversized_chunked_body_is_413(target: Target, report: Report) -> None:
    """Without Content-Length the limit must hold while reading, not truncate the body."""
    size = MIB + 4 * 65536
    chunk = b"x" * 65536
    body = b'{"content": "' + chunk * (size // len(chunk)) + b'"}'
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in _parts(body, 65536))
    request = (
        (
            f"POST /api/v1/prompts/{PROMPT}/versions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {target.token}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        ).encode()
        + chunked
        + b"0\r\n\r\n"
    )
    response = raw_request(target.port, request)
    report(
        input=f"{target.name}: a {len(body) / MIB:.2f} MiB JSON body sent chunked (no "
        "Content-Length)",
        result=f"{response.status_code} {response.body[:80]!r}",
    )
    assert response.status_code == 413, response.body[:300]


def _parts(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


READ_PATHS = [
    b"/api/v1/prompts/../../../etc/passwd/latest",
    b"/api/v1/prompts/..%2f..%2fkeys/latest",
    b"/api/v1/prompts/%2e%2e/latest",
    b"/api/v1/prompts/%2e%2e%2f%2e%2e%2fkeys/latest",
    b"/api/v1/prompts/..%5c..%5cwindows/latest",
    b"/api/v1/prompts/%00/latest",
    b"/api/v1/prompts/target%00/latest",
    b"/api/v1/prompts/%F0%9F%92%A3/latest",
    b"/api/v1/prompts/%EF%BD%94%EF%BD%81%EF%BD%92%EF%BD%87%EF%BD%85%EF%BD%94/latest",
    b"/api/v1/prompts/%FF%FE/latest",
    b"/api/v1/prompts/target%E2%80%AE/latest",
    b"/api/v1/prompts/TARGET/latest",
    b"/api/v1/prompts/*/latest",
    b"/api/v1/prompts/pmt_*/latest",
    b"/api/v1/prompts/pmt_..%2f..%2f/latest",
    b"/api/v1/prompts/a:p:b/latest",
    b"/api/v1/prompts/%7Bacme%7D:names/latest",
    b"/api/v1/prompts/" + b"n" * 5000 + b"/latest",
    b"/api/v1/prompts/target/versions/..%2f1",
    b"/api/v1/prompts/target/versions/%EF%BC%91",
    b"/api/v1/prompts/target/versions/%D9%A1",
    b"/api/v1/prompts/target/versions/-1",
    b"/api/v1/prompts/target/versions/0",
    b"/api/v1/prompts/target/versions/99999999999999999999999999",
    b"/api/v1/prompts/target/versions/1e0",
    b"/api/v1/prompts/target/versions/v_*",
    b"/api/v1/prompts/target/versions/v_..%2f..",
    b"/api/v1/prompts/target/production/../latest",
]


def test_path_traversal_and_unicode_in_read_paths(target: Target, report: Report) -> None:
    """Every such read is a 404 in our shape (reads never answer 400)."""
    statuses: dict[int, int] = {}
    for raw in READ_PATHS:
        response = target.get(raw)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if refused_by_http_server(response):
            continue
        assert response.status_code == 404, (raw, response.status_code, response.body[:300])
        content_type = response.header("Content-Type") or ""
        problems = error_problems(404, raw.decode("latin-1"), content_type, response.body)
        assert not problems, (raw, problems)
        assert b"hi" not in response.body.replace(b"this", b"")
    # The real ones still work, also percent-encoded: WSGI decodes the path before routing
    # (PATH_INFO), so %2F is a "/" and can only reach routes a plain path reaches.
    for real in (
        f"/api/v1/prompts/{PROMPT}/versions/1".encode(),
        b"/api/v1/prompts/target/versions/%31",
        b"/api/v1/prompts/target%2flatest",
        b"/api/v1/prompts/target%2Fversions%2F1",
    ):
        assert target.get(real).status_code == 200, real
    report(
        input=f"{target.name}: {len(READ_PATHS)} read paths with ../, %2e%2e, encoded "
        "slashes and backslashes, NUL, invalid UTF-8, emoji, full-width and Arabic-Indic "
        "digits, RTL override, Redis key syntax, a 5000-character name",
        result=", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))
        + "; no 5xx, every app answer in the error shape",
    )


BAD_NAMES = [
    "..",
    "../x",
    "a/b",
    "a\\b",
    "ünïcødé",
    "名前",
    "x" * 129,
    "pmt_abc",
    "a:b",
    "{acme}",
    "a\x00b",
    " a",
    "a\n",
    "",
    "-a",
    "a\u202eb",
    "\uff54\uff41\uff52\uff47\uff45\uff54",  # full-width "target"
]


def test_bad_names_on_create_are_400(planted: Service, report: Report) -> None:
    auth = planted.bearer(planted.write)
    for name in BAD_NAMES:
        response = planted.http.post("/api/v1/prompts", json={"name": name}, headers=auth)
        shape_ok(response, 400)
        assert "name" in response.json().get("errors", {}), name
    names = [p["name"] for p in planted.http.get("/api/v1/prompts", headers=auth).json()["items"]]
    assert names == [PROMPT]
    report(
        input=f"POST /api/v1/prompts with {len(BAD_NAMES)} bad names (../, slashes, unicode, "
        "NUL, pmt_ prefix, Redis key syntax, 129 characters, full-width letters, ...)",
        result=f"all {len(BAD_NAMES)} answered 400 with errors.name; no prompt created",
    )


def test_unusual_methods_are_405(memory_service: Service) -> None:
    for method in ("PUT", "TRACE", "PROPFIND"):
        response = memory_service.http.request(method, "/api/v1/prompts")
        shape_ok(response, 405)


def test_request_ids_in_every_error_answer(memory_service: Service) -> None:
    for response in (
        memory_service.http.get("/nowhere"),
        memory_service.http.get("/api/v1/prompts"),
        memory_service.http.post("/v1/auth/sdk-token", content=b"{"),
    ):
        assert re.fullmatch(r"[0-9a-f-]{36}", response.headers["X-Request-ID"])
