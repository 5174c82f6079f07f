"""What usage reports, usage queries and rollout guards may hold (docs/usage.md)."""

from __future__ import annotations

import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from storage.ids import MAX_NUMBER
from storage.lifecycle import ENVIRONMENT_NAME
from storage.usage_records import ARMS, SPANS

MAX_USAGE_ITEMS = 500
MAX_COUNT = 10**9
GUARD_METRICS = ("error_rate", "score")
MIN_GUARD_SAMPLES = 10
ROLLOUT_ID = r"ro_[0-9a-f]{1,37}\Z"
ENVIRONMENT_RULE = "must match ^[a-z][a-z0-9-]{{0,31}}$"


def _count(description: str) -> fields.Integer:
    return fields.Integer(
        strict=True,
        load_default=0,
        validate=validate.Range(min=0, max=MAX_COUNT),
        metadata={"description": description},
    )


class UsageItemSchema(Schema):
    prompt_id = fields.String(
        required=True,
        validate=validate.Length(min=1, max=40),
        metadata={"description": "The prompt's pmt_ id; one the org lacks is skipped"},
    )
    version = fields.Integer(
        strict=True,
        required=True,
        validate=validate.Range(min=1, max=MAX_NUMBER),
        metadata={"description": "The version's number; one the prompt lacks is skipped"},
    )
    environment = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Regexp(rf"{ENVIRONMENT_NAME.pattern}\Z", error=ENVIRONMENT_RULE),
        metadata={"description": "The environment read, null when a version was read directly"},
    )
    rollout_id = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Regexp(ROLLOUT_ID, error="must be a rollout id (ro_...)"),
        metadata={"description": "The rollout the read was served by, or null"},
    )
    arm = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.OneOf(ARMS),
        metadata={"description": "baseline or candidate during a rollout, else null"},
    )
    renders = _count("Renders counted (0-10^9)")
    ok = _count("Outcomes reported as ok (0-10^9)")
    errors = _count("Outcomes reported as errors (0-10^9)")
    score_sum = fields.Float(
        load_default=0.0,
        allow_nan=False,
        validate=validate.Range(min=0, max=MAX_COUNT),
        metadata={"description": "The sum of the scores reported (each 0-1): 0-score_count"},
    )
    score_count = _count("Scores reported (0-10^9)")

    @validates_schema
    def _scores(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("score_sum", 0) > data.get("score_count", 0):
            raise ValidationError("must be at most score_count", "score_sum")


class UsageItems(fields.List):
    """A list of usage items, documented by :class:`UsageItemSchema` and checked by
    :func:`checked_items` with its rules: marshmallow takes ~1 ms an item, too slow for
    a report of 500 (bench/usage.py)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not isinstance(value, list):
            raise ValidationError("Not a valid list.")
        return checked_items(value)


class UsageReportSchema(Schema):
    items = UsageItems(
        fields.Nested(UsageItemSchema),
        required=True,
        validate=validate.Length(max=MAX_USAGE_ITEMS),
        metadata={"description": f"At most {MAX_USAGE_ITEMS} keys' counts"},
    )


_ITEM_FIELDS = frozenset(UsageItemSchema._declared_fields)
_ENVIRONMENT = re.compile(rf"{ENVIRONMENT_NAME.pattern}\Z")
_ROLLOUT_ID = re.compile(ROLLOUT_ID)
_COUNTS = ("renders", "ok", "errors", "score_count")


def checked_items(raw: list[Any]) -> list[dict[str, Any]]:
    """The items as UsageItemSchema would load them, or a ValidationError naming each
    problem by item index and field, as marshmallow does."""
    problems: dict[int, dict[str, list[str]]] = {}
    found = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            problems[i] = {"_schema": ["Invalid input type."]}
            continue
        wrong = _item_problems(item)
        if wrong:
            problems[i] = wrong
            continue
        found.append(
            {
                "prompt_id": item["prompt_id"],
                "version": item["version"],
                "environment": item.get("environment"),
                "rollout_id": item.get("rollout_id"),
                "arm": item.get("arm"),
                **{name: item.get(name, 0) for name in _COUNTS},
                "score_sum": float(item.get("score_sum", 0.0)),
            }
        )
    if problems:
        raise ValidationError(problems)
    return found


def _item_problems(item: dict[str, Any]) -> dict[str, list[str]]:
    wrong: dict[str, list[str]] = {name: ["Unknown field."] for name in item.keys() - _ITEM_FIELDS}
    prompt_id = item.get("prompt_id")
    if not isinstance(prompt_id, str) or not 1 <= len(prompt_id) <= 40:
        wrong["prompt_id"] = ["must be a string of 1-40 characters"]
    if not _integer(item.get("version"), 1, MAX_NUMBER):
        wrong["version"] = [f"must be an integer 1-{MAX_NUMBER}"]
    for name, pattern, rule in (
        ("environment", _ENVIRONMENT, ENVIRONMENT_RULE.replace("{{", "{").replace("}}", "}")),
        ("rollout_id", _ROLLOUT_ID, "must be a rollout id (ro_...)"),
    ):
        value = item.get(name)
        if value is not None and not (isinstance(value, str) and pattern.match(value)):
            wrong[name] = [rule]
    if item.get("arm") not in (None, *ARMS):
        wrong["arm"] = ["must be baseline, candidate or null"]
    for name in _COUNTS:
        if not _integer(item.get(name, 0), 0, MAX_COUNT):
            wrong[name] = [f"must be an integer 0-{MAX_COUNT}"]
    score_sum = item.get("score_sum", 0)
    if isinstance(score_sum, bool) or not isinstance(score_sum, int | float):
        wrong["score_sum"] = ["must be a number"]
    elif not (0 <= score_sum <= MAX_COUNT) or (
        "score_count" not in wrong and score_sum > item.get("score_count", 0)
    ):
        wrong["score_sum"] = ["must be 0 or more and at most score_count"]
    return wrong


def _integer(value: Any, least: int, most: int) -> bool:
    return type(value) is int and least <= value <= most


class UsageQuerySchema(Schema):
    since = fields.AwareDateTime(
        load_default=None,
        metadata={
            "description": "RFC 3339; the bucket it falls in is the first. Default: until - 24 h"
        },
    )
    until = fields.AwareDateTime(
        load_default=None,
        metadata={"description": "RFC 3339, exclusive. Default: now"},
    )
    bucket = fields.String(
        load_default="hour",
        validate=validate.OneOf(SPANS),
        metadata={"description": "hour (kept 30 days) or day (kept 400 days)"},
    )

    @validates_schema
    def _order(self, data: dict[str, Any], **kwargs: Any) -> None:
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and since >= until:
            raise ValidationError("must be before until", "since")


class GuardSchema(Schema):
    metric = fields.String(
        required=True,
        validate=validate.OneOf(GUARD_METRICS),
        metadata={"description": "error_rate (errors / outcomes) or score (mean score)"},
    )
    threshold = fields.Float(
        required=True,
        allow_nan=False,
        validate=validate.Range(min=0, max=1),
        metadata={"description": "0-1: how much worse the candidate may be than the baseline"},
    )
    min_samples = fields.Integer(
        strict=True,
        load_default=100,
        validate=validate.Range(min=MIN_GUARD_SAMPLES, max=MAX_COUNT),
        metadata={"description": "Outcomes each arm needs before the guard decides (>= 10)"},
    )


def guard_field(description: str) -> fields.Nested:
    return fields.Nested(
        GuardSchema, load_default=None, allow_none=True, metadata={"description": description}
    )
