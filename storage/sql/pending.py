"""The concerns of the SQL backend that are written on branch ``sqlid``: identity and
login state, signing keys and the session secret, the org archive, rate limits.

Until they land, these methods raise NotImplementedError, and the conformance tests
of those concerns skip the SQL backends (tests/storage/conftest.py). This module goes
when they land.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

PENDING = (
    "add_api_key",
    "add_authorization_code",
    "add_device_authorization",
    "add_session",
    "add_signing_key",
    "add_user",
    "consume_device_authorization",
    "decide_device_authorization",
    "end_session",
    "ensure_session_secret",
    "ensure_signing_key",
    "export_org",
    "get_api_key",
    "get_device_authorization",
    "get_device_authorization_by_user_code",
    "get_refresh_token",
    "get_session",
    "get_user",
    "get_user_by_id",
    "import_org",
    "list_api_keys",
    "list_orgs",
    "list_users",
    "org_exists",
    "poll_device_authorization",
    "rate_limit_settings",
    "remove_signing_key",
    "revoke_api_key",
    "revoke_refresh_family",
    "rotate_refresh_token",
    "set_api_key_secret",
    "signing_keys",
    "start_refresh_family",
    "take_authorization_code",
    "update_user",
)


def _pending(name: str) -> Callable[..., NoReturn]:
    def method(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"SqlStorage.{name} comes from branch sqlid")

    method.__name__ = name
    return method


class SqlPending:
    pass


for _name in PENDING:
    setattr(SqlPending, _name, _pending(_name))
