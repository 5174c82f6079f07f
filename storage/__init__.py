"""Storage backends, chosen by URL scheme (see :func:`storage_from_url`)."""

from __future__ import annotations

from storage.base import (
    ApiKey,
    Clock,
    Event,
    Page,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptVersion,
    SigningKey,
    Storage,
    StorageError,
    utcnow,
)

__all__ = [
    "ApiKey",
    "Event",
    "Page",
    "Promotion",
    "PromotionRecord",
    "Prompt",
    "PromptVersion",
    "SigningKey",
    "Storage",
    "StorageError",
    "storage_from_url",
]


def storage_from_url(url: str, clock: Clock = utcnow) -> Storage:
    """``memory://``, ``redis://host:port/db``, ``rediss://...`` or
    ``redis+cluster://host:port[,host:port...]``."""
    scheme = url.split("://", 1)[0].lower()
    if scheme == "memory":
        from storage.memory import MemoryStorage

        return MemoryStorage(clock=clock)
    if scheme in ("redis", "rediss"):
        from storage.redis import RedisStorage

        return RedisStorage.from_url(url, clock=clock)
    if scheme == "redis+cluster":
        from storage.cluster import ClusterStorage

        return ClusterStorage.from_url(url, clock=clock)
    raise ValueError(
        f"unsupported storage URL scheme {scheme!r}: "
        "use memory://, redis://, rediss:// or redis+cluster://"
    )
