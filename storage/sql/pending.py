"""The concerns of the SQL backend that are written on branch ``sqlid`` and not there
yet: rate limits.

Until they land, these methods raise NotImplementedError, and the conformance tests
of those concerns skip the SQL backends (tests/storage/conftest.py). This module goes
when they land.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

PENDING = ("rate_limit_settings",)


def _pending(name: str) -> Callable[..., NoReturn]:
    def method(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"SqlStorage.{name} comes from branch sqlid")

    method.__name__ = name
    return method


class SqlPending:
    pass


for _name in PENDING:
    setattr(SqlPending, _name, _pending(_name))
