"""What every response schema shares."""

from __future__ import annotations

from marshmallow import fields


def timestamp(description: str, *, nullable: bool = False) -> fields.DateTime:
    return fields.DateTime(
        allow_none=nullable,
        metadata={"description": description + " (RFC 3339, UTC, ending in Z)"},
    )


def person_name(who: str, *, nullable: bool = False) -> fields.String:
    """The ``<field>_name`` beside a user id field (promptsvc.names)."""
    return fields.String(
        allow_none=nullable,
        metadata={
            "description": f"{who}, as the console names them: a username, "
            "'key <client_id>' for an API key, or 'user <first 8 characters of the id>' "
            "for an id that names no one any more" + (" (null: nobody)" if nullable else "")
        },
    )
