"""marshmallow schemas: request validation (docs/api.md section 11) and response documentation.

Request schemas load and validate bodies and query strings. Response schemas only
document bodies for OpenAPI: a response is its record's ``to_json()`` (storage/records.py),
never dumped through a schema, and tests/api/test_api_records.py proves each schema
and its record's JSON have the same fields, types and nullability.
"""

from __future__ import annotations

import json
import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from identity.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from identity.roles import ROLES
from identity.users import USERNAME
from storage import EVENT_TYPES, PROMPT_TYPES, STATUSES, InvalidInput, event_position

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


# --------------------------------------------------------------------------- requests


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


class VersionEditSchema(Schema):
    content = fields.String(
        required=True,
        validate=_content,
        metadata={"description": "The draft's new content (variables are re-extracted)"},
    )


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


class PromoteSchema(Schema):
    notes = _notes("Changelog text kept in the promotion history")
    expected_production_version = _version_number(EXPECTED_PRODUCTION)
    archive_previous_production = fields.Boolean(
        load_default=True,
        metadata={
            "description": "true: the previous production version becomes archived; "
            "false: it goes back to draft"
        },
    )


class RollbackSchema(Schema):
    notes = _notes('Changelog text kept in the promotion history; default "rollback to vN"')
    to_version = _version_number(
        "The version to make production again; it must have been production before. "
        "Absent or null: the version that was production before the current one"
    )
    expected_production_version = _version_number(EXPECTED_PRODUCTION)


class NoBodySchema(Schema):
    """archive and unarchive take no body; one that is sent must be ``{}``."""


class KeyCreateSchema(Schema):
    role = fields.String(required=True, validate=validate.OneOf(ROLES))
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
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


# --------------------------------------------------------------------------- responses


def _timestamp(description: str, *, nullable: bool = False) -> fields.DateTime:
    return fields.DateTime(
        allow_none=nullable,
        metadata={"description": description + " (RFC 3339, UTC, ending in Z)"},
    )


class PromptVersionSchema(Schema):
    prompt_id = fields.String(metadata={"description": "Parent prompt id (pmt_...)"})
    version_id = fields.String(metadata={"description": "Version id (v_...)"})
    name = fields.String(metadata={"description": "Prompt name"})
    version = fields.Integer(metadata={"description": "Sequential number starting at 1"})
    content = fields.String(metadata={"description": "Template with {{variable}} placeholders"})
    variables = fields.List(
        fields.String(), metadata={"description": "Placeholder names, first-seen order"}
    )
    status = fields.String(validate=validate.OneOf(STATUSES))
    is_production = fields.Boolean(metadata={"description": "True for the published version"})
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    metadata = fields.Dict(metadata={"description": "Arbitrary key-value pairs"})
    tags = fields.List(fields.String())
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last content edit or status change")
    promoted_at = _timestamp("When promoted to production; null if never", nullable=True)
    promoted_by = fields.String(
        allow_none=True, metadata={"description": "User id that promoted it; null if never"}
    )


class PromptSchema(Schema):
    prompt_id = fields.String(metadata={"description": "pmt_..."})
    name = fields.String()
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    description = fields.String(allow_none=True)
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last change to the prompt or its versions")
    latest_version = fields.Integer(
        allow_none=True, metadata={"description": "Highest existing version number"}
    )
    production_version = fields.Integer(
        allow_none=True, metadata={"description": "Number of the published version"}
    )


class PromotionRecordSchema(Schema):
    history_id = fields.String(metadata={"description": "h_..."})
    prompt_id = fields.String()
    version_number = fields.Integer(metadata={"description": "The version promoted"})
    promoted_by = fields.String(metadata={"description": "User id that promoted"})
    promoted_at = _timestamp("Promotion time")
    previous_version = fields.Integer(
        allow_none=True, metadata={"description": "Version in production before; null if none"}
    )
    notes = fields.String(allow_none=True)


class PromotionResultSchema(Schema):
    version = fields.Nested(PromptVersionSchema)
    promotion = fields.Nested(PromotionRecordSchema)


class DiffSideSchema(Schema):
    version = fields.Integer()
    version_id = fields.String()
    status = fields.String(validate=validate.OneOf(STATUSES))


class ListChangesSchema(Schema):
    added = fields.List(fields.String(), metadata={"description": "Only in to, in its order"})
    removed = fields.List(fields.String(), metadata={"description": "Only in from, in its order"})


class MetadataChangesSchema(Schema):
    added = fields.Dict(metadata={"description": "Keys only in to, with their values"})
    removed = fields.Dict(metadata={"description": "Keys only in from, with their values"})
    changed = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        metadata={"description": "Keys in both with different values: {key: {from, to}}"},
    )


class DiffSchema(Schema):
    from_ = fields.Nested(DiffSideSchema, data_key="from")
    to = fields.Nested(DiffSideSchema)
    content_diff = fields.String(
        metadata={
            "description": "Unified diff of the contents, 3 lines of context; empty when "
            "equal. Chat prompts: one block per message, a [role] line then its content"
        }
    )
    variables = fields.Nested(ListChangesSchema)
    metadata = fields.Nested(MetadataChangesSchema)
    tags = fields.Nested(ListChangesSchema)


class PromptPageSchema(Schema):
    items = fields.List(fields.Nested(PromptSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class VersionPageSchema(Schema):
    items = fields.List(fields.Nested(PromptVersionSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class HistoryRecordSchema(PromotionRecordSchema):
    promoted_by_name = fields.String(
        metadata={
            "description": "Who promoted, as the console names them: a username, "
            "'key <client_id>' for an API key, or 'user <first 8 characters of the id>' "
            "for an id that names no one any more"
        }
    )


class HistoryPageSchema(Schema):
    items = fields.List(fields.Nested(HistoryRecordSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class EventSchema(Schema):
    id = fields.String(
        metadata={
            "description": "Opaque; increases within the org. Resume after it with "
            "?after= or Last-Event-ID",
            "example": EVENT_ID_EXAMPLE,
        }
    )
    type = fields.String(validate=validate.OneOf(EVENT_TYPES))
    prompt_id = fields.String(metadata={"description": "pmt_..."})
    prompt_name = fields.String()
    version = fields.Integer(
        allow_none=True, metadata={"description": "The version changed; null for prompt events"}
    )
    version_id = fields.String(allow_none=True, metadata={"description": "v_...; null likewise"})
    status = fields.String(
        allow_none=True,
        validate=validate.OneOf(STATUSES),
        metadata={
            "description": "The version's status after the change; null for prompt events "
            "and version.deleted"
        },
    )
    previous_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "version.promoted: the version in production before, null if "
            "none; null for other events"
        },
    )
    actor = fields.String(allow_none=True, metadata={"description": "User id that made the change"})
    at = _timestamp("When the change was made")
    request_id = fields.String(
        allow_none=True, metadata={"description": "X-Request-ID of the request that made it"}
    )


class EventPageSchema(Schema):
    items = fields.List(fields.Nested(EventSchema), metadata={"description": "Oldest first"})
    last_id = fields.String(
        metadata={
            "description": "Pass as ?after= next time: the last item's id, else the id "
            "asked after (or the newest event's when none was asked)",
            "example": EVENT_ID_EXAMPLE,
        }
    )
    reset = fields.Boolean(
        metadata={
            "description": "true: the id asked after is older than the log keeps, so "
            "events were missed; forget what was derived from earlier events and go on "
            "from last_id"
        }
    )


class ApiKeySchema(Schema):
    client_id = fields.String(metadata={"description": "Identifies the key; safe to log"})
    role = fields.String(validate=validate.OneOf(ROLES))
    description = fields.String(allow_none=True)
    user_id = fields.String(metadata={"description": "The key's service-account user (token sub)"})
    created_at = _timestamp("Creation time")
    revoked = fields.Boolean()


class ApiKeyCreatedSchema(ApiKeySchema):
    client_secret = fields.String(metadata={"description": "Shown only in this response"})


class ApiKeyListSchema(Schema):
    items = fields.List(fields.Nested(ApiKeySchema))


class UserSchema(Schema):
    user_id = fields.String(
        metadata={"description": "The person's id (token sub; what created_by records)"}
    )
    username = fields.String()
    role = fields.String(validate=validate.OneOf(ROLES))
    disabled = fields.Boolean()
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last change of role, disabled flag or password")


class UserCreatedSchema(UserSchema):
    password = fields.String(
        metadata={
            "description": "Only when none was given: the generated password, shown only "
            "in this response"
        }
    )


class UserListSchema(Schema):
    items = fields.List(fields.Nested(UserSchema))


class WebhookSchema(Schema):
    webhook_id = fields.String(metadata={"description": "wh_..."})
    url = fields.String()
    events = fields.List(fields.String())
    description = fields.String(allow_none=True)
    created_at = _timestamp("Creation time")


class WebhookCreatedSchema(WebhookSchema):
    secret = fields.String(
        metadata={"description": "whsec_ + base64: verifies signatures; shown only here"}
    )


class WebhookListSchema(Schema):
    items = fields.List(fields.Nested(WebhookSchema))


class DeliverySchema(Schema):
    message_id = fields.String(metadata={"description": "The webhook-id header sent"})
    event_id = fields.String(allow_none=True, metadata={"description": "null for a ping"})
    event_type = fields.String()
    attempt = fields.Integer(metadata={"description": "1 for the first attempt"})
    status_code = fields.Integer(allow_none=True, metadata={"description": "null: no answer"})
    error = fields.String(
        allow_none=True, metadata={"description": "Why there was no answer (timeout, ...)"}
    )
    delivered = fields.Boolean(metadata={"description": "The receiver answered 2xx"})
    at = _timestamp("When the attempt ended")


class DeliveryListSchema(Schema):
    items = fields.List(fields.Nested(DeliverySchema))


class PingSchema(Schema):
    message_id = fields.String(metadata={"description": "The webhook-id of the ping"})


class ErrorSchema(Schema):
    code = fields.String(
        metadata={"description": "Machine-readable code, e.g. not_found", "example": "not_found"}
    )
    message = fields.String(metadata={"description": "Human-readable text"})
    error = fields.String(metadata={"description": "Same value as code"})
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "400 only: messages per invalid field"},
    )
    current_production_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "409 of a guarded promotion or rollback only: the production "
            "version at that moment (null: none)"
        },
    )


class StatusSchema(Schema):
    status = fields.String(metadata={"example": "ok"})


# --------------------------------------------------------------------------- identity
# The identity package serves these endpoints; they are documented here so that
# /openapi.json covers every endpoint of the all-in-one app.


class SdkTokenRequestSchema(Schema):
    account_id = fields.String(required=True, metadata={"description": "The org slug"})
    key_id = fields.String(required=True, metadata={"description": "The API key's client_id"})
    key_secret = fields.String(required=True, metadata={"description": "The API key's secret"})


class SdkTokenSchema(Schema):
    access_token = fields.String(metadata={"description": "Signed JWT (RS256)"})
    expires_in = fields.Integer(metadata={"description": "Lifetime in seconds"})
    token_type = fields.String(metadata={"example": "Bearer"})


class TokenFormSchema(Schema):
    grant_type = fields.String(
        required=True,
        validate=validate.OneOf(
            [
                "client_credentials",
                "authorization_code",
                "refresh_token",
                "urn:ietf:params:oauth:grant-type:device_code",
            ]
        ),
    )
    client_id = fields.String(metadata={"description": "Or use HTTP Basic client auth"})
    client_secret = fields.String(
        metadata={"description": "Keys only (or HTTP Basic); public clients send none"}
    )
    scope = fields.String(
        metadata={
            "description": "Space-separated; fewer than the role holds narrows the token. "
            "openid, profile and email are always accepted."
        }
    )
    code = fields.String(metadata={"description": "authorization_code: the code"})
    redirect_uri = fields.String(metadata={"description": "authorization_code: as sent to auth"})
    code_verifier = fields.String(metadata={"description": "authorization_code: PKCE verifier"})
    refresh_token = fields.String(metadata={"description": "refresh_token: the refresh token"})
    device_code = fields.String(metadata={"description": "device_code: from auth/device"})


class OAuthTokenSchema(SdkTokenSchema):
    scope = fields.String(metadata={"description": "Space-separated scopes the token carries"})
    refresh_expires_in = fields.Integer(
        metadata={"description": "Lifetime of refresh_token in seconds; 0 without one"}
    )
    not_before_policy = fields.Integer(
        data_key="not-before-policy", metadata={"description": "Always 0 (Keycloak's field)"}
    )
    refresh_token = fields.String(metadata={"description": "People's flows only; rotates"})
    id_token = fields.String(metadata={"description": "With scope openid, people's flows only"})


class OAuthErrorSchema(Schema):
    error = fields.String(metadata={"description": "RFC 6749 error, e.g. invalid_client"})
    error_description = fields.String()
    code = fields.String(metadata={"description": "Same value as error"})
    message = fields.String(metadata={"description": "Same value as error_description"})


class JwksSchema(Schema):
    keys = fields.List(fields.Dict(), metadata={"description": "Public RSA keys (JWK)"})


class OpenIdConfigurationSchema(Schema):
    issuer = fields.String()
    authorization_endpoint = fields.String()
    token_endpoint = fields.String()
    introspection_endpoint = fields.String()
    userinfo_endpoint = fields.String()
    end_session_endpoint = fields.String()
    jwks_uri = fields.String()
    revocation_endpoint = fields.String()
    device_authorization_endpoint = fields.String()
    grant_types_supported = fields.List(fields.String())
    response_types_supported = fields.List(fields.String())
    response_modes_supported = fields.List(fields.String())
    subject_types_supported = fields.List(fields.String())
    id_token_signing_alg_values_supported = fields.List(fields.String())
    code_challenge_methods_supported = fields.List(fields.String())
    token_endpoint_auth_methods_supported = fields.List(fields.String())
    introspection_endpoint_auth_methods_supported = fields.List(fields.String())
    revocation_endpoint_auth_methods_supported = fields.List(fields.String())
    scopes_supported = fields.List(fields.String())
    claims_supported = fields.List(fields.String())
    request_parameter_supported = fields.Boolean()
    request_uri_parameter_supported = fields.Boolean()


class RealmDocumentSchema(Schema):
    realm = fields.String(metadata={"description": "The org slug"})
    public_key = fields.String(
        metadata={"description": "The current signing key: base64 DER SubjectPublicKeyInfo"}
    )
    token_service = fields.String(data_key="token-service")
    account_service = fields.String(data_key="account-service")
    tokens_not_before = fields.Integer(data_key="tokens-not-before")


class IntrospectionFormSchema(Schema):
    token = fields.String(required=True, metadata={"description": "The token to look at"})
    token_type_hint = fields.String(validate=validate.OneOf(["access_token", "refresh_token"]))
    client_id = fields.String(metadata={"description": "A key of the realm, or HTTP Basic"})
    client_secret = fields.String(metadata={"description": "The key's secret, or HTTP Basic"})


class IntrospectionSchema(Schema):
    active = fields.Boolean(required=True)
    client_id = fields.String(metadata={"description": "The client the token was issued to"})
    username = fields.String(metadata={"description": "People's tokens: the username"})
    token_type = fields.String()
    sub = fields.String()
    scope = fields.String()
    exp = fields.Integer()
    iat = fields.Integer()
    iss = fields.String()


class RevocationFormSchema(Schema):
    token = fields.String(required=True, metadata={"description": "A refresh token"})
    token_type_hint = fields.String(validate=validate.OneOf(["access_token", "refresh_token"]))
    client_id = fields.String(metadata={"description": "The client the token was issued to"})
    client_secret = fields.String(metadata={"description": "Keys only; public clients send none"})


class UserInfoSchema(Schema):
    sub = fields.String(metadata={"description": "The user id (a key's service account id)"})
    preferred_username = fields.String()
    org = fields.String()
    roles = fields.List(fields.String())


class DeviceAuthorizationFormSchema(Schema):
    client_id = fields.String(required=True, metadata={"example": "promptsvc-cli"})
    scope = fields.String(metadata={"description": "Space-separated; e.g. openid"})


class DeviceAuthorizationSchema(Schema):
    device_code = fields.String(metadata={"description": "Poll the token endpoint with this"})
    user_code = fields.String(metadata={"example": "BCDF-GHJK"})
    verification_uri = fields.String()
    verification_uri_complete = fields.String()
    expires_in = fields.Integer()
    interval = fields.Integer(metadata={"description": "Seconds between polls"})


class LoginFormSchema(Schema):
    username = fields.String(required=True)
    password = fields.String(required=True)
    csrf_token = fields.String(required=True, metadata={"description": "From the page's form"})


class DeviceFormSchema(Schema):
    csrf_token = fields.String(required=True, metadata={"description": "From the page's form"})
    user_code = fields.String()
    action = fields.String(validate=validate.OneOf(["lookup", "approve", "deny"]))
    username = fields.String(metadata={"description": "Signing in first"})
    password = fields.String(metadata={"description": "Signing in first"})


class LogoutFormSchema(Schema):
    client_id = fields.String()
    refresh_token = fields.String(
        metadata={"description": "A client's logout (Keycloak's): ends that token's session"}
    )
    id_token_hint = fields.String()
    post_logout_redirect_uri = fields.String()
    state = fields.String()
    csrf_token = fields.String(metadata={"description": "The confirmation page's form"})
