"""Signing people in and out: the console is an OpenID Connect client of each org's realm.

* ``/console/`` asks for the org; ``/console/login`` sends the person to that realm's
  sign-in page (authorization code with PKCE S256, client ``promptsvc-console``, by
  Authlib's Flask client); ``/console/callback`` exchanges the code, checks the ID
  token and keeps the tokens in the session.
* Each request's person is the access token's principal, verified by the same code as
  an API request's (identity's verifier: signature, issuer, audience, expiry), so the
  org, the role and the user id are the token's and nothing else. Shortly before the
  access token expires the refresh token gets a new one; when that fails (the realm
  session ended, the user was disabled) the person signs in again, which the realm's
  own session usually makes a redirect and back.
* ``/console/logout`` ends the console session and then the realm's (RP-initiated
  logout with the ID token), which revokes the session's refresh tokens.

The realm is the same app, answered in-process (promptsvc.console.transport).
"""

from __future__ import annotations

import functools
import time
from typing import Any
from urllib.parse import urlsplit

from authlib.integrations.base_client import OAuthError
from authlib.integrations.flask_client import FlaskOAuth2App, OAuth
from authlib.integrations.requests_client import OAuth2Session
from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from werkzeug.wrappers import Response as WerkzeugResponse

from identity import people
from identity.errors import InvalidToken
from identity.keys import CONSOLE_CLIENT_ID, valid_org
from identity.principal import Principal
from promptsvc.console.common import identity, storage
from promptsvc.console.transport import InProcessRealm
from promptsvc.paths import CONSOLE_CALLBACK, CONSOLE_HOME

CLIENTS = "promptsvc.console.realm_clients"
SIGNED_IN = "console_person"  # the session's tokens: see _keep
SIGNING_IN = "console_signing_in"  # {org, next} between /login and /callback
SIGNED_OUT = "console_signed_out"  # the org just signed out of, until /console/ says so
LAST_ORG = "console_last_org"
# Refresh this long before the access token expires, so that a page never starts with
# a token that runs out while it renders.
REFRESH_MARGIN_SECONDS = 30
SCOPE = "openid profile"

bp = Blueprint("signin", __name__)


def in_process_session(adapter: InProcessRealm, *args: Any, **kwargs: Any) -> OAuth2Session:
    """Authlib's ``requests`` session, with the realm's URLs answered in-process."""
    session = OAuth2Session(*args, **kwargs)
    session.mount(adapter.prefix, adapter)
    return session


class RealmClient(FlaskOAuth2App):
    """Authlib's Flask OAuth 2.0 / OIDC client, talking to the realm in-process."""

    def __init__(self, framework: Any, name: str, *, adapter: InProcessRealm, **kwargs: Any):
        super().__init__(framework, name, **kwargs)
        self.client_cls = functools.partial(in_process_session, adapter)


class RealmClients:
    """The console's client of each org's realm, registered on first use."""

    def __init__(self, app: Flask, issuer_url: str) -> None:
        self.issuer_url = issuer_url.rstrip("/")
        self.oauth = OAuth(app)
        self.adapter = InProcessRealm(app, self.issuer_url)

    def get(self, org: str) -> RealmClient:
        name = f"realm-{org}"
        client = self.oauth.create_client(name)
        if client is None:
            client = self.oauth.register(
                name,
                client_id=CONSOLE_CLIENT_ID,
                client_secret=None,
                server_metadata_url=(
                    f"{self.issuer_url}/realms/{org}/.well-known/openid-configuration"
                ),
                client_kwargs={
                    "scope": SCOPE,
                    "code_challenge_method": "S256",
                    "token_endpoint_auth_method": "none",
                },
                client_cls=RealmClient,
                adapter=self.adapter,
            )
        found: RealmClient = client
        return found

    def callback_url(self) -> str:
        """The redirect URI the realm accepts for the console: exactly this one."""
        return self.issuer_url + CONSOLE_CALLBACK

    def console_url(self) -> str:
        """Where the realm sends people after sign-out: exactly this one."""
        return self.issuer_url + CONSOLE_HOME


def clients() -> RealmClients:
    found: RealmClients = current_app.extensions[CLIENTS]
    return found


# --------------------------------------------------------------------------- the person


class SignedOut(Exception):
    """The session has no usable tokens (never signed in, or they can no longer be
    refreshed); ``org`` is the org it was signed in to, if any."""

    def __init__(self, org: str | None) -> None:
        super().__init__("not signed in")
        self.org = org


def signed_in_principal() -> Principal:
    """The principal of the session's access token, refreshed first when it is about to
    expire, with the role its user has in storage now if that is lower; raises
    :class:`SignedOut`, also when the user was disabled or deleted."""
    person = session.get(SIGNED_IN)
    if not isinstance(person, dict):
        raise SignedOut(None)
    org = person["org"]
    if person["expires_at"] - REFRESH_MARGIN_SECONDS <= time.time():
        try:
            token = (
                clients()
                .get(org)
                .fetch_access_token(
                    grant_type="refresh_token", refresh_token=person["refresh_token"]
                )
            )
        except OAuthError:
            session.pop(SIGNED_IN, None)
            raise SignedOut(org) from None
        person = _keep(org, token, id_token=person["id_token"], username=person["username"])
    try:
        principal = identity().verify_token(person["access_token"])
    except InvalidToken:
        session.pop(SIGNED_IN, None)
        raise SignedOut(org) from None
    # The user as stored now: disabling or demoting someone takes effect at their next
    # page, not when their access token expires.
    current = people.standing(storage(), principal)
    if current is None:
        session.pop(SIGNED_IN, None)
        raise SignedOut(org)
    return current


def username() -> str:
    person = session.get(SIGNED_IN) or {}
    return str(person.get("username", ""))


def _keep(org: str, token: dict[str, Any], *, id_token: str, username: str) -> dict[str, Any]:
    person = {
        "org": org,
        "access_token": token["access_token"],
        "refresh_token": token.get("refresh_token"),
        # A refresh answer may carry a new ID token; the latest one names the session
        # best for the realm's logout.
        "id_token": token.get("id_token") or id_token,
        "expires_at": int(time.time()) + int(token.get("expires_in", 0)),
        "username": username,
    }
    session[SIGNED_IN] = person
    session.permanent = True
    return person


def sign_in_redirect(org: str | None, next_url: str | None = None) -> WerkzeugResponse:
    """Where to send a request that needs a signed-in person: straight back to the
    realm when the org is known (its session may still be alive), else /console/."""
    if org:
        return redirect(url_for("console.signin.login", org=org, next=next_url))
    return redirect(url_for("console.signin.start", next=next_url))


def safe_next(value: str | None) -> str | None:
    """A console path to return to after sign-in, or None: never another site."""
    if not value or not value.startswith(CONSOLE_HOME) or value.startswith("//"):
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc and "\\" not in value else None


# --------------------------------------------------------------------------- pages


@bp.get("/")
def start() -> Response | WerkzeugResponse:
    """The sign-in page: which org?"""
    if isinstance(session.get(SIGNED_IN), dict):
        return redirect(url_for("console.prompts.index"))
    signed_out_of = session.pop(SIGNED_OUT, None)
    if signed_out_of and request.args.get("state"):
        try:
            clients().get(signed_out_of).validate_logout_response()
            flash(f"You have signed out of {signed_out_of}.", "success")
        except OAuthError:
            pass
    return _signin_page(session.get(LAST_ORG, ""))


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response | WerkzeugResponse:
    """Send the person to the org's realm to sign in."""
    source = request.form if request.method == "POST" else request.args
    org = source.get("org", "").strip().lower()
    next_url = safe_next(source.get("next"))
    if not org:
        return _signin_page("", "Enter your organization's name.", 400)
    if not valid_org(org) or not identity().org_exists(org):
        return _signin_page(org[:63], f"There is no organization named “{org[:63]}”.", 404)
    session[SIGNING_IN] = {"org": org, "next": next_url}
    session[LAST_ORG] = org
    client = clients().get(org)
    response: WerkzeugResponse = client.authorize_redirect(clients().callback_url())
    return response


@bp.get("/callback")
def callback() -> Response | WerkzeugResponse:
    """The realm's answer: exchange the code, check the ID token, keep the tokens."""
    pending = session.pop(SIGNING_IN, None)
    if not isinstance(pending, dict):
        return _signin_page(
            session.get(LAST_ORG, ""),
            "That sign-in had expired or was started in another browser window. "
            "Please sign in again.",
            400,
        )
    org = pending["org"]
    client = clients().get(org)
    try:
        token = client.authorize_access_token()
    except OAuthError as exc:
        cancelled = exc.error == "access_denied"
        message = "Sign-in was cancelled." if cancelled else "Sign-in failed; please try again."
        return _signin_page(org, message, 400)
    userinfo = token.get("userinfo") or {}
    last_org = session.get(LAST_ORG)
    session.clear()  # nothing from before the sign-in survives it
    session[LAST_ORG] = last_org or org
    _keep(
        org,
        token,
        id_token=token.get("id_token", ""),
        username=str(userinfo.get("preferred_username", "")),
    )
    return redirect(pending.get("next") or url_for("console.prompts.index"))


@bp.post("/logout")
def logout() -> WerkzeugResponse:
    """End the console session, then the realm's (which revokes its refresh tokens)."""
    person = session.get(SIGNED_IN)
    last_org = session.get(LAST_ORG)
    session.clear()
    if last_org:
        session[LAST_ORG] = last_org
    if not isinstance(person, dict):
        return redirect(url_for("console.signin.start"))
    session[SIGNED_OUT] = person["org"]
    response: WerkzeugResponse = (
        clients()
        .get(person["org"])
        .logout_redirect(
            post_logout_redirect_uri=clients().console_url(),
            id_token_hint=person["id_token"],
            client_id=CONSOLE_CLIENT_ID,
        )
    )
    return response


def _signin_page(org: str, error: str | None = None, status: int = 200) -> Response:
    console_url = clients().console_url()
    elsewhere = urlsplit(console_url).netloc != request.host
    html = render_template(
        "console/signin.html",
        org=org,
        error=error,
        next=safe_next(request.values.get("next")),
        console_url=console_url if elsewhere else None,
    )
    return Response(html, status=status, mimetype="text/html")
