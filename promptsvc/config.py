"""Service settings, read from ``PROMPTSVC_*`` environment variables (README, "Configuration")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

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
    # once; more are answered 503. Each holds a thread (gunicorn.conf.py sizes the
    # workers' threads from the same variable).
    event_streams: int = 1000
    # Signs the console's session cookies. None: one is generated once and kept in
    # storage, so every worker and host sharing the storage accepts every session.
    secret_key: str | None = None
    # Webhooks may point at http:// and non-public addresses (tests, private networks).
    webhook_allow_private: bool = False

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
        streams_raw = env.get("PROMPTSVC_EVENT_STREAMS", "1000")
        if not streams_raw.isascii() or not streams_raw.isdigit() or int(streams_raw) > 100_000:
            raise ConfigError(
                "PROMPTSVC_EVENT_STREAMS must be a number of streams (0-100000), "
                f"got {streams_raw!r}"
            )
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
            event_streams=int(streams_raw),
            secret_key=secret_key,
            webhook_allow_private=env.get("PROMPTSVC_WEBHOOK_ALLOW_PRIVATE", "") == "1",
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(settings, **given) if given else settings  # type: ignore[arg-type]
