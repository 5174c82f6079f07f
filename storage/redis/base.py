"""Redis storage: every change one Lua script, every read one round trip.

:class:`BaseRedisStorage` holds every operation of both Redis backends
(storage/redis/server.py, cluster.py): one mixin per concern over storage/redis/core.py.
Keys: storage/redis/keys.py; scripts: storage/redis/lua/*.lua, KEYS/ARGV in each
header, each touching one org's keys (its ``{<org>}`` hash tag), so they run on Redis
Cluster too. A release change loads one prompt's state (load_state.lua), the release
engine decides, and apply_change.lua writes only while that state is unchanged
(:meth:`storage.redis.core.RedisCore._release`).
"""

from __future__ import annotations

from storage.interface import Storage
from storage.redis.archive import RedisArchive
from storage.redis.core import ClientT
from storage.redis.events import RedisEvents
from storage.redis.identity import RedisIdentity
from storage.redis.login import RedisLogin
from storage.redis.releases import RedisReleases
from storage.redis.usage import RedisUsage
from storage.redis.webhooks import RedisWebhooks


class BaseRedisStorage(
    RedisReleases[ClientT],
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
