"""Who a verified token speaks for."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    org: str  # from the verified ``iss`` realm, never from the request
    user_id: str  # token ``sub``: the key's service-account user (uuid)
    client_id: str  # token ``azp``
    role: str
    expires_at: int  # token ``exp`` (epoch seconds)
