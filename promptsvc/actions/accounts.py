"""API keys and users, an org's Service Admins' to manage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from identity.errors import InvalidKeyRequest
from identity.people import acting_person
from identity.principal import Principal
from identity.roles import SERVICE_ADMIN
from storage import (
    ApiKey,
    User,
)

if TYPE_CHECKING:
    from identity.core import Identity

from promptsvc.actions.roles import requires


@requires(SERVICE_ADMIN)
def create_key(
    identity: Identity,
    principal: Principal,
    role: str,
    description: str | None = None,
    *,
    owner: str | None = None,
) -> tuple[ApiKey, str]:
    """A new API key of the principal's org, with its secret (shown once), owned by the
    user named ``owner`` or else by the person the principal counts as."""
    if owner is None:
        owner_id = acting_person(identity.storage, principal)
    else:
        user = identity.storage.get_user(principal.org, owner)
        if user is None:
            raise InvalidKeyRequest(f"owner: there is no user {owner!r} in this org")
        owner_id = user.user_id
    return identity.create_key(principal.org, role, description, owner=owner_id)


@requires(SERVICE_ADMIN)
def revoke_key(identity: Identity, principal: Principal, client_id: str) -> ApiKey:
    """New token requests with the key fail at once."""
    return identity.revoke_key(principal.org, client_id)


@requires(SERVICE_ADMIN)
def list_keys(identity: Identity, principal: Principal) -> list[ApiKey]:
    """Every key of the principal's org, oldest first."""
    return identity.list_keys(principal.org)


@requires(SERVICE_ADMIN)
def create_user(
    identity: Identity,
    principal: Principal,
    username: str,
    role: str,
    password: str | None = None,
) -> tuple[User, str | None]:
    """A new user of the principal's org, with its generated password when none was
    given (shown once)."""
    return identity.create_user(principal.org, username, role, password)


@requires(SERVICE_ADMIN)
def update_user(
    identity: Identity,
    principal: Principal,
    username: str,
    *,
    role: str | None = None,
    disabled: bool | None = None,
    password: str | None = None,
) -> User:
    """Change a user's role, disabled flag or password; what is None stays."""
    return identity.update_user(
        principal.org, username, role=role, disabled=disabled, password=password
    )


@requires(SERVICE_ADMIN)
def list_users(identity: Identity, principal: Principal) -> list[User]:
    """Every user of the principal's org, oldest first."""
    return identity.list_users(principal.org)
