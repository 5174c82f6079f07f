"""Storage on one Redis server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import redis

from storage.records import RateLimitSettings
from storage.redis import keys
from storage.redis.base import BaseRedisStorage
from storage.redis.core import NO_RETRY, guard
from storage.redis.read_lane import ReadLane
from storage.times import Clock, utcnow


class RedisStorage(BaseRedisStorage[redis.Redis]):
    """Storage on one Redis server (``redis://``, ``rediss://``)."""

    def __init__(self, client: redis.Redis, clock: Clock = utcnow) -> None:
        super().__init__(client, clock)
        # The hot read skips redis-py's client layer (storage/redis/read_lane.py).
        self._read_lane = ReadLane(client, self._scripts["read_version"])

    @classmethod
    def from_url(cls, url: str, clock: Clock = utcnow) -> Self:
        """Connect lazily to ``url``. Timeouts default to 1 s (connect) and 2 s (socket)
        so a dead Redis answers fast; ``?socket_timeout=...`` etc. in the URL win."""
        client = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_connect_timeout=1.0,
            socket_timeout=2.0,
            retry=NO_RETRY,
        )
        return cls(client, clock=clock)

    def _read_reply(self, keys_: list[str], args: list[str]) -> Any:
        return self._read_lane(keys_, args)

    def _read_replies(self, keys_: list[str], args: Sequence[list[str]]) -> list[Any]:
        return self._read_lane.many(keys_, args)

    def ping(self) -> None:
        with guard():
            self.client.ping()

    def close(self) -> None:
        super().close()
        self._read_lane.close()

    def rate_limit_settings(self) -> RateLimitSettings:
        """limits' Redis storage on this client's own pool: the same server, db,
        credentials and timeouts, and no second pool."""
        return RateLimitSettings(
            "redis://",
            {"key_prefix": keys.RATE_LIMIT_PREFIX, "connection_pool": self.client.connection_pool},
        )
