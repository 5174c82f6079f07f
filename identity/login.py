"""The realm's pages for people: sign-in (the authorization endpoint), device approval
and sign-out. Server-rendered, no script, no remote asset; every form carries a CSRF
token.

* ``GET|POST /realms/<org>/protocol/openid-connect/auth``: the authorization request is
  validated by Authlib first; a bad client or redirect URI shows an error page and
  never redirects, any other error goes back to the validated ``redirect_uri``. A
  person already signed in to the realm (its session cookie) gets a code at once
  (unless ``prompt=login``); anyone else sees the login form (fields ``username`` and
  ``password``, posted back to the same URL).
* ``GET|POST /realms/<org>/device``: the RFC 8628 verification page.
* ``GET|POST /realms/<org>/protocol/openid-connect/logout``: RP-initiated logout, and
  Keycloak's client logout (``POST`` with ``refresh_token``, answered 204).

Cookies live under ``/realms/<org>/``, HttpOnly, ``SameSite=Lax`` and ``Secure`` over
https: the realm session (its value is a 256-bit secret; storage keeps only its digest)
and the CSRF token (double submit: a cross-site form post carries no Lax cookie, so its
token cannot match). A failed sign-in says "Invalid username or password." whether the
username exists or not, and takes as long either way.
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749.errors import InvalidGrantError
from flask import Blueprint, Response, g, redirect, render_template, request
from werkzeug.wrappers import Response as WerkzeugResponse

from identity import discovery, people, scopes, users
from identity.clients import CONSOLE_CLIENT_ID, PUBLIC_CLIENT_IDS, is_loopback_uri
from identity.endpoints import ALL_AUTH_METHODS, normalize_user_code
from identity.errors import InvalidScope
from identity.oauth import RealmRequest, RealmServer
from identity.people import Person
from identity.responses import NulCharacter
from identity.secrets import lookup_digest
from storage import DeviceAlreadyDecided, Storage, User

SESSION_COOKIE = "promptsvc_realm_session"
CSRF_COOKIE = "promptsvc_realm_csrf"
CSRF_FIELD = "csrf_token"
FORM_MIMETYPE = "application/x-www-form-urlencoded"
INVALID_LOGIN = "Invalid username or password."
# Set on g when a sign-in failed, so the per-username limit counts it.
LOGIN_FAILED = "identity_login_failed"
# Set on g when a typed device user code was not a pending one (RFC 8628 5.1 guessing).
DEVICE_CODE_FAILED = "identity_device_code_failed"
REALM = "/realms/<org>"


def login_failed() -> bool:
    """True when this request was a failed sign-in (identity.ratelimit counts those)."""
    return bool(g.get(LOGIN_FAILED))


def device_code_failed() -> bool:
    """True when this request typed a user code that is not pending (identity.ratelimit
    counts those)."""
    return bool(g.get(DEVICE_CODE_FAILED))


def login_blueprint(server: RealmServer) -> Blueprint:
    """The realm's pages for people, served from ``server``."""
    identity = server.identity
    storage = identity.storage
    bp = Blueprint(
        "identity_login",
        __name__,
        template_folder="templates",
        static_folder="static",
        static_url_path="/realm-assets",
    )
    bp.register_error_handler(
        NulCharacter,
        lambda exc: _message(
            str((request.view_args or {}).get("org", "")),
            "Invalid request",
            str(exc.description),
            400,
        ),
    )

    @bp.route(REALM + discovery.AUTH_PATH, methods=["GET", "POST"])
    def auth(org: str) -> Response | WerkzeugResponse:
        if request.method == "POST" and request.mimetype != FORM_MIMETYPE:
            return _message(org, "Sign-in failed", "The form must be form-encoded.", 415)
        unsayable = [name for name in _ECHOED if not _describable(request.args.get(name))]
        if unsayable:
            return _message(org, "Sign-in failed", f"Invalid {unsayable[0]}.", 400)
        signed_in = people.session_user(storage, org, request.cookies.get(SESSION_COOKIE))
        person = _person(*signed_in) if signed_in else None
        try:
            grant = server.get_consent_grant(end_user=person)
        except OAuth2Error as error:
            return _authorization_error(server, org, error)
        if request.method == "GET":
            # A registered client is anyone's: the person signs in to it each time,
            # which is their consent, rather than being passed through on a session.
            client_id = request.args.get("client_id")
            registered = people.is_person_client(client_id) and client_id not in PUBLIC_CLIENT_IDS
            if person is not None and grant.prompt != "login" and not registered:
                return _authorize(server, grant, person)
            return _login_page(org, purpose=_purpose(request.args.get("client_id")))
        if not _csrf_ok():
            return _login_page(org, error="The form expired; please sign in again.", status=400)
        user = _check_credentials(storage, org)
        if isinstance(user, Response):
            return user
        cookie, session = people.start_session(storage, user, server.lifetimes)
        person = Person(user, session.session_id, session.created_at)
        response = _authorize(server, grant, person)
        _set_session_cookie(response, org, cookie, server.lifetimes.session)
        return response

    @bp.route(REALM + discovery.DEVICE_PAGE_PATH, methods=["GET", "POST"])
    def device(org: str) -> Response | WerkzeugResponse:
        if not identity.org_exists(org):
            return _message(org, "Unknown realm", "There is no such realm.", 404)
        if request.method == "POST":
            if request.mimetype != FORM_MIMETYPE:
                return _message(org, "Failed", "The form must be form-encoded.", 415)
            if not _csrf_ok():
                return _message(org, "Form expired", "Go back, reload and try again.", 400)
        signed_in = people.session_user(storage, org, request.cookies.get(SESSION_COOKIE))
        if request.method == "POST" and "password" in request.form:
            user = _check_credentials(storage, org, purpose="Sign in to connect a device.")
            if isinstance(user, Response):
                return user
            cookie, _ = people.start_session(storage, user, server.lifetimes)
            after = redirect(request.full_path, 303)  # the same page, now signed in
            _set_session_cookie(after, org, cookie, server.lifetimes.session)
            return after
        if signed_in is None:
            return _login_page(org, purpose="Sign in to connect a device.")
        session, user = signed_in
        typed = (request.form if request.method == "POST" else request.args).get("user_code")
        action = request.form.get("action") if request.method == "POST" else "lookup"
        if not typed:
            return _device_page(org, user)
        code = normalize_user_code(typed)
        record = storage.get_device_authorization_by_user_code(org, code) if code else None
        if record is None or record.status != "pending" or server.device_expired(record):
            setattr(g, DEVICE_CODE_FAILED, True)
            return _device_page(org, user, typed, "This code is not valid or has expired.", 400)
        if action not in ("approve", "deny"):
            return _page(
                "realm/device_confirm.html",
                org=org,
                username=user.username,
                client_id=record.client_id,
                scope=record.scope,
                user_code=record.user_code,
            )
        approved = action == "approve"
        if approved:
            try:
                scopes.grant(user.role, record.scope)
            except InvalidScope:
                return _message(
                    org,
                    "Not allowed",
                    f"Your role ({user.role}) does not allow what the device asks for.",
                    403,
                )
        try:
            decided = storage.decide_device_authorization(
                org, record.user_code, approved=approved, user_id=user.user_id,
                session_id=session.session_id,
            )  # fmt: skip
        except DeviceAlreadyDecided:
            decided = None
        if decided is None:
            setattr(g, DEVICE_CODE_FAILED, True)
            return _device_page(org, user, typed, "This code is not valid or has expired.", 400)
        if approved:
            return _message(org, "Device connected", "You can return to your device now.")
        return _message(org, "Device refused", "The device was not connected.")

    @bp.route(REALM + discovery.LOGOUT_PATH, methods=["GET", "POST"])
    def logout(org: str) -> Response | WerkzeugResponse:
        if request.method == "POST" and "refresh_token" in request.form:
            return _client_logout(server, org)
        cookie = request.cookies.get(SESSION_COOKIE)
        state = server.end_session_state()
        state.cookie_session_id = lookup_digest(cookie) if cookie and len(cookie) <= 128 else None
        if request.method == "POST":
            if request.mimetype != FORM_MIMETYPE or not _csrf_ok():
                return _message(org, "Form expired", "Go back, reload and try again.", 400)
            state.confirmed = True
        try:
            validated = server.validate_endpoint_request("end_session")
        except OAuth2Error as error:
            return _message(org, "Sign-out failed", _description(error), 400)
        if _needs_confirmation(validated, state.cookie_session_id) and not state.confirmed:
            params = [
                (name, value)
                for name, value in request.args.items(multi=True)
                if name in _LOGOUT_PARAMS
            ]
            return _page("realm/logout.html", org=org, params=params)
        answer = server.create_endpoint_response("end_session", validated)
        response = answer or _message(org, "Signed out", "You are signed out.")
        response.delete_cookie(SESSION_COOKIE, path=_cookie_path(org))
        return response

    return bp


# Parameters Authlib quotes in its error descriptions, which may only hold RFC 6749's
# error characters (it raises ValueError otherwise): such a value cannot be valid anyway.
_ECHOED = ("response_type", "redirect_uri")
_DESCRIBABLE = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
_LOGOUT_PARAMS = (
    *("id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales"),
    "logout_hint",
)


def too_many_attempts(retry_after: int) -> Response:
    """429 for a rate-limited sign-in (identity.ratelimit): the login page, saying so; on
    the device page of a signed-in person, a page saying so."""
    org = str((request.view_args or {}).get("org", ""))
    typed = (request.form if request.method == "POST" else request.args).get("user_code")
    if request.endpoint == "identity_login.device" and typed and "password" not in request.form:
        response = _message(
            org, "Too many codes", f"Too many codes tried. Try again in {retry_after} seconds.",
            429,
        )  # fmt: skip
    else:
        response = _login_page(
            org, f"Too many sign-in attempts. Try again in {retry_after} seconds.", status=429
        )
    response.headers["Retry-After"] = str(retry_after)
    return response


# --------------------------------------------------------------------------- helpers


def _needs_confirmation(validated: Any, cookie_session_id: str | None) -> bool:
    """Whether the person must confirm a logout first: without an id_token_hint (RP-
    initiated logout 1.0 section 6), and with one that is not of this browser's session
    (a link carrying the attacker's own id_token would otherwise sign the victim out)."""
    if validated.needs_confirmation:
        return True
    sid = (validated.id_token_claims or {}).get("sid")
    return cookie_session_id is None or sid != cookie_session_id


def _describable(value: str | None) -> bool:
    return value is None or _DESCRIBABLE.fullmatch(value) is not None


def _person(session: Any, user: User) -> Person:
    return Person(user, session.session_id, session.created_at)


def _authorize(server: RealmServer, grant: Any, person: Person) -> Response:
    response: Response = server.create_authorization_response(grant_user=person, grant=grant)
    return response


def _refused_input(exc: NulCharacter) -> Response:
    org = str((request.view_args or {}).get("org", ""))
    return _message(org, "Invalid request", str(exc.description), 400)


def _authorization_error(server: RealmServer, org: str, error: OAuth2Error) -> Response:
    if error.redirect_uri:  # validated against the client: send the error back there
        return server.handle_error_response(None, error)
    return _message(org, "Sign-in failed", _description(error), 400)


def _description(error: OAuth2Error) -> str:
    return str(error.description or error.error)


def _check_credentials(storage: Storage, org: str, purpose: str | None = None) -> User | Response:
    """The user the posted username and password name, or the login page again."""
    username = request.form.get("username", "")
    password = request.form.get("password", "")
    if not username or not password:
        setattr(g, LOGIN_FAILED, True)
        return _login_page(org, "Enter your username and password.", username, 400, purpose)
    user = users.authenticate(storage, org, username.strip().lower(), password)
    if user is None or not people.can_sign_in(user):
        setattr(g, LOGIN_FAILED, True)
        return _login_page(org, INVALID_LOGIN, username, 200, purpose)
    return user


def _purpose(client_id: str | None) -> str | None:
    if client_id in PUBLIC_CLIENT_IDS:
        return f"to continue to {client_id}"
    if people.is_person_client(client_id):
        return "to let an application you use (an MCP client) act as you"
    return None


def _login_page(
    org: str,
    error: str | None = None,
    username: str = "",
    status: int = 200,
    purpose: str | None = None,
) -> Response:
    return _page(
        "realm/login.html",
        status,
        form_targets=_redirect_origin(),
        org=org,
        error=error,
        username=username[:64],
        purpose=purpose,
    )


def _redirect_origin() -> tuple[str, ...]:
    """The origin of the redirect URI when this page signs in for the command line or a
    registered client (checked by then): the form's answer redirects there, and a
    browser applies the page's ``form-action`` to that redirect too."""
    uri = request.args.get("redirect_uri", "")
    client_id = request.args.get("client_id")
    if client_id == CONSOLE_CLIENT_ID or not people.is_person_client(client_id):
        return ()
    parts = urlsplit(uri)
    registered = client_id not in PUBLIC_CLIENT_IDS
    if not (is_loopback_uri(uri) or (registered and parts.scheme == "https")):
        return ()
    netloc = parts.netloc
    return () if netloc.startswith("[") else (f"{parts.scheme}://{netloc}",)  # CSP: no IPv6


def _device_page(
    org: str, user: User, typed: str = "", error: str | None = None, status: int = 200
) -> Response:
    return _page(
        "realm/device.html", status, org=org, username=user.username, user_code=typed[:32],
        error=error,
    )  # fmt: skip


def _message(org: str, heading: str, message: str, status: int = 200) -> Response:
    return _page(
        "realm/message.html", status, org=org, heading=heading, message=message,
        error=status >= 400,
    )  # fmt: skip


def _page(
    template: str, status: int = 200, *, form_targets: tuple[str, ...] = (), **context: Any
) -> Response:
    """A page with a fresh-or-kept CSRF token; never cached, never framed. Its forms
    post to this origin, and their answers may redirect to ``form_targets`` too."""
    org = context["org"]
    token = request.cookies.get(CSRF_COOKIE)
    if not token or len(token) > 128:
        token = secrets.token_urlsafe(32)
    html = render_template(template, csrf_token=token, action=request.full_path, **context)
    response = Response(html, status=status, mimetype="text/html")
    response.set_cookie(
        CSRF_COOKIE, token, path=_cookie_path(org), httponly=True, samesite="Lax",
        secure=request.is_secure,
    )  # fmt: skip
    _page_headers(response, form_targets)
    return response


def _page_headers(response: Response, form_targets: tuple[str, ...]) -> None:
    form_action = " ".join(("'self'", *form_targets))
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; style-src 'self'; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["Referrer-Policy"] = "no-referrer"


def _csrf_ok() -> bool:
    cookie = request.cookies.get(CSRF_COOKIE, "")
    sent = request.form.get(CSRF_FIELD, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), sent.encode())


def _cookie_path(org: str) -> str:
    return f"/realms/{org}/"


def _set_session_cookie(response: WerkzeugResponse, org: str, value: str, max_age: int) -> None:
    response.set_cookie(
        SESSION_COOKIE, value, max_age=max_age, path=_cookie_path(org), httponly=True,
        samesite="Lax", secure=request.is_secure,
    )  # fmt: skip


def _client_logout(server: RealmServer, org: str) -> Response:
    """Keycloak's logout for clients: ``POST`` with the client and its refresh token ends
    that token's session (or family) and answers 204."""
    storage = server.identity.storage
    oauth_request = RealmRequest(request)
    try:
        client = server.authenticate_client(oauth_request, ALL_AUTH_METHODS, "end_session")
        token = request.form.get("refresh_token", "")
        record = (
            storage.get_refresh_token(org, lookup_digest(token))
            if token and len(token) <= 256
            else None
        )
        if record is None or record.client_id != client.get_client_id():
            raise InvalidGrantError("Invalid refresh token")
    except OAuth2Error as error:
        return server.handle_error_response(None, error)
    if record.session_id is not None:
        storage.end_session(org, record.session_id)
    else:
        storage.revoke_refresh_family(org, record.family_id)
    response = Response(status=204)
    response.headers["Cache-Control"] = "no-store"
    return response


__all__ = [
    "CSRF_COOKIE",
    "SESSION_COOKIE",
    "device_code_failed",
    "login_blueprint",
    "login_failed",
    "too_many_attempts",
]
