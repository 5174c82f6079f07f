"""Who may run an action: the role each needs, checked whatever the caller checked."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar, cast

from identity.principal import Principal
from identity.roles import role_includes
from promptsvc.errors import Forbidden
from promptsvc.http import request_id

P = ParamSpec("P")
R = TypeVar("R")

ROLE_ATTRIBUTE = "required_role"


def requires(role: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """The action needs ``role``: its second argument, the principal, must hold it."""

    def decorator(action: Callable[P, R]) -> Callable[P, R]:
        @wraps(action)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            principal = cast(Principal, args[1])
            if not role_includes(principal.role, role):
                raise Forbidden(role)
            return action(*args, **kwargs)

        setattr(checked, ROLE_ATTRIBUTE, role)
        return checked

    return decorator


def trace(principal: Principal) -> dict[str, str]:
    """Who made a change and in which request: written into its event."""
    return {"actor": principal.user_id, "request_id": request_id()}


def allowed(principal: Principal, action: Callable[..., Any]) -> bool:
    """True when ``principal`` holds the role ``action`` needs."""
    role: str = getattr(action, ROLE_ATTRIBUTE)
    return role_includes(principal.role, role)


# --------------------------------------------------------------------------- prompts
