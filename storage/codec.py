"""Records <-> the flat field lists Redis hashes hold and Lua scripts return.

Null fields are simply absent from a hash. Timestamps are written as
:func:`storage.base.rfc3339` spells them and read with ``datetime.fromisoformat``, which
also reads an offset such as ``+00:00``, the form some values already in Redis carry;
lists and dicts are JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from storage.base import ApiKey, PromotionRecord, Prompt, PromptVersion, SigningKey, rfc3339

Fields = dict[str, str]


def fields(flat: Sequence[str]) -> Fields:
    """HGETALL's flat ``[field, value, ...]`` list as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _number(text: str | int) -> int | None:
    # Scripts answer "" for "no such version"; scores come back as strings.
    return int(text) if text != "" else None


def pairs(values: dict[str, str | None]) -> list[str]:
    """The non-null entries as a flat list, the way HSET takes them."""
    flat: list[str] = []
    for name, value in values.items():
        if value is not None:
            flat += [name, value]
    return flat


def prompt(summary: Sequence[object]) -> Prompt:
    """From a script's ``{prompt fields, latest, production}`` summary."""
    flat, latest, production = summary
    f = fields(flat)  # type: ignore[arg-type]
    return Prompt(
        prompt_id=f["prompt_id"],
        name=f["name"],
        prompt_type=f["prompt_type"],
        description=f.get("description"),
        created_at=_time(f["created_at"]),
        updated_at=_time(f["updated_at"]),
        latest_version=_number(latest),  # type: ignore[arg-type]
        production_version=_number(production),  # type: ignore[arg-type]
    )


def prompt_fields(p: Prompt) -> list[str]:
    return pairs(
        {
            "prompt_id": p.prompt_id,
            "name": p.name,
            "prompt_type": p.prompt_type,
            "description": p.description,
            "created_at": rfc3339(p.created_at),
            "updated_at": rfc3339(p.updated_at),
        }
    )


# The order of the values the scripts answer for a version (storage/lua/_common.lua).
PROMPT_OF_VERSION = ("prompt_id", "name", "prompt_type")
VERSION_FIELDS = (
    "version_id",
    "version",
    "content",
    "variables",
    "status",
    "metadata",
    "tags",
    "created_at",
    "updated_at",
    "promoted_at",
    "promoted_by",
    "created_by",
)


def named(names: Sequence[str], values: Sequence[str | None]) -> Fields:
    """HMGET's values under their field names; missing (null) fields are left out."""
    return {n: v for n, v in zip(names, values, strict=True) if v is not None}


def version_of(prompt_values: Sequence[str | None], values: Sequence[str | None]) -> PromptVersion:
    """From a script's version reply: the parent prompt's values and the version's."""
    return version(named(PROMPT_OF_VERSION, prompt_values), named(VERSION_FIELDS, values))


def version(p: Fields, v: Fields) -> PromptVersion:
    """From the parent prompt's fields and the version's fields."""
    promoted_at = v.get("promoted_at")
    return PromptVersion(
        prompt_id=p["prompt_id"],
        version_id=v["version_id"],
        name=p["name"],
        version=int(v["version"]),
        content=v["content"],
        variables=tuple(json.loads(v["variables"])),
        status=v["status"],
        prompt_type=p["prompt_type"],
        metadata=json.loads(v["metadata"]),
        tags=tuple(json.loads(v["tags"])),
        created_at=_time(v["created_at"]),
        updated_at=_time(v["updated_at"]),
        promoted_at=_time(promoted_at) if promoted_at else None,
        promoted_by=v.get("promoted_by"),
        created_by=v["created_by"],
    )


def record(h: Fields) -> PromotionRecord:
    previous = h.get("previous_version")
    return PromotionRecord(
        history_id=h["history_id"],
        prompt_id=h["prompt_id"],
        version_number=int(h["version_number"]),
        promoted_by=h["promoted_by"],
        promoted_at=_time(h["promoted_at"]),
        previous_version=int(previous) if previous else None,
        notes=h.get("notes"),
    )


def api_key_fields(key: ApiKey) -> list[str]:
    return pairs(
        {
            "org": key.org,
            "client_id": key.client_id,
            "secret_hash": key.secret_hash,
            "role": key.role,
            "user_id": key.user_id,
            "description": key.description,
            "created_at": rfc3339(key.created_at),
            "revoked": "1" if key.revoked else "0",
        }
    )


def api_key(f: Fields) -> ApiKey:
    return ApiKey(
        org=f["org"],
        client_id=f["client_id"],
        secret_hash=f["secret_hash"],
        role=f["role"],
        user_id=f["user_id"],
        description=f.get("description"),
        created_at=_time(f["created_at"]),
        revoked=f["revoked"] == "1",
    )


def signing_key_value(key: SigningKey) -> str:
    """The JSON kept under the key's kid, private key included (never shown to clients)."""
    return json.dumps(
        {"kid": key.kid, "private_pem": key.private_pem, "created_at": rfc3339(key.created_at)}
    )


def signing_key(text: str) -> SigningKey:
    data = json.loads(text)
    return SigningKey(data["kid"], data["private_pem"], _time(data["created_at"]))
