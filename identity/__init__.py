"""The bundled OIDC issuer: per-org realms, API keys, users and their sign-in, SDK token
exchange, verification.

``init_app`` wires it into a Flask app; ``app.extensions["identity"]`` is then the
:class:`Identity` whose ``verify`` the API calls on every request.

The server's libraries (Flask, Authlib, PyJWT) are imported only when used, so that
``identity.roles``, ``identity.keys`` and the operator commands' parser load in an
SDK-only install (``pip install promptsvc``).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

    from identity.clients import ConsoleUris
    from identity.core import Identity
    from identity.people import Lifetimes
    from identity.rate_limits import RateLimits
    from storage import Storage

__all__ = [
    "ConsoleUris",
    "Identity",
    "Lifetimes",
    "RateLimits",
    "init_app",
]
# Exported names and the modules that hold them, imported on first use.
_LAZY = {
    "ConsoleUris": "identity.clients",
    "Identity": "identity.core",
    "Lifetimes": "identity.people",
    "RateLimits": "identity.rate_limits",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module), name)


def init_app(
    app: Flask,
    storage: Storage,
    *,
    issuer_url: str,
    token_lifetime: int = 300,
    signing_key_file: str | None = None,
    bootstrap_file: str | None = None,
    clock: Callable[[], float] = time.time,
    rate_limits: RateLimits | None = None,
    login_rate_limits: RateLimits | None = None,
    console: ConsoleUris | None = None,
    account_url: str | None = None,
    lifetimes: Lifetimes | None = None,
) -> Identity:
    """Register the realm's endpoints and pages and the sdk-token endpoint on ``app``, and
    apply the bootstrap file.

    ``rate_limits`` and ``login_rate_limits`` (default: identity.rate_limits'
    TOKEN_LIMITS and LOGIN_LIMITS) limit the token endpoints per client and per IP, and
    people's sign-in per username and per IP, counted in ``storage``. ``lifetimes`` of
    sessions, refresh tokens and codes default to :class:`Lifetimes`'. ``console`` says
    where the built-in client ``promptsvc-console`` may redirect people (none: it cannot
    sign anyone in); ``account_url`` is the realm document's ``account-service`` (default
    ``<issuer_url>/account``).

    Raises SigningKeyError for an unusable key file and BootstrapError for an unusable
    bootstrap file, so a misconfigured server stops at start-up.
    """
    from identity import login, realm, sdk_token
    from identity.clients import ConsoleUris
    from identity.core import Identity
    from identity.oauth import RealmServer
    from identity.people import Lifetimes
    from identity.rate_limits import LOGIN_LIMITS, TOKEN_LIMITS
    from identity.ratelimit import init_limiter

    limits = rate_limits if rate_limits is not None else TOKEN_LIMITS
    login_limits = login_rate_limits if login_rate_limits is not None else LOGIN_LIMITS
    identity = Identity(
        storage,
        issuer_url=issuer_url,
        token_lifetime=token_lifetime,
        signing_key_file=signing_key_file,
        clock=clock,
    )
    if bootstrap_file:
        identity.apply_bootstrap(bootstrap_file)
    server = RealmServer(identity, console or ConsoleUris(), lifetimes or Lifetimes())
    token_endpoints = {
        realm.realm_blueprint(
            server, account_url=account_url or f"{identity.issuer_url}/account"
        ): realm.too_many_requests,
        sdk_token.sdk_token_blueprint(identity): sdk_token.too_many_requests,
    }
    pages = login.login_blueprint(server)
    init_limiter(
        app, storage, limits, token_endpoints, login_limits, (pages, login.too_many_attempts)
    )
    for blueprint in (*token_endpoints, pages):
        app.register_blueprint(blueprint)
    app.extensions["identity"] = identity
    return identity
