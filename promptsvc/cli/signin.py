"""A person signing in through the realm as the public client ``promptsvc-cli``:
authorization code with PKCE (S256) over a loopback redirect (RFC 8252), or the device
grant (RFC 8628). docs/identity.md draws each flow.

Written with the stdlib and httpx only: the command line runs where only the SDK is
installed, and Authlib is a server dependency.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import httpx

from promptsvc.cli.credentials import CLI_CLIENT
from promptsvc.client.flow import request_headers

SCOPE = "openid"
CALLBACK_PATH = "/callback"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


class SignInError(Exception):
    """The sign-in did not complete; the message says why."""


def realm_url(url: str, org: str, path: str) -> str:
    return f"{url.rstrip('/')}/realms/{quote(org, safe='')}/protocol/openid-connect{path}"


def pkce_pair() -> tuple[str, str]:
    """A code verifier (256 random bits) and its S256 challenge (RFC 7636 4.2)."""
    verifier = secrets.token_urlsafe(32)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _token_answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 200; SignInError with the realm's reason otherwise."""
    body = _json_object(response)
    if response.status_code != 200 or not body:
        reason = body.get("error_description") or body.get("error") or response.text[:200]
        raise SignInError(f"the realm refused the sign-in: {response.status_code} {reason}")
    return body


class _Callback(http.server.BaseHTTPRequestHandler):
    """Answers the browser's one redirect back and keeps its query."""

    query: dict[str, str] | None = None
    state = ""  # the sign-in's own: an answer without it is not this sign-in's

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != CALLBACK_PATH:
            self.send_error(404)
            return
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        type(self).query = query
        if query.get("state") != type(self).state:
            message = "Sign-in refused: this answer is not for the sign-in that was started."
        elif "code" in query:
            message = "You are signed in to promptsvc. You can close this window."
        else:
            message = "Sign-in failed: " + query.get("error", "no code in the answer")
        page = f"<!doctype html><title>promptsvc</title><p>{html.escape(message)}</p>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the query holds the code."""


def loopback_sign_in(
    client: httpx.Client,
    url: str,
    org: str,
    *,
    show: Callable[[str], None],
    open_browser: Callable[[str], object] | None,
    timeout: float,
) -> dict[str, Any]:
    """The token response of an authorization-code sign-in whose redirect comes back to a
    one-shot server on 127.0.0.1 (an ephemeral port)."""

    state = secrets.token_urlsafe(24)

    class Handler(_Callback):
        """This sign-in's own handler, so its answer is kept apart from any other's."""

    Handler.state = state
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    try:
        redirect_uri = f"http://127.0.0.1:{server.server_port}{CALLBACK_PATH}"
        verifier, challenge = pkce_pair()
        params = {
            "response_type": "code",
            "client_id": CLI_CLIENT,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        authorize = realm_url(url, org, "/auth") + "?" + urlencode(params)
        show(f"Open this URL in a browser to sign in:\n\n  {authorize}\n")
        if open_browser is not None:
            open_browser(authorize)
        deadline = time.monotonic() + timeout
        while Handler.query is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SignInError(f"no sign-in within {timeout:g} seconds")
            server.timeout = left
            server.handle_request()
        query: dict[str, str] = Handler.query
    finally:
        server.server_close()
    if query.get("state") != state:
        raise SignInError("the answer's state does not match the request: sign-in refused")
    if "code" not in query:
        reason = query.get("error_description") or query.get("error", "no code")
        raise SignInError(f"the realm did not sign you in: {reason}")
    answer = client.post(
        realm_url(url, org, "/token"),
        headers=request_headers(),
        data={
            "grant_type": "authorization_code",
            "code": query["code"],
            "redirect_uri": redirect_uri,
            "client_id": CLI_CLIENT,
            "code_verifier": verifier,
        },
    )
    return _token_answer(answer)


def device_sign_in(
    client: httpx.Client,
    url: str,
    org: str,
    *,
    show: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The token response of a device-grant sign-in, polling as the realm says."""
    started = client.post(
        realm_url(url, org, "/auth/device"),
        headers=request_headers(),
        data={"client_id": CLI_CLIENT, "scope": SCOPE},
    )
    grant = _token_answer(started)
    show(
        f"To sign in, open {grant['verification_uri']} and enter the code "
        f"{grant['user_code']}\n(or open {grant.get('verification_uri_complete', '')})\n"
    )
    interval = float(grant.get("interval", 5))
    deadline = time.monotonic() + float(grant.get("expires_in", 600))
    while time.monotonic() < deadline:
        sleep(interval)
        answer = client.post(
            realm_url(url, org, "/token"),
            headers=request_headers(),
            data={
                "grant_type": DEVICE_GRANT,
                "device_code": grant["device_code"],
                "client_id": CLI_CLIENT,
            },
        )
        error = _json_object(answer).get("error") if answer.status_code == 400 else None
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5  # RFC 8628 3.5
            continue
        return _token_answer(answer)
    raise SignInError("the code expired before it was approved")
