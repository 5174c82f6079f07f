"""Roles (docs/api.md section 2): each includes the ones before it."""

from __future__ import annotations

SERVICE_READ = "Service Read"
SERVICE_WRITE = "Service Write"
SERVICE_ADMIN = "Service Admin"
ROLES: tuple[str, ...] = (SERVICE_READ, SERVICE_WRITE, SERVICE_ADMIN)
_RANK = {role: rank for rank, role in enumerate(ROLES)}


def role_includes(held: str, needed: str) -> bool:
    """True when a key holding ``held`` may do what needs ``needed``."""
    rank = _RANK.get(held)
    return rank is not None and rank >= _RANK[needed]
