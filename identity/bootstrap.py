"""The bootstrap file: orgs with their API keys and users, applied idempotently::

    [[org]]
    slug = "acme"
      [[org.key]]
      client_id = "acme-admin"
      client_secret = "at-least-16-characters"
      role = "Service Admin"
      [[org.user]]
      username = "ada"
      password = "at-least-12-characters"
      role = "Service Admin"

Each listed key and user is created when absent and left alone when present (its
secret or password, role and disabled flag stay as they are). The whole file is
validated before anything is written, so a typo cannot leave half of it applied. Safe
to run from many workers at once.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from identity import keys, users
from identity.errors import BootstrapError, InvalidKeyRequest, InvalidUserRequest
from storage import ApiKey, ApiKeyExists, Storage, User, UserExists

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Bootstrapped:
    """What applying a bootstrap file created (present entries are not listed)."""

    keys: list[ApiKey] = field(default_factory=list)
    users: list[User] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Entries:
    keys: list[tuple[str, dict[str, Any]]]
    users: list[tuple[str, dict[str, Any]]]


def apply_bootstrap(storage: Storage, path: str | Path) -> Bootstrapped:
    """Apply a bootstrap file: create each listed key and user that is absent."""
    entries = _read(Path(path))
    created = Bootstrapped()
    for org, fields in entries.keys:
        if storage.get_api_key(org, fields["client_id"]) is not None:
            continue
        try:
            key, _ = keys.create_key(storage, org, **fields)
        except ApiKeyExists:  # another worker applied the same file just now
            continue
        log.info("bootstrap: created key %s in org %s", key.client_id, org)
        created.keys.append(key)
    for org, fields in entries.users:
        if storage.get_user(org, fields["username"]) is not None:
            continue
        try:
            user, _ = users.create_user(storage, org, **fields)
        except UserExists:
            continue
        log.info("bootstrap: created user %s in org %s", user.username, org)
        created.users.append(user)
    return created


_ORG_FIELDS = {"slug", "key", "user"}
_KEY_FIELDS = {"client_id", "client_secret", "role", "description"}
_USER_FIELDS = {"username", "password", "role"}


def _read(path: Path) -> _Entries:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BootstrapError(f"cannot read bootstrap file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BootstrapError(f"bootstrap file {path} is not valid TOML: {exc}") from None
    unknown = set(data) - {"org"}
    if unknown:
        raise BootstrapError(f"{path}: unknown top-level entries {sorted(unknown)}; use [[org]]")
    orgs = data.get("org", [])
    if not isinstance(orgs, list):
        raise BootstrapError(f"{path}: 'org' must be an array of tables ([[org]])")
    entries = _Entries([], [])
    seen: set[tuple[str, str, str]] = set()
    for i, org_table in enumerate(orgs, 1):
        where = f"{path}: [[org]] #{i}"
        if not isinstance(org_table, dict) or set(org_table) - _ORG_FIELDS:
            raise BootstrapError(
                f"{where}: only 'slug', [[org.key]] and [[org.user]] entries are allowed"
            )
        slug = org_table.get("slug")
        if not isinstance(slug, str) or not keys.valid_org(slug):
            raise BootstrapError(f"{where}: invalid or missing slug {slug!r}")
        key_tables, user_tables = org_table.get("key", []), org_table.get("user", [])
        if not isinstance(key_tables, list) or not isinstance(user_tables, list):
            raise BootstrapError(f"{where} ({slug}): use [[org.key]] and [[org.user]] tables")
        if not key_tables and not user_tables:
            raise BootstrapError(
                f"{where} ({slug}): no [[org.key]] or [[org.user]] entries; "
                "an org exists once it has a key or a user"
            )
        for kind, tables, check in (
            ("key", key_tables, _key_fields),
            ("user", user_tables, _user_fields),
        ):
            for j, table in enumerate(tables, 1):
                fields = check(f"{where} ({slug}), [[org.{kind}]] #{j}", slug, table)
                name = str(fields["client_id" if kind == "key" else "username"])
                if (slug, kind, name) in seen:
                    raise BootstrapError(f"{where} ({slug}): {kind} {name!r} appears twice")
                seen.add((slug, kind, name))
                (entries.keys if kind == "key" else entries.users).append((slug, fields))
    return entries


def _table(where: str, table: object, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise BootstrapError(f"{where}: must be a table")
    unknown = set(table) - allowed
    if unknown:
        raise BootstrapError(f"{where}: unknown fields {sorted(unknown)}")
    missing = required - set(table)
    if missing:
        raise BootstrapError(f"{where}: missing {sorted(missing)}")
    return table


def _key_fields(where: str, org: str, table: object) -> dict[str, Any]:
    found = _table(where, table, _KEY_FIELDS, {"client_id", "client_secret", "role"})
    fields = {
        "role": found["role"],
        "description": found.get("description"),
        "client_id": found["client_id"],
        "client_secret": found["client_secret"],
    }
    try:
        keys.check_key_fields(**fields)
    except InvalidKeyRequest as exc:
        raise BootstrapError(f"{where}: {exc}") from None
    return fields


def _user_fields(where: str, org: str, table: object) -> dict[str, Any]:
    found = _table(where, table, _USER_FIELDS, _USER_FIELDS)
    fields = {"username": found["username"], "role": found["role"], "password": found["password"]}
    try:
        users.check_user_fields(org, **fields)
    except InvalidUserRequest as exc:
        raise BootstrapError(f"{where}: {exc}") from None
    return fields
