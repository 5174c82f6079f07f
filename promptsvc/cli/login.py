"""``promptsvc login``, ``logout`` and ``whoami``: a person's saved login.

Sign-in itself is in :mod:`promptsvc.cli.signin`, the saved file in
:mod:`promptsvc.cli.credentials`; :func:`promptsvc.cli.connection.connect` uses the login.
"""

from __future__ import annotations

import argparse
import sys
import time
import webbrowser
from typing import Any

import httpx

from promptsvc.cli import credentials
from promptsvc.cli.credentials import CLI_CLIENT, LoginRequired, SavedLogin
from promptsvc.cli.output import fail
from promptsvc.cli.signin import SignInError, device_sign_in, loopback_sign_in, realm_url
from promptsvc.client.flow import request_headers

LOGIN_HELP = """\
Sign in as a person through the org's realm (the client promptsvc-cli) and save the
tokens in the user's config directory (mode 0600): $PROMPTSVC_CONFIG_DIR, else
$XDG_CONFIG_HOME/promptsvc, else ~/.config/promptsvc. Later commands use this login
(refreshing its token when needed) before PROMPTSVC_URL and the API key's variables.

By default a browser opens the realm's sign-in page, which comes back to a one-shot
server on 127.0.0.1; the URL is printed too. --device prints a code to approve in any
browser instead, for machines without one.
"""

TIMEOUT = 10.0  # seconds for each HTTP request to the realm


def register(subparsers: Any) -> None:
    login = subparsers.add_parser(
        "login",
        help="sign in as a person (browser or device code) and save the login",
        description=LOGIN_HELP,
        epilog="examples:\n  promptsvc login --url https://prompts.example.com --org acme\n"
        "  promptsvc login --url https://prompts.example.com --org acme --device\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    login.add_argument("--url", required=True, help="the service's base URL")
    login.add_argument("--org", required=True, help="the org (realm) slug")
    login.add_argument(
        "--device", action="store_true", help="sign in with a code approved in another browser"
    )
    login.add_argument(
        "--no-browser", action="store_true", help="print the sign-in URL without opening it"
    )
    login.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the browser's sign-in (default 300)",
    )
    login.set_defaults(func=login_command)

    logout = subparsers.add_parser(
        "logout",
        help="revoke the saved login at the realm and delete it",
        description="Revoke the saved login at the realm and delete the file, saying "
        "whether the realm still knew the login. The file is deleted even when the realm "
        "cannot be reached.",
    )
    logout.set_defaults(func=logout_command)

    whoami = subparsers.add_parser(
        "whoami",
        help="show the saved login: service, org and username",
        description="Show the saved login (read from the file; nothing is sent).",
    )
    whoami.set_defaults(func=whoami_command)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def login_command(args: argparse.Namespace) -> int:
    url = args.url.rstrip("/")
    try:
        with httpx.Client(timeout=TIMEOUT) as http:
            asked_at = time.time()
            if args.device:
                body = device_sign_in(http, url, args.org, show=_say)
                asked_at = time.time()
            else:
                body = loopback_sign_in(
                    http,
                    url,
                    args.org,
                    show=_say,
                    open_browser=None if args.no_browser else webbrowser.open,
                    timeout=args.timeout,
                )
        login = SavedLogin.from_tokens(url, args.org, body, asked_at)
    except (SignInError, ValueError) as exc:
        return fail(str(exc))
    except httpx.HTTPError as exc:
        return fail(f"cannot reach {url}: {exc}")
    path = credentials.credentials_path()
    credentials.save(path, login)
    print(f"Signed in to {url} (org {args.org}) as {login.username}; login saved in {path}")
    return 0


def logout_command(args: argparse.Namespace) -> int:
    path = credentials.credentials_path()
    try:
        login = credentials.load(path)
    except LoginRequired:
        login = None
    if login is None and not path.exists():
        print("Not signed in.")
        return 0
    if login is None:
        outcome, problem = FAILED, "the saved file was unreadable"
    else:
        try:
            with httpx.Client(timeout=TIMEOUT, headers=request_headers()) as http:
                outcome, problem = _end(http, login)
        except httpx.HTTPError as exc:
            outcome, problem = FAILED, f"the realm cannot be reached ({exc})"
    path.unlink(missing_ok=True)
    if outcome == REVOKED:
        print("Signed out: the login is revoked and deleted.")
    elif outcome == DEAD:
        print(
            "Signed out: the saved login had already stopped working (the realm refused "
            "it: the login expired or was revoked, or the service's data was reset); "
            "it is deleted."
        )
    else:
        print(f"Deleted the saved login, but it could not be revoked: {problem}.", file=sys.stderr)
    return 0


REVOKED, DEAD, FAILED = "revoked", "dead", "failed"


def _end(http: httpx.Client, login: SavedLogin) -> tuple[str, str]:
    """Revoke the saved login at its realm: REVOKED, DEAD (the realm no longer knew it)
    or FAILED, and what went wrong. Revocation alone cannot tell a live login from a
    dead one (RFC 7009 answers 200 for both), so the refresh token is used once first:
    refused, the login was dead; accepted, the rotated token is revoked, and with it the
    whole login."""
    token_url = realm_url(login.url, login.org, "/token")
    refreshed = http.post(
        token_url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": login.refresh_token,
            "client_id": CLI_CLIENT,
        },
    )
    if refreshed.status_code in (400, 401):
        return DEAD, ""
    rotated = _json_field(refreshed, "refresh_token") if refreshed.status_code == 200 else None
    if rotated is None:
        return FAILED, f"the realm answered {refreshed.status_code}"
    answer = http.post(
        realm_url(login.url, login.org, "/revoke"),
        data={"token": rotated, "token_type_hint": "refresh_token", "client_id": CLI_CLIENT},
    )
    if answer.status_code != 200:
        return FAILED, f"the realm answered {answer.status_code}"
    return REVOKED, ""


def _json_field(response: httpx.Response, name: str) -> str | None:
    try:
        value = response.json().get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def whoami_command(args: argparse.Namespace) -> int:
    try:
        login = credentials.load(credentials.credentials_path())
    except LoginRequired as exc:
        return fail(str(exc))
    if login is None:
        return fail("not signed in: run `promptsvc login --url URL --org SLUG`")
    print(f"{login.username} at {login.url} (org {login.org})")
    return 0
