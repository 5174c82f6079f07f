"""The Flask application factory: API, identity endpoints and operations in one app."""

from __future__ import annotations

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

import identity
from promptsvc import console, http, request_guard
from promptsvc.api import reads
from promptsvc.api.realm_docs import SWAGGER_REDIRECT_PATH
from promptsvc.api.registry import init_api
from promptsvc.config import Settings
from promptsvc.events import EventHub
from promptsvc.paths import CONSOLE_CALLBACK, CONSOLE_HOME
from storage import Storage, storage_from_url

MAX_BODY_BYTES = 1024 * 1024  # a larger body is answered 413 (docs/api.md section 11)


def create_app(settings: Settings | None = None, *, storage: Storage | None = None) -> Flask:
    """Build the all-in-one app.

    ``settings`` defaults to ``Settings.from_env()``; ``storage`` to the backend its
    ``storage_url`` names. The storage is on ``app.extensions["promptsvc.storage"]`` and
    the identity extension on ``app.extensions["identity"]``.
    """
    settings = settings or Settings.from_env()
    backend = storage if storage is not None else storage_from_url(settings.storage_url)

    app = Flask(__name__)
    request_guard.init_app(app)  # first: its converters must be in place before any route
    app.request_class = http.ApiRequest
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json.sort_keys = False  # type: ignore[attr-defined]  # keep documented field order
    app.extensions["promptsvc.settings"] = settings
    app.extensions["promptsvc.storage"] = backend
    app.extensions["promptsvc.events"] = EventHub(
        backend,
        max_followers=settings.event_streams,
        max_per_subject=settings.client_streams,
        max_per_org=settings.org_streams,
    )

    http.configure_logging()
    base_url = settings.issuer_url.rstrip("/")
    identity.init_app(
        app,
        backend,
        issuer_url=settings.issuer_url,
        token_lifetime=settings.token_lifetime,
        signing_key_file=settings.signing_key_file,
        bootstrap_file=settings.bootstrap_file,
        rate_limits=settings.token_rate_limits,
        login_rate_limits=settings.login_rate_limits,
        # The realm accepts exactly these redirect URIs for the built-in client
        # promptsvc-console: the console's OIDC callback and Swagger UI's redirect page.
        console=identity.ConsoleUris(
            redirect=(
                base_url + CONSOLE_CALLBACK,
                base_url + SWAGGER_REDIRECT_PATH,
            ),
            post_logout=(base_url + CONSOLE_HOME,),
        ),
        account_url=base_url + CONSOLE_HOME,
    )
    init_api(app)
    console.init_app(app, issuer_url=base_url, secret_key=settings.secret_key)
    reads.init_app(app)
    http.init_app(app)  # around the read endpoints too: every answer gets its request id
    if settings.trusted_proxies:
        # Outermost, so every layer (rate limits, logs) sees the client's own address.
        n = settings.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)  # type: ignore[method-assign]
    return app
