"""Ids and references: how records are named and how a ref is read."""

from __future__ import annotations

import re
import uuid

from storage.errors import InvalidInput


def new_id(prefix: str) -> str:
    """An opaque unique id: ``pmt_`` (prompt), ``v_`` (version) or ``h_`` (history)."""
    return prefix + uuid.uuid4().hex


# Numbers (versions, promotion sequences) are 64-bit signed integers on every backend.
MAX_NUMBER = 2**63 - 1
_MAX_DIGITS = len(str(MAX_NUMBER))


def version_number(version_ref: str) -> int | None:
    """The number a version ref names, or None when it is not one.

    Only ASCII digits count: ``str.isdigit`` alone also accepts superscripts and the
    digits of other scripts. A number above :data:`MAX_NUMBER` names nothing stored
    (and more than 4,300 digits are more than ``int()`` converts).
    """
    if version_ref.isascii() and version_ref.isdigit() and len(version_ref) <= _MAX_DIGITS:
        number = int(version_ref)
        return number if number <= MAX_NUMBER else None
    return None


# An event id: "<milliseconds>-<sequence>", the form of a Redis stream id, on every backend.
_EVENT_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_ID_PART_LIMIT = 2**64


def event_position(event_id: str) -> tuple[int, int]:
    """Where ``event_id`` sits in its org's log: ids of one org compare as these do.

    InvalidInput for text that is not an event id.
    """
    match = _EVENT_ID.fullmatch(event_id)
    if match is None:
        raise InvalidInput(f"{event_id[:40]!r} is not an event id")
    position = (int(match[1]), int(match[2]))
    if max(position) >= _ID_PART_LIMIT:
        raise InvalidInput(f"{event_id[:40]!r} is not an event id")
    return position


def event_id(ms: int, seq: int) -> str:
    """The id of the event at the log position ``(ms, seq)`` (inverse of event_position)."""
    return f"{ms}-{seq}"


def message_id(webhook_id: str, event_id: str) -> str:
    """The ``webhook-id`` of an event's message to a webhook: the same on every attempt."""
    return f"msg_{webhook_id.removeprefix('wh_')}_{event_id}"
