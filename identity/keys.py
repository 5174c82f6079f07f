"""API keys (OAuth clients of one org): create, list, revoke, authenticate.

A key is a client_id, a secret shown once (stored only as a salted hash, see
:mod:`identity.secrets`), a fixed role, a service-account user id (a uuid, the
token's ``sub``) and an owner: the person (user id) whose work its changes count as,
None for a key nobody owns (a bootstrap file's). An org (= realm) exists once it has a
key or a user.
"""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Any

from identity import secrets as client_secrets
from identity.errors import InvalidKeyRequest
from identity.roles import ROLES
from storage import ApiKey, Storage

ORG_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
# No ':' (it separates id and secret in HTTP Basic) and nothing that needs escaping in
# a URL path (DELETE /api/v1/keys/<client_id>).
CLIENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# The realm's built-in public clients (identity.clients) own these ids: no key takes one.
CONSOLE_CLIENT_ID = "promptsvc-console"
CLI_CLIENT_ID = "promptsvc-cli"
RESERVED_CLIENT_IDS = (CONSOLE_CLIENT_ID, CLI_CLIENT_ID)
# Clients registered through RFC 7591 (identity.registration): '~' is in no key's id.
REGISTERED_PREFIX = "mcp~"
MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 512
MAX_DESCRIPTION_LENGTH = 500


def valid_org(org: object) -> bool:
    """True when ``org`` is a well-formed org slug (README, "Configuration")."""
    return isinstance(org, str) and ORG_SLUG.fullmatch(org) is not None


def create_key(
    storage: Storage,
    org: str,
    role: str,
    description: str | None = None,
    *,
    client_id: str | None = None,
    client_secret: str | None = None,
    owner: str | None = None,
) -> tuple[ApiKey, str]:
    """Create a key owned by the user id ``owner``; return it with its plain secret
    (the only time the secret exists).

    Without ``client_id`` one is generated; without ``client_secret`` a 256-bit one is.
    Raises InvalidKeyRequest for a bad input, storage's ApiKeyExists for a taken id.
    """
    if not valid_org(org):
        raise InvalidKeyRequest(
            f"invalid org slug {org!r}: use 1-63 lowercase letters, digits or '-', "
            "starting with a letter or digit"
        )
    check_key_fields(role, description, client_id, client_secret)
    generated = client_secret is None
    secret = client_secrets.generate_secret() if client_secret is None else client_secret
    key = ApiKey(
        org=org,
        client_id=client_id or f"key-{secrets.token_hex(8)}",
        secret_hash=client_secrets.hash_secret(secret, generated=generated),
        role=role,
        user_id=str(uuid.uuid4()),
        description=description,
        created_at=storage.clock(),
        owner=owner,
    )
    storage.add_api_key(key)
    return key, secret


def new_secret(storage: Storage, org: str, client_id: str) -> tuple[ApiKey, str]:
    """Give a key a new generated secret (the old one stops working); return the key
    with the secret, the only time it exists. Raises storage's ApiKeyNotFound."""
    secret = client_secrets.generate_secret()
    key = storage.set_api_key_secret(
        org, client_id, client_secrets.hash_secret(secret, generated=True)
    )
    return key, secret


def created_json(key: ApiKey, secret: str) -> dict[str, Any]:
    """The answer to creating ``key``: its JSON and its secret, the only time it is shown."""
    return {**key.to_json(), "client_secret": secret}


def authenticate(storage: Storage, org: str, client_id: str, client_secret: str) -> ApiKey | None:
    """The active key these credentials name, or None (unknown realm or key, revoked
    key, wrong secret: the caller must not tell them apart)."""
    key = active_key(storage, org, client_id)
    if key is None or not check_secret(key, client_secret):
        return None
    return key


def active_key(storage: Storage, org: str, client_id: str) -> ApiKey | None:
    """The org's key ``client_id`` unless it is absent or revoked."""
    if not valid_org(org) or not isinstance(client_id, str) or not CLIENT_ID.fullmatch(client_id):
        return None  # cannot name a key, so no storage round trip
    key = storage.get_api_key(org, client_id)
    return None if key is None or key.revoked else key


def check_secret(key: ApiKey, client_secret: str) -> bool:
    """Constant-time check of a presented secret against the key's stored hash."""
    if not client_secret or len(client_secret) > MAX_SECRET_LENGTH:
        return False
    return client_secrets.check_secret(client_secret, key.secret_hash)


def check_key_fields(
    role: object, description: object, client_id: object, client_secret: object
) -> None:
    """Raise InvalidKeyRequest naming the first input that cannot make a key."""
    if role not in ROLES:
        raise InvalidKeyRequest(f"invalid role {role!r}: use one of {', '.join(ROLES)}")
    if description is not None and (
        not isinstance(description, str) or len(description) > MAX_DESCRIPTION_LENGTH
    ):
        raise InvalidKeyRequest(
            f"description must be text of at most {MAX_DESCRIPTION_LENGTH} characters"
        )
    if client_id is not None and (
        not isinstance(client_id, str) or CLIENT_ID.fullmatch(client_id) is None
    ):
        raise InvalidKeyRequest(
            f"invalid client_id {client_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if client_id in RESERVED_CLIENT_IDS:
        raise InvalidKeyRequest(f"client_id {client_id!r} is a built-in client of every realm")
    if client_secret is not None and (
        not isinstance(client_secret, str)
        or not MIN_SECRET_LENGTH <= len(client_secret) <= MAX_SECRET_LENGTH
    ):
        raise InvalidKeyRequest(
            f"client_secret must be {MIN_SECRET_LENGTH}-{MAX_SECRET_LENGTH} characters long"
        )
