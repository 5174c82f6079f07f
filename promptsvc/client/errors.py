"""Exceptions raised by the SDK, and the one place an HTTP answer becomes one of them.

Exception tree::

    PromptServiceError              every SDK error; .status .code .message .request_id
    ├── AuthenticationError         401: bad credentials, or a token the API refused twice
    ├── PermissionDeniedError       403: the key's role does not allow the call
    ├── NotFoundError               404: no such prompt or version
    │   └── NoProductionVersionError  404: the prompt has no production version
    ├── ServerError                 5xx (after retries)
    ├── TransportError              no answer: refused, reset, timed out, time budget spent
    └── InvalidResponseError        an answer that is not what the API promises

Any other status (400, 409, 429, ...) raises ``PromptServiceError`` itself. ``code`` and
``message`` come from the error body ``{"code", "message", "error"}`` when there is one,
else ``code`` is ``http_<status>`` and ``message`` the reason phrase. ``request_id`` is
the response's ``X-Request-ID``, or the one the SDK sent when none came back.
"""

from __future__ import annotations

import httpx


class PromptServiceError(Exception):
    """Root of every error the SDK raises (besides ``ValueError`` for bad arguments)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id

    def __str__(self) -> str:
        status = "no answer" if self.status is None else f"status {self.status}"
        return f"{self.message} ({status}, code {self.code}, request id {self.request_id})"


class AuthenticationError(PromptServiceError):
    """401: wrong key, revoked key, or a token the API would not accept after a refresh."""


class PermissionDeniedError(PromptServiceError):
    """403: the token is valid but its key lacks the role the call needs."""


class NotFoundError(PromptServiceError):
    """404: the prompt or version does not exist (or belongs to another org)."""


class NoProductionVersionError(NotFoundError):
    """404 on a production lookup of a prompt that has no production version (a prompt
    that does not exist is a plain NotFoundError)."""


# The 404's ``reason`` that says so (docs/api.md section 9).
NO_PRODUCTION_VERSION = "no_production_version"


class ServerError(PromptServiceError):
    """5xx: the service failed; raised once retries are used up."""


class TransportError(PromptServiceError):
    """No answer at all: connection refused or reset, timeout, or the time budget is spent."""


class InvalidResponseError(PromptServiceError):
    """An answer whose body is not what the API promises (for example not JSON)."""


_BY_STATUS: dict[int, type[PromptServiceError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
}


def request_id_of(response: httpx.Response) -> str | None:
    """The request id the service answered with, else the one the SDK sent."""
    return response.headers.get("X-Request-ID") or response.request.headers.get("X-Request-ID")


def json_or_none(response: httpx.Response) -> object:
    """The decoded JSON body, or None when the body is not JSON."""
    try:
        return response.json()
    except ValueError:
        return None


def error_for_response(response: httpx.Response, *, production: bool = False) -> PromptServiceError:
    """The exception for a non-success answer; ``production`` marks a production lookup."""
    status = response.status_code
    code, message = f"http_{status}", response.reason_phrase or f"HTTP {status}"
    body = json_or_none(response)
    if isinstance(body, dict):
        if isinstance(body.get("code"), str):
            code = body["code"]
        elif isinstance(body.get("error"), str):  # a plain RFC 6749 token error
            code = body["error"]
        if isinstance(body.get("message"), str):
            message = body["message"]
    # Only a prompt that exists without a production version; a missing one is NotFound.
    said = body.get("reason") if isinstance(body, dict) else None
    if status == 404 and production and said == NO_PRODUCTION_VERSION:
        cls: type[PromptServiceError] = NoProductionVersionError
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, PromptServiceError)
    return cls(message, status=status, code=code, request_id=request_id_of(response))


def invalid_response(response: httpx.Response, what: str) -> InvalidResponseError:
    """A success status whose body the SDK cannot use."""
    return InvalidResponseError(
        f"unexpected response body: {what}",
        status=response.status_code,
        code="invalid_response",
        request_id=request_id_of(response),
    )
