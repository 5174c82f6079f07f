"""The bundled OIDC issuer: per-org realms, API keys, SDK token exchange, verification.

``init_app`` wires it into a Flask app; ``app.extensions["identity"]`` is then the
:class:`Identity` whose ``verify`` the API calls on every request.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from flask import Flask

from identity.core import Identity
from identity.realm import realm_blueprint
from identity.sdk_token import sdk_token_blueprint
from storage.base import Storage

__all__ = ["Identity", "init_app"]


def init_app(
    app: Flask,
    storage: Storage,
    *,
    issuer_url: str,
    token_lifetime: int = 300,
    signing_key_file: str | None = None,
    bootstrap_file: str | None = None,
    clock: Callable[[], float] = time.time,
) -> Identity:
    """Register the realm and sdk-token endpoints on ``app`` and apply the bootstrap file.

    Raises SigningKeyError for an unusable key file and BootstrapError for an unusable
    bootstrap file, so a misconfigured server stops at start-up.
    """
    identity = Identity(
        storage,
        issuer_url=issuer_url,
        token_lifetime=token_lifetime,
        signing_key_file=signing_key_file,
        clock=clock,
    )
    if bootstrap_file:
        identity.apply_bootstrap(bootstrap_file)
    app.register_blueprint(realm_blueprint(identity))
    app.register_blueprint(sdk_token_blueprint(identity))
    app.extensions["identity"] = identity
    return identity
