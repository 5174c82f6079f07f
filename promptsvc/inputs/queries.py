"""What a listing's or a read's query string and headers may hold."""

from __future__ import annotations

from marshmallow import Schema, ValidationError, fields, validate

from promptsvc.inputs.common import (
    DEFAULT_LIMIT,
    EVENT_ID_EXAMPLE,
    EVENT_ID_PATTERN,
    MAX_LIMIT,
    MAX_WAIT,
)
from storage import (
    DEFAULT_ENVIRONMENT_PAGE,
    MAX_ENVIRONMENT_PAGE,
    REVIEW_STATUSES,
    STATUSES,
    InvalidInput,
    event_position,
)


class DeliveryQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=100),
        metadata={"description": "How many attempts, newest first, 1-100"},
    )


class LimitQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "How many, newest first, 1-200"},
    )


class PageQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "Page size, 1-200"},
    )
    cursor = fields.String(
        load_default=None, metadata={"description": "next_cursor of the previous page"}
    )


class EnvironmentPageQuerySchema(Schema):
    limit = fields.Integer(
        load_default=DEFAULT_ENVIRONMENT_PAGE,
        validate=validate.Range(min=1, max=MAX_ENVIRONMENT_PAGE),
        metadata={"description": f"Page size, 1-{MAX_ENVIRONMENT_PAGE}"},
    )
    cursor = fields.String(
        load_default=None, metadata={"description": "next_cursor of the previous page"}
    )


DIFF_REF = "A version number, a version id (v_...), production or latest"


class DiffQuerySchema(Schema):
    from_ = fields.String(
        data_key="from",
        required=True,
        validate=validate.Length(min=1),
        metadata={
            "description": "The version to compare from. " + DIFF_REF,
            "example": "production",
        },
    )
    to = fields.String(
        required=True,
        validate=validate.Length(min=1),
        metadata={"description": "The version to compare to. " + DIFF_REF, "example": "latest"},
    )


class VersionQuerySchema(PageQuerySchema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(STATUSES),
        metadata={"description": "Only versions with this status"},
    )


class ReviewQuerySchema(PageQuerySchema):
    status = fields.String(
        load_default=None,
        validate=validate.OneOf(REVIEW_STATUSES),
        metadata={"description": "Only reviews with this status"},
    )
    environment = fields.String(
        load_default=None, metadata={"description": "Only reviews of this environment"}
    )


def _event_id(value: str) -> None:
    try:
        event_position(value)
    except InvalidInput:
        raise ValidationError("must be the id of an event, as this API gave it") from None


def _event_id_field(description: str, **options: object) -> fields.String:
    return fields.String(
        load_default=None,
        validate=_event_id,
        metadata={
            "description": description,
            "pattern": EVENT_ID_PATTERN,
            "example": EVENT_ID_EXAMPLE,
        },
        **options,  # type: ignore[arg-type]
    )


class EventQuerySchema(Schema):
    after = _event_id_field(
        "Answer the events after this id (an event's id, or last_id of the previous "
        "answer). Absent: only events from now on. With text/event-stream, a "
        "Last-Event-ID header takes precedence."
    )
    wait = fields.Integer(
        load_default=0,
        validate=validate.Range(min=0, max=MAX_WAIT),
        metadata={
            "description": "JSON only: seconds (0-30) to wait for the first event when "
            "there is none yet"
        },
    )
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "JSON only: most events in one answer, 1-200"},
    )


class EventHeadersSchema(Schema):
    last_event_id = _event_id_field(
        "text/event-stream only: the id of the last event received, as an EventSource "
        "sends it when it reconnects; the stream replays what came after it",
        data_key="Last-Event-ID",
    )
