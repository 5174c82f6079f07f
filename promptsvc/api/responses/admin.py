"""API keys, users and webhooks with their deliveries."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from identity.roles import ROLES
from promptsvc.api.responses.common import timestamp


class ApiKeySchema(Schema):
    client_id = fields.String(metadata={"description": "Identifies the key; safe to log"})
    role = fields.String(validate=validate.OneOf(ROLES))
    description = fields.String(allow_none=True)
    user_id = fields.String(metadata={"description": "The key's service-account user (token sub)"})
    owner = fields.String(
        allow_none=True,
        metadata={
            "description": "The user id of the person whose work the key's changes count "
            "as; null for a key from the bootstrap file"
        },
    )
    created_at = timestamp("Creation time")
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
    created_at = timestamp("Creation time")
    updated_at = timestamp("Last change of role, disabled flag or password")


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
    created_at = timestamp("Creation time")


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
    at = timestamp("When the attempt ended")


class DeliveryListSchema(Schema):
    items = fields.List(fields.Nested(DeliverySchema))


class PingSchema(Schema):
    message_id = fields.String(metadata={"description": "The webhook-id of the ping"})
