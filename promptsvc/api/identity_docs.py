"""OpenAPI entries for the identity endpoints (served by the identity package).

identity registers plain Flask routes; this module only describes them, so that
/openapi.json covers every endpoint of the all-in-one app.
"""

from __future__ import annotations

from typing import Any

from apispec import APISpec
from flask import Flask

from identity.keys import ORG_SLUG
from promptsvc.api.schemas import (
    ErrorSchema,
    IntrospectionFormSchema,
    IntrospectionSchema,
    JwksSchema,
    OAuthErrorSchema,
    OAuthTokenSchema,
    OpenIdConfigurationSchema,
    RealmDocumentSchema,
    SdkTokenRequestSchema,
    SdkTokenSchema,
    TokenFormSchema,
)

ORG_PARAM = {
    "in": "path",
    "name": "org",
    "required": True,
    "schema": {"type": "string", "pattern": f"^{ORG_SLUG.pattern}$"},
    "description": "The org slug (realm)",
}
TAG = "identity"
FORM = "application/x-www-form-urlencoded"


def _json(schema: Any, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return {"$ref": "#/components/responses/" + description}


def _rate_limited(schema: Any) -> dict[str, Any]:
    return {
        "description": "Too many requests for this client or address; retry later",
        "headers": {
            "Retry-After": {
                "description": "Seconds to wait before the next attempt",
                "schema": {"type": "integer"},
            }
        },
        "content": {"application/json": {"schema": schema}},
    }


def document_identity(spec: APISpec, app: Flask) -> None:
    """Add the sdk-token and realm endpoints (already registered on ``app``) to ``spec``."""
    rules = {rule.rule: rule for rule in app.url_map.iter_rules()}
    spec.tag({"name": TAG, "description": "Exchange API keys for access tokens (bundled issuer)."})
    spec.path(
        rule=rules["/v1/auth/sdk-token"],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Exchange an SDK API key for an access token",
                "description": "account_id is the org slug, key_id the API key's client_id.",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": SdkTokenRequestSchema}},
                },
                "responses": {
                    "200": _json(SdkTokenSchema, "Access token"),
                    "400": _error("BAD_REQUEST"),
                    "401": _error("UNAUTHORIZED"),
                    "429": _rate_limited(ErrorSchema),
                    "500": _error("INTERNAL_SERVER_ERROR"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>/protocol/openid-connect/token"],
        parameters=[ORG_PARAM],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Token endpoint (OAuth 2.0)",
                "description": "Form-encoded. Keys authenticate with client_id/client_secret "
                "fields or HTTP Basic (form-encoded id and secret, RFC 6749 2.3.1). `scope` "
                "may ask for fewer scopes than the key holds. Errors are RFC 6749 bodies "
                "plus code and message.",
                "requestBody": {
                    "required": True,
                    "content": {FORM: {"schema": TokenFormSchema}},
                },
                "responses": {
                    "200": _json(OAuthTokenSchema, "Access token"),
                    "400": _json(
                        OAuthErrorSchema,
                        "invalid_request, invalid_scope, invalid_grant or unsupported_grant_type",
                    ),
                    "401": _json(OAuthErrorSchema, "invalid_client"),
                    "429": _rate_limited(OAuthErrorSchema),
                    "500": _error("INTERNAL_SERVER_ERROR"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>/protocol/openid-connect/certs"],
        parameters=[ORG_PARAM],
        operations={
            "get": {
                "tags": [TAG],
                "summary": "The realm's JSON Web Key Set",
                "responses": {
                    "200": _json(JwksSchema, "Public keys that verify tokens"),
                    "404": _error("NOT_FOUND"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>/.well-known/openid-configuration"],
        parameters=[ORG_PARAM],
        operations={
            "get": {
                "tags": [TAG],
                "summary": "The realm's OpenID Connect discovery document",
                "responses": {
                    "200": _json(OpenIdConfigurationSchema, "Discovery document"),
                    "404": _error("NOT_FOUND"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>/protocol/openid-connect/token/introspect"],
        parameters=[ORG_PARAM],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Token introspection (RFC 7662)",
                "description": "The caller authenticates as a key of the realm. Expired, "
                'malformed, revoked and other realms\' tokens are `{"active": false}`.',
                "requestBody": {
                    "required": True,
                    "content": {FORM: {"schema": IntrospectionFormSchema}},
                },
                "responses": {
                    "200": _json(IntrospectionSchema, "Whether the token is active, its claims"),
                    "400": _json(OAuthErrorSchema, "invalid_request or unsupported_token_type"),
                    "401": _json(OAuthErrorSchema, "invalid_client"),
                    "500": _error("INTERNAL_SERVER_ERROR"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>"],
        parameters=[ORG_PARAM],
        operations={
            "get": {
                "tags": [TAG],
                "summary": "The realm document (Keycloak's), with the current public key",
                "responses": {
                    "200": _json(RealmDocumentSchema, "Realm document"),
                    "404": _error("NOT_FOUND"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
