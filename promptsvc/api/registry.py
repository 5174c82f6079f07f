"""The flask-smorest Api: every blueprint, the OpenAPI document and the error handlers."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Flask, Response, current_app, request
from flask_smorest import Api

from identity.core import Identity
from promptsvc.api import (
    environments,
    events,
    history,
    keys,
    ops,
    prompts,
    realm_docs,
    releases,
    reviews,
    rollouts,
    usage,
    users,
    versions,
    webhooks,
)
from promptsvc.api.errors import error_response, register_error_handlers
from promptsvc.api.identity_docs import document_identity
from promptsvc.api.realm_docs import BEARER_SCHEME
from promptsvc.api.responses import ErrorSchema
from promptsvc.api.responses.versions import BREAKING_CHANGE_SCHEMAS
from promptsvc.http import json_response
from promptsvc.version import VERSION

API_DESCRIPTION = """Prompt versioning service.

Read prompt versions (production, latest, by id), compare two versions, and manage
prompts, versions, promotions (guarded, with rollback), API keys and users. Every /api/v1
endpoint needs `Authorization: Bearer <token>`; get a token from
`POST /v1/auth/sdk-token` (JSON `{account_id, key_id, key_secret}`) or from
`POST /realms/<org>/protocol/openid-connect/token` (client credentials). The org of a
request comes only from its token.

To sign in from this page, open it as `/docs?realm=<org>`: its Authorize button then
offers the realm's own flows, a person's login (authorization code with PKCE) and an
API key's client credentials.

Errors have the body `{"code", "message", "error"}` (`error` equals `code`); a 400 may add
`errors` per field, a 409 of a guarded promotion or rollback `current_production_version`.
Every response carries `X-Request-ID`.
"""


class PromptsvcApi(Api):
    """flask-smorest's Api with our error schema and our error handlers."""

    ERROR_SCHEMA = ErrorSchema

    def _register_error_handlers(self) -> None:
        register_error_handlers(self._app)

    def _openapi_json(self) -> Response:
        """The document; with ``?realm=<org>`` it offers that realm's OAuth 2.0 flows."""
        realm = request.args.get("realm")
        if realm is None:
            return json_response(realm_docs.for_realm(self.spec.to_dict(), None))
        identity: Identity = current_app.extensions["identity"]
        if not identity.org_exists(realm):
            return error_response(404, "realm not found")
        return json_response(realm_docs.for_realm(self.spec.to_dict(), identity.issuer(realm)))

    def _openapi_swagger_ui(self) -> Response:
        """Swagger UI; ``?realm=<org>`` loads the realm's document and turns on its
        sign-in (an unknown realm loads a 404, which Swagger UI reports)."""
        realm = request.args.get("realm") or None
        spec_url = "/openapi.json" + ("" if realm is None else "?" + urlencode({"realm": realm}))
        identity: Identity = current_app.extensions["identity"]
        return realm_docs.swagger_page(
            title=self._app.config["API_TITLE"],
            assets=self._app.config["OPENAPI_SWAGGER_UI_URL"],
            spec_url=spec_url,
            config=self._app.config.get("OPENAPI_SWAGGER_UI_CONFIG", {}),
            issuer_url=identity.issuer_url,
            realm=realm,
        )


def init_api(app: Flask) -> PromptsvcApi:
    """Register the API blueprints, /healthz, /readyz, /openapi.json and /docs."""
    app.config.setdefault("API_TITLE", "promptsvc")
    app.config.setdefault("API_VERSION", VERSION)
    app.config.setdefault("OPENAPI_VERSION", "3.0.3")
    app.config.setdefault("OPENAPI_URL_PREFIX", "/")
    app.config.setdefault("OPENAPI_JSON_PATH", "openapi.json")
    app.config.setdefault("OPENAPI_SWAGGER_UI_PATH", "docs")
    app.config.setdefault("OPENAPI_SWAGGER_UI_URL", ops.SWAGGER_UI_ASSETS)
    app.config.setdefault("OPENAPI_SWAGGER_UI_CONFIG", ops.SWAGGER_UI_CONFIG)
    app.config.setdefault("API_SPEC_OPTIONS", {"info": {"description": API_DESCRIPTION}})
    api = PromptsvcApi(app)
    api.spec.components.security_scheme(
        BEARER_SCHEME,
        {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "Access token from /v1/auth/sdk-token or the realm token endpoint",
        },
    )
    # Named here: lists of breaking changes refer to them by name (oneOf).
    for name, schema in BREAKING_CHANGE_SCHEMAS.items():
        api.spec.components.schema(name, schema=schema)
    for module in (
        prompts,
        versions,
        releases,
        history,
        environments,
        reviews,
        rollouts,
        usage,
        keys,
        users,
        webhooks,
        events,
        ops,
    ):
        api.register_blueprint(module.blp)
    document_identity(api.spec, app)
    ops.init_app(app)
    return api
