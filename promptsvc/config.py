"""Service settings, read from ``PROMPTSVC_*`` environment variables (CONTRACT 2)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable."""


@dataclass(frozen=True, slots=True)
class Settings:
    storage_url: str = "memory://"
    issuer_url: str = "http://localhost:8000"
    signing_key_file: str | None = None
    token_lifetime: int = 300
    bootstrap_file: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from the environment; keyword overrides (CLI flags) win when not None."""
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
        settings = cls(
            storage_url=env.get("PROMPTSVC_STORAGE_URL", "memory://"),
            issuer_url=env.get("PROMPTSVC_ISSUER_URL", "http://localhost:8000").rstrip("/"),
            signing_key_file=env.get("PROMPTSVC_SIGNING_KEY_FILE") or None,
            token_lifetime=lifetime,
            bootstrap_file=env.get("PROMPTSVC_BOOTSTRAP_FILE") or None,
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(settings, **given) if given else settings  # type: ignore[arg-type]
