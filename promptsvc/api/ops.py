"""Operations endpoints: /healthz, /readyz, ``/``, and the Swagger UI assets behind /docs.

The Swagger UI page itself is the API's (OPENAPI_SWAGGER_UI_PATH); its scripts and
styles are served here from the flask-swagger-ui package, so /docs needs no internet.
``/`` sends people to the web console.
"""

from __future__ import annotations

import os

import flask_swagger_ui
from flask import Flask, Response, redirect, send_from_directory
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.responses import StatusSchema
from promptsvc.http import json_response
from promptsvc.paths import CONSOLE_HOME

SWAGGER_UI_DIST = os.path.join(os.path.dirname(flask_swagger_ui.__file__), "dist")
SWAGGER_UI_ASSETS = "/docs/assets/"
SWAGGER_UI_CONFIG = {
    # No "validator" badge: Swagger UI would fetch validator.swagger.io otherwise.
    "validatorUrl": None,
    "persistAuthorization": True,
    "displayRequestDuration": True,
}

blp = ApiBlueprint("operations", __name__, description="Liveness and readiness probes.")


@blp.route("/healthz")
class Health(View):
    @blp.returns(200, StatusSchema)
    def get(self) -> Response:
        """Liveness: the process answers

        Always 200; it does not touch storage.
        """
        return json_response({"status": "ok"})


@blp.route("/readyz")
class Ready(View):
    @blp.returns(200, StatusSchema)
    @blp.errors(503)
    def get(self) -> Response:
        """Readiness: storage answers

        200 when storage answers a ping, else 503 service_unavailable.
        """
        storage().ping()
        return json_response({"status": "ok"})


def _swagger_asset(filename: str) -> Response:
    return send_from_directory(SWAGGER_UI_DIST, filename, max_age=86400)


def _root() -> WerkzeugResponse:
    return redirect(CONSOLE_HOME)


def init_app(app: Flask) -> None:
    """Serve the Swagger UI assets that the /docs page loads, and ``/``."""
    app.add_url_rule(SWAGGER_UI_ASSETS + "<path:filename>", "swagger_ui_asset", _swagger_asset)
    app.add_url_rule("/", "root", _root)
