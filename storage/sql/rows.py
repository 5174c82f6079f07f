"""The tables' rows as the records of storage/records.py and back: a row holds its
record's fields in the same-named columns (:func:`row_of`), decoded by
:func:`storage.stored.decoded`; here what is stored otherwise (JSON, a review's
``body``, a rollout's candidate id). Prompts and events: storage/sql/core.py.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from sqlalchemy import Row, Table

from storage.records import PromotionRecord, PromptVersion, Review, Rollout
from storage.sql.tables import history, reviews, rollouts, versions
from storage.stored import decoded, review_json


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


@functools.cache
def _shared(table: Table, cls: type) -> tuple[str, ...]:
    """The columns of ``table`` named as a field of ``cls``, in the table's order."""
    fields = {field.name for field in dataclasses.fields(cls)}
    return tuple(column.name for column in table.c if column.name in fields)


def row_of(table: Table, record: Any, **given: Any) -> dict[str, Any]:
    """The row of ``table`` holding ``record``: each column its same-named field as it
    is, then the ``given`` columns."""
    kind: Any = type(record)  # a class is hashable, which mypy does not see through type[T]
    return {**{name: getattr(record, name) for name in _shared(table, kind)}, **given}


def values_of(record: Any) -> dict[str, Any]:
    """The row of a record whose every field is a column (API keys, users, sign-in
    records, environments)."""
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}


def version_columns(fields: dict[str, Any]) -> dict[str, Any]:
    """PromptVersion fields (as a change names them) as ``versions`` column values."""
    return {
        name: _VERSION_CODECS[name](value) if name in _VERSION_CODECS else value
        for name, value in fields.items()
    }


def version_values(org: str, version: PromptVersion) -> dict[str, Any]:
    """The whole ``versions`` row of ``version``."""
    return version_columns(row_of(versions, version, org=org))


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
    approved_by = json.dumps(list(record.approved_by)) if record.review_id else None
    return row_of(history, record, org=org, position=position, approved_by=approved_by)


def review_values(org: str, review: Review) -> dict[str, Any]:
    """The ``reviews`` row of ``review`` but its ``seq`` (its place in the org's order):
    the columns filtered and changed in SQL, and the whole review as JSON."""
    return row_of(reviews, review, org=org, body=review_json(review))


def review_record(row: Row[Any]) -> Review:
    """From the row's columns and its ``body`` (reviews kept from before digests and
    people lack those: the record's defaults)."""
    columns = ("review_id", "prompt_id", "version", "environment", "status", "decided_at")
    return decoded(Review, json.loads(row.body), **{c: getattr(row, c) for c in columns})


def rollout_values(org: str, rollout: Rollout) -> dict[str, Any]:
    """The ``rollouts`` row of ``rollout`` (its candidate's id is the version's)."""
    return row_of(rollouts, rollout, org=org)


def rollout_record(row: Row[Any]) -> Rollout:
    """A ``rollouts`` row joined to its candidate's ``version_id``."""
    return decoded(Rollout, row, candidate_id=row.version_id)
