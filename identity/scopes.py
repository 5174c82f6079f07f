"""Scopes: what each role may ask for, how a request narrows them, what a token allows.

Each role holds a fixed set of API scopes. A token request may ask for fewer (``scope=
prompts:read`` from a Write key gives a read-only token); the token then carries only
those, and the API treats it as the highest role whose scopes it has, never above the
holder's own role. Asking for a scope the role does not hold is ``invalid_scope``.
The OpenID Connect scopes (``openid``, ``profile``, ``email``) are always accepted and
kept in the token's scope; they grant nothing in the API. A request that names no API
scope gets all of its role's.
"""

from __future__ import annotations

from identity.errors import InvalidScope
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE, role_includes

READ = "prompts:read"
WRITE = "prompts:write"
MANAGE_KEYS = "keys:manage"
ROLE_SCOPES: dict[str, tuple[str, ...]] = {
    SERVICE_READ: (READ,),
    SERVICE_WRITE: (READ, WRITE),
    SERVICE_ADMIN: (READ, WRITE, MANAGE_KEYS),
}
API_SCOPES: tuple[str, ...] = ROLE_SCOPES[SERVICE_ADMIN]
OPENID = "openid"
OIDC_SCOPES: tuple[str, ...] = (OPENID, "profile", "email")
SUPPORTED_SCOPES: tuple[str, ...] = (*API_SCOPES, *OIDC_SCOPES)
# A scope parameter longer than every supported scope together, plus separators, is junk.
_MAX_SCOPE_LENGTH = 256


def role_scope(role: str) -> str:
    """Every API scope of ``role``, space-separated."""
    return " ".join(ROLE_SCOPES[role])


def grant(role: str, requested: str | None) -> str:
    """The scope a token for ``role`` carries when ``requested`` was asked for.

    Raises InvalidScope for a scope the role does not hold (or nobody does), and for a
    narrowed set that would allow nothing (API scopes without ``prompts:read``).
    """
    names = _split(requested)
    unknown = [name for name in names if name not in SUPPORTED_SCOPES]
    if unknown:
        raise InvalidScope(f"unknown scope {unknown[0][:40]!r}")
    held = ROLE_SCOPES[role]
    beyond = [name for name in names if name in API_SCOPES and name not in held]
    if beyond:
        raise InvalidScope(f"scope {beyond[0]} is beyond the role {role}")
    asked_api = [name for name in API_SCOPES if name in names]
    if asked_api and effective_role(role, " ".join(asked_api)) is None:
        raise InvalidScope(f"a narrowed scope must include {READ}")
    api = asked_api or list(held)
    oidc = [name for name in OIDC_SCOPES if name in names]
    return " ".join((*oidc, *api))


def narrow(role: str, scope: str) -> str:
    """``scope`` (granted earlier) cut down to what ``role`` holds now: a person whose
    role was lowered since signing in gets tokens of the lower role."""
    names = scope.split()
    held = ROLE_SCOPES[role]
    asked_api = [name for name in API_SCOPES if name in names]
    api = [name for name in asked_api if name in held] if asked_api else list(held)
    oidc = [name for name in OIDC_SCOPES if name in names]
    return " ".join((*oidc, *api))


def effective_role(role: str, scope: str) -> str | None:
    """The highest role, not above ``role``, whose scopes ``scope`` all carries."""
    carried = set(scope.split())
    best = None
    for candidate in ROLES:
        if role_includes(role, candidate) and carried.issuperset(ROLE_SCOPES[candidate]):
            best = candidate
    return best


def _split(requested: str | None) -> list[str]:
    if not requested:
        return []
    if len(requested) > _MAX_SCOPE_LENGTH:
        raise InvalidScope("the scope parameter is too long")
    return requested.split()
