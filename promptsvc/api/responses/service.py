"""The event log, errors and the service's status."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from promptsvc.api.responses.common import timestamp
from promptsvc.api.responses.versions import breaking_list
from promptsvc.inputs import EVENT_ID_EXAMPLE
from storage import EVENT_TYPES, REVIEW_STATUSES, STATUSES


class GuardFiguresSchema(Schema):
    metric = fields.String(validate=validate.OneOf(("error_rate", "score")))
    threshold = fields.Float()
    baseline = fields.Float(metadata={"description": "The baseline arm's value of the metric"})
    candidate = fields.Float(metadata={"description": "The candidate arm's value"})
    samples = fields.Integer(metadata={"description": "Outcomes of the arm with fewer"})


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
    at = timestamp("When the change was made")
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
    reason = fields.String(
        allow_none=True,
        validate=validate.OneOf(("manual", "guard")),
        metadata={
            "description": "rollout.aborted: guard (its guard found the candidate worse, "
            "docs/usage.md) or manual (a caller's abort, or an archive or delete that "
            "ended it); else null"
        },
    )
    guard = fields.Nested(
        GuardFiguresSchema,
        allow_none=True,
        metadata={"description": "rollout.aborted by its guard: the figures; else null"},
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
        metadata={
            "description": "409: why, one word (docs/api.md section 9); 404 of a production "
            "read whose prompt exists but has no production version: no_production_version",
            "example": "frozen",
        }
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
    changes = breaking_list("409 breaking_change only: what the promotion would break")
    rollout_id = fields.String(
        metadata={
            "description": "409 of a change a rollout blocks (a second rollout, a promotion, "
            "rollback or review into its environment): that rollout"
        }
    )


class StatusSchema(Schema):
    status = fields.String(metadata={"example": "ok"})
