"""Response helpers shared by the identity endpoints (realm and sdk-token)."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Response, jsonify


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
