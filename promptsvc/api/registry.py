"""The flask-smorest Api: every blueprint, the OpenAPI document and the error handlers."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api

from promptsvc import __version__, ops
from promptsvc.api import history, keys, prompts, releases, users, versions
from promptsvc.api.common import BEARER_SCHEME
from promptsvc.api.errors import register_error_handlers
from promptsvc.api.identity_docs import document_identity
from promptsvc.api.schemas import ErrorSchema

API_DESCRIPTION = """Prompt versioning service.

Read prompt versions (production, latest, by id), compare two versions, and manage
prompts, versions, promotions (guarded, with rollback), API keys and users. Every /api/v1
endpoint needs `Authorization: Bearer <token>`; get a token from
`POST /v1/auth/sdk-token` (JSON `{account_id, key_id, key_secret}`) or from
`POST /realms/<org>/protocol/openid-connect/token` (client credentials). The org of a
request comes only from its token.

Errors have the body `{"code", "message", "error"}` (`error` equals `code`); a 400 may add
`errors` per field, a 409 of a guarded promotion or rollback `current_production_version`.
Every response carries `X-Request-ID`.
"""


class PromptsvcApi(Api):
    """flask-smorest's Api with our error schema and our error handlers."""

    ERROR_SCHEMA = ErrorSchema

    def _register_error_handlers(self) -> None:
        register_error_handlers(self._app)


def init_api(app: Flask) -> PromptsvcApi:
    """Register the API blueprints, /healthz, /readyz, /openapi.json and /docs."""
    app.config.setdefault("API_TITLE", "promptsvc")
    app.config.setdefault("API_VERSION", __version__)
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
    for module in (prompts, versions, releases, history, keys, users, ops):
        api.register_blueprint(module.blp)
    document_identity(api.spec, app)
    ops.init_app(app)
    return api
