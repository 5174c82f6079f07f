"""The rate limits' values: one :class:`RateLimits` for the token endpoints and one for
people's sign-in, each a pair of flask-limiter limits (identity.ratelimit applies them).

promptsvc.config reads them from the environment (``PROMPTSVC_TOKEN_RATE_LIMIT[_PER_IP]``,
``PROMPTSVC_LOGIN_RATE_LIMIT[_PER_IP]``); :data:`TOKEN_LIMITS` and :data:`LOGIN_LIMITS`
are the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from limits import parse_many

OFF = "off"


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Failed attempts per account and address (``per_account``: an API key's client id,
    or a person's username) and every attempt per address (``per_ip``), in flask-limiter's
    notation (``"30/minute"``, ``"5/second;100/hour"``); None turns a limit off."""

    per_account: str | None
    per_ip: str | None

    def __post_init__(self) -> None:
        for value in (self.per_account, self.per_ip):
            if value is None:
                continue
            try:
                parse_many(value)
            except ValueError:
                raise ValueError(
                    f"invalid rate limit {value!r}: use e.g. '30/minute' or '{OFF}'"
                ) from None

    @property
    def off(self) -> bool:
        return self.per_account is None and self.per_ip is None


TOKEN_LIMITS = RateLimits("30/minute", "300/minute")
LOGIN_LIMITS = RateLimits("10/minute", "60/minute")
NO_LIMITS = RateLimits(None, None)
