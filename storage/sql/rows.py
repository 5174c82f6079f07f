"""The release tables' rows as the records of storage/records.py, both ways: versions,
promotion history, reviews and rollouts (prompts and events: storage/sql/core.py)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypeVar

from sqlalchemy import Row

from storage.records import (
    PromotionRecord,
    PromptVersion,
    Review,
    Rollout,
)
from storage.stored import decoded, review_json

T = TypeVar("T")


def _json_or_null(value: Any) -> str | None:
    return json.dumps(list(value) if isinstance(value, tuple) else value) if value else None


# How a PromptVersion field is stored in its ``versions`` column (the rest as they are).
_VERSION_CODECS: dict[str, Any] = {
    "variables": lambda value: json.dumps(list(value)),
    "tags": lambda value: json.dumps(list(value)),
    "metadata": json.dumps,
    "placements": lambda value: json.dumps(sorted(value)) if value else None,
    "variables_schema": lambda value: None if value is None else json.dumps(value),
    "examples": _json_or_null,
    "authors": _json_or_null,
    "config": lambda value: None if value is None else json.dumps(value),
}


def record_of(cls: type[T], row: Row[Any]) -> T:
    """The record ``cls`` of a row whose columns are named as its fields (API keys, users,
    sign-in records: each column's type reads it as the field holds it)."""
    return cls(**{field.name: getattr(row, field.name) for field in dataclasses.fields(cls)})  # type: ignore[arg-type]


def values_of(record: Any) -> dict[str, Any]:
    """The row of such a record, column by field."""
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}


def version_columns(fields: dict[str, Any]) -> dict[str, Any]:
    """PromptVersion fields (as a change names them) as ``versions`` column values."""
    return {
        name: _VERSION_CODECS[name](value) if name in _VERSION_CODECS else value
        for name, value in fields.items()
    }


def version_values(org: str, version: PromptVersion) -> dict[str, Any]:
    """The whole ``versions`` row of ``version``."""
    fields = {
        name: getattr(version, name)
        for name in (
            "prompt_id", "version", "version_id", "content", "variables", "status",
            "metadata", "tags", "created_at", "updated_at", "promoted_at", "promoted_by",
            "created_by", "placements", "variables_schema", "examples", "frozen", "authors",
            "config",
        )
    }  # fmt: skip
    return {"org": org, **version_columns(fields)}


def include_values(org: str, version: PromptVersion) -> list[dict[str, Any]]:
    """The ``includes`` rows of ``version``: one per prompt its own content includes."""
    return [
        {"org": org, "name": name, "prompt_id": version.prompt_id, "version": version.version}
        for name in version.included_names
    ]


def history_record(row: Row[Any]) -> PromotionRecord:
    return decoded(PromotionRecord, row)


def history_values(org: str, record: PromotionRecord, position: int) -> dict[str, Any]:
    """The ``history`` row of ``record``, the prompt's ``position``-th promotion."""
    return {
        "org": org,
        "prompt_id": record.prompt_id,
        "position": position,
        "history_id": record.history_id,
        "version_number": record.version_number,
        "promoted_by": record.promoted_by,
        "promoted_at": record.promoted_at,
        "previous_version": record.previous_version,
        "notes": record.notes,
        "environment": record.environment,
        "review_id": record.review_id,
        "approved_by": json.dumps(list(record.approved_by)) if record.review_id else None,
        "breaking": record.breaking,
        "rollout_id": record.rollout_id,
    }


def review_values(org: str, review: Review) -> dict[str, Any]:
    """The ``reviews`` row of ``review`` but its ``seq`` (its place in the org's order)."""
    return {
        "org": org,
        "review_id": review.review_id,
        "prompt_id": review.prompt_id,
        "environment": review.environment,
        "version": review.version,
        "status": review.status,
        "decided_at": review.decided_at,
        "body": review_json(review),
    }


def review_record(row: Row[Any]) -> Review:
    """From the row's columns and its ``body`` (reviews kept from before digests and
    people lack those: the record's defaults)."""
    columns = ("review_id", "prompt_id", "version", "environment", "status", "decided_at")
    return decoded(Review, json.loads(row.body), **{c: getattr(row, c) for c in columns})


def rollout_values(org: str, rollout: Rollout) -> dict[str, Any]:
    """The ``rollouts`` row of ``rollout`` (its candidate's id is the version's)."""
    return {
        "org": org,
        "prompt_id": rollout.prompt_id,
        "environment": rollout.environment,
        "rollout_id": rollout.rollout_id,
        "baseline_version": rollout.baseline_version,
        "candidate_version": rollout.candidate_version,
        "percent": rollout.percent,
        "started_by": rollout.started_by,
        "started_at": rollout.started_at,
        "updated_at": rollout.updated_at,
    }


def rollout_record(row: Row[Any]) -> Rollout:
    """A ``rollouts`` row joined to its candidate's ``version_id``."""
    return decoded(Rollout, row, candidate_id=row.version_id)
