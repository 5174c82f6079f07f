"""What identity.grants and identity.endpoints ask of the realm's authorization server,
beyond Authlib's own interface; identity.oauth.RealmServer provides it.

Authlib hands each grant and endpoint the server it is registered on. Typing that
server as :class:`RealmContext` keeps the grants and endpoints below identity.oauth,
which registers them, instead of importing it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from identity.core import Identity
from identity.people import Lifetimes
from storage import DeviceAuthorization


@dataclass
class EndSessionState:
    """What the logout view knows beyond the OAuth parameters: the browser's session
    (from its cookie) and whether the person confirmed on the logout page."""

    cookie_session_id: str | None = None
    confirmed: bool = False
    ended: list[str] = field(default_factory=list)


class RealmContext(Protocol):
    """The realm server as its grants and endpoints see it."""

    identity: Identity
    lifetimes: Lifetimes

    def current_org(self) -> str:
        """The org (realm) named in the current request's URL."""
        ...

    def expiry(self, seconds: int) -> datetime:
        """``seconds`` from now, by storage's clock."""
        ...

    def device_expired(self, record: DeviceAuthorization) -> bool:
        """Whether the device authorization ``record`` is past its lifetime."""
        ...

    def end_session_state(self) -> EndSessionState:
        """This request's logout state (one per request)."""
        ...
