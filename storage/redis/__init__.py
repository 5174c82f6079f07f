"""The Redis backends: one server (:class:`RedisStorage`) and Redis Cluster
(storage/redis/cluster.py), both :class:`BaseRedisStorage` (storage/redis/base.py)."""

from __future__ import annotations

from storage.redis.base import BaseRedisStorage
from storage.redis.server import RedisStorage

__all__ = ["BaseRedisStorage", "RedisStorage"]
