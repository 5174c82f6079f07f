"""In-process storage: dicts under one lock, for ``promptsvc serve`` and tests.

It gives the same guarantees as the durable backends (storage/sql, storage/redis: the
storage suite runs every case on each), but lives inside one process and keeps nothing
when it exits: gunicorn with several workers needs SQLite (one host), PostgreSQL or
Redis.

One module per concern, each a mixin of one capability of storage/interface over the
state of storage/memory/state.py, all under the one lock of storage/memory/core.py; the
release rules are decided by storage/release and applied by storage/memory/promotion.py.
"""

from __future__ import annotations

from storage.interface import Storage
from storage.memory.archive import MemoryArchive
from storage.memory.events import MemoryEvents
from storage.memory.identity import MemoryIdentity
from storage.memory.login import MemoryLogin
from storage.memory.prompts import MemoryPrompts
from storage.memory.releases import MemoryReleases
from storage.memory.rollouts import MemoryRollouts
from storage.memory.usage import MemoryUsage
from storage.memory.webhooks import MemoryWebhooks

__all__ = ["MemoryStorage"]


class MemoryStorage(
    MemoryPrompts,
    MemoryReleases,
    MemoryRollouts,
    MemoryUsage,
    MemoryEvents,
    MemoryWebhooks,
    MemoryIdentity,
    MemoryLogin,
    MemoryArchive,
    Storage,
):
    """Storage in this process's memory; everything is lost when it exits."""
