"""The limits input is held to, shared by every kind of request."""

from __future__ import annotations

MAX_CONTENT_BYTES = 256 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_TAGS = 32
MAX_NOTES = 2000
MAX_DESCRIPTION = 2000
MAX_LIMIT = 200
DEFAULT_LIMIT = 50
MAX_WAIT = 30
EVENT_ID_PATTERN = r"^[0-9]{1,20}-[0-9]{1,20}$"  # as documented (ECMA syntax)
EVENT_ID_EXAMPLE = "1767323045678-0"
