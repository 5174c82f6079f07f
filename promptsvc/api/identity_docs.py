"""OpenAPI entries for the identity endpoints (served by the identity package).

identity registers plain Flask routes; this module only describes them, so that
/openapi.json covers every endpoint of the all-in-one app.
"""

from __future__ import annotations

from typing import Any

from apispec import APISpec
from flask import Flask

from identity.keys import ORG_SLUG
from promptsvc.api.identity_schemas import (
    ClientRegistrationRequestSchema,
    ClientRegistrationSchema,
    DeviceAuthorizationFormSchema,
    DeviceAuthorizationSchema,
    DeviceFormSchema,
    IntrospectionFormSchema,
    IntrospectionSchema,
    JwksSchema,
    LoginFormSchema,
    LogoutFormSchema,
    OAuthErrorSchema,
    OAuthTokenSchema,
    OpenIdConfigurationSchema,
    RealmDocumentSchema,
    RevocationFormSchema,
    SdkTokenRequestSchema,
    SdkTokenSchema,
    TokenFormSchema,
    UserInfoSchema,
)
from promptsvc.api.responses import ErrorSchema

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


def _html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


def _query(*names: str) -> list[dict[str, Any]]:
    return [{"in": "query", "name": name, "schema": {"type": "string"}} for name in names]


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
                    "429": _rate_limited(OAuthErrorSchema),
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
    _document_people(spec, rules)


AUTH_PARAMS = (
    *("response_type", "client_id", "redirect_uri", "state", "scope"),
    *("code_challenge", "code_challenge_method", "nonce", "prompt"),
)


def _document_people(spec: APISpec, rules: dict[str, Any]) -> None:
    """The endpoints of people's sign-in: pages and their JSON companions."""
    base = "/realms/<org>/protocol/openid-connect"
    form_errors = {
        "400": _json(OAuthErrorSchema, "invalid_request, unsupported_token_type"),
        "401": _json(OAuthErrorSchema, "invalid_client"),
        "429": _rate_limited(OAuthErrorSchema),
        "500": _error("INTERNAL_SERVER_ERROR"),
        "503": _error("SERVICE_UNAVAILABLE"),
    }
    spec.path(
        rule=rules[f"{base}/revoke"],
        parameters=[ORG_PARAM],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Revoke a refresh token and its whole chain (RFC 7009)",
                "description": "Answers 200 for unknown tokens and for access tokens, which "
                "are self-contained and expire by themselves.",
                "requestBody": {
                    "required": True,
                    "content": {FORM: {"schema": RevocationFormSchema}},
                },
                "responses": {
                    "200": {"description": "Revoked, or nothing to revoke"},
                    **form_errors,
                },
            }
        },
    )
    spec.path(
        rule=rules["/realms/<org>/clients-registrations/openid-connect"],
        parameters=[ORG_PARAM],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Register a public client (RFC 7591), as MCP hosts do",
                "description": "Open registration of public clients: token_endpoint_auth_method "
                "none, authorization code with PKCE and refresh tokens, whatever was asked. "
                "Nothing is stored. See docs/identity.md.",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ClientRegistrationRequestSchema}},
                },
                "responses": {
                    "201": _json(ClientRegistrationSchema, "The registered client"),
                    "400": _json(
                        OAuthErrorSchema,
                        "invalid_request, invalid_redirect_uri, invalid_client_metadata",
                    ),
                    "429": _rate_limited(OAuthErrorSchema),
                    "500": _error("INTERNAL_SERVER_ERROR"),
                    "503": _error("SERVICE_UNAVAILABLE"),
                },
            }
        },
    )
    userinfo: dict[str, Any] = {
        "tags": [TAG],
        "summary": "Who the bearer token speaks for (OpenID Connect userinfo)",
        "description": "Needs a token with scope openid whose session still stands.",
        "responses": {
            "200": _json(UserInfoSchema, "The person (or the key's service account)"),
            "401": _json(OAuthErrorSchema, "invalid_token or no token"),
            "403": _json(OAuthErrorSchema, "insufficient_scope: the token lacks openid"),
            "500": _error("INTERNAL_SERVER_ERROR"),
            "503": _error("SERVICE_UNAVAILABLE"),
        },
    }
    # POST shares the token endpoints' per-address limit (identity.ratelimit).
    userinfo_post = {
        **userinfo,
        "responses": {**userinfo["responses"], "429": _rate_limited(OAuthErrorSchema)},
    }
    spec.path(
        rule=rules[f"{base}/userinfo"],
        parameters=[ORG_PARAM],
        operations={"get": userinfo, "post": userinfo_post},
    )
    spec.path(
        rule=rules[f"{base}/auth/device"],
        parameters=[ORG_PARAM],
        operations={
            "post": {
                "tags": [TAG],
                "summary": "Start a device sign-in (RFC 8628), for promptsvc-cli",
                "requestBody": {
                    "required": True,
                    "content": {FORM: {"schema": DeviceAuthorizationFormSchema}},
                },
                "responses": {
                    "200": _json(DeviceAuthorizationSchema, "Codes for the device and person"),
                    **form_errors,
                    "400": _json(
                        OAuthErrorSchema, "invalid_request, invalid_scope or unauthorized_client"
                    ),
                },
            }
        },
    )
    page_errors = {
        "400": _html("An error page (bad client or redirect URI, expired form, ...)"),
        "429": _html("Too many sign-in attempts (with Retry-After)"),
        "500": _error("INTERNAL_SERVER_ERROR"),
        "503": _error("SERVICE_UNAVAILABLE"),
    }
    auth_get: dict[str, Any] = {
        "tags": [TAG],
        "summary": "Authorization endpoint: the login page (authorization code + PKCE)",
        "description": "PKCE is required (S256). A person signed in to the realm is sent "
        "straight back to redirect_uri with a code; anyone else sees the login form.",
        "parameters": _query(*AUTH_PARAMS),
        "responses": {
            "200": _html("The login form (fields username and password)"),
            "302": {"description": "Back to redirect_uri with code and state, or an error"},
            **page_errors,
        },
    }
    spec.path(
        rule=rules[f"{base}/auth"],
        parameters=[ORG_PARAM],
        operations={
            "get": auth_get,
            "post": {
                **auth_get,
                "summary": "Submit the login form (posted back to the same URL)",
                "requestBody": {"required": True, "content": {FORM: {"schema": LoginFormSchema}}},
                "responses": {
                    "200": _html("The form again: invalid username or password"),
                    "302": {"description": "Signed in: back to redirect_uri with a code"},
                    **page_errors,
                    "415": _html("Not a form"),
                },
            },
        },
    )
    device_get: dict[str, Any] = {
        "tags": [TAG],
        "summary": "Device verification page: sign in, enter the code, approve or deny",
        "parameters": _query("user_code"),
        "responses": {"200": _html("The page"), "404": _html("Unknown realm"), **page_errors},
    }
    spec.path(
        rule=rules["/realms/<org>/device"],
        parameters=[ORG_PARAM],
        operations={
            "get": device_get,
            "post": {
                **device_get,
                "summary": "Device verification page: its forms",
                "requestBody": {"required": True, "content": {FORM: {"schema": DeviceFormSchema}}},
                "responses": {
                    "200": _html("The next step"),
                    "303": {"description": "Signed in: the page again"},
                    "403": _html("The person's role does not allow the device's scopes"),
                    "404": _html("Unknown realm"),
                    "415": _html("Not a form"),
                    **page_errors,
                },
            },
        },
    )
    logout_get: dict[str, Any] = {
        "tags": [TAG],
        "summary": "Sign out (OpenID Connect RP-initiated logout)",
        "description": "Ends the session of id_token_hint when it is this browser's, "
        "revoking its refresh tokens; redirects only to a registered "
        "post_logout_redirect_uri. Without id_token_hint, or with one of another session, "
        "the person confirms first and nothing ends until then.",
        "parameters": _query("id_token_hint", "client_id", "post_logout_redirect_uri", "state"),
        "responses": {
            "200": _html("Signed out, or the confirmation page"),
            "302": {"description": "To the registered post_logout_redirect_uri"},
            **page_errors,
        },
    }
    spec.path(
        rule=rules[f"{base}/logout"],
        parameters=[ORG_PARAM],
        operations={
            "get": logout_get,
            "post": {
                **logout_get,
                "summary": "Sign out: the confirmation form, or a client's logout",
                "description": "With refresh_token (and client_id): Keycloak's client logout, "
                "answered 204. Otherwise the confirmation page's form.",
                "requestBody": {"required": True, "content": {FORM: {"schema": LogoutFormSchema}}},
                "responses": {
                    **logout_get["responses"],
                    "204": {"description": "Client logout: the session ended"},
                    "401": _json(OAuthErrorSchema, "invalid_client (client logout)"),
                },
            },
        },
    )
