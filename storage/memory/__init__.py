"""In-process storage: dicts under one lock, for ``promptsvc serve`` and tests. The
durable backends' guarantees (the storage suite runs on each), but one process only,
and nothing kept when it exits. One mixin per concern over storage/memory/state.py;
release changes decided by storage/release, applied by storage/memory/promotion.py."""

from __future__ import annotations

from storage.interface import Storage
from storage.memory.archive import MemoryArchive
from storage.memory.events import MemoryEvents
from storage.memory.identity import MemoryIdentity
from storage.memory.login import MemoryLogin
from storage.memory.prompts import MemoryPrompts
from storage.memory.releases import MemoryReleases
from storage.memory.usage import MemoryUsage
from storage.memory.webhooks import MemoryWebhooks

__all__ = ["MemoryStorage"]


class MemoryStorage(
    MemoryPrompts,
    MemoryReleases,
    MemoryUsage,
    MemoryEvents,
    MemoryWebhooks,
    MemoryIdentity,
    MemoryLogin,
    MemoryArchive,
    Storage,
):
    """Storage in this process's memory; everything is lost when it exits."""
