"""marshmallow schemas that document the API's response bodies in /openapi.json.

A response is its record's ``to_json()`` (storage/records.py), never dumped through a
schema, and tests/api/test_api_records.py proves each schema and its record's JSON have
the same fields, types and nullability. Request schemas are promptsvc.inputs'.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from identity.roles import ROLES
from promptsvc.inputs import EVENT_ID_EXAMPLE
from promptsvc.templating.contract import BREAKING_KINDS, VARIABLE_TYPES
from storage import EVENT_TYPES, PROMPT_TYPES, REVIEW_STATUSES, STATUSES


def _timestamp(description: str, *, nullable: bool = False) -> fields.DateTime:
    return fields.DateTime(
        allow_none=nullable,
        metadata={"description": description + " (RFC 3339, UTC, ending in Z)"},
    )


class VariableSpecSchema(Schema):
    type = fields.String(validate=validate.OneOf(VARIABLE_TYPES))
    required = fields.Boolean(
        metadata={"description": "Default true; a default makes the variable optional"}
    )
    description = fields.String()
    default = fields.Raw(metadata={"description": "A value of the type"})
    enum = fields.List(fields.Raw(), metadata={"description": "The values allowed"})


class ExampleSchema(Schema):
    name = fields.String(allow_none=True, metadata={"description": "null when none was given"})
    variables = fields.Dict(
        keys=fields.String(), metadata={"description": "Values valid under the contract"}
    )


class BreakingChangeSchema(Schema):
    variable = fields.String()
    change = fields.String(
        validate=validate.OneOf(BREAKING_KINDS),
        metadata={
            "description": "newly_required: required now, absent or optional before; "
            "type_changed; enum_narrowed: an enum lacking a value allowed before, or an "
            "enum where there was none; example_failed: an example of the version "
            "replaced cannot be rendered with the candidate"
        },
    )
    detail = fields.String(metadata={"description": "The change in words"})


class PromptVersionSchema(Schema):
    prompt_id = fields.String(metadata={"description": "Parent prompt id (pmt_...)"})
    version_id = fields.String(metadata={"description": "Version id (v_...)"})
    name = fields.String(metadata={"description": "Prompt name"})
    version = fields.Integer(metadata={"description": "Sequential number starting at 1"})
    content = fields.String(metadata={"description": "Template with {{variable}} placeholders"})
    variables = fields.List(
        fields.String(), metadata={"description": "Placeholder names, first-seen order"}
    )
    status = fields.String(validate=validate.OneOf(STATUSES))
    is_production = fields.Boolean(metadata={"description": "True for the published version"})
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    metadata = fields.Dict(metadata={"description": "Arbitrary key-value pairs"})
    tags = fields.List(fields.String())
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last content edit or status change")
    promoted_at = _timestamp("When promoted to production; null if never", nullable=True)
    promoted_by = fields.String(
        allow_none=True, metadata={"description": "User id that promoted it; null if never"}
    )
    environments = fields.List(
        fields.String(),
        metadata={
            "description": "The environments holding this version: production (while "
            "published) first, then the others by name"
        },
    )
    variables_schema = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(VariableSpecSchema),
        metadata={
            "description": "The variable contract as declared, or, when none was, the "
            "implied one: every variable {type: string, required: true}"
        },
    )
    examples = fields.List(
        fields.Nested(ExampleSchema), metadata={"description": "At most 20; [] when none"}
    )


class RolloutSchema(Schema):
    rollout_id = fields.String(metadata={"description": "ro_...; part of the sticky hash"})
    prompt_id = fields.String()
    environment = fields.String()
    baseline_version = fields.Integer(
        metadata={"description": "The environment's own version, served to the other callers"}
    )
    candidate_version = fields.Integer(
        metadata={"description": "The version served to percent of the keyed callers"}
    )
    percent = fields.Integer(metadata={"description": "1-99"})
    started_by = fields.String(metadata={"description": "User id (token sub) that started it"})
    started_at = _timestamp("When it started")
    updated_at = _timestamp("Last percent change; for an aborted rollout, when it ended")


class RolloutListSchema(Schema):
    items = fields.List(fields.Nested(RolloutSchema), metadata={"description": "By environment"})


class RolloutReadSchema(Schema):
    """The ``rollout`` field of an environment read while a rollout runs there."""

    rollout_id = fields.String(metadata={"description": "ro_..."})
    percent = fields.Integer(
        metadata={
            "description": "1-99: a caller with rollout key K gets the candidate when "
            "int.from_bytes(sha256(f'{rollout_id}:{K}').digest()[:8], 'big') % 10000 < "
            "percent * 100"
        }
    )
    candidate = fields.Nested(PromptVersionSchema)


class PromptVersionInRolloutSchema(PromptVersionSchema):
    """An environment read: the version served (the environment's own, or the
    candidate for a rollout_key assigned to it) and, only while a rollout runs there,
    the rollout."""

    rollout = fields.Nested(RolloutReadSchema, required=True)


class PromptSchema(Schema):
    prompt_id = fields.String(metadata={"description": "pmt_..."})
    name = fields.String()
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    description = fields.String(allow_none=True)
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last change to the prompt or its versions")
    latest_version = fields.Integer(
        allow_none=True, metadata={"description": "Highest existing version number"}
    )
    production_version = fields.Integer(
        allow_none=True, metadata={"description": "Number of the published version"}
    )


class PromotionRecordSchema(Schema):
    history_id = fields.String(metadata={"description": "h_..."})
    prompt_id = fields.String()
    version_number = fields.Integer(metadata={"description": "The version promoted"})
    promoted_by = fields.String(metadata={"description": "User id that promoted"})
    promoted_at = _timestamp("Promotion time")
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
    created_at = _timestamp("Creation time; null for production (built in)", nullable=True)


class EnvironmentListSchema(Schema):
    items = fields.List(
        fields.Nested(EnvironmentSchema),
        metadata={"description": "production first, then the others oldest first"},
    )


class ApprovalSchema(Schema):
    user_id = fields.String()
    username = fields.String()
    at = _timestamp("When approved")
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
    requested_at = _timestamp("When requested")
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
    rejection_comment = fields.String(allow_none=True)
    decided_at = _timestamp("When applied, rejected, cancelled or found stale", nullable=True)
    rollout_percent = fields.Integer(allow_none=True)
    allow_breaking = fields.Boolean(
        metadata={"description": "The requester acknowledged breaking changes"}
    )
    breaking = fields.List(
        fields.Nested(BreakingChangeSchema),
        metadata={
            "description": "The promotion check against what the environment held at the "
            "request; checked again when the review is applied"
        },
    )
    content_digest = fields.String(
        metadata={"description": "sha256 (hex) of the version's content as requested (api.md)"}
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
    breaking = fields.List(
        fields.Nested(BreakingChangeSchema),
        metadata={
            "description": "What promoting to in place of from would break (the promotion "
            "check); empty when nothing"
        },
    )


class PromptPageSchema(Schema):
    items = fields.List(fields.Nested(PromptSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class VersionPageSchema(Schema):
    items = fields.List(fields.Nested(PromptVersionSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class HistoryRecordSchema(PromotionRecordSchema):
    promoted_by_name = fields.String(
        metadata={
            "description": "Who promoted, as the console names them: a username, "
            "'key <client_id>' for an API key, or 'user <first 8 characters of the id>' "
            "for an id that names no one any more"
        }
    )


class HistoryPageSchema(Schema):
    items = fields.List(fields.Nested(HistoryRecordSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class EventSchema(Schema):
    id = fields.String(
        metadata={
            "description": "Opaque; increases within the org. Resume after it with "
            "?after= or Last-Event-ID",
            "example": EVENT_ID_EXAMPLE,
        }
    )
    type = fields.String(validate=validate.OneOf(EVENT_TYPES))
    prompt_id = fields.String(metadata={"description": "pmt_..."})
    prompt_name = fields.String()
    version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "The version changed (rollout.*: the candidate); null for prompt events"
        },
    )
    version_id = fields.String(allow_none=True, metadata={"description": "v_...; null likewise"})
    status = fields.String(
        allow_none=True,
        validate=validate.OneOf(list(dict.fromkeys((*STATUSES, *REVIEW_STATUSES)))),
        metadata={
            "description": "The version's status after the change (review.* events: the "
            "review's); null for prompt events and version.deleted"
        },
    )
    previous_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "version.promoted: the version the environment held before, "
            "null if none; rollout.*: the baseline; null for other events"
        },
    )
    actor = fields.String(allow_none=True, metadata={"description": "User id that made the change"})
    at = _timestamp("When the change was made")
    request_id = fields.String(
        allow_none=True, metadata={"description": "X-Request-ID of the request that made it"}
    )
    environment = fields.String(
        allow_none=True,
        metadata={
            "description": "version.promoted, review.* and rollout.*: the environment; else null"
        },
    )
    review_id = fields.String(
        allow_none=True,
        metadata={
            "description": "review.*, and a version.promoted a review applied: the review; "
            "else null"
        },
    )
    rollout_id = fields.String(
        allow_none=True,
        metadata={
            "description": "rollout.*, and the version.promoted of a completed rollout: "
            "the rollout; else null"
        },
    )
    percent = fields.Integer(
        allow_none=True, metadata={"description": "rollout.*: the rollout's percent; else null"}
    )


class EventPageSchema(Schema):
    items = fields.List(fields.Nested(EventSchema), metadata={"description": "Oldest first"})
    last_id = fields.String(
        metadata={
            "description": "Pass as ?after= next time: the last item's id, else the id "
            "asked after (or the newest event's when none was asked)",
            "example": EVENT_ID_EXAMPLE,
        }
    )
    reset = fields.Boolean(
        metadata={
            "description": "true: the id asked after is older than the log keeps, so "
            "events were missed; forget what was derived from earlier events and go on "
            "from last_id"
        }
    )


class ApiKeySchema(Schema):
    client_id = fields.String(metadata={"description": "Identifies the key; safe to log"})
    role = fields.String(validate=validate.OneOf(ROLES))
    description = fields.String(allow_none=True)
    user_id = fields.String(metadata={"description": "The key's service-account user (token sub)"})
    owner = fields.String(
        allow_none=True,
        metadata={
            "description": "The user id of the person whose work the key's changes count "
            "as; null for a key from the bootstrap file"
        },
    )
    created_at = _timestamp("Creation time")
    revoked = fields.Boolean()


class ApiKeyCreatedSchema(ApiKeySchema):
    client_secret = fields.String(metadata={"description": "Shown only in this response"})


class ApiKeyListSchema(Schema):
    items = fields.List(fields.Nested(ApiKeySchema))


class UserSchema(Schema):
    user_id = fields.String(
        metadata={"description": "The person's id (token sub; what created_by records)"}
    )
    username = fields.String()
    role = fields.String(validate=validate.OneOf(ROLES))
    disabled = fields.Boolean()
    created_at = _timestamp("Creation time")
    updated_at = _timestamp("Last change of role, disabled flag or password")


class UserCreatedSchema(UserSchema):
    password = fields.String(
        metadata={
            "description": "Only when none was given: the generated password, shown only "
            "in this response"
        }
    )


class UserListSchema(Schema):
    items = fields.List(fields.Nested(UserSchema))


class WebhookSchema(Schema):
    webhook_id = fields.String(metadata={"description": "wh_..."})
    url = fields.String()
    events = fields.List(fields.String())
    description = fields.String(allow_none=True)
    created_at = _timestamp("Creation time")


class WebhookCreatedSchema(WebhookSchema):
    secret = fields.String(
        metadata={"description": "whsec_ + base64: verifies signatures; shown only here"}
    )


class WebhookListSchema(Schema):
    items = fields.List(fields.Nested(WebhookSchema))


class DeliverySchema(Schema):
    message_id = fields.String(metadata={"description": "The webhook-id header sent"})
    event_id = fields.String(allow_none=True, metadata={"description": "null for a ping"})
    event_type = fields.String()
    attempt = fields.Integer(metadata={"description": "1 for the first attempt"})
    status_code = fields.Integer(allow_none=True, metadata={"description": "null: no answer"})
    error = fields.String(
        allow_none=True, metadata={"description": "Why there was no answer (timeout, ...)"}
    )
    delivered = fields.Boolean(metadata={"description": "The receiver answered 2xx"})
    at = _timestamp("When the attempt ended")


class DeliveryListSchema(Schema):
    items = fields.List(fields.Nested(DeliverySchema))


class PingSchema(Schema):
    message_id = fields.String(metadata={"description": "The webhook-id of the ping"})


class ErrorSchema(Schema):
    code = fields.String(
        metadata={"description": "Machine-readable code, e.g. not_found", "example": "not_found"}
    )
    message = fields.String(metadata={"description": "Human-readable text"})
    error = fields.String(metadata={"description": "Same value as code"})
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "400 only: messages per invalid field"},
    )
    reason = fields.String(
        metadata={"description": "409 only: why, one word (docs/api.md)", "example": "frozen"}
    )
    status = fields.String(metadata={"description": "409 reason status: the version's status"})
    current_production_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "409 of a guarded promotion or rollback in production only: "
            "the production version at that moment (null: none)"
        },
    )
    current_version = fields.Integer(
        allow_none=True,
        metadata={
            "description": "409 of a guarded promotion or rollback, or of a stale review: "
            "the environment's version at that moment (null: none)"
        },
    )
    review_id = fields.String(
        metadata={"description": "409 of a second open review: the open one; of a stale one: it"}
    )
    changes = fields.List(
        fields.Nested(BreakingChangeSchema),
        metadata={"description": "409 breaking_change only: what the promotion would break"},
    )
    rollout_id = fields.String(
        metadata={
            "description": "409 of a change a rollout blocks (a second rollout, a promotion, "
            "rollback or review into its environment): that rollout"
        }
    )
    reason = fields.String(
        metadata={
            "description": "404 of a production read whose prompt exists but has no "
            "production version: no_production_version"
        }
    )


class StatusSchema(Schema):
    status = fields.String(metadata={"example": "ok"})
