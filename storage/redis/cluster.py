"""Redis Cluster storage: ``redis+cluster://host:port[,host:port...][?options]``
(docs/deployment.md, "Redis Cluster").

The Redis backends' operations on redis-py's ``RedisCluster``. Every key of one org
carries the org's hash tag (storage/redis/keys.py), so each Lua script touches one slot
and orgs spread over the primaries. What differs from one server is given through
RedisCore's override points: scripts that reload on the node that answered NOSCRIPT
(:class:`SlotScript`), version reads on a replica or a read lane to the slot's primary,
readiness while one primary is down, and the rate limiter on the same nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster
from redis.commands.core import Script
from redis.exceptions import AskError, NoScriptError, RedisClusterException, SlotNotCoveredError
from redis.typing import EncodableT, KeyT

from storage.errors import StorageUnavailable
from storage.records import RateLimitSettings
from storage.redis import keys
from storage.redis.base import BaseRedisStorage
from storage.redis.core import NO_RETRY, UNAVAILABLE, unreachable
from storage.redis.read_lane import ReadLane
from storage.times import Clock, utcnow

SCHEME = "redis+cluster"
DEFAULT_PORT = 6379
DEFAULT_TIMEOUT = 0.25
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_url(url: str) -> dict[str, Any]:
    """The parts of a ``redis+cluster://`` URL: ``nodes`` [(host, port)], ``username``,
    ``password``, ``read_from_replicas``, ``socket_timeout``, ``socket_connect_timeout``.

    Raises ValueError naming what is wrong (unknown options are refused, not ignored:
    a misspelt option would otherwise silently change nothing).
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != SCHEME:
        raise ValueError(f"not a {SCHEME}:// URL")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    nodes = [_host_port(item) for item in hostlist.split(",")]
    if parts.path not in ("", "/", "/0"):
        raise ValueError("Redis Cluster has only database 0: drop the path from the URL")
    options: dict[str, Any] = {
        "nodes": nodes,
        "username": unquote(username) or None,
        "password": unquote(password) or None,
        "read_from_replicas": False,
        "socket_timeout": DEFAULT_TIMEOUT,
        "socket_connect_timeout": DEFAULT_TIMEOUT,
    }
    for name, values in parse_qs(parts.query, keep_blank_values=True).items():
        if name not in _OPTIONS:
            raise ValueError(f"unknown {SCHEME} option {name!r}: use one of {', '.join(_OPTIONS)}")
        options[name] = _OPTIONS[name](name, values[-1])
    return options


def _host_port(item: str) -> tuple[str, int]:
    """``host[:port]`` or ``[IPv6][:port]``, as urllib reads a URL's netloc."""
    parts = urlsplit("//" + item.strip())
    if not parts.hostname:
        raise ValueError(f"{SCHEME} URL: empty host in {item!r}")
    try:
        port = parts.port
    except ValueError:  # not a number, or over 65535
        port = 0
    if port == 0:
        raise ValueError(f"{SCHEME} URL: bad port in {item!r}")
    return parts.hostname, port or DEFAULT_PORT


def _flag(name: str, value: str) -> bool:
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{SCHEME} option {name} must be true or false, got {value!r}")


def _seconds(name: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 60:
        raise ValueError(f"{SCHEME} option {name} must be seconds in (0, 60], got {value!r}")
    return seconds


# The options a URL may give, each read by its function (ValueError for a bad value).
_OPTIONS = {
    "read_from_replicas": _flag,
    "socket_timeout": _seconds,
    "socket_connect_timeout": _seconds,
}


def _client(options: dict[str, Any], replicas: bool) -> RedisCluster:
    given = ("username", "password", "socket_timeout", "socket_connect_timeout")
    kwargs: dict[str, Any] = {
        "startup_nodes": [ClusterNode(host, port) for host, port in options["nodes"]],
        **{name: options[name] for name in given},
        "decode_responses": True,
        # No resending: a script whose reply was lost would run twice (storage.redis).
        # MOVED/ASK redirections are followed all the same; they are not retries.
        "retry": NO_RETRY,
        # Serve the slots that are served: one primary down must not stop the others.
        "require_full_coverage": False,
    }
    if replicas:
        # This client's connections say READONLY, so replicas answer reads of their slots.
        kwargs["load_balancing_strategy"] = LoadBalancingStrategy.ROUND_ROBIN_REPLICAS
    return RedisCluster(**kwargs)


class SlotScript(Script):
    """A script that, on NOSCRIPT, is loaded on the node that said so, not everywhere.

    redis-py's Script answers NOSCRIPT with SCRIPT LOAD on *every* primary, so while one
    primary is down an org on a healthy shard whose node had forgotten the script (it
    restarted, or is a replica promoted by a failover) would fail too.
    """

    registered_client: RedisCluster

    def __call__(
        self,
        keys: Sequence[KeyT] | None = None,
        args: Iterable[EncodableT] | None = None,
        client: redis.Redis | RedisCluster | None = None,
    ) -> Any:
        if not keys or client is not None:
            return super().__call__(keys, args, client)
        cluster = self.registered_client
        command = ("EVALSHA", self.sha, len(keys), *keys, *(args or ()))
        for _ in range(2):  # the slot may move between NOSCRIPT and SCRIPT LOAD
            try:
                return cluster.execute_command(*command)
            except NoScriptError:
                node = cluster.get_node_from_key(keys[0])
                cluster.execute_command("SCRIPT LOAD", self.script, target_nodes=node)
        return cluster.execute_command(*command)


# What a read on a primary's lane raises when the cluster client must take over.
_REROUTE: tuple[type[Exception], ...] = (*UNAVAILABLE, AskError)

# What a node that cannot answer raises (RedisCluster wraps some of it).
_NO_ANSWER: tuple[type[Exception], ...] = (*UNAVAILABLE, RedisClusterException)


class ClusterStorage(BaseRedisStorage[RedisCluster]):
    """Storage on a Redis Cluster: the Redis backends' scripts, routed by slot."""

    script_class = SlotScript

    def __init__(
        self,
        client: RedisCluster,
        clock: Clock = utcnow,
        replica_client: RedisCluster | None = None,
    ) -> None:
        """Use ``client`` (``decode_responses=True``) for everything; when given, read
        the three read paths through ``replica_client`` (a ``RedisCluster`` with a
        replica ``load_balancing_strategy``) as docs/deployment.md describes."""
        super().__init__(client, clock=clock)
        self.replica_client = replica_client
        self._lanes: dict[str, ReadLane] = {}  # node name -> read lane to that primary

    @classmethod
    def from_url(cls, url: str, clock: Clock = utcnow) -> Self:
        """Connect to the cluster named by ``url`` (docs/deployment.md).

        Raises ValueError for a malformed URL, StorageUnavailable when no node answers.
        """
        options = parse_url(url)
        try:
            client = _client(options, replicas=False)
            replica_client = (
                _client(options, replicas=True) if options["read_from_replicas"] else None
            )
        except RedisClusterException as exc:
            # RedisCluster discovers the slot map at once. "Cannot be connected" caused
            # by a connection error is an outage; anything else (a node without cluster
            # mode, say) is a wrong URL and keeps redis-py's message.
            if not unreachable(exc):
                raise
            raise StorageUnavailable(
                "storage unavailable: no Redis Cluster node answered"
            ) from None
        return cls(client, clock=clock, replica_client=replica_client)

    def ping(self) -> None:
        """Ready when the cluster answers: one primary down fails only its own orgs'
        requests, so readiness asks the primaries in turn until one replies."""
        for node in self.client.get_primaries():
            try:
                self.client.ping(target_nodes=node)
                return
            except _NO_ANSWER:
                continue
        raise StorageUnavailable("storage unavailable")

    def close(self) -> None:
        super().close()
        for lane in self._lanes.values():
            lane.close()
        if self.replica_client is not None:
            self.replica_client.close()

    def rate_limit_settings(self) -> RateLimitSettings:
        """limits' cluster storage on this cluster's nodes, with the client's timeouts
        and credentials (limits opens its own ``RedisCluster``)."""
        nodes = ",".join(f"{node.host}:{node.port}" for node in self.client.get_nodes())
        options: dict[str, Any] = {"key_prefix": keys.RATE_LIMIT_PREFIX}
        given = self.client.get_connection_kwargs()
        for name in ("socket_timeout", "socket_connect_timeout", "username", "password"):
            if given.get(name) is not None:
                options[name] = given[name]
        return RateLimitSettings(f"redis+cluster://{nodes}", options)

    def _read_reply(self, keys_: list[str], args: list[str]) -> Any:
        """read_version.lua on a replica when asked to, else (or when no replica
        answers) over the read lane to the slot's primary."""
        if self.replica_client is not None:
            try:
                return self._read_on_replica(keys_, args)
            except Exception as exc:
                if not unreachable(exc):
                    raise
        try:
            return self._primary_lane(keys_[0])(keys_, args)
        except _REROUTE:
            # A moved slot, a failover, a node down: the cluster client follows the
            # redirection, refreshes its slot map, or fails (StorageUnavailable).
            return self._scripts["read_version"](keys=keys_, args=args)

    def _primary_lane(self, key: str) -> ReadLane:
        """The read lane (storage/redis/read_lane.py) to the primary that serves ``key``'s
        slot, as redis-py's slot map has it."""
        node = self.client.nodes_manager.get_node_from_slot(self.client.keyslot(key))
        lane = self._lanes.get(node.name)
        if lane is None or lane.client is not node.redis_connection:
            if node.redis_connection is None:
                raise SlotNotCoveredError(f"no connection to {node.name} yet")
            if lane is not None:  # redis-py made a new client for the node
                lane.close()
            lane = ReadLane(node.redis_connection, self._scripts["read_version"])
            self._lanes[node.name] = lane
        return lane

    def _read_on_replica(self, keys_: list[str], args: list[str]) -> Any:
        """read_version.lua as EVALSHA_RO on a replica of the keys' slot.

        The node is chosen here, not by redis-py: it would ask a server (COMMAND
        GETKEYS) where EVALSHA_RO's keys are on every call. Replicas do not share the
        primaries' script cache, so a NOSCRIPT loads the script on that node only.
        """
        assert self.replica_client is not None
        client = self.replica_client
        script = self._scripts["read_version"]
        slot = client.keyslot(keys_[0])
        node = client.nodes_manager.get_node_from_slot(
            slot, load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS
        )
        command = ("EVALSHA_RO", script.sha, len(keys_), *keys_, *args)
        try:
            return client.execute_command(*command, target_nodes=node)
        except NoScriptError:
            client.execute_command("SCRIPT LOAD", script.script, target_nodes=node)
            return client.execute_command(*command, target_nodes=node)
