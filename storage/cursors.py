"""Opaque page cursors: a listing position (last name, number or sequence returned)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, TypeVar

from storage.errors import InvalidInput
from storage.ids import version_number
from storage.records import Page

T = TypeVar("T")


def encode_cursor(position: str) -> str:
    """Opaque cursor for a listing position."""
    return base64.urlsafe_b64encode(position.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """Inverse of encode_cursor; InvalidInput for text that is not such a cursor.

    A NUL is in no position the service hands out (nor could PostgreSQL compare with
    it). Backends still check that the decoded position has the form they expect.
    """
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        position = raw.decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("invalid cursor") from None
    if "\x00" in position:
        raise InvalidInput("invalid cursor")
    return position


def decode_number_cursor(cursor: str | None) -> int | None:
    """A cursor holding a version number or promotion sequence; None for no cursor.

    A number outside the 64-bit range was never handed out: InvalidInput.
    """
    if not cursor:
        return None
    number = version_number(decode_cursor(cursor))
    if number is None:
        raise InvalidInput("invalid cursor")
    return number


def page(found: Sequence[tuple[Any, T]], limit: int) -> Page[T]:
    """The first ``limit`` of ``found`` (position, item) pairs, read one more than
    ``limit`` to know whether more follow; if so, the cursor of the last one's position."""
    cursor = encode_cursor(str(found[limit - 1][0])) if len(found) > limit else None
    return Page([item for _, item in found[:limit]], cursor)
