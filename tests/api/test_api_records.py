"""Every record's JSON against the schema /openapi.json publishes for it: they cannot drift.

A record's JSON is its ``to_json()`` (storage/records.py); promptsvc/api/responses/ only
documents it. For each record type, a populated record and a minimal one (every optional
field null, every list empty) must match the published schema exactly: the same field
names, the same types (list items, enums and the date-time format included), and null
where, and only where, the schema says nullable. The API's real answers are checked
against the schema documented for their endpoint the same way, on every backend.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from flask import Flask

import storage.archive_records
import storage.event_records
import storage.identity_records
import storage.records
import storage.webhook_records
from identity import users
from identity.keys import created_json
from promptsvc.api.reviews import REVIEW_PEOPLE
from promptsvc.api.versions import ROLLOUT_PEOPLE
from promptsvc.app import create_app
from promptsvc.config import Settings
from promptsvc.names import Names
from storage import (
    ApiKey,
    Approval,
    BreakingChange,
    Delivery,
    Environment,
    Event,
    InRollout,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
    SigningKey,
    User,
    Webhook,
)
from storage.memory import MemoryStorage

Spec = dict[str, Any]

AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
LATER = datetime(2026, 1, 3, 9, 0, 0, tzinfo=timezone(timedelta(hours=2)))
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")

VERSION = PromptVersion(
    prompt_id="pmt_1",
    version_id="v_1",
    name="greeting",
    version=2,
    content='[{"role": "user", "content": "Hi {{name}} {{> policy@2}}"}]',
    variables=("name",),
    status="published",
    prompt_type="chat",
    metadata={"model": "gpt", "limits": {"tokens": 100}},
    tags=("prod", "eu"),
    created_at=AT,
    updated_at=LATER,
    promoted_at=LATER,
    promoted_by=USER,
    created_by=USER,
    variables_schema={"name": {"type": "string", "enum": ["Ada", "Bob"], "default": "Ada"}},
    examples=({"name": "ada", "variables": {"name": "Ada"}},),
    config={"model": "gpt", "params": {"temperature": 0.2}},
)
CHANGE = BreakingChange("name", "enum_narrowed", "version 2 allows only ...")
HISTORY = PromotionRecord(
    "h_1",
    "pmt_1",
    2,
    USER,
    LATER,
    previous_version=1,
    notes="ship",
    environment="production",
    review_id="rv_1",
    approved_by=(USER,),
    rollout_id="ro_1",
    breaking=True,
)
ROLLOUT = Rollout("ro_1", "pmt_1", "production", 1, 2, "v_2", 25, USER, AT, LATER)
APPROVAL = Approval(USER, "ada", LATER, "lgtm")
REVIEW = Review(
    review_id="rv_1",
    prompt_id="pmt_1",
    prompt_name="greeting",
    version=2,
    version_id="v_1",
    environment="production",
    status="rejected",
    requested_by=USER,
    requested_at=AT,
    notes="ship",
    expected_version=1,
    required_approvals=2,
    approvals=(APPROVAL,),
    rejected_by=USER,
    decided_at=LATER,
    rollout_percent=10,
    version_author=USER,
    rejection_comment="not yet",
    allow_breaking=True,
    breaking=(CHANGE,),
    affected_prompts=("support",),
)
KEY = ApiKey("acme", "ci", "hash", "Service Write", USER, "deploys", AT, revoked=True, owner=USER)
PERSON = User("acme", USER, "ada@acme.example", "Service Admin", True, AT, LATER, "$argon2id$")

# Each record type the API answers with, populated and minimal, and its schema's name.
RECORDS: dict[type, tuple[str, object, object]] = {
    Prompt: (
        "Prompt",
        Prompt("pmt_1", "greeting", "chat", "Says hello", AT, LATER, 3, 2),
        Prompt("pmt_1", "greeting", "text", None, AT, AT, None, None),
    ),
    PromptVersion: (
        "PromptVersion",
        VERSION,
        dataclasses.replace(
            VERSION,
            content="Hi",
            variables=(),
            status="draft",
            prompt_type="text",
            metadata={},
            tags=(),
            promoted_at=None,
            promoted_by=None,
            variables_schema=None,
            examples=(),
            config=None,
        ),
    ),
    PromotionRecord: (
        "PromotionRecord",
        HISTORY,
        dataclasses.replace(
            HISTORY,
            previous_version=None,
            notes=None,
            review_id=None,
            approved_by=(),
            rollout_id=None,
        ),
    ),
    Environment: (
        "Environment",
        Environment("staging", 2, "pre-release", AT),
        Environment("production", 0, None, None),
    ),
    Approval: ("Approval", APPROVAL, dataclasses.replace(APPROVAL, comment=None)),
    # Every field of a breaking change is always there.
    BreakingChange: ("BreakingChange", CHANGE, CHANGE),
    Review: (
        "Review",
        REVIEW,
        dataclasses.replace(
            REVIEW,
            status="open",
            notes=None,
            expected_version=None,
            approvals=(),
            rejected_by=None,
            decided_at=None,
            rollout_percent=None,
            rejection_comment=None,
            breaking=(),
        ),
    ),
    ApiKey: ("ApiKey", KEY, dataclasses.replace(KEY, description=None, revoked=False, owner=None)),
    # A user has no optional field: "minimal" is the other value of its flag.
    User: ("User", PERSON, dataclasses.replace(PERSON, disabled=False, updated_at=AT)),
    Event: (
        "Event",
        Event(
            "1767323045678-0",
            "version.promoted",
            "pmt_1",
            "greeting",
            2,
            "v_1",
            "published",
            1,
            USER,
            LATER,
            "req-1",
            "production",
            "rv_1",
            "ro_1",
            25,
            "guard",
            {"metric": "score", "threshold": 0.1, "baseline": 0.9, "candidate": 0.7, "samples": 40},
        ),
        Event(
            "1767323045678-1",
            "prompt.created",
            "pmt_1",
            "greeting",
            None,
            None,
            None,
            None,
            None,
            AT,
            None,
        ),
    ),
    Webhook: (
        "Webhook",
        Webhook("wh_1", "https://example.com/h", ("*",), "CI", "whsec_c2VjcmV0", AT),
        Webhook("wh_1", "https://example.com/h", ("version.promoted",), None, "whsec_eA==", AT),
    ),
    Delivery: (
        "Delivery",
        Delivery("wh_1", "msg_1_1-0", "1-0", "version.promoted", 2, 503, "x", LATER),
        Delivery("wh_1", "msg_ping_1", None, "ping", 1, None, None, AT),
    ),
}
# A rollout has no optional field: "minimal" is another environment and percent.
RECORDS[Rollout] = ("Rollout", ROLLOUT, dataclasses.replace(ROLLOUT, environment="qa", percent=1))
RECORDS[InRollout] = (
    "PromptVersionInRollout",
    InRollout(VERSION, ROLLOUT, VERSION),
    InRollout(RECORDS[PromptVersion][2], ROLLOUT, RECORDS[PromptVersion][2]),  # type: ignore[arg-type]
)
RECORDS[Promotion] = (
    "PromotionResult",
    Promotion(VERSION, HISTORY),
    Promotion(RECORDS[PromptVersion][2], RECORDS[PromotionRecord][2]),  # type: ignore[arg-type]
)
# Shown only by `promptsvc signing-keys` (tests/cli/test_cli_operators.py).
NOT_IN_THE_API: set[type] = {SigningKey}


@pytest.fixture(scope="module")
def served(signing_key_file: str) -> Flask:
    settings = Settings(issuer_url="http://promptsvc.test", signing_key_file=signing_key_file)
    return create_app(settings, storage=MemoryStorage())


@pytest.fixture(scope="module")
def spec(served: Flask) -> Spec:
    document: Spec = served.test_client().get("/openapi.json").json
    return document


# The user ids the API names beside a record's (promptsvc.names), as it answers them.
NAMED: dict[type, tuple[str, ...]] = {Review: REVIEW_PEOPLE, Rollout: ROLLOUT_PEOPLE}


def answered(served: Flask, record: Any) -> dict[str, Any]:
    """The record's JSON as the API answers it."""
    body: dict[str, Any] = record.to_json()
    return Names(served.extensions["identity"], "acme").beside(body, *NAMED.get(type(record), ()))


def resolve(spec: Spec, schema: Spec) -> Spec:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


# JSON types as Python decodes them; ``type(x) in`` keeps True out of "integer".
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def check(spec: Spec, schema: Spec, value: object, where: str) -> None:
    """``value`` is exactly what the OpenAPI 3.0 ``schema`` describes (for ``oneOf``:
    one of its schemas)."""
    schema = resolve(spec, schema)
    # apispec documents a nullable nested object as anyOf [its schema, null].
    options = schema.get("oneOf") or schema.get("anyOf")
    if options:
        problems = []
        for option in options:
            try:
                check(spec, option, value, where)
            except AssertionError as problem:
                problems.append(str(problem))
            else:
                return
        raise AssertionError(f"{where} matches none of its options: {problems}")
    if value is None:
        assert schema.get("nullable") is True, f"{where} is null; its schema is not nullable"
        return
    if "type" not in schema:  # any JSON value (a config change's from and to)
        assert "properties" not in schema, f"{where}: a schema with properties has a type"
        return
    kind = schema["type"]
    assert type(value) in JSON_TYPES[kind], f"{where} is {type(value).__name__}, not {kind}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} is not one of {schema['enum']}"
    if schema.get("format") == "date-time":
        assert RFC3339_UTC.fullmatch(str(value)), f"{where}: {value!r} is not RFC 3339 UTC"
    if kind == "array":
        for i, item in enumerate(value):  # type: ignore[arg-type]
            check(spec, schema["items"], item, f"{where}[{i}]")
    if kind == "object" and "properties" in schema:
        assert isinstance(value, dict)
        properties = schema["properties"]
        assert set(value) == set(properties), f"{where}: fields differ from the schema"
        for name, item in value.items():
            check(spec, properties[name], item, f"{where}.{name}")


def is_nullable(spec: Spec, schema: Spec) -> bool:
    schema = resolve(spec, schema)
    options = schema.get("anyOf", ())
    return bool(schema.get("nullable") or any(is_nullable(spec, o) for o in options))


def optional_fields(record_type: type) -> set[str]:
    hints = typing.get_type_hints(record_type)
    return {
        f.name
        for f in dataclasses.fields(record_type)
        if type(None) in typing.get_args(hints[f.name])
        and isinstance(hints[f.name], types.UnionType)
    }


def test_every_record_with_json_is_checked() -> None:
    described = {
        value
        for module in (
            storage.records,
            storage.identity_records,
            storage.webhook_records,
            storage.event_records,
            storage.archive_records,
        )
        for value in vars(module).values()
        if dataclasses.is_dataclass(value) and hasattr(value, "to_json")
    }
    assert described == set(RECORDS) | NOT_IN_THE_API


@pytest.mark.parametrize("record_type", list(RECORDS), ids=lambda t: t.__name__)
@pytest.mark.parametrize("which", ["populated", "minimal"])
def test_record_json_matches_its_schema(
    spec: Spec, served: Flask, record_type: type, which: str
) -> None:
    name, populated, minimal = RECORDS[record_type]
    record = populated if which == "populated" else minimal
    body = answered(served, record)
    check(spec, {"$ref": f"#/components/schemas/{name}"}, body, name)


@pytest.mark.parametrize("record_type", list(RECORDS), ids=lambda t: t.__name__)
def test_null_exactly_where_the_schema_is_nullable(
    spec: Spec, served: Flask, record_type: type
) -> None:
    name, populated, minimal = RECORDS[record_type]
    properties = spec["components"]["schemas"][name]["properties"]
    nullable = {field for field, s in properties.items() if is_nullable(spec, s)}
    assert None not in answered(served, populated).values()
    nulls = {field for field, value in answered(served, minimal).items() if value is None}
    assert nulls == nullable
    # The minimal record really is minimal: every optional field of it is None.
    assert all(getattr(minimal, f) is None for f in optional_fields(record_type))
    # And every list in the populated one has items, so their types were checked.
    body = populated.to_json()  # type: ignore[attr-defined]
    assert all(value for value in body.values() if isinstance(value, list))


@pytest.mark.parametrize("key", [KEY, RECORDS[ApiKey][2]], ids=["populated", "minimal"])
def test_a_created_key_matches_its_schema(spec: Spec, key: ApiKey) -> None:
    body = created_json(key, "s" * 43)
    check(spec, {"$ref": "#/components/schemas/ApiKeyCreated"}, body, "ApiKeyCreated")
    assert body == {**key.to_json(), "client_secret": "s" * 43}


@pytest.mark.parametrize("generated", ["p" * 24, None], ids=["generated", "given"])
def test_a_created_user_matches_its_schema(spec: Spec, generated: str | None) -> None:
    body = users.created_json(PERSON, generated)
    # The password is there only when it was generated; a given one is never answered.
    name = "UserCreated" if generated else "User"
    check(spec, {"$ref": f"#/components/schemas/{name}"}, body, name)
    assert "password_hash" not in body and PERSON.password_hash not in str(body)


def test_a_signing_key_never_shows_its_private_part() -> None:
    key = SigningKey("k1", "-----BEGIN PRIVATE KEY-----\nMII\n", LATER)
    assert key.to_json(signing=False) == {
        "kid": "k1",
        "created_at": "2026-01-03T07:00:00.000000Z",
        "signing": False,
    }


# --------------------------------------------------------------------------- real answers


def documented(spec: Spec, method: str, path: str, status: int) -> Spec:
    response = spec["paths"][path][method.lower()]["responses"][str(status)]
    schema: Spec = response["content"]["application/json"]["schema"]
    return schema


def test_every_answer_matches_its_documented_schema(spec: Spec, api: Any) -> None:
    prompts = "/api/v1/prompts"
    version = prompts + "/{name}/versions/{versionId}"
    answered: list[tuple[str, str, str, int, Any]] = []

    def call(method: str, path: str, status: int, url: str, **kwargs: Any) -> Any:
        r = api.request(method, url, **kwargs)
        assert r.status_code == status, r.json
        answered.append((method, path, url, status, r.json))
        return r.json

    call("POST", prompts, 201, prompts, json={"name": "greeting"})
    chat = {"name": "chat", "prompt_type": "chat", "description": "d"}
    call("POST", prompts, 201, prompts, json=chat)
    call("GET", prompts, 200, prompts)
    call("GET", prompts + "/{name}", 200, f"{prompts}/greeting")
    versions = f"{prompts}/greeting/versions"
    body = {
        "content": "Hi {{name}}",
        "metadata": {"a": {"b": 1}},
        "tags": ["x"],
        "variables_schema": {"name": {"type": "string", "enum": ["Ada"]}},
        "examples": [{"name": "ada", "variables": {"name": "Ada"}}],
    }
    call("POST", prompts + "/{name}/versions", 201, versions, json=body)
    # v2 has a tool, so the diff back to v1 has a breaking change by field.
    tool = {"model": "m", "tools": [{"name": "t", "parameters": {"type": "object"}}]}
    call(
        "POST", prompts + "/{name}/versions", 201, versions, json={"content": "Yo", "config": tool}
    )
    call("PATCH", version, 200, f"{versions}/2", json={"content": "Yo {{who}}"})
    call("POST", version + "/promote", 200, f"{versions}/1/promote", json={"notes": "n"})
    # v2 needs who, which v1's example lacks: breaking, acknowledged.
    acknowledged = {"notes": "who is new", "allow_breaking": True}
    call("POST", version + "/promote", 200, f"{versions}/2/promote", json=acknowledged)
    call("POST", version + "/unarchive", 200, f"{versions}/1/unarchive")
    call("POST", version + "/archive", 200, f"{versions}/1/archive")
    call("GET", prompts + "/{name}/versions", 200, versions)
    call("GET", version, 200, f"{versions}/1")
    call("GET", prompts + "/{name}/production", 200, f"{prompts}/greeting/production")
    call("GET", prompts + "/{name}/latest", 200, f"{prompts}/greeting/latest")
    call("GET", prompts + "/{name}/history", 200, f"{prompts}/greeting/history")
    call("POST", prompts + "/{name}/rollback", 200, f"{prompts}/greeting/rollback")
    diff = f"{prompts}/greeting/diff?from=2&to=production"
    call("GET", prompts + "/{name}/diff", 200, diff)
    call("GET", prompts + "/{name}/diff", 200, f"{prompts}/greeting/diff?from=1&to=2")
    call("POST", "/api/v1/keys", 201, "/api/v1/keys", json={"role": "Service Read"})
    call("GET", "/api/v1/keys", 200, "/api/v1/keys")
    call(
        "POST",
        "/api/v1/users",
        201,
        "/api/v1/users",
        json={"username": "ada", "role": "Service Read"},
    )
    call("GET", "/api/v1/users", 200, "/api/v1/users")
    user = "/api/v1/users/{username}"
    call("PATCH", user, 200, "/api/v1/users/ada", json={"disabled": True})
    envs = "/api/v1/environments"
    call("POST", envs, 201, envs, json={"name": "staging", "required_approvals": 1})
    call("GET", envs, 200, envs)
    call("GET", envs + "/{environment}", 200, f"{envs}/production")
    call("PATCH", envs + "/{environment}", 200, f"{envs}/staging", json={"description": "d"})
    placed = prompts + "/{name}/environments/{environment}"
    call("GET", placed, 200, f"{prompts}/greeting/environments/production")
    reviews = f"{prompts}/greeting/reviews"
    opened = call(
        "POST",
        prompts + "/{name}/reviews",
        201,
        reviews,
        json={"version": 1, "environment": "staging"},
    )
    call("GET", prompts + "/{name}/reviews", 200, reviews)
    call("GET", "/api/v1/reviews", 200, "/api/v1/reviews?status=open")
    review = "/api/v1/reviews/{review_id}"
    call("GET", review, 200, f"/api/v1/reviews/{opened['review_id']}")
    call("POST", review + "/cancel", 200, f"/api/v1/reviews/{opened['review_id']}/cancel")
    call("POST", prompts + "/{name}/versions", 201, versions, json={"content": "Hey"})
    started = f"{versions}/3/promote"
    guard = {"metric": "score", "threshold": 0.5, "min_samples": 10}
    begun = call(
        "POST",
        version + "/promote",
        201,
        started,
        json={"rollout_percent": 10, "rollout_guard": guard},
    )
    rollouts = prompts + "/{name}/rollouts"
    rollout = rollouts + "/{environment}"
    pid, rid = begun["prompt_id"], begun["rollout_id"]
    items = [
        {"prompt_id": pid, "version": 3, "environment": "production", "rollout_id": rid,
         "arm": "candidate", "renders": 2, "ok": 1, "score_sum": 0.5, "score_count": 1},
        {"prompt_id": pid, "version": 2, "renders": 1},
    ]  # fmt: skip
    call("POST", "/api/v1/usage", 202, "/api/v1/usage", json={"items": items})
    call("GET", prompts + "/{name}/usage", 200, f"{prompts}/greeting/usage")
    call("GET", prompts + "/{name}/usage", 200, f"{prompts}/greeting/usage?bucket=day")
    call("GET", rollouts, 200, f"{prompts}/greeting/rollouts")
    call("GET", rollout, 200, f"{prompts}/greeting/rollouts/production")
    call("PATCH", rollout, 200, f"{prompts}/greeting/rollouts/production", json={"percent": 50})
    call("PATCH", rollout, 200, f"{prompts}/greeting/rollouts/production", json={"guard": None})
    call("GET", prompts + "/{name}/production", 200, f"{prompts}/greeting/production")
    keyed = f"{prompts}/greeting/environments/production?rollout_key=user-1"
    call("GET", placed, 200, keyed)
    call("GET", envs + "/{environment}/prompts", 200, f"{envs}/production/prompts")
    call("GET", envs + "/{environment}/prompts", 200, f"{envs}/staging/prompts")
    call("POST", rollout + "/abort", 200, f"{prompts}/greeting/rollouts/production/abort")
    call("POST", version + "/promote", 201, started, json={"rollout_percent": 10})
    done = f"{prompts}/greeting/rollouts/production/complete"
    call("POST", rollout + "/complete", 200, done, json={"notes": "all good"})
    call("GET", "/api/v1/events", 200, "/api/v1/events?after=0-0&limit=200")

    for method, path, url, status, json_body in answered:
        check(spec, documented(spec, method, path, status), json_body, f"{method} {url}")
