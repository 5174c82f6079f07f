"""Usage reports, usage buckets, and a rollout's guard and arms (docs/usage.md)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from promptsvc.api.responses.common import timestamp
from promptsvc.api.responses.service import GuardFiguresSchema
from promptsvc.api.responses.versions import RolloutSchema
from storage.usage_records import ARMS


class UsageReceiptSchema(Schema):
    accepted = fields.Integer(metadata={"description": "Items counted"})
    skipped = fields.Integer(
        metadata={"description": "Items naming a prompt or version the org lacks"}
    )


def _score_avg() -> fields.Float:
    return fields.Float(
        allow_none=True, metadata={"description": "Mean score; null where none was reported"}
    )


class UsageBucketSchema(Schema):
    bucket_start = timestamp("The start of the UTC hour or day the reports were received in")
    version = fields.Integer()
    environment = fields.String(allow_none=True)
    rollout_id = fields.String(allow_none=True)
    arm = fields.String(allow_none=True, validate=validate.OneOf(ARMS))
    renders = fields.Integer()
    ok = fields.Integer()
    errors = fields.Integer()
    score_avg = _score_avg()


class UsagePageSchema(Schema):
    items = fields.List(
        fields.Nested(UsageBucketSchema),
        metadata={"description": "Oldest bucket first, then by version, environment, rollout, arm"},
    )


class RolloutGuardSchema(Schema):
    metric = fields.String(validate=validate.OneOf(("error_rate", "score")))
    threshold = fields.Float()
    min_samples = fields.Integer()


class ArmSchema(Schema):
    renders = fields.Integer()
    ok = fields.Integer()
    errors = fields.Integer()
    score_avg = _score_avg()


class ArmsSchema(Schema):
    baseline = fields.Nested(ArmSchema)
    candidate = fields.Nested(ArmSchema)


class GuardedRolloutSchema(RolloutSchema):
    guard = fields.Nested(
        RolloutGuardSchema, allow_none=True, metadata={"description": "null: none"}
    )
    arms = fields.Nested(
        ArmsSchema, metadata={"description": "What each arm served and reported since it started"}
    )


class EndedRolloutSchema(Schema):
    rollout_id = fields.String()
    environment = fields.String()
    baseline_version = fields.Integer(allow_none=True)
    candidate_version = fields.Integer(allow_none=True)
    percent = fields.Integer(allow_none=True, metadata={"description": "The percent at its end"})
    outcome = fields.String(validate=validate.OneOf(("completed", "aborted")))
    reason = fields.String(
        allow_none=True,
        validate=validate.OneOf(("guard", "manual")),
        metadata={"description": "Why it was aborted (guard or manual); null: completed"},
    )
    guard = fields.Nested(
        GuardFiguresSchema, allow_none=True, metadata={"description": "A guard's abort's figures"}
    )
    ended_by = fields.String(
        allow_none=True, metadata={"description": "Who ended it; null for a guard's abort"}
    )
    ended_by_name = fields.String(allow_none=True)
    ended_at = timestamp("When it ended")
    request_id = fields.String(allow_none=True)


class EndedRolloutListSchema(Schema):
    items = fields.List(fields.Nested(EndedRolloutSchema), metadata={"description": "Newest first"})
