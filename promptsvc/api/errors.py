"""Every error the HTTP API answers, mapped in one place (docs/api.md section 9).

Views and helpers raise; :func:`error_response_for` turns what they raise into
``{"code", "message", "error"}`` bodies (``error`` always equals ``code``; a 400 may add
``errors``; a 409 adds ``reason`` and the fields of that reason, docs/api.md section 9).
Flask calls it as the app's error handler (:func:`register_error_handlers`),
promptsvc.api.reads for the read endpoints. Sources mapped here:

* :class:`ApiError` and its subclasses (raised by the API itself);
* promptsvc.errors.Forbidden: 403 (a valid token whose role is too low), the role
  needed in ``WWW-Authenticate``;
* ``storage`` errors: NotFound 404, Conflict 409 with its ``reason`` and the fields
  it adds (storage/errors.py ``extras``; ReviewRequired and BreakingPromotion with
  their reason as the code too), ReviewForbidden 403 (the message says why),
  InvalidInput 400 (ContractInvalid with ``errors`` by variable or example),
  StorageUnavailable 503;
* promptsvc.webhooks.targets.UnsafeTarget: 400 (a webhook URL that may not be a target);
* promptsvc.events.Saturated: 503 with ``Retry-After`` (the process holds as many event
  streams as it may); promptsvc.events.OverCap: 429 with ``Retry-After`` (the token's
  subject or org holds as many as it may);
* ``identity`` errors: InvalidToken 401 (reason in ``WWW-Authenticate``), InvalidKeyRequest
  and InvalidUserRequest 400;
* werkzeug HTTP exceptions (routing 404/405, 413, webargs' validation errors, ...);
* anything else: 500 with a generic message, the traceback only in the log.

Exception tree::

    ApiError
    ├── BadRequest              400 (a body JSON or UTF-8 cannot represent)
    └── UnsupportedMediaType    415 (a body that is not JSON)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response
from werkzeug.exceptions import HTTPException

from identity.errors import IdentityError, InvalidKeyRequest, InvalidToken, InvalidUserRequest
from promptsvc.errors import Forbidden
from promptsvc.events import OverCap, Saturated
from promptsvc.http import json_response
from promptsvc.webhooks.targets import UnsafeTarget
from storage import (
    Conflict,
    ContractInvalid,
    InvalidInput,
    NotFound,
    ReviewForbidden,
    StorageError,
    StorageUnavailable,
)

log = logging.getLogger(__name__)

# Status -> code for every status the API can answer with an error.
CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
    500: "internal_server_error",
    503: "service_unavailable",
}
# Conflicts whose reason is their code too (sections 18 and 19): a direct promotion
# into a protected environment, and a promotion the promotion check refuses.
OWN_CODES: tuple[str, ...] = ("review_required", "breaking_change")


class ApiError(Exception):
    """An error the API raises itself, carrying its HTTP status."""

    status = 500

    def __init__(self, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})


class BadRequest(ApiError):
    status = 400


class UnsupportedMediaType(ApiError):
    status = 415


def error_response(
    status: int,
    message: str,
    *,
    errors: Mapping[str, list[str]] | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
    code: str | None = None,
) -> Response:
    """The one error body shape of the API; ``extra`` adds fields an error documents
    (ErrorSchema lists every one); ``code`` replaces the status's own."""
    code = code or CODES.get(status) or _code_for(status)
    body: dict[str, Any] = {"code": code, "message": message, "error": code}
    if errors:
        body["errors"] = dict(errors)
    body.update(extra or {})
    response = json_response(body, status)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _code_for(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


def _bearer_challenge(description: str) -> str:
    escaped = description.replace("\\", "\\\\").replace('"', "'")
    return f'Bearer error="invalid_token", error_description="{escaped}"'


# --------------------------------------------------------------------------- handlers


def _handle_api_error(exc: ApiError) -> Response:
    return error_response(exc.status, exc.message, headers=exc.headers)


def _handle_forbidden(exc: Forbidden) -> Response:
    challenge = (
        'Bearer error="insufficient_scope", '
        f'error_description="this endpoint needs the role {exc.needed_role}"'
    )
    return error_response(403, str(exc), headers={"WWW-Authenticate": challenge})


def _handle_storage_error(exc: StorageError) -> Response:
    if isinstance(exc, NotFound):
        return error_response(404, str(exc))
    if isinstance(exc, ReviewForbidden):
        return error_response(403, str(exc))
    if isinstance(exc, Conflict):
        # review_required and breaking_change are codes of their own too.
        code = exc.reason if exc.reason in OWN_CODES else None
        extra = {"reason": exc.reason, **exc.extras()}
        return error_response(409, str(exc), code=code, extra=extra)
    if isinstance(exc, ContractInvalid):
        return error_response(400, str(exc), errors=exc.problems)
    if isinstance(exc, InvalidInput):
        return error_response(400, str(exc))
    if isinstance(exc, StorageUnavailable):
        # The log keeps the cause; the body never names hosts or drivers.
        log.error("storage unavailable: %s", exc)
        return error_response(503, "the service is temporarily unavailable, retry later")
    return _handle_unexpected(exc)


# Seconds a client is told to wait before opening an event stream again.
SATURATED_RETRY_AFTER = 5


def _handle_saturated(exc: Saturated) -> Response:
    log.warning("event stream refused: %s", exc)
    return error_response(
        503,
        "this server holds as many event streams as it may; retry later or elsewhere",
        headers={"Retry-After": str(SATURATED_RETRY_AFTER)},
    )


def _handle_over_cap(exc: OverCap) -> Response:
    log.warning("event stream refused: %s", exc)
    whose = "this token" if exc.scope == "client" else "this organization"
    return error_response(
        429,
        f"{whose} holds {exc.limit} event streams on this server already; close one or retry later",
        headers={"Retry-After": str(SATURATED_RETRY_AFTER)},
    )


def _flatten_webargs(messages: Any) -> tuple[str, dict[str, list[str]]]:
    """webargs nests messages by location ({"json": {"name": [...]}}); clients want fields."""
    errors: dict[str, list[str]] = {}
    if isinstance(messages, Mapping):
        for location, detail in messages.items():
            if isinstance(detail, Mapping):
                for field, field_messages in detail.items():
                    errors[str(field)] = _as_messages(field_messages)
            else:
                errors[f"_{location}"] = _as_messages(detail)
    if list(errors) == ["_json"]:
        return "the request body is not valid JSON", {}
    return "the request is invalid: " + "; ".join(
        f"{field}: {' '.join(msgs)}" for field, msgs in errors.items()
    ), errors


def _as_messages(detail: Any) -> list[str]:
    if isinstance(detail, list) and all(isinstance(m, str) for m in detail):
        return list(detail)
    if isinstance(detail, Mapping):
        # Nested field errors (e.g. tags.3): keep them readable in one list.
        return [f"{key}: {' '.join(_as_messages(value))}" for key, value in detail.items()]
    return [str(detail)]


_HTTP_MESSAGES = {
    404: "no such endpoint: check the path",
    405: "this method is not allowed on this endpoint",
    413: "the request body is larger than 1 MiB",
}


def _handle_http_exception(exc: HTTPException) -> Response:
    status = exc.code or 500
    if status >= 500:
        return _handle_unexpected(exc)
    headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
    data = getattr(exc, "data", None)  # webargs' abort() stores its details here
    if isinstance(data, Mapping) and "messages" in data:
        message, errors = _flatten_webargs(data["messages"])
        headers.update(data.get("headers") or {})
        # webargs' 422 is our 400 (docs/api.md section 9 has no 422).
        return error_response(400, message, errors=errors, headers=headers)
    if status == 400:
        message = "the request is invalid"
    else:
        message = _HTTP_MESSAGES.get(status) or (exc.description or exc.name)
    return error_response(status, message, headers=headers)


def _handle_unexpected(exc: BaseException) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "internal server error")


def _handle_identity_error(exc: IdentityError) -> Response:
    if isinstance(exc, InvalidToken):
        return error_response(
            401, "unauthorized", headers={"WWW-Authenticate": _bearer_challenge(exc.description)}
        )
    if isinstance(exc, InvalidKeyRequest | InvalidUserRequest):
        return error_response(400, str(exc))
    return _handle_unexpected(exc)


def error_response_for(exc: Exception) -> Response:
    """The API's answer to ``exc``, whatever raised it."""
    if isinstance(exc, ApiError):
        return _handle_api_error(exc)
    if isinstance(exc, Forbidden):
        return _handle_forbidden(exc)
    if isinstance(exc, StorageError):
        return _handle_storage_error(exc)
    if isinstance(exc, Saturated):
        return _handle_saturated(exc)
    if isinstance(exc, OverCap):
        return _handle_over_cap(exc)
    if isinstance(exc, UnsafeTarget):
        return error_response(400, f"webhook URL refused: {exc}")
    if isinstance(exc, IdentityError):
        return _handle_identity_error(exc)
    if isinstance(exc, HTTPException):
        return _handle_http_exception(exc)
    return _handle_unexpected(exc)


def register_error_handlers(app: Flask) -> None:
    """Install :func:`error_response_for` on ``app`` (replacing flask-smorest's handlers)."""
    for kind in (HTTPException, Exception):
        app.register_error_handler(kind, error_response_for)
