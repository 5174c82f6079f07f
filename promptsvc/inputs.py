"""What a request may hold: the marshmallow schemas that load and validate bodies and
query strings (docs/api.md section 11), and the limits they enforce.

The API's views (``@blp.arguments``, which also documents them in /openapi.json) and the
web console's forms load input through the same schemas, so both refuse the same input
with the same messages; promptsvc.backup checks names against :data:`NAME_PATTERN`.
promptsvc.actions takes input these schemas have validated.
"""

from __future__ import annotations

import json
import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from identity.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from identity.roles import ROLES
from identity.users import USERNAME
from storage import (
    EVENT_TYPES,
    PROMPT_TYPES,
    REVIEW_STATUSES,
    STATUSES,
    InvalidInput,
    event_position,
)
from storage.lifecycle import (
    ALLOW_BREAKING_NOTES,
    MAX_APPROVALS,
    MAX_PERCENT,
    MIN_PERCENT,
    environment_name_problem,
)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"  # as documented (ECMA syntax)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_CONTENT_BYTES = 256 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_TAGS = 32
MAX_NOTES = 2000
MAX_DESCRIPTION = 2000
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
MAX_WAIT = 30
EVENT_ID_PATTERN = r"^[0-9]{1,20}-[0-9]{1,20}$"  # as documented (ECMA syntax)
EVENT_ID_EXAMPLE = "1767323045678-0"


def _valid_name(name: str) -> None:
    # fullmatch: with re.match, "$" would also accept a name ending in a newline.
    if not _NAME.fullmatch(name):
        raise ValidationError(
            "must be 1-128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def _not_an_id(name: str) -> None:
    if name.startswith("pmt_"):
        raise ValidationError("must not start with 'pmt_' (that prefix marks prompt ids)")


def _content(content: str) -> None:
    """A version's content, created or edited: something besides whitespace, and not
    over the size limit."""
    if not content.strip():
        raise ValidationError("must not be empty")
    if len(content.encode()) > MAX_CONTENT_BYTES:
        raise ValidationError(f"must be at most {MAX_CONTENT_BYTES} bytes (256 KiB) as UTF-8")


def _metadata_size(metadata: dict[str, Any]) -> None:
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_METADATA_BYTES:
        raise ValidationError(f"must be at most {MAX_METADATA_BYTES} bytes (16 KiB) as JSON")


class PromptCreateSchema(Schema):
    name = fields.String(
        required=True,
        validate=[_valid_name, _not_an_id],
        metadata={
            "description": "Unique in the org; not starting with pmt_",
            "example": "greeting",
            "pattern": NAME_PATTERN,
        },
    )
    prompt_type = fields.String(
        load_default="text",
        validate=validate.OneOf(PROMPT_TYPES),
        metadata={
            "description": "Fixed for the prompt's life. chat content is a JSON "
            "list of {role, content} messages"
        },
    )
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )


VARIABLES_SCHEMA = (
    "The variable contract: {variable: {type (string|integer|number|boolean), required? "
    "(default true), description?, default? (of the type; makes it optional), enum? "
    "(values of the type)}}; its keys must be exactly the content's variables. Checked "
    "when given: 400 names the variable"
)
EXAMPLES = (
    "At most 20 examples [{name?, variables: {...}}], each valid under the contract "
    "(no variable it lacks): 400 names the example"
)


def _variables_schema(description: str, **options: Any) -> fields.Dict:
    # Checked whole by storage (storage/contracts.py), which names every problem.
    return fields.Dict(
        keys=fields.String(),
        values=fields.Raw(),
        allow_none=True,
        metadata={"description": f"{description}. {VARIABLES_SCHEMA}"},
        **options,
    )


def _examples(description: str, **options: Any) -> fields.List:
    return fields.List(
        fields.Raw(metadata={"type": "object"}),
        allow_none=True,
        metadata={"description": f"{description}. {EXAMPLES}"},
        **options,
    )


class VersionCreateSchema(Schema):
    content = fields.String(
        required=True,
        validate=_content,
        metadata={
            "description": "Template with {{variable}} placeholders (at most 256 KiB). For a "
            "chat prompt: a JSON string of a list of {role, content} messages",
            "example": "Hello {{name}}!",
        },
    )
    metadata = fields.Dict(
        keys=fields.String(),
        load_default=dict,
        validate=_metadata_size,
        metadata={"description": "Any JSON object, at most 16 KiB as JSON"},
    )
    tags = fields.List(
        fields.String(validate=validate.Length(min=1, max=64)),
        load_default=list,
        validate=validate.Length(max=MAX_TAGS),
        metadata={"description": "At most 32 tags of 1-64 characters"},
    )
    variables_schema = _variables_schema(
        "Absent or null: none declared (every variable a required string)", load_default=None
    )
    examples = _examples("Absent or null: none", load_default=None)


class VersionEditSchema(Schema):
    content = fields.String(
        validate=_content,
        metadata={
            "description": "The draft's new content (variables are re-extracted); absent: it stays"
        },
    )
    variables_schema = _variables_schema(
        "The draft's new contract; null: none (the implied one); absent: it stays. Its "
        "keys must be exactly the variables of the content the draft has after the edit"
    )
    examples = _examples("The draft's new examples; null: none; absent: they stay")

    @validates_schema
    def _something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if not data:
            raise ValidationError("give at least one of content, variables_schema, examples")


def _notes(description: str) -> fields.String:
    return fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=MAX_NOTES),
        metadata={"description": description},
    )


def _version_number(description: str) -> fields.Integer:
    # No load_default: for expected_production_version, absent (no guard) and null
    # (expects no production version) mean different things.
    return fields.Integer(
        strict=True,
        allow_none=True,
        validate=validate.Range(min=1),
        metadata={"description": description},
    )


EXPECTED_PRODUCTION = (
    "Guard: the production version this change expects to replace (null: expects none). "
    "Checked in the same atomic step; when production is another version nothing changes "
    "and the answer is 409 with current_production_version. Absent: no check"
)


EXPECTED_VERSION = (
    "Guard: the version this change expects the environment to hold now (null: expects "
    "none). Checked in the same atomic step; when the environment holds another version "
    "nothing changes and the answer is 409 with current_version. Absent: no check"
)
ENVIRONMENT = "The environment: production (the default) or one of the org's environments"


def _environment_field() -> fields.String:
    # Not validated beyond its length: a name no environment has is 404, like a prompt's.
    return fields.String(
        load_default="production",
        validate=validate.Length(min=1, max=64),
        metadata={"description": ENVIRONMENT},
    )


class _Guarded(Schema):
    """``expected_version`` and its alias ``expected_production_version`` as one guard
    (``expected`` when either is given)."""

    expected_version = _version_number(EXPECTED_VERSION)
    expected_production_version = _version_number(
        EXPECTED_PRODUCTION + ". Production only: an alias of expected_version"
    )

    @validates_schema
    def _one_guard(self, data: dict[str, Any], **kwargs: Any) -> None:
        both = "expected_version" in data and "expected_production_version" in data
        if both and data["expected_version"] != data["expected_production_version"]:
            raise ValidationError(
                "give expected_version or its alias, not both", "expected_version"
            )
        if "expected_production_version" in data and data["environment"] != "production":
            raise ValidationError(
                "guards production only: use expected_version", "expected_production_version"
            )


ALLOW_BREAKING = (
    "true: promote even when the promotion check finds breaking changes against the "
    "version the environment holds (recorded as breaking: true in the history); needs "
    "notes saying why. false (the default): such a promotion answers 409 breaking_change"
)


def _allow_breaking(description: str) -> fields.Boolean:
    return fields.Boolean(load_default=False, metadata={"description": description})


def _check_acknowledgement(data: dict[str, Any]) -> None:
    if data.get("allow_breaking") and not (data.get("notes") or "").strip():
        raise ValidationError(ALLOW_BREAKING_NOTES, "notes")


def _percent(description: str, **options: Any) -> fields.Integer:
    return fields.Integer(
        strict=True,
        validate=validate.Range(min=MIN_PERCENT, max=MAX_PERCENT),
        metadata={"description": description},
        **options,
    )


ROLLOUT_PERCENT = (
    "1-99: start a gradual rollout instead of a full promotion: the environment keeps "
    "its version and the candidate is served to this percent of the callers that give "
    "a rollout key (docs/api.md section 18). Absent or null: a full promotion"
)


class PromoteSchema(_Guarded):
    notes = _notes("Changelog text kept in the promotion history")
    environment = _environment_field()
    rollout_percent = _percent(ROLLOUT_PERCENT, load_default=None, allow_none=True)
    archive_previous_production = fields.Boolean(
        load_default=True,
        metadata={
            "description": "true: the previous production version becomes archived; "
            "false: it goes back to draft"
        },
    )
    allow_breaking = _allow_breaking(ALLOW_BREAKING)

    @validates_schema
    def _acknowledged(self, data: dict[str, Any], **kwargs: Any) -> None:
        _check_acknowledgement(data)


class RollbackSchema(_Guarded):
    notes = _notes('Changelog text kept in the promotion history; default "rollback to vN"')
    to_version = _version_number(
        "The version to make the environment's again; it must have been there before. "
        "Absent or null: the version the environment held before the current one"
    )
    environment = _environment_field()


def _new_environment_name(name: str) -> None:
    problem = environment_name_problem(name)
    if problem is not None:
        raise ValidationError(problem)


def _approvals(**options: Any) -> fields.Integer:
    return fields.Integer(
        strict=True,
        validate=validate.Range(min=0, max=MAX_APPROVALS),
        metadata={
            "description": "Approvals a promotion into it needs, 0-3; 1 or more makes it "
            "protected (direct promotion answers 409 review_required)"
        },
        **options,
    )


class EnvironmentCreateSchema(Schema):
    name = fields.String(
        required=True,
        validate=_new_environment_name,
        metadata={
            "description": "^[a-z][a-z0-9-]{0,31}$; not latest or production",
            "example": "staging",
        },
    )
    required_approvals = _approvals(load_default=0)
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )


class EnvironmentUpdateSchema(Schema):
    required_approvals = _approvals()
    description = fields.String(
        allow_none=True,
        validate=validate.Length(max=MAX_DESCRIPTION),
        metadata={"description": "null or empty clears it"},
    )


class ReviewCreateSchema(Schema):
    version = fields.Raw(
        required=True,
        metadata={
            "description": "The version: its number or its v_ id",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        },
    )
    environment = fields.String(
        required=True,
        validate=validate.Length(min=1, max=64),
        metadata={"description": "The environment to place it in", "example": "production"},
    )
    notes = _notes("Why: kept in the review and, once applied, in the promotion history")
    rollout_percent = _percent(
        "1-99: once approved, the review starts a gradual rollout at this percent "
        "instead of the full promotion. Absent or null: a full promotion",
        load_default=None,
        allow_none=True,
    )
    allow_breaking = _allow_breaking(
        "true: the review may apply even when the promotion check finds breaking changes "
        "(at the request and when the last approval applies it); needs notes, which go "
        "into the history. false (the default): a breaking request answers 409 "
        "breaking_change, and a review that became breaking since is not applied (409)"
    )

    @validates_schema
    def _checks(self, data: dict[str, Any], **kwargs: Any) -> None:
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int | str):
            raise ValidationError("must be a version number or a v_ id", "version")
        if isinstance(version, int) and version < 1:
            raise ValidationError("must be at least 1", "version")
        _check_acknowledgement(data)


def _rollout_guard() -> fields.String:
    return fields.String(
        validate=validate.Length(min=1, max=64),
        metadata={
            "description": "Guard: act only on this rollout (ro_...); when the "
            "environment's rollout is another one or none, 404 and nothing changes"
        },
    )


class RolloutUpdateSchema(Schema):
    percent = _percent(
        "1-99: the share of keyed callers served the candidate. Raising it only moves "
        "keys from the baseline to the candidate",
        required=True,
    )
    rollout_id = _rollout_guard()


class RolloutCompleteSchema(Schema):
    notes = _notes("Changelog text kept in the promotion history")
    archive_previous_production = fields.Boolean(
        load_default=True,
        metadata={
            "description": "In production, true: the baseline becomes archived; false: it "
            "goes back to draft"
        },
    )
    allow_breaking = _allow_breaking(ALLOW_BREAKING)
    rollout_id = _rollout_guard()

    @validates_schema
    def _checks(self, data: dict[str, Any], **kwargs: Any) -> None:
        _check_acknowledgement(data)


class RolloutAbortSchema(Schema):
    rollout_id = _rollout_guard()


class DecisionSchema(Schema):
    comment = _notes("Shown with the decision")


class NoBodySchema(Schema):
    """archive and unarchive take no body; one that is sent must be ``{}``."""


class KeyCreateSchema(Schema):
    role = fields.String(required=True, validate=validate.OneOf(ROLES))
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )
    owner = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(min=1, max=64),
        metadata={
            "description": "The username of the person whose work the key's changes count "
            "as (default: the caller, or the owner of the caller's key)"
        },
    )


class _StrictBoolean(fields.Boolean):
    """JSON true or false only: "yes" or 1 is a mistake, not a flag."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def _password(description: str) -> fields.String:
    return fields.String(
        load_only=True,
        validate=validate.Length(min=MIN_PASSWORD_LENGTH, max=MAX_PASSWORD_LENGTH),
        metadata={"description": description},
    )


class UserCreateSchema(Schema):
    username = fields.String(
        required=True,
        validate=validate.Regexp(
            USERNAME.pattern + r"\Z",
            error="must be 1-64 lowercase letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit",
        ),
        metadata={"description": "Unique in the org; cannot be changed later"},
    )
    role = fields.String(required=True, validate=validate.OneOf(ROLES))
    password = _password(
        f"{MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters; leave it out to have one "
        "generated and shown once in the response"
    )


class UserUpdateSchema(Schema):
    role = fields.String(validate=validate.OneOf(ROLES))
    disabled = _StrictBoolean(
        metadata={"description": "true: the user can no longer sign in or refresh tokens"}
    )
    password = _password(f"A new password, {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters")

    @validates_schema
    def _something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if not data:
            raise ValidationError("give at least one of role, disabled, password")


WEBHOOK_EVENTS = (*EVENT_TYPES, "*")


class WebhookCreateSchema(Schema):
    url = fields.String(
        required=True,
        validate=validate.Length(min=1, max=2048),
        metadata={"description": "https:// URL of the receiver (public addresses only)"},
    )
    events = fields.List(
        fields.String(validate=validate.OneOf(WEBHOOK_EVENTS)),
        required=True,
        validate=validate.Length(min=1, max=len(WEBHOOK_EVENTS)),
        metadata={"description": 'Event types to deliver, or ["*"] for all'},
    )
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )


class DeliveryQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=100),
        metadata={"description": "How many attempts, newest first, 1-100"},
    )


class PageQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "Page size, 1-200"},
    )
    cursor = fields.String(
        load_default=None, metadata={"description": "next_cursor of the previous page"}
    )


DIFF_REF = "A version number, a version id (v_...), production or latest"


class DiffQuerySchema(Schema):
    from_ = fields.String(
        data_key="from",
        required=True,
        validate=validate.Length(min=1),
        metadata={
            "description": "The version to compare from. " + DIFF_REF,
            "example": "production",
        },
    )
    to = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "The version to compare to. " + DIFF_REF, "example": "latest"},
    )


class VersionQuerySchema(PageQuerySchema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(STATUSES),
        metadata={"description": "Only versions with this status"},
    )


class ReviewQuerySchema(PageQuerySchema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(REVIEW_STATUSES),
        metadata={"description": "Only reviews with this status"},
    )
    environment = fields.String(
        load_default=None, metadata={"description": "Only reviews of this environment"}
    )


def _event_id(value: str) -> None:
    try:
        event_position(value)
    except InvalidInput:
        raise ValidationError("must be the id of an event, as this API gave it") from None


def _event_id_field(description: str, **options: object) -> fields.String:
    return fields.String(
        load_default=None,
        validate=_event_id,
        metadata={
            "description": description,
            "pattern": EVENT_ID_PATTERN,
            "example": EVENT_ID_EXAMPLE,
        },
        **options,  # type: ignore[arg-type]
    )


class EventQuerySchema(Schema):
    after = _event_id_field(
        "Answer the events after this id (an event's id, or last_id of the previous "
        "answer). Absent: only events from now on. With text/event-stream, a "
        "Last-Event-ID header takes precedence."
    )
    wait = fields.Integer(
        load_default=0,
        validate=validate.Range(min=0, max=MAX_WAIT),
        metadata={
            "description": "JSON only: seconds (0-30) to wait for the first event when "
            "there is none yet"
        },
    )
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "JSON only: most events in one answer, 1-200"},
    )


class EventHeadersSchema(Schema):
    last_event_id = _event_id_field(
        "text/event-stream only: the id of the last event received, as an EventSource "
        "sends it when it reconnects; the stream replays what came after it",
        data_key="Last-Event-ID",
    )
