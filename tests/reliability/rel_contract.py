"""What a correct answer looks like, written from docs/api.md (not from the code under
test): the error bodies of sections 3.2, 3.7 and 9 and a complete PromptVersion (section
4.1).

Each function returns a list of problems (empty = conforming), so one call can report
everything wrong with an answer at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# Status -> code (docs/api.md section 9).
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
    500: "internal_server_error",
    503: "service_unavailable",
}
# The realm's OAuth endpoints answer RFC 6749 bodies (plus code/message) for these; other
# statuses (413, 503, ...) come from the app and have the API's error shape.
OAUTH_CODES = {
    400: {
        *("invalid_request", "unsupported_grant_type", "invalid_scope", "invalid_grant"),
        *("unauthorized_client", "unsupported_token_type"),
        *("authorization_pending", "slow_down", "access_denied", "expired_token"),
        *("invalid_redirect_uri", "invalid_client_metadata"),  # RFC 7591 registration
    },
    401: {"invalid_client", "invalid_token"},
    403: {"insufficient_scope"},
    429: {"too_many_requests"},
}
REALM_OAUTH_PATH = re.compile(
    r"^/realms/[^/]+/(protocol/openid-connect/"
    r"(token|token/introspect|revoke|userinfo|auth/device|logout)"
    r"|clients-registrations/openid-connect)$"
)
# The realm's pages for people answer their own errors as HTML pages (section 3.7).
# A refusal under the two-person rule is 403 `forbidden` whose message says why (a key
# cannot decide, the requester or the author may not approve; docs/api.md, reviews),
# unlike the other 403s, whose message is the code.
REVIEW_DECISION_PATH = re.compile(r"^/api/v1/reviews/[^/]+/(approve|reject|cancel)$")
REALM_PAGE_PATH = re.compile(r"^/realms/[^/]+/(protocol/openid-connect/(auth|logout)|device)$")
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
STATUSES = {"draft", "published", "archived"}
PROMPT_TYPES = {"text", "chat"}
VERSION_FIELDS = (
    "prompt_id",
    "version_id",
    "name",
    "version",
    "content",
    "variables",
    "status",
    "is_production",
    "prompt_type",
    "metadata",
    "tags",
    "created_at",
    "updated_at",
    "promoted_at",
    "promoted_by",
)
MAX_REQUEST_ID = 128
SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def json_of(content: bytes) -> tuple[Any, str | None]:
    try:
        return json.loads(content), None
    except ValueError as exc:
        return None, f"body is not JSON ({exc}): {content[:200]!r}"


def error_problems(status: int, path: str, content_type: str, content: bytes) -> list[str]:
    """Problems of an error answer (status >= 400): its body shape and code."""
    if status < 400:
        return []
    problems: list[str] = []
    if REALM_PAGE_PATH.match(path) and content_type.startswith("text/html") and status < 500:
        if b"<html" not in content:
            problems.append(f"a page's {status} is not an HTML page: {content[:200]!r}")
        return problems
    if not content_type.startswith("application/json"):
        problems.append(f"Content-Type is {content_type!r}, not application/json")
    body, problem = json_of(content)
    if problem:
        return [*problems, problem]
    if not isinstance(body, dict):
        return [*problems, f"body is not a JSON object: {body!r:.200}"]
    text = {k: v for k, v in body.items() if k in ("code", "message", "error")}
    for name in ("code", "message", "error"):
        if not isinstance(body.get(name), str) or not body.get(name):
            problems.append(f"{name!r} missing or not a non-empty string in {text}")
    if body.get("error") != body.get("code"):
        problems.append(f"error {body.get('error')!r} != code {body.get('code')!r}")
    oauth = REALM_OAUTH_PATH.match(path) and status in OAUTH_CODES
    if oauth:
        if body.get("error") not in OAUTH_CODES[status]:
            problems.append(f"realm {status} has error {body.get('error')!r}")
        if body.get("message") != body.get("error_description"):
            problems.append("realm: message != error_description")
    elif status in CODES and body.get("code") != CODES[status]:
        problems.append(f"status {status} has code {body.get('code')!r}, not {CODES[status]!r}")
    says_why = status == 403 and REVIEW_DECISION_PATH.match(path)
    if (
        status in (401, 403)
        and not oauth
        and not says_why
        and body.get("message") != body.get("code")
    ):
        problems.append(f"{status}: message {body.get('message')!r} must equal the code")
    if "errors" in body:
        errors = body["errors"]
        if status != 400:
            problems.append(f"'errors' on a {status}")
        if not isinstance(errors, dict) or not all(
            isinstance(v, list) and all(isinstance(m, str) for m in v) for v in errors.values()
        ):
            problems.append(f"'errors' is not {{field: [str]}}: {errors!r:.200}")
    if status >= 500 and any(s in content.decode(errors="replace") for s in _LEAKS):
        problems.append(f"a {status} body leaks internals: {content[:300]!r}")
    return problems


# Text that must never reach a body: tracebacks and storage/driver details.
_LEAKS = ("Traceback", 'File "', "redis.exceptions", "ConnectionError", "127.0.0.1:")


def version_problems(version: Any) -> list[str]:
    """Problems of a PromptVersion body: every field, its type, the rules."""
    if not isinstance(version, Mapping):
        return [f"not an object: {version!r:.200}"]
    problems = [f"missing field {name!r}" for name in VERSION_FIELDS if name not in version]
    if problems:
        return problems
    v = version

    def expect(ok: bool, what: str) -> None:
        if not ok:
            problems.append(f"{what}: {json.dumps({k: v[k] for k in VERSION_FIELDS})[:400]}")

    expect(isinstance(v["prompt_id"], str) and v["prompt_id"].startswith("pmt_"), "prompt_id")
    expect(isinstance(v["version_id"], str) and v["version_id"].startswith("v_"), "version_id")
    expect(isinstance(v["name"], str) and bool(v["name"]), "name")
    expect(_is_int(v["version"]) and v["version"] >= 1, "version")
    expect(isinstance(v["content"], str), "content")
    expect(_str_list(v["variables"]), "variables")
    expect(v["status"] in STATUSES, "status")
    expect(v["is_production"] is (v["status"] == "published"), "is_production vs status")
    expect(v["prompt_type"] in PROMPT_TYPES, "prompt_type")
    expect(isinstance(v["metadata"], dict), "metadata")
    expect(_str_list(v["tags"]), "tags")
    for name in ("created_at", "updated_at"):
        expect(isinstance(v[name], str) and bool(RFC3339_UTC.match(v[name])), name)
    promoted_at, promoted_by = v["promoted_at"], v["promoted_by"]
    expect(
        promoted_at is None
        or (isinstance(promoted_at, str) and bool(RFC3339_UTC.match(promoted_at))),
        "promoted_at",
    )
    expect(
        promoted_by is None or (isinstance(promoted_by, str) and bool(promoted_by)), "promoted_by"
    )
    expect((promoted_at is None) == (promoted_by is None), "promoted_at and promoted_by together")
    if v["status"] == "published":
        expect(promoted_at is not None, "a published version has promoted_at")
    expect("created_by" not in v, "created_by is not part of the response")
    return problems


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def request_id_problems(sent: str | None, echoed: str | None) -> list[str]:
    """X-Request-ID: present, safe and bounded; the client's own only when it was safe."""
    if echoed is None:
        return ["no X-Request-ID on the response"]
    problems = []
    if len(echoed) > MAX_REQUEST_ID or not SAFE_REQUEST_ID.match(echoed):
        problems.append(f"unsafe X-Request-ID echoed: {echoed[:200]!r}")
    if sent is not None and SAFE_REQUEST_ID.match(sent) and echoed != sent:
        problems.append(f"a safe X-Request-ID {sent!r} was replaced by {echoed!r}")
    if sent is not None and not SAFE_REQUEST_ID.match(sent) and echoed == sent:
        problems.append("an unsafe X-Request-ID was echoed as sent")
    return problems
