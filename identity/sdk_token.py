"""``POST /v1/auth/sdk-token``: exchange an SDK API key for an access token.

docs/api.md section 3.1 describes the endpoint.

The body is JSON ``{account_id, key_id, key_secret}`` (account_id is the org slug,
key_id the client_id). The token is the same as the realm endpoint's, so both verify
through :meth:`identity.core.Identity.verify`. Errors use the API's shape (docs/api.md section 9).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from identity.core import Identity
from identity.errors import InvalidClient
from identity.responses import api_error, no_store

FIELDS = ("account_id", "key_id", "key_secret")


def sdk_token_blueprint(identity: Identity) -> Blueprint:
    """The sdk-token endpoint of ``identity`` as a blueprint."""
    bp = Blueprint("identity_sdk_token", __name__)

    @bp.post("/v1/auth/sdk-token")
    def sdk_token() -> Response:
        data = json_body()
        if data is None:
            return _bad_request(
                "the body must be a JSON object with account_id, key_id and key_secret", {}
            )
        problems = {name: [problem] for name in FIELDS if (problem := _field_problem(data, name))}
        if problems:
            return _bad_request(f"invalid fields: {', '.join(problems)}", problems)
        try:
            token = identity.issue_token(data["account_id"], data["key_id"], data["key_secret"])
        except InvalidClient:
            response = api_error(401, "unauthorized", "unauthorized")
            response.headers["WWW-Authenticate"] = (
                'Bearer realm="promptsvc", '
                'error_description="invalid account_id, key_id or key_secret"'
            )
            return no_store(response)
        body = {name: token[name] for name in ("access_token", "expires_in", "token_type")}
        return no_store(jsonify(body))

    return bp


def json_body() -> dict[str, Any] | None:
    """The request body as a JSON object, else None.

    Parsed whatever the Content-Type says: a body that is not a JSON object is a 400
    either way, and SDKs that forget the header still work. Nesting too deep for the
    parser (``[[[[...]]]]``) is not a JSON object we accept either.
    """
    try:
        data = request.get_json(force=True, silent=True)
    except RecursionError:
        return None
    return data if isinstance(data, dict) else None


def _field_problem(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return "Missing data for required field."
    if not isinstance(value, str):
        return "Not a valid string."
    if "\x00" in value:  # no org, key or secret holds one (nor can PostgreSQL store it)
        return "must not contain a NUL character (\\u0000)"
    return None


def too_many_requests(retry_after: int) -> Response:
    """429 for a rate-limited token request (identity.ratelimit), in the API's error shape."""
    response = api_error(429, "too_many_requests", "too many token requests, retry later")
    response.headers["Retry-After"] = str(retry_after)
    return no_store(response)


def _bad_request(message: str, errors: dict[str, list[str]]) -> Response:
    return no_store(api_error(400, "bad_request", message, errors))
