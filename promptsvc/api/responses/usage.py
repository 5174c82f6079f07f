"""Usage reports, usage buckets, and a rollout's guard and arms (docs/usage.md)."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from promptsvc.api.responses.common import timestamp
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
