"""Service settings, read from ``PROMPTSVC_*`` environment variables (README, "Configuration")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from identity.rate_limits import LOGIN_LIMITS, OFF, TOKEN_LIMITS, RateLimits

MIN_SECRET_KEY_LENGTH = 32
# SQLite in the working directory: a newcomer's data survives a restart.
DEFAULT_STORAGE_URL = "sqlite:///promptsvc.db"
DEFAULT_ISSUER_URL = "http://localhost:8000"


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    storage_url: str = DEFAULT_STORAGE_URL
    issuer_url: str = DEFAULT_ISSUER_URL
    signing_key_file: str | None = None
    token_lifetime: int = 300
    bootstrap_file: str | None = None
    # Reverse proxies in front of the app whose X-Forwarded-* headers are trusted (0:
    # none). Without it, behind a proxy every client shares the proxy's address, and so
    # the per-IP token rate limit.
    trusted_proxies: int = 0
    # Event streams and waiting long polls (GET /api/v1/events) one process holds at
    # once; more are answered 503. Each is a coroutine of the process's stream loop
    # (promptsvc.streaming), or a thread where its connection cannot be handed over.
    event_streams: int = 1000
    # Of those, what one token subject and one org may hold (None: a quarter and a half
    # of event_streams), so that one key cannot deny every other org its streams.
    event_streams_per_client: int | None = None
    event_streams_per_org: int | None = None
    # Signs the console's session cookies. None: one is generated once and kept in
    # storage, so every worker and host sharing the storage accepts every session.
    secret_key: str | None = None
    # Webhooks may point at http:// and non-public addresses (tests, private networks).
    webhook_allow_private: bool = False
    # The token endpoints' and people's sign-in rate limits (identity.ratelimit).
    token_rate_limits: RateLimits = TOKEN_LIMITS
    login_rate_limits: RateLimits = LOGIN_LIMITS

    @property
    def client_streams(self) -> int:
        """Event streams one token subject may hold in one process."""
        if self.event_streams_per_client is not None:
            return self.event_streams_per_client
        return max(1, self.event_streams // 4) if self.event_streams else 0

    @property
    def org_streams(self) -> int:
        """Event streams one org may hold in one process."""
        if self.event_streams_per_org is not None:
            return self.event_streams_per_org
        return max(1, self.event_streams // 2) if self.event_streams else 0

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        default_issuer_url: str = DEFAULT_ISSUER_URL,
        **overrides: object,
    ) -> Settings:
        """Settings from the environment; keyword overrides (CLI flags) win when not None.

        ``default_issuer_url`` stands in for an unset PROMPTSVC_ISSUER_URL (``promptsvc
        serve`` passes the address it listens on).
        """
        env = os.environ if environ is None else environ
        lifetime_raw = env.get("PROMPTSVC_TOKEN_LIFETIME", "300")
        try:
            lifetime = int(lifetime_raw)
        except ValueError:
            raise ConfigError(
                f"PROMPTSVC_TOKEN_LIFETIME must be a whole number of seconds, got {lifetime_raw!r}"
            ) from None
        if not 1 <= lifetime <= 86400:
            raise ConfigError("PROMPTSVC_TOKEN_LIFETIME must be between 1 and 86400 seconds")
        proxies_raw = env.get("PROMPTSVC_TRUSTED_PROXIES", "0")
        if not proxies_raw.isascii() or not proxies_raw.isdigit() or int(proxies_raw) > 10:
            raise ConfigError(
                f"PROMPTSVC_TRUSTED_PROXIES must be a number of proxies (0-10), got {proxies_raw!r}"
            )
        streams = _streams(env, "PROMPTSVC_EVENT_STREAMS", "1000")
        per_client = _streams(env, "PROMPTSVC_EVENT_STREAMS_PER_CLIENT", None)
        per_org = _streams(env, "PROMPTSVC_EVENT_STREAMS_PER_ORG", None)
        secret_key = env.get("PROMPTSVC_SECRET_KEY") or None
        if secret_key is not None and len(secret_key) < MIN_SECRET_KEY_LENGTH:
            raise ConfigError(
                f"PROMPTSVC_SECRET_KEY must be at least {MIN_SECRET_KEY_LENGTH} characters "
                "(for example the output of: python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))'); leave it unset to have one kept in storage"
            )
        settings = cls(
            storage_url=env.get("PROMPTSVC_STORAGE_URL", DEFAULT_STORAGE_URL),
            issuer_url=(env.get("PROMPTSVC_ISSUER_URL") or default_issuer_url).rstrip("/"),
            signing_key_file=env.get("PROMPTSVC_SIGNING_KEY_FILE") or None,
            token_lifetime=lifetime,
            bootstrap_file=env.get("PROMPTSVC_BOOTSTRAP_FILE") or None,
            trusted_proxies=int(proxies_raw),
            event_streams=streams if streams is not None else 1000,
            event_streams_per_client=per_client,
            event_streams_per_org=per_org,
            secret_key=secret_key,
            webhook_allow_private=env.get("PROMPTSVC_WEBHOOK_ALLOW_PRIVATE", "") == "1",
            token_rate_limits=_rate_limits(
                env, "PROMPTSVC_TOKEN_RATE_LIMIT", "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP", TOKEN_LIMITS
            ),
            login_rate_limits=_rate_limits(
                env, "PROMPTSVC_LOGIN_RATE_LIMIT", "PROMPTSVC_LOGIN_RATE_LIMIT_PER_IP", LOGIN_LIMITS
            ),
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(settings, **given) if given else settings  # type: ignore[arg-type]


def _streams(env: Mapping[str, str], name: str, default: str | None) -> int | None:
    """A number of event streams from ``name`` (0-100000); None when unset and no default."""
    raw = env.get(name) or default
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or int(raw) > 100_000:
        raise ConfigError(f"{name} must be a number of streams (0-100000), got {raw!r}")
    return int(raw)


def _rate_limits(
    env: Mapping[str, str], per_account: str, per_ip: str, default: RateLimits
) -> RateLimits:
    """The two limits named by ``per_account`` and ``per_ip``: each unset one is the
    default's, ``off`` turns one off."""
    values: list[str | None] = []
    for name, fallback in ((per_account, default.per_account), (per_ip, default.per_ip)):
        value = env.get(name, "").strip()
        values.append(fallback if not value else None if value.lower() == OFF else value)
    try:
        return RateLimits(*values)
    except ValueError as exc:
        raise ConfigError(f"{per_account} / {per_ip}: {exc}") from None
