"""What the console shows when something goes wrong, mapped in one place.

The console's own blueprint handlers take precedence over the API's JSON handlers for
console pages. What the API answers as ``{"code", "message"}`` the console answers as a
page with a heading people understand and the same message: storage's messages already
name the prompt or version and what rule was broken.

A missing or expired CSRF token is a 400 page that says to reload the form; a role too
low is a 403 page naming the role needed.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, render_template
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from identity.errors import InvalidKeyRequest, InvalidUserRequest
from promptsvc.console.common import needs_role
from promptsvc.errors import Forbidden
from storage import (
    Conflict,
    InvalidInput,
    NotFound,
    ReviewForbidden,
    StorageError,
    StorageUnavailable,
)

log = logging.getLogger(__name__)

HEADINGS = {
    400: "That request could not be used",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed here",
    409: "That change is not possible now",
    413: "Too large",
    429: "Too many requests",
    500: "Something went wrong",
    503: "Temporarily unavailable",
}


def sentence(message: str) -> str:
    """A service message as a sentence: capitalized, ending in a full stop."""
    if not message:
        return message
    message = message[0].upper() + message[1:]
    return message if message.endswith((".", "!", "?")) else message + "."


def error_page(status: int, message: str) -> Response:
    html = render_template(
        "console/error.html",
        status=status,
        heading=HEADINGS.get(status, "Something went wrong"),
        message=message,
    )
    return Response(html, status=status, mimetype="text/html")


# What a person can do about a refusal, by its reason (docs/api.md section 9).
NEXT_STEPS = {
    "frozen": "Create a new version from it to change it.",
    "rollout_running": "Complete or abort the running rollout first.",
    "review_open": "Decide or cancel the review that is open already.",
    "review_decided": "The review's page says how it ended.",
    "nothing_to_roll_back": "The prompt's history lists what each environment held.",
}


def frozen_message(number: int) -> str:
    """Why version ``number`` cannot be edited, and what to do instead."""
    return (
        f"Version {number} is frozen: it has been placed in an environment or reviewed, so "
        f"its content stays as it was. {NEXT_STEPS['frozen']}"
    )


def _storage_error(exc: StorageError) -> Response:
    if isinstance(exc, NotFound):
        return error_page(404, sentence(str(exc)))
    if isinstance(exc, Conflict):
        step = NEXT_STEPS.get(exc.reason)
        return error_page(409, sentence(str(exc)) + (f" {step}" if step else ""))
    if isinstance(exc, ReviewForbidden):  # the two-person rule; the message says why
        return error_page(403, sentence(str(exc)))
    if isinstance(exc, InvalidInput):
        return error_page(400, sentence(str(exc)))
    if isinstance(exc, StorageUnavailable):
        log.error("storage unavailable: %s", exc)
        return error_page(503, "The service cannot reach its storage right now. Try again soon.")
    return _unexpected(exc)


def _forbidden(exc: Forbidden) -> Response:
    return error_page(403, needs_role(exc.needed_role))


def _csrf(exc: CSRFError) -> Response:
    return error_page(
        400,
        "This form has expired or did not come from this console "
        f"({exc.description}). Go back, reload the page and try again.",
    )


def _identity_input(exc: InvalidKeyRequest | InvalidUserRequest) -> Response:
    return error_page(400, sentence(str(exc)))


def _http(exc: HTTPException) -> Response:
    status = exc.code or 500
    if status >= 500:
        return _unexpected(exc)
    message = exc.description or exc.name
    if status == 404 and message.startswith("The requested URL"):
        message = "There is no such page."
    if status == 413:
        message = "The form is larger than the service accepts (1 MiB)."
    return error_page(status, message)


def _unexpected(exc: BaseException) -> Response:
    log.exception("unhandled error in the console", exc_info=exc)
    return error_page(500, "The console could not answer this request; it has been logged.")


def register_error_handlers(bp: Blueprint) -> None:
    """Install the console's error pages on its blueprint (and so on its children)."""
    bp.register_error_handler(CSRFError, _csrf)
    bp.register_error_handler(Forbidden, _forbidden)
    bp.register_error_handler(StorageError, _storage_error)
    bp.register_error_handler(InvalidKeyRequest, _identity_input)
    bp.register_error_handler(InvalidUserRequest, _identity_input)
    bp.register_error_handler(HTTPException, _http)
    bp.register_error_handler(Exception, _unexpected)
