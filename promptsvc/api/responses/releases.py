"""Promotions and history, environments, reviews and diffs."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from promptsvc.api.responses.common import person_name, timestamp
from promptsvc.api.responses.versions import (
    PromptVersionSchema,
    VariableSpecSchema,
    breaking_list,
)
from storage import REVIEW_STATUSES, STATUSES


class PromotionRecordSchema(Schema):
    history_id = fields.String(metadata={"description": "h_..."})
    prompt_id = fields.String()
    version_number = fields.Integer(metadata={"description": "The version promoted"})
    promoted_by = fields.String(metadata={"description": "User id that promoted"})
    promoted_at = timestamp("Promotion time")
    previous_version = fields.Integer(
        allow_none=True,
        metadata={"description": "Version the environment held before; null if none"},
    )
    notes = fields.String(allow_none=True)
    environment = fields.String(metadata={"description": "Where the version went"})
    review_id = fields.String(
        allow_none=True, metadata={"description": "The review that made it (rv_...), else null"}
    )
    approved_by = fields.List(
        fields.String(), metadata={"description": "User ids of that review's approvals"}
    )
    breaking = fields.Boolean(
        metadata={
            "description": "The promotion check found breaking changes against the version "
            "replaced: acknowledged with allow_breaking, or a rollback (exempt)"
        }
    )
    rollout_id = fields.String(
        allow_none=True,
        metadata={"description": "The rollout this promotion completed (ro_...), else null"},
    )


class EnvironmentSchema(Schema):
    name = fields.String(metadata={"example": "staging"})
    required_approvals = fields.Integer(
        metadata={"description": "0-3; 1 or more: protected (promotion through reviews)"}
    )
    description = fields.String(allow_none=True)
    created_at = timestamp("Creation time; null for production (built in)", nullable=True)


class EnvironmentListSchema(Schema):
    items = fields.List(
        fields.Nested(EnvironmentSchema),
        metadata={"description": "production first, then the others oldest first"},
    )


class ApprovalSchema(Schema):
    user_id = fields.String()
    username = fields.String()
    at = timestamp("When approved")
    comment = fields.String(allow_none=True)


class ReviewSchema(Schema):
    review_id = fields.String(metadata={"description": "rv_..."})
    prompt_id = fields.String()
    prompt_name = fields.String()
    version = fields.Integer()
    version_id = fields.String()
    environment = fields.String()
    status = fields.String(validate=validate.OneOf(REVIEW_STATUSES))
    requested_by = fields.String(metadata={"description": "User id (token sub) that asked"})
    requested_by_name = person_name("Who asked")
    requested_at = timestamp("When requested")
    notes = fields.String(allow_none=True)
    expected_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "The environment's version at the request (null: none); the "
            "review applies only while it still holds it, else becomes stale"
        },
    )
    required_approvals = fields.Integer(
        metadata={"description": "As the environment said at the request"}
    )
    approvals = fields.List(fields.Nested(ApprovalSchema))
    rejected_by = fields.String(allow_none=True)
    rejected_by_name = person_name("Who rejected it", nullable=True)
    rejection_comment = fields.String(allow_none=True)
    decided_at = timestamp("When applied, rejected, cancelled or found stale", nullable=True)
    rollout_percent = fields.Integer(allow_none=True)
    allow_breaking = fields.Boolean(
        metadata={"description": "The requester acknowledged breaking changes"}
    )
    breaking = breaking_list(
        "The promotion check against what the environment held at the request; checked "
        "again when the review is applied"
    )
    content_digest = fields.String(
        metadata={"description": "sha256 (hex) of the version's content as requested (api.md)"}
    )
    affected_prompts = fields.List(
        fields.String(),
        metadata={
            "description": "The prompts whose reads in the environment include this one "
            "there (at any level) at the request: the promotion changes them too"
        },
    )


class ReviewPageSchema(Schema):
    items = fields.List(fields.Nested(ReviewSchema), metadata={"description": "Newest first"})
    next_cursor = fields.String(allow_none=True)


class PromotionResultSchema(Schema):
    version = fields.Nested(PromptVersionSchema)
    promotion = fields.Nested(PromotionRecordSchema)


class DiffSideSchema(Schema):
    version = fields.Integer()
    version_id = fields.String()
    status = fields.String(validate=validate.OneOf(STATUSES))


class ListChangesSchema(Schema):
    added = fields.List(fields.String(), metadata={"description": "Only in to, in its order"})
    removed = fields.List(fields.String(), metadata={"description": "Only in from, in its order"})


class MetadataChangesSchema(Schema):
    added = fields.Dict(metadata={"description": "Keys only in to, with their values"})
    removed = fields.Dict(metadata={"description": "Keys only in from, with their values"})
    changed = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        metadata={"description": "Keys in both with different values: {key: {from, to}}"},
    )


class SchemaChangesSchema(Schema):
    added = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(VariableSpecSchema),
        metadata={"description": "Variables only in to's contract, with their entries"},
    )
    removed = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(VariableSpecSchema),
        metadata={"description": "Variables only in from's contract, with their entries"},
    )
    changed = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        metadata={"description": "Variables whose entries differ: {variable: {from, to}}"},
    )


class ConfigChangeSchema(Schema):
    path = fields.String(
        metadata={
            "description": "params.<key>, tools.<name>, or model, provider, response_format whole"
        }
    )
    from_ = fields.Raw(
        data_key="from", allow_none=True, metadata={"description": "null: from lacks it"}
    )
    to = fields.Raw(allow_none=True, metadata={"description": "null: to lacks it"})


class ConfigChangesSchema(Schema):
    changed = fields.List(
        fields.Nested(ConfigChangeSchema),
        metadata={"description": "model, provider, params, tools, response_format, in order"},
    )


class DiffSchema(Schema):
    from_ = fields.Nested(DiffSideSchema, data_key="from")
    to = fields.Nested(DiffSideSchema)
    content_diff = fields.String(
        metadata={
            "description": "Unified diff of the contents, 3 lines of context; empty when "
            "equal. Chat prompts: one block per message, a [role] line then its content"
        }
    )
    variables = fields.Nested(ListChangesSchema)
    metadata = fields.Nested(MetadataChangesSchema)
    tags = fields.Nested(ListChangesSchema)
    # The contracts compared, each as its version shows it (declared or implied).
    variables_schema = fields.Nested(SchemaChangesSchema)
    config = fields.Nested(ConfigChangesSchema)
    breaking = breaking_list(
        "What promoting to in place of from would break (the promotion check); empty when nothing"
    )


class HistoryRecordSchema(PromotionRecordSchema):
    promoted_by_name = person_name("Who promoted")


class HistoryPageSchema(Schema):
    items = fields.List(fields.Nested(HistoryRecordSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})
