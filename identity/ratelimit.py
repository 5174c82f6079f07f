"""Rate limits on the token endpoints and on people's sign-in, by flask-limiter on the
app's own storage.

Failures are limited per source, not per account (RFC 6749 10.10, OWASP's advice on
lockout): a limit keyed on an account alone would let anyone who knows a username or
client id lock its owner out. So the failure counters are per account *and* client
address; the right password or secret from another address still works while one
address is being refused.

Two limits, each shared by ``POST /realms/<org>/protocol/openid-connect/token`` and
``POST /v1/auth/sdk-token`` (so alternating endpoints gains an attacker nothing):

* per client and address, ``(client IP, org, client id)``: counts only *failed*
  attempts (401), so a client that refreshes its token is never limited while guessing
  one key's secret is. Once the limit is reached every request for that client from
  that address gets 429, the right secret included, until the window has room again.
  Default ``30/minute``; env ``PROMPTSVC_TOKEN_RATE_LIMIT``.
* per client IP: counts every token request, which also bounds the RSA signing work one
  address can cause. Default ``300/minute``; env ``PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP``.

People's sign-in (the login form of the authorization endpoint and of the device page)
has two limits of its own, with the same behaviour:

* per username and address, ``(client IP, org, username)``: counts only failed
  sign-ins, whether the username exists or not (so the limit tells nothing about it).
  Default ``10/minute``; env ``PROMPTSVC_LOGIN_RATE_LIMIT``.
* per client IP: counts every sign-in attempt. Default ``60/minute``; env
  ``PROMPTSVC_LOGIN_RATE_LIMIT_PER_IP``.

User codes typed on the device page (RFC 8628 5.1) count like failed sign-ins: every
code that is unknown, used or expired counts against ``(client IP, org)`` with the
per-username limit's value, on ``GET`` and ``POST`` alike.

The client IP is ``request.remote_addr``: behind a reverse proxy, set
``PROMPTSVC_TRUSTED_PROXIES`` so that it is the client's own address (werkzeug's
ProxyFix), else every client shares the proxy's counters.

Values use flask-limiter's notation (``"30/minute"``, ``"5/second;100/hour"``); ``off``
turns a limit off. promptsvc.config reads the variables named here into
:class:`identity.rate_limits.RateLimits`, one for each pair. A breach answers 429
``too_many_requests`` with ``Retry-After`` (seconds) in the endpoint's own error shape.

Counters live where the app's data lives, so they are shared as widely as the data (by
every worker and host on Redis): the storage backend says where, as a ``limits`` storage
URI and its options (``Storage.rate_limit_settings``). Moving windows, so a burst at a
window edge cannot double the limit. If the counters cannot be reached the request
goes on unlimited (logged): the token endpoint needs the same storage and answers 503 by
itself, and a broken limiter must not lock every client out.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import Blueprint, Flask, Response, request
from flask_limiter import Limiter, RequestLimit
from flask_limiter.errors import RateLimitExceeded
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException

from identity import sdk_token
from identity.keys import RESERVED_CLIENT_IDS
from identity.login import device_code_failed, login_failed
from identity.oauth import basic_credentials
from identity.rate_limits import NO_LIMITS, RateLimits
from storage import Storage

# Client ids come from the request; a longer one is hashed so a counter key stays small.
_MAX_KEY_PART = 128

Respond = Callable[[int], Response]


def init_limiter(
    app: Flask,
    storage: Storage,
    limits: RateLimits,
    endpoints: Mapping[Blueprint, Respond],
    login_limits: RateLimits = NO_LIMITS,
    login: tuple[Blueprint, Respond] | None = None,
) -> Limiter | None:
    """Limit the token endpoints of ``endpoints`` (blueprint -> its 429 response builder)
    and the sign-in forms of the ``login`` blueprint.

    Call before the blueprints are registered on ``app``. None when every limit is off.
    """
    if limits.off and login_limits.off:
        return None
    counters = storage.rate_limit_settings()
    hooks: tuple[dict[str | None, list[Any]], ...] = (
        app.before_request_funcs,
        app.after_request_funcs,
        app.teardown_request_funcs,
    )
    app_wide = [list(funcs[None]) if None in funcs else [] for funcs in hooks]
    limiter = Limiter(
        key_func=_remote_address,
        app=app,
        storage_uri=counters.uri,
        storage_options=dict(counters.options),
        strategy="moving-window",
        swallow_errors=True,
        headers_enabled=False,
    )
    # Only these blueprints have limits: flask-limiter's request hooks, which it puts
    # on the whole app, run for their requests alone, first as they did (every other
    # request would pay for them and find no limit; the read endpoints never reach
    # Flask at all).
    limited = {bp.name for bp in (*endpoints, *([login[0]] if login else []))}
    for funcs, kept in zip(hooks, app_wide, strict=True):
        added = [func for func in funcs.get(None, []) if func not in kept]
        funcs[None] = kept
        for name in limited:
            funcs[name][:0] = added
    for bp, respond in endpoints.items():
        on_breach = _breach_handler(respond)
        if limits.per_account is not None:
            limiter.shared_limit(
                limits.per_account,
                scope="token-client",
                key_func=_client_key,
                exempt_when=lambda: not _client_name(),
                deduct_when=lambda response: response.status_code == 401,
                methods=["POST"],
                on_breach=on_breach,
            )(bp)
        if limits.per_ip is not None:
            limiter.shared_limit(
                limits.per_ip,
                scope="token-ip",
                key_func=_remote_address,
                methods=["POST"],
                on_breach=on_breach,
            )(bp)
        bp.register_error_handler(RateLimitExceeded, _rate_limit_exceeded(respond))
    if login is not None:
        _limit_login(limiter, login_limits, *login)
    return limiter


def _limit_login(limiter: Limiter, limits: RateLimits, bp: Blueprint, respond: Respond) -> None:
    on_breach = _breach_handler(respond)
    if limits.per_account is not None:
        limiter.shared_limit(
            limits.per_account,
            scope="login-username",
            key_func=_username_key,
            exempt_when=lambda: not _username(),
            deduct_when=lambda response: login_failed(),
            methods=["POST"],
            on_breach=on_breach,
        )(bp)
        limiter.shared_limit(
            limits.per_account,
            scope="device-code",
            key_func=_device_code_key,
            exempt_when=lambda: not _typed_user_code(),
            deduct_when=lambda response: device_code_failed(),
            methods=["GET", "POST"],
            on_breach=on_breach,
        )(bp)
    if limits.per_ip is not None:
        limiter.shared_limit(
            limits.per_ip,
            scope="login-ip",
            key_func=_remote_address,
            exempt_when=lambda: "password" not in _form(),
            methods=["POST"],
            on_breach=on_breach,
        )(bp)
    bp.register_error_handler(RateLimitExceeded, _rate_limit_exceeded(respond))


def _username_key() -> str:
    return _bounded(f"{_remote_address()} {_username()}")


def _username() -> str:
    """``<org>/<username>`` of a sign-in attempt, '' for any other request."""
    form = _form()
    if "password" not in form:
        return ""
    org = (request.view_args or {}).get("org", "")
    username = form.get("username", "").strip().lower()
    if not (isinstance(org, str) and org and username):
        return ""
    return f"{org}/{username}"


def _typed_user_code() -> bool:
    """Whether this request is the device page with a user code typed in."""
    if request.endpoint != "identity_login.device":
        return False
    source = _form() if request.method == "POST" else request.args
    return bool(source.get("user_code"))


def _device_code_key() -> str:
    org = (request.view_args or {}).get("org", "")
    return _bounded(f"{_remote_address()} {org}")


def _form() -> MultiDict[str, str]:
    """The request's form, empty when it cannot be read (over the size limit: the view
    answers 413 by itself)."""
    try:
        return request.form
    except HTTPException:
        return MultiDict()


def _bounded(key: str) -> str:
    if len(key) > _MAX_KEY_PART:
        return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return key


def _breach_handler(respond: Respond) -> Callable[[RequestLimit], Response]:
    def on_breach(limit: RequestLimit) -> Response:
        return respond(max(1, math.ceil(limit.reset_at - time.time())))

    return on_breach


def _rate_limit_exceeded(respond: Respond) -> Callable[[RateLimitExceeded], Response]:
    def handle(exc: RateLimitExceeded) -> Response:
        if isinstance(exc.response, Response):
            return exc.response
        return respond(60)  # pragma: no cover - on_breach always builds the response

    return handle


def _remote_address() -> str:
    return request.remote_addr or "unknown"


def _client_key() -> str:
    return _bounded(f"{_remote_address()} {_client_name()}")


def _client_name() -> str:
    """``<org>/<client id>`` of a token request, '' when it names no client."""
    if request.blueprint == "identity_sdk_token":
        try:
            data = sdk_token.json_body()
        except HTTPException:  # a body over the size limit: the view answers 413
            return ""
        if data is None:
            return ""
        org, client_id = data.get("account_id"), data.get("key_id")
    else:
        org = (request.view_args or {}).get("org", "")
        basic_id, _ = basic_credentials(request.headers)
        client_id = basic_id or _form().get("client_id")
    if not (isinstance(org, str) and isinstance(client_id, str) and org and client_id):
        return ""
    if client_id in RESERVED_CLIENT_IDS:
        return ""  # public clients have no secret to guess; one limit for all would lock out all
    return f"{org}/{client_id}"
