"""The identity records storage keeps: API keys, signing keys and users (each shown to
clients by its ``to_json()``, as storage/records.py describes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.times import rfc3339


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key (OAuth client) of one org. The secret is only ever stored hashed."""

    org: str
    client_id: str
    secret_hash: str
    role: str
    user_id: str  # the key's service-account user (token ``sub``)
    description: str | None
    created_at: datetime
    revoked: bool = False
    # The person whose work the key's changes count as (a user id): the admin who made
    # it, or one named at creation; None for a key from the bootstrap file.
    owner: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Without the secret's hash, and without the org: every caller already names it."""
        return {
            "client_id": self.client_id,
            "role": self.role,
            "description": self.description,
            "user_id": self.user_id,
            "owner": self.owner,
            "created_at": rfc3339(self.created_at),
            "revoked": self.revoked,
        }


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A token signing key, shared by every worker and host on the same storage."""

    kid: str
    private_pem: str
    created_at: datetime

    def to_json(self, *, signing: bool) -> dict[str, Any]:
        """Never the private key. ``signing``: whether this key signs new tokens."""
        return {"kid": self.kid, "created_at": rfc3339(self.created_at), "signing": signing}


@dataclass(frozen=True, slots=True)
class User:
    """A person of one org. The password is only ever stored hashed (identity hashes)."""

    org: str
    user_id: str  # uuid; the token ``sub`` and what created_by/promoted_by record
    username: str  # unique per org, never changes
    role: str
    disabled: bool
    created_at: datetime
    updated_at: datetime
    password_hash: str

    def to_json(self) -> dict[str, Any]:
        """Without the password hash, and without the org: every caller already names it."""
        return {
            "user_id": self.user_id,
            "username": self.username,
            "role": self.role,
            "disabled": self.disabled,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }
