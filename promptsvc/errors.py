"""Errors the service's rules raise, below the HTTP layer.

promptsvc.actions and promptsvc.auth raise these; each caller's error mapping turns them
into its answer (promptsvc.api.errors: a JSON error, promptsvc.console.errors: a page).

Exception tree::

    PromptsvcError
    └── Forbidden    a principal whose role is too low (API: 403)
"""

from __future__ import annotations


class PromptsvcError(Exception):
    """The root of the errors promptsvc's rules raise."""


class Forbidden(PromptsvcError):
    """The principal is verified, but its role does not include ``needed_role``."""

    def __init__(self, needed_role: str) -> None:
        super().__init__("forbidden")
        self.needed_role = needed_role
