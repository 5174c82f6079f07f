"""What API keys, users and webhooks may be created or changed with."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from identity.passwords import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH
from identity.roles import ROLES
from identity.users import USERNAME
from promptsvc.inputs.common import MAX_DESCRIPTION
from storage import EVENT_TYPES


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
