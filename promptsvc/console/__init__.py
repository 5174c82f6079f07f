"""The web console at ``/console/``: where people author, compare and promote prompts.

Server-rendered pages (Flask blueprints and Jinja templates), one blueprint per area:
:mod:`~promptsvc.console.signin` (sign-in through the org's realm),
:mod:`~promptsvc.console.prompts` (the list, a prompt's page, creating and deleting),
:mod:`~promptsvc.console.versions` (a version's page, new versions, edits, archive,
unarchive, delete), :mod:`~promptsvc.console.releases` (compare, promote into an
environment or request its review, start a rollout, roll back),
:mod:`~promptsvc.console.rollouts` (a rollout's steps, completion and abort),
:mod:`~promptsvc.console.reviews` (the inbox of reviews, approve, reject, cancel),
:mod:`~promptsvc.console.environments` (the org's environments) and
:mod:`~promptsvc.console.admin` (API keys and users).
Every change goes through :mod:`promptsvc.actions`, the functions the API's views call.

Every core flow works without JavaScript; ``console.js`` only adds copy buttons. Pages
are safe by construction:

* the session is a cookie signed with ``PROMPTSVC_SECRET_KEY`` (or a secret generated
  once and kept in storage), HttpOnly, ``SameSite=Lax``, ``Secure`` over https, sent
  only to ``/console/``;
* every POST carries a CSRF token (Flask-WTF's, tied to the session), checked before
  any view runs;
* every answer has a Content-Security-Policy without ``unsafe-inline`` (scripts and
  styles only from the console's own files), ``frame-ancestors 'none'`` and
  ``X-Frame-Options: DENY``, and is never cached;
* templates escape everything (Jinja's autoescape); the org, role and user of every
  page come only from the verified access token.
"""

from __future__ import annotations

import secrets
import threading
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Request, Response, g, render_template, request
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, generate_csrf, validate_csrf
from werkzeug.wrappers import Response as WerkzeugResponse
from wtforms import ValidationError as CsrfInvalid

from promptsvc import actions
from promptsvc.console import (
    admin,
    environments,
    prompts,
    releases,
    reviews,
    rollouts,
    signin,
    versions,
)
from promptsvc.console.common import CSRF_FIELD, PRINCIPAL, needs_role, required_role
from promptsvc.console.errors import register_error_handlers
from promptsvc.console.present import highlight, timestamp, when
from promptsvc.paths import CONSOLE_HOME, CONSOLE_PATH
from storage import Storage

SESSION_COOKIE = "promptsvc_console"
# At most as long as a realm session; the refresh token decides sooner.
SESSION_LIFETIME = timedelta(hours=10)
PUBLIC_ENDPOINTS = ("console.static", "console.not_found")


class SessionSecret:
    """The key that signs sessions: ``PROMPTSVC_SECRET_KEY``, else one generated once and
    kept in storage (every worker and host on that storage then accepts every session).
    Fetched on the first console request, so the app starts without storage."""

    def __init__(self, configured: str | None) -> None:
        self._configured = configured
        self._lock = threading.Lock()

    def install(self, app: Flask) -> None:
        if app.secret_key:
            return
        with self._lock:
            if not app.secret_key:
                backend: Storage = app.extensions["promptsvc.storage"]
                app.secret_key = self._configured or backend.ensure_session_secret(
                    secrets.token_urlsafe(32)
                )


class ConsoleSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, for console pages only (the API has none), with
    ``Secure`` whenever the request came over https."""

    def __init__(self, secret: SessionSecret) -> None:
        self.secret = secret

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        if not request.path.startswith(CONSOLE_HOME):
            return None  # a null session: the API and the realm never use one
        self.secret.install(app)
        return super().open_session(app, request)

    def get_cookie_secure(self, app: Flask) -> bool:
        return request.is_secure


def init_app(app: Flask, *, issuer_url: str, secret_key: str | None) -> None:
    """Serve the console on ``app`` (which has promptsvc's storage and identity)."""
    app.config.update(
        SESSION_COOKIE_NAME=SESSION_COOKIE,
        SESSION_COOKIE_PATH=CONSOLE_HOME,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        WTF_CSRF_FIELD_NAME=CSRF_FIELD,
        # A form stays good as long as its session: a long edit must not be lost.
        WTF_CSRF_TIME_LIMIT=None,
    )
    app.session_interface = ConsoleSessions(SessionSecret(secret_key))
    app.extensions[signin.CLIENTS] = signin.RealmClients(app, issuer_url)
    form_origins = " ".join(
        dict.fromkeys(["'self'", "{0.scheme}://{0.netloc}".format(urlsplit(issuer_url))])
    )
    csp = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action {form_origins}; frame-ancestors 'none'; "
        "base-uri 'none'"
    )

    console = Blueprint(
        "console",
        __name__,
        url_prefix=CONSOLE_PATH,
        template_folder="templates",
        static_folder="static",
        static_url_path="/static",
    )

    @console.before_request
    def guard() -> Response | WerkzeugResponse | None:
        if request.endpoint in PUBLIC_ENDPOINTS:
            return None
        if request.method == "POST":
            _check_csrf()
        if request.blueprint == "console.signin":
            return None
        try:
            g.setdefault(PRINCIPAL, signin.signed_in_principal())
        except signin.SignedOut as out:
            next_url = request.full_path if request.method == "GET" else None
            return signin.sign_in_redirect(out.org, signin.safe_next(next_url))
        return None

    @console.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = csp
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        if request.endpoint != "console.static":
            response.headers["Cache-Control"] = "no-store"
        return response

    @console.context_processor
    def page_context() -> dict[str, Any]:
        person = g.get(PRINCIPAL)
        return {
            "csrf_token": generate_csrf,
            "csrf_field": CSRF_FIELD,
            "me": person,
            "my_name": signin.username(),
            "can": lambda action: person is not None and actions.allowed(person, action),
            "needs": lambda action, doing: needs_role(required_role(action), doing),
            "actions": actions,
            "open_review_count": reviews.open_count,
        }

    @console.route("/<path:_rest>")
    def not_found(_rest: str) -> Response:
        return Response(
            render_template("console/error.html", status=404, message="There is no such page."),
            status=404,
            mimetype="text/html",
        )

    console.add_app_template_filter(highlight, "highlight")
    console.add_app_template_filter(when, "when")
    console.add_app_template_filter(timestamp, "timestamp")
    register_error_handlers(console)
    for area in (
        signin.bp,
        prompts.bp,
        versions.bp,
        releases.bp,
        reviews.bp,
        rollouts.bp,
        environments.bp,
        admin.bp,
    ):
        console.register_blueprint(area)
    app.register_blueprint(console)


def _check_csrf() -> None:
    try:
        validate_csrf(request.form.get(CSRF_FIELD))
    except CsrfInvalid as exc:
        raise CSRFError(str(exc.args[0]) if exc.args else "The CSRF token is invalid.") from None
