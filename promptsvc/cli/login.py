"""``promptsvc login``, ``logout`` and ``whoami``: a person's saved login.

Sign-in itself is in :mod:`promptsvc.cli.signin`, the saved file in
:mod:`promptsvc.cli.credentials`; :func:`promptsvc.cli.api.connect` uses the login.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
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
        description="Revoke the saved login's refresh token at the realm and delete the "
        "file. The file is deleted even when the realm cannot be reached.",
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
    print(f"Signed in to {url} (org {args.org}) as {_username(login)}; login saved in {path}")
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
    revoked = False
    if login is not None:
        try:
            answer = httpx.post(
                realm_url(login.url, login.org, "/revoke"),
                headers=request_headers(),
                data={
                    "token": login.refresh_token,
                    "token_type_hint": "refresh_token",
                    "client_id": CLI_CLIENT,
                },
                timeout=TIMEOUT,
            )
            revoked = answer.status_code == 200
            problem = f"the realm answered {answer.status_code}"
        except httpx.HTTPError as exc:
            problem = f"the realm cannot be reached ({exc})"
    else:
        problem = "the saved file was unreadable"
    path.unlink(missing_ok=True)
    if revoked:
        print("Signed out: the login is revoked and deleted.")
        return 0
    print(f"Deleted the saved login, but it could not be revoked: {problem}.", file=sys.stderr)
    return 0


def whoami_command(args: argparse.Namespace) -> int:
    try:
        login = credentials.load(credentials.credentials_path())
    except LoginRequired as exc:
        return fail(str(exc))
    if login is None:
        return fail("not signed in: run `promptsvc login --url URL --org SLUG`")
    print(f"{_username(login)} at {login.url} (org {login.org})")
    return 0


def _username(login: SavedLogin) -> str:
    """The access token's ``preferred_username``, read for display only (not verified:
    the service verifies the token on every call)."""
    try:
        payload = login.access_token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims.get("preferred_username") or claims.get("sub"))
    except (IndexError, ValueError, binascii.Error, AttributeError):
        return "(unknown user)"
