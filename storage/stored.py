"""Records from the values the durable backends keep (lists and dicts as JSON text,
times as datetimes or ISO text): decoded here once for SQL and Redis."""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import MISSING
from datetime import UTC, datetime
from typing import Any, TypeVar

from storage.records import PromptVersion, Review

T = TypeVar("T")

# The order of the values: the prompt's name and type, then the version's own.
STORED = (
    "name", "prompt_type", "prompt_id", "version", "version_id", "content", "variables",
    "status", "metadata", "tags", "created_at", "updated_at", "promoted_at", "promoted_by",
    "created_by", "placements", "variables_schema", "examples", "frozen", "authors", "config",
)  # fmt: skip


def utc(value: str | datetime) -> datetime:
    """A stored time (ISO text, or a datetime from the database) as an aware UTC
    datetime."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def stored_version(values: Sequence[Any]) -> PromptVersion:
    """``values`` in STORED's order; None (or "") where nothing is kept."""
    (name, prompt_type, prompt_id, number, version_id, content, variables, status) = values[:8]
    (metadata, tags, created_at, updated_at, promoted_at, promoted_by, created_by) = values[8:15]
    placements, schema, examples, frozen, authors, config = values[15:21]
    return PromptVersion(
        prompt_id=prompt_id,
        version_id=version_id,
        name=name,
        version=int(number),
        content=content,
        variables=tuple(json.loads(variables)),
        status=status,
        prompt_type=prompt_type,
        metadata=json.loads(metadata),
        tags=tuple(json.loads(tags)),
        created_at=utc(created_at),
        updated_at=utc(updated_at),
        promoted_at=utc(promoted_at) if promoted_at else None,
        promoted_by=promoted_by,
        created_by=created_by,
        placements=tuple(json.loads(placements)) if placements else (),
        variables_schema=json.loads(schema) if schema else None,
        examples=tuple(json.loads(examples)) if examples else (),
        frozen=bool(frozen),
        authors=tuple(json.loads(authors)) if authors else (created_by,),
        config=json.loads(config) if config else None,
    )


def _bool(value: Any) -> bool:
    return value == 1 or value == "1"  # True == 1


def _items(value: Any) -> list[Any]:
    # JSON text in a hash, a list in a JSON record; Lua's cjson writes [] as {}.
    return (json.loads(value) if isinstance(value, str) else value) or []


def _decoder(kind: Any) -> Any:
    """How one stored value (text in a hash, or a JSON value) decodes to ``kind``."""
    if kind in (str, int):
        return kind
    if kind is bool:
        return _bool
    if kind is datetime:
        return utc
    if typing.get_origin(kind) is tuple:
        item = _decoder(typing.get_args(kind)[0])
        return lambda value: tuple(item(i) for i in _items(value))
    if dataclasses.is_dataclass(kind):
        record: Any = kind
        return lambda value: decoded(record, value)
    return lambda value: json.loads(value) if isinstance(value, str) else value


@functools.cache
def _plan(cls: Any) -> tuple[tuple[str, Any, bool, bool], ...]:
    """Each field of ``cls``: its name, its decoder, whether it may be None, and
    whether it has a default."""
    hints = typing.get_type_hints(cls)
    plan = []
    for field in dataclasses.fields(cls):
        kinds = [kind for kind in typing.get_args(hints[field.name]) if kind is not type(None)]
        optional = type(None) in typing.get_args(hints[field.name])
        default = field.default is not MISSING or field.default_factory is not MISSING
        plan.append(
            (field.name, _decoder(kinds[0] if optional else hints[field.name]), optional, default)
        )
    return tuple(plan)


def decoded(cls: type[T], stored: Any, **known: Any) -> T:
    """The record ``cls`` from its stored fields (a hash's, a stream entry's, a JSON
    object's, or a row's columns; ``known`` given as they are). A missing field is None
    where it may be, its default where it has one, else KeyError; "" is None for an
    optional non-text."""
    values: dict[str, Any] = dict(known)
    kind: Any = cls  # a class is hashable, which mypy does not see through type[T]
    mapping = isinstance(stored, Mapping)
    for name, decode, optional, default in _plan(kind):
        if name in known:
            continue
        value = stored.get(name) if mapping else getattr(stored, name, None)
        if value is None or (optional and value == "" and decode is not str):
            if not optional and not default:
                raise KeyError(name)
            if optional:
                values[name] = None
        else:
            values[name] = decode(value)
    return cls(**values)


def review_json(r: Review) -> str:
    """A review as JSON, with what its answer leaves out (``version_author``, the
    person who asked): a Redis review key, a SQL review's ``body``."""
    kept = {"version_author": r.version_author, "requested_by_person": r.requested_by_person}
    return json.dumps({**r.to_json(), **kept})
