"""Response helpers shared by the identity endpoints (realm and sdk-token)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Response, jsonify
from werkzeug.exceptions import BadRequest


class NulCharacter(BadRequest):
    """400: a query or a form holds a NUL (promptsvc.request_guard raises it where the
    request is read); the description says where. Each part answers it in its shape:
    the realm's endpoints as an RFC 6749 error, its pages as a page, the API as the
    API's error."""


def no_store(response: Response) -> Response:
    """Token answers must not be cached by the client or anything in between."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["Pragma"] = "no-cache"
    return response


def api_error(
    status: int, code: str, message: str, errors: Mapping[str, list[str]] | None = None
) -> Response:
    """The API's error body ``{code, message, error}`` (``error`` equals ``code``)."""
    body: dict[str, object] = {"code": code, "message": message, "error": code}
    if errors:
        body["errors"] = dict(errors)
    response = jsonify(body)
    response.status_code = status
    return response
