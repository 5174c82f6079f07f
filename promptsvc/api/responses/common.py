"""What every response schema shares."""

from __future__ import annotations

from marshmallow import fields


def timestamp(description: str, *, nullable: bool = False) -> fields.DateTime:
    return fields.DateTime(
        allow_none=nullable,
        metadata={"description": description + " (RFC 3339, UTC, ending in Z)"},
    )
