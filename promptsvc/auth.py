"""Bearer verification and role checks for the API's views.

The token is verified by the identity extension (``app.extensions["identity"]``) with
local keys; the org of every request comes only from the verified token. A missing or
bad token raises ``identity.errors.InvalidToken`` (401), a role too low raises
:class:`promptsvc.errors.Forbidden` (403); promptsvc.api.errors maps both.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Protocol, TypeVar

from flask import current_app, g, request

from identity.principal import Principal
from identity.roles import role_includes
from promptsvc.errors import Forbidden

F = TypeVar("F", bound=Callable[..., Any])


class Verifier(Protocol):
    def verify(self, authorization_header: str | None) -> Principal: ...


def authorize(verifier: Verifier, authorization_header: str | None, role: str) -> Principal:
    """The principal of a bearer ``Authorization`` header whose key holds ``role``."""
    principal = verifier.verify(authorization_header)
    if not role_includes(principal.role, role):
        raise Forbidden(role)
    return principal


def authenticate(role: str) -> Principal:
    """Verify the request's bearer token and check that its key holds ``role``."""
    principal = authorize(
        current_app.extensions["identity"], request.headers.get("Authorization"), role
    )
    g.principal = principal
    return principal


def requires(role: str) -> Callable[[F], F]:
    """View decorator: authenticate with ``role`` before anything else runs.

    Put it above ``@blp.arguments`` so that 401/403 come before body validation (400).
    """

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            authenticate(role)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator


def current_principal() -> Principal:
    """The principal :func:`authenticate` verified for this request."""
    principal: Principal = g.principal
    return principal
