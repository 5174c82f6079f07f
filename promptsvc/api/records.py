"""Storage records -> JSON-ready dicts, written by hand.

These run on every response, the read path included, so they avoid marshmallow's
dumping cost. promptsvc.api.schemas documents the same shapes for OpenAPI, and the
tests check that both list the same fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from promptsvc.http import etag_of, json_body
from storage.base import ApiKey, PromotionRecord, Prompt, PromptVersion
from storage.memo import Memo

# id(version) -> (version, body, ETag). The version is kept with its body so that its id
# cannot be reused by another object while the entry lives.
_BODIES: Memo[int, tuple[PromptVersion, bytes, str]] = Memo()


def timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, microseconds kept: ``2025-01-02T03:04:05.123456Z``."""
    if value.tzinfo is not None and value.utcoffset():
        value = value.astimezone(UTC)
    # isoformat is several times cheaper than strftime; [:26] drops any "+00:00".
    return value.isoformat(timespec="microseconds")[:26] + "Z"


def version_json(v: PromptVersion) -> dict[str, Any]:
    """A PromptVersion as SPEC 2 lists it; ``created_by`` is never shown."""
    return {
        "prompt_id": v.prompt_id,
        "version_id": v.version_id,
        "name": v.name,
        "version": v.version,
        "content": v.content,
        "variables": list(v.variables),
        "status": v.status,
        "is_production": v.status == "published",
        "prompt_type": v.prompt_type,
        "metadata": v.metadata,
        "tags": list(v.tags),
        "created_at": timestamp(v.created_at),
        "updated_at": timestamp(v.updated_at),
        "promoted_at": timestamp(v.promoted_at) if v.promoted_at is not None else None,
        "promoted_by": v.promoted_by,
    }


def prompt_json(p: Prompt) -> dict[str, Any]:
    return {
        "prompt_id": p.prompt_id,
        "name": p.name,
        "prompt_type": p.prompt_type,
        "description": p.description,
        "created_at": timestamp(p.created_at),
        "updated_at": timestamp(p.updated_at),
        "latest_version": p.latest_version,
        "production_version": p.production_version,
    }


def promotion_json(r: PromotionRecord) -> dict[str, Any]:
    return {
        "history_id": r.history_id,
        "prompt_id": r.prompt_id,
        "version_number": r.version_number,
        "promoted_by": r.promoted_by,
        "promoted_at": timestamp(r.promoted_at),
        "previous_version": r.previous_version,
        "notes": r.notes,
    }


def key_json(k: ApiKey) -> dict[str, Any]:
    """An API key without its secret (the hash never leaves storage either)."""
    return {
        "client_id": k.client_id,
        "role": k.role,
        "description": k.description,
        "user_id": k.user_id,
        "created_at": timestamp(k.created_at),
        "revoked": k.revoked,
    }


def version_body(v: PromptVersion) -> tuple[bytes, str]:
    """The read API's JSON body for ``v`` and its strong ETag (unquoted).

    Memoized per version object (storage/memo.py): storage hands out the same object
    for the same stored version (memory keeps its records; Redis memoizes decoding on
    every stored field), and a record never changes, so a hit is always the right body.
    """
    hit = _BODIES.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1], hit[2]
    body = json_body(version_json(v))
    etag = etag_of(body)
    _BODIES.put(id(v), (v, body, etag), len(body))
    return body, etag
