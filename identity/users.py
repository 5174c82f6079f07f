"""Users (people of one org): create, list, update, authenticate.

A user is a username (unique per org, never renamed), a role that an admin may change
(unlike a key's), a disabled flag and a password kept only as an argon2id hash
(:mod:`identity.passwords`). The user id (a uuid) is what tokens carry as ``sub`` and
what ``created_by`` / ``promoted_by`` record.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from identity import passwords
from identity.errors import InvalidUserRequest
from identity.keys import valid_org
from identity.roles import ROLES
from storage import Storage, User, UserNotFound

log = logging.getLogger(__name__)

# Lowercase so that "Ada" and "ada" cannot be two people; '@' and '.' allow e-mail
# addresses; nothing that needs escaping in a URL path (PATCH /api/v1/users/<username>).
USERNAME = re.compile(r"[a-z0-9][a-z0-9._@-]{0,63}")


def valid_username(username: object) -> bool:
    return isinstance(username, str) and USERNAME.fullmatch(username) is not None


def check_user_fields(org: object, username: object, role: object, password: object = None) -> None:
    """Raise InvalidUserRequest naming the first input that cannot make a user."""
    if not valid_org(org):
        raise InvalidUserRequest(
            f"invalid org slug {org!r}: use 1-63 lowercase letters, digits or '-', "
            "starting with a letter or digit"
        )
    if not valid_username(username):
        raise InvalidUserRequest(
            f"invalid username {username!r}: use 1-64 lowercase letters, digits, '.', '_', "
            "'@' or '-', starting with a letter or digit"
        )
    _check_role(role)
    if password is not None:
        _check_password(password)


def create_user(
    storage: Storage, org: str, username: str, role: str, password: str | None = None
) -> tuple[User, str | None]:
    """Create a user; returns it with the password generated for it (None when
    ``password`` was given). Raises InvalidUserRequest for a bad input and storage's
    UserExists for a taken username."""
    check_user_fields(org, username, role, password)
    generated = passwords.generate_password() if password is None else None
    now = storage.clock()
    user = User(
        org=org,
        user_id=str(uuid.uuid4()),
        username=username,
        role=role,
        disabled=False,
        created_at=now,
        updated_at=now,
        password_hash=passwords.hash_password(password or generated or ""),
    )
    storage.add_user(user)
    return user, generated


def created_json(user: User, generated: str | None) -> dict[str, Any]:
    """The answer to creating ``user``: its JSON, plus the generated password when there
    is one (the only time it is shown)."""
    return user.to_json() if generated is None else {**user.to_json(), "password": generated}


def list_users(storage: Storage, org: str) -> list[User]:
    """Every user of the org, oldest first (records hold only password hashes)."""
    return storage.list_users(org) if valid_org(org) else []


def update_user(
    storage: Storage,
    org: str,
    username: str,
    *,
    role: str | None = None,
    disabled: bool | None = None,
    password: str | None = None,
) -> User:
    """Change a user's role, disabled flag or password (None leaves it). Raises
    InvalidUserRequest for a bad role or password, storage's UserNotFound otherwise."""
    if not valid_org(org) or not valid_username(username):
        raise UserNotFound(username)
    if role is not None:
        _check_role(role)
    if disabled is not None and not isinstance(disabled, bool):
        raise InvalidUserRequest("disabled must be true or false")
    password_hash = None
    if password is not None:
        _check_password(password)
        password_hash = passwords.hash_password(password)
    return storage.update_user(
        org, username, role=role, disabled=disabled, password_hash=password_hash
    )


def authenticate(storage: Storage, org: str, username: str, password: str) -> User | None:
    """The enabled user these credentials name, or None. An unknown username, a disabled
    user and a wrong password take the same time and give the same None, so a caller
    cannot tell them apart. A hash made with older parameters is replaced on success."""
    user = storage.get_user(org, username) if valid_org(org) and valid_username(username) else None
    if passwords.password_problem(password) is not None:
        passwords.verify_nothing("")  # keep the timing of a real check
        return None
    if user is None:
        passwords.verify_nothing(password)
        return None
    if not passwords.verify_password(user.password_hash, password) or user.disabled:
        return None
    if passwords.needs_rehash(user.password_hash):
        user = storage.update_user(org, username, password_hash=passwords.hash_password(password))
        log.info("rehashed the password of user %s in org %s", user.user_id, org)
    return user


def _check_role(role: object) -> None:
    if role not in ROLES:
        raise InvalidUserRequest(f"invalid role {role!r}: use one of {', '.join(ROLES)}")


def _check_password(password: object) -> None:
    problem = passwords.password_problem(password)
    if problem is not None:
        raise InvalidUserRequest(problem)
