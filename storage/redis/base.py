"""Redis storage: every change is applied by one Lua script, every read one round trip.

:class:`BaseRedisStorage` holds every operation, shared by both Redis backends:
:class:`~storage.redis.server.RedisStorage` (one server) and
:class:`~storage.redis.cluster.ClusterStorage`. It is one mixin per concern
(storage/redis/prompts.py, releases.py, rollouts.py, events.py, webhooks.py,
identity.py, login.py, archive.py) over the plumbing of storage/redis/core.py.

Key layout: storage/redis/keys.py. Scripts: storage/redis/lua/*.lua, one per atomic
operation, KEYS/ARGV in each header, registered once per client by
storage/redis/scripts.py and run with EVALSHA (loaded again when a server answers
NOSCRIPT). Each script touches only keys of one org, all under the org's ``{<org>}``
hash tag, so the same scripts run on Redis Cluster.

The release rules are the release engine's (storage/release): a release change loads
one prompt's state (load_state.lua), the engine decides, and apply_change.lua writes
the change only while that state is unchanged, else the backend loads and decides
again (:meth:`storage.redis.core.RedisCore._release`). Other scripts answer an error
marker that :func:`storage.redis.core.check` raises as the typed error. Any
connection-level failure becomes :class:`~storage.errors.StorageUnavailable` without
host details.
"""

from __future__ import annotations

from storage.interface import Storage
from storage.redis.archive import RedisArchive
from storage.redis.core import ClientT
from storage.redis.events import RedisEvents
from storage.redis.identity import RedisIdentity
from storage.redis.login import RedisLogin
from storage.redis.rollouts import RedisRollouts
from storage.redis.usage import RedisUsage
from storage.redis.webhooks import RedisWebhooks


class BaseRedisStorage(
    RedisRollouts[ClientT],
    RedisUsage[ClientT],
    RedisEvents[ClientT],
    RedisWebhooks[ClientT],
    RedisIdentity[ClientT],
    RedisLogin[ClientT],
    RedisArchive[ClientT],
    Storage,
):
    """Every operation of both Redis backends; they differ only through the override
    points of :class:`storage.redis.core.RedisCore`."""
