"""``Identity``: the one object the rest of promptsvc talks to about keys and tokens."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from identity import bootstrap, keys, scopes, tokens, users
from identity.errors import InvalidClient
from identity.principal import Principal
from identity.signing import KeyRing
from identity.tokens import Subject
from storage import ApiKey, ApiKeyNotFound, SigningKey, Storage, User

# Orgs never disappear (an org exists once it has a key or a user, revoked and disabled
# ones included), so a "yes"
# can be remembered; it is still re-asked now and then in case storage was emptied.
ORG_CACHE_SECONDS = 60.0
_ORG_CACHE_SIZE = 10_000


class Identity:
    """The bundled issuer: API keys, users, token minting and token verification.

    Everything goes through ``storage``, so any number of processes on the same storage
    agree on keys, signing keys and orgs. ``clock`` (epoch seconds) drives token times.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        issuer_url: str,
        token_lifetime: int = 300,
        signing_key_file: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 1 <= token_lifetime <= 86400:
            raise ValueError("token_lifetime must be between 1 and 86400 seconds")
        self.storage = storage
        self.issuer_url = issuer_url.rstrip("/")
        self.token_lifetime = token_lifetime
        self.clock = clock
        self.keyring = KeyRing(storage, signing_key_file=signing_key_file, clock=clock)
        self._orgs: dict[str, float] = {}
        self._orgs_lock = threading.Lock()
        self._verifier = tokens.Verifier(
            self.keyring, issuer_url=self.issuer_url, org_exists=self.org_exists, clock=clock
        )

    # -- tokens

    def verify(self, authorization_header: str | None) -> Principal:
        """The principal of an ``Authorization`` header value; raises InvalidToken
        (and nothing else) for a missing, malformed or unacceptable token."""
        return self._verifier.verify(authorization_header)

    def verify_token(self, token: str) -> Principal:
        """The principal of an access token; raises InvalidToken like :meth:`verify`."""
        return self._verifier.verify_token(token)

    def issue_token(
        self, org: str, client_id: str, client_secret: str, scope: str | None = None
    ) -> dict[str, Any]:
        """A token response for valid, unrevoked credentials of ``org``; else InvalidClient.

        ``scope`` narrows the key's scopes (see :mod:`identity.scopes`); InvalidScope
        when it asks for more than the key's role holds.
        """
        key = keys.authenticate(self.storage, org, client_id, client_secret)
        if key is None:
            raise InvalidClient("invalid client or client credentials")
        return self.mint(Subject.of_key(key), scopes.grant(key.role, scope))

    def mint(self, subject: Subject, scope: str) -> dict[str, Any]:
        """A token response for an already authenticated subject and granted scope."""
        return tokens.mint(
            subject,
            scope,
            self.keyring,
            issuer_url=self.issuer_url,
            lifetime=self.token_lifetime,
            now=self.clock(),
        )

    def issuer(self, org: str) -> str:
        """The ``iss`` of an org's tokens: ``<issuer_url>/realms/<org>``."""
        return tokens.issuer_for(self.issuer_url, org)

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """The JSON Web Key Set of every key that verifies (public parts only)."""
        return self.keyring.snapshot().jwks()

    def rotate_signing_key(self) -> SigningKey:
        """Add a new signing key; it signs from now on, older ones still verify."""
        return self.keyring.rotate()

    # -- orgs and keys

    def org_exists(self, org: str) -> bool:
        """True when ``org`` is a well-formed slug with a key or a user (cached)."""
        if not keys.valid_org(org):
            return False
        now = self.clock()
        until = self._orgs.get(org)
        if until is not None and until > now:
            return True
        exists = self.storage.org_exists(org)
        with self._orgs_lock:
            if exists:
                if len(self._orgs) >= _ORG_CACHE_SIZE:
                    self._orgs.clear()
                self._orgs[org] = now + ORG_CACHE_SECONDS
            else:
                self._orgs.pop(org, None)
        return exists

    def create_key(
        self,
        org: str,
        role: str,
        description: str | None = None,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        owner: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Create an API key owned by the user id ``owner`` (None: nobody's); returns
        it with the plain secret (shown once).

        Raises InvalidKeyRequest for a bad org slug, role, client_id or a secret shorter
        than 16 characters, and storage's ApiKeyExists for a taken client_id.
        """
        return keys.create_key(
            self.storage,
            org,
            role,
            description,
            client_id=client_id,
            client_secret=client_secret,
            owner=owner,
        )

    def list_keys(self, org: str) -> list[ApiKey]:
        """Every key of the org, oldest first (records hold only secret hashes)."""
        return self.storage.list_api_keys(org) if keys.valid_org(org) else []

    def new_key_secret(self, org: str, client_id: str) -> tuple[ApiKey, str]:
        """Give a key a new secret, returned once; the old secret stops working. Raises
        storage's ApiKeyNotFound when the org has no such key."""
        if not keys.valid_org(org):
            raise ApiKeyNotFound(client_id)
        return keys.new_secret(self.storage, org, client_id)

    def revoke_key(self, org: str, client_id: str) -> ApiKey:
        """Revoke a key: new token requests fail at once, issued tokens live until exp.
        Raises storage's ApiKeyNotFound when the org has no such key."""
        if not keys.valid_org(org):
            raise ApiKeyNotFound(client_id)
        return self.storage.revoke_api_key(org, client_id)

    def create_user(
        self, org: str, username: str, role: str, password: str | None = None
    ) -> tuple[User, str | None]:
        """Create a user; returns it with its generated password (shown once), or None
        when ``password`` was given. Raises InvalidUserRequest for a bad org slug,
        username, role or password, and storage's UserExists for a taken username."""
        return users.create_user(self.storage, org, username, role, password)

    def list_users(self, org: str) -> list[User]:
        """Every user of the org, oldest first (records hold only password hashes)."""
        return users.list_users(self.storage, org)

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password: str | None = None,
    ) -> User:
        """Change a user's role, disabled flag or password; what is None stays.
        Raises InvalidUserRequest or storage's UserNotFound."""
        return users.update_user(
            self.storage, org, username, role=role, disabled=disabled, password=password
        )

    def apply_bootstrap(self, path: str | Path) -> bootstrap.Bootstrapped:
        """Apply a bootstrap file idempotently; returns the keys and users it created."""
        return bootstrap.apply_bootstrap(self.storage, path)
