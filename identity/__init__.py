"""The bundled OIDC issuer: per-org realms, API keys, SDK token exchange, verification.

``init_app`` wires it into a Flask app; ``app.extensions["identity"]`` is then the
:class:`Identity` whose ``verify`` the API calls on every request.

The server's libraries (Flask, Authlib, PyJWT) are imported only when used, so that
``identity.roles``, ``identity.keys`` and the operator commands' parser load in an
SDK-only install (``pip install promptsvc``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

    from identity.clients import ConsoleUris
    from identity.core import Identity
    from identity.ratelimit import TokenRateLimits
    from storage.base import Storage

__all__ = ["ConsoleUris", "Identity", "TokenRateLimits", "init_app"]
# Exported names and the modules that hold them, imported on first use.
_LAZY = {
    "ConsoleUris": "identity.clients",
    "Identity": "identity.core",
    "TokenRateLimits": "identity.ratelimit",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

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
    rate_limits: TokenRateLimits | None = None,
    console: ConsoleUris | None = None,
    account_url: str | None = None,
) -> Identity:
    """Register the realm and sdk-token endpoints on ``app`` and apply the bootstrap file.

    ``rate_limits`` (default: from the environment, see :mod:`identity.ratelimit`) limit
    the token endpoints per client and per IP, counted in ``storage``. ``console`` says
    where the built-in client ``promptsvc-console`` may redirect people (none: it cannot
    sign anyone in); ``account_url`` is the realm document's ``account-service`` (default
    ``<issuer_url>/account``).

    Raises SigningKeyError for an unusable key file and BootstrapError for an unusable
    bootstrap file, and ValueError for an unusable rate limit, so a misconfigured server
    stops at start-up.
    """
    from identity import realm, sdk_token
    from identity.clients import ConsoleUris
    from identity.core import Identity
    from identity.ratelimit import TokenRateLimits, init_limiter

    limits = rate_limits if rate_limits is not None else TokenRateLimits.from_env()
    identity = Identity(
        storage,
        issuer_url=issuer_url,
        token_lifetime=token_lifetime,
        signing_key_file=signing_key_file,
        clock=clock,
    )
    if bootstrap_file:
        identity.apply_bootstrap(bootstrap_file)
    token_endpoints = {
        realm.realm_blueprint(
            identity,
            console=console or ConsoleUris(),
            account_url=account_url or f"{identity.issuer_url}/account",
        ): realm.too_many_requests,
        sdk_token.sdk_token_blueprint(identity): sdk_token.too_many_requests,
    }
    init_limiter(app, storage, limits, token_endpoints)
    for blueprint in token_endpoints:
        app.register_blueprint(blueprint)
    app.extensions["identity"] = identity
    return identity
