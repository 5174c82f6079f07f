"""The storage interface, one capability (an ABC) per concern, combined as
:class:`Storage`:

* :class:`PromptStore` (storage/interface/prompts.py): prompts, versions, promotions;
* :class:`IdentityStore` (identity.py): API keys, users, login flows, signing keys;
* :class:`EventStore` (events.py): the change event log;
* :class:`WebhookStore` (webhooks.py): webhooks and their delivery queue;
* :class:`ReleaseStore` (releases.py): environments and reviews;
* :class:`RolloutStore` (rollouts.py): gradual rollouts and the environment read;
* :class:`UsageStore` (usage.py): usage counters and rollout guards;
* :class:`OrgArchive` (archive.py): an org's data read and written whole.

A backend implements them all, a package with one module per concern: storage/memory
(dicts under one lock), storage/sql (SQLite and PostgreSQL, one transaction per change)
and storage/redis (Redis and Redis Cluster, Lua scripts). The storage suite
(tests/storage) runs every case on each.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.errors import NotFound
from storage.interface.archive import OrgArchive
from storage.interface.core import EVENT_LOG_SIZE, StorageCore
from storage.interface.events import EventStore
from storage.interface.identity import IdentityStore
from storage.interface.prompts import PromptStore
from storage.interface.releases import ReleaseStore
from storage.interface.rollouts import RolloutStore
from storage.interface.usage import UsageStore
from storage.interface.webhooks import (
    DELIVERY_HISTORY_SIZE,
    MAX_WEBHOOKS,
    WebhookStore,
)
from storage.records import PRODUCTION, PromptVersion

__all__ = [
    "DELIVERY_HISTORY_SIZE",
    "EVENT_LOG_SIZE",
    "MAX_WEBHOOKS",
    "EventStore",
    "IdentityStore",
    "OrgArchive",
    "PromptStore",
    "ReleaseStore",
    "RolloutStore",
    "Storage",
    "StorageCore",
    "UsageStore",
    "WebhookStore",
]


class Storage(
    PromptStore,
    ReleaseStore,
    RolloutStore,
    UsageStore,
    IdentityStore,
    EventStore,
    WebhookStore,
    OrgArchive,
):
    """Everything promptsvc keeps. Backends: memory, SQLite, PostgreSQL, Redis, Redis
    Cluster (storage_from_url picks one by its URL)."""

    def read_many(self, org: str, reads: Sequence[tuple[str, str]]) -> list[PromptVersion | None]:
        """The version each ``(prompt name, where)`` names, ``where`` a version number,
        ``production`` or an environment (as get_version, get_production and
        get_in_environment read them), None where there is none: the reads of a
        version's includes. A backend may send them at once (Redis: one round trip)."""
        found: list[PromptVersion | None] = []
        for name, where in reads:
            try:
                if where.isdigit():
                    found.append(self.get_version(org, name, where))
                elif where == PRODUCTION:
                    found.append(self.get_production(org, name))
                else:
                    found.append(self.get_in_environment(org, name, where))
            except NotFound:
                found.append(None)
        return found
