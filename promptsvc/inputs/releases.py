"""What releasing may hold: promotions, rollbacks, environments, reviews and rollouts."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from promptsvc.inputs.common import MAX_DESCRIPTION, MAX_NOTES
from promptsvc.inputs.usage import GuardSchema, guard_field
from storage.lifecycle import (
    ALLOW_BREAKING_NOTES,
    MAX_APPROVALS,
    MAX_PERCENT,
    MIN_PERCENT,
    environment_name_problem,
)


def _notes(description: str) -> fields.String:
    return fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=MAX_NOTES),
        metadata={"description": description},
    )


def _version_number(description: str) -> fields.Integer:
    # No load_default: for expected_production_version, absent (no guard) and null
    # (expects no production version) mean different things.
    return fields.Integer(
        strict=True,
        allow_none=True,
        validate=validate.Range(min=1),
        metadata={"description": description},
    )


EXPECTED_PRODUCTION = (
    "Guard: the production version this change expects to replace (null: expects none). "
    "Checked in the same atomic step; when production is another version nothing changes "
    "and the answer is 409 with current_production_version. Absent: no check"
)


EXPECTED_VERSION = (
    "Guard: the version this change expects the environment to hold now (null: expects "
    "none). Checked in the same atomic step; when the environment holds another version "
    "nothing changes and the answer is 409 with current_version. Absent: no check"
)
ENVIRONMENT = "The environment: production (the default) or one of the org's environments"


def _environment_field() -> fields.String:
    # Not validated beyond its length: a name no environment has is 404, like a prompt's.
    return fields.String(
        load_default="production",
        validate=validate.Length(min=1, max=64),
        metadata={"description": ENVIRONMENT},
    )


class _Guarded(Schema):
    """``expected_version`` and its alias ``expected_production_version`` as one guard
    (``expected`` when either is given)."""

    expected_version = _version_number(EXPECTED_VERSION)
    expected_production_version = _version_number(
        EXPECTED_PRODUCTION + ". Production only: an alias of expected_version"
    )

    @validates_schema
    def _one_guard(self, data: dict[str, Any], **kwargs: Any) -> None:
        both = "expected_version" in data and "expected_production_version" in data
        if both and data["expected_version"] != data["expected_production_version"]:
            raise ValidationError(
                "give expected_version or its alias, not both", "expected_version"
            )
        if "expected_production_version" in data and data["environment"] != "production":
            raise ValidationError(
                "guards production only: use expected_version", "expected_production_version"
            )


ALLOW_BREAKING = (
    "true: promote even when the promotion check finds breaking changes against the "
    "version the environment holds (recorded as breaking: true in the history); needs "
    "notes saying why. false (the default): such a promotion answers 409 breaking_change"
)


def _allow_breaking(description: str) -> fields.Boolean:
    return fields.Boolean(load_default=False, metadata={"description": description})


def _check_acknowledgement(data: dict[str, Any]) -> None:
    if data.get("allow_breaking") and not (data.get("notes") or "").strip():
        raise ValidationError(ALLOW_BREAKING_NOTES, "notes")


def _percent(description: str, **options: Any) -> fields.Integer:
    return fields.Integer(
        strict=True,
        validate=validate.Range(min=MIN_PERCENT, max=MAX_PERCENT),
        metadata={"description": description},
        **options,
    )


ROLLOUT_PERCENT = (
    "1-99: start a gradual rollout instead of a full promotion: the environment keeps "
    "its version and the candidate is served to this percent of the callers that give "
    "a rollout key (docs/api.md section 18). Absent or null: a full promotion"
)


ROLLOUT_GUARD = (
    "With rollout_percent: the rollout's guard (docs/usage.md): it is aborted when the "
    "candidate does worse than the baseline by more than threshold. Absent or null: none"
)


class PromoteSchema(_Guarded):
    notes = _notes("Changelog text kept in the promotion history")
    environment = _environment_field()
    rollout_percent = _percent(ROLLOUT_PERCENT, load_default=None, allow_none=True)
    rollout_guard = guard_field(ROLLOUT_GUARD)
    archive_previous_production = fields.Boolean(
        load_default=True,
        metadata={
            "description": "true: the previous production version becomes archived; "
            "false: it goes back to draft"
        },
    )
    allow_breaking = _allow_breaking(ALLOW_BREAKING)

    @validates_schema
    def _acknowledged(self, data: dict[str, Any], **kwargs: Any) -> None:
        _check_acknowledgement(data)
        _check_guard(data)


class RollbackSchema(_Guarded):
    notes = _notes('Changelog text kept in the promotion history; default "rollback to vN"')
    to_version = _version_number(
        "The version to make the environment's again; it must have been there before. "
        "Absent or null: the version the environment held before the current one"
    )
    environment = _environment_field()


def _new_environment_name(name: str) -> None:
    problem = environment_name_problem(name)
    if problem is not None:
        raise ValidationError(problem)


def _approvals(**options: Any) -> fields.Integer:
    return fields.Integer(
        strict=True,
        validate=validate.Range(min=0, max=MAX_APPROVALS),
        metadata={
            "description": "Approvals a promotion into it needs, 0-3; 1 or more makes it "
            "protected (direct promotion answers 409 review_required)"
        },
        **options,
    )


class EnvironmentCreateSchema(Schema):
    name = fields.String(
        required=True,
        validate=_new_environment_name,
        metadata={
            "description": "^[a-z][a-z0-9-]{0,31}$; not latest or production",
            "example": "staging",
        },
    )
    required_approvals = _approvals(load_default=0)
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )


class EnvironmentUpdateSchema(Schema):
    required_approvals = _approvals()
    description = fields.String(
        allow_none=True,
        validate=validate.Length(max=MAX_DESCRIPTION),
        metadata={"description": "null or empty clears it"},
    )


class ReviewCreateSchema(Schema):
    version = fields.Raw(
        required=True,
        metadata={
            "description": "The version: its number or its v_ id",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        },
    )
    environment = fields.String(
        required=True,
        validate=validate.Length(min=1, max=64),
        metadata={"description": "The environment to place it in", "example": "production"},
    )
    notes = _notes("Why: kept in the review and, once applied, in the promotion history")
    rollout_percent = _percent(
        "1-99: once approved, the review starts a gradual rollout at this percent "
        "instead of the full promotion. Absent or null: a full promotion",
        load_default=None,
        allow_none=True,
    )
    allow_breaking = _allow_breaking(
        "true: the review may apply even when the promotion check finds breaking changes "
        "(at the request and when the last approval applies it); needs notes, which go "
        "into the history. false (the default): a breaking request answers 409 "
        "breaking_change, and a review that became breaking since is not applied (409)"
    )
    rollout_guard = guard_field(ROLLOUT_GUARD)

    @validates_schema
    def _checks(self, data: dict[str, Any], **kwargs: Any) -> None:
        version = data.get("version")
        if isinstance(version, bool) or not isinstance(version, int | str):
            raise ValidationError("must be a version number or a v_ id", "version")
        if isinstance(version, int) and version < 1:
            raise ValidationError("must be at least 1", "version")
        _check_acknowledgement(data)
        _check_guard(data)


def _check_guard(data: dict[str, Any]) -> None:
    if data.get("rollout_guard") is not None and data.get("rollout_percent") is None:
        raise ValidationError("needs rollout_percent", "rollout_guard")


def _rollout_guard() -> fields.String:
    return fields.String(
        validate=validate.Length(min=1, max=64),
        metadata={
            "description": "Guard: act only on this rollout (ro_...); when the "
            "environment's rollout is another one or none, 404 and nothing changes"
        },
    )


class RolloutUpdateSchema(Schema):
    percent = _percent(
        "1-99: the share of keyed callers served the candidate. Raising it only moves "
        "keys from the baseline to the candidate. Absent: unchanged (a guard is given)"
    )
    guard = fields.Nested(
        GuardSchema,
        allow_none=True,
        metadata={
            "description": "The rollout's guard (docs/usage.md); null drops it; absent: unchanged"
        },
    )
    rollout_id = _rollout_guard()

    @validates_schema
    def _something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "percent" not in data and "guard" not in data:
            raise ValidationError("give percent, guard or both", "percent")


class RolloutCompleteSchema(Schema):
    notes = _notes("Changelog text kept in the promotion history")
    archive_previous_production = fields.Boolean(
        load_default=True,
        metadata={
            "description": "In production, true: the baseline becomes archived; false: it "
            "goes back to draft"
        },
    )
    allow_breaking = _allow_breaking(ALLOW_BREAKING)
    rollout_id = _rollout_guard()

    @validates_schema
    def _checks(self, data: dict[str, Any], **kwargs: Any) -> None:
        _check_acknowledgement(data)


class RolloutAbortSchema(Schema):
    rollout_id = _rollout_guard()


class DecisionSchema(Schema):
    comment = _notes("Shown with the decision")


class NoBodySchema(Schema):
    """archive and unarchive take no body; one that is sent must be ``{}``."""
