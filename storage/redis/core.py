"""The Redis backends' plumbing: the client, the scripts, and the one place where a
script's reply or a connection failure becomes a typed error."""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Generic, Self, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.retry import Retry

from storage import contracts, lifecycle
from storage.errors import (
    AlreadyApproved,
    Conflict,
    EnvironmentNotFound,
    NoProductionVersion,
    NothingInEnvironment,
    ProductionChanged,
    PromptNotFound,
    ReviewClosed,
    ReviewExists,
    ReviewNotFound,
    ReviewRequired,
    StorageUnavailable,
    VersionNotFound,
)
from storage.interface import StorageCore
from storage.lifecycle import UNGUARDED, Expected
from storage.memo import Memo
from storage.records import PRODUCTION, BreakingChange, Promotion, PromptVersion
from storage.redis import codec, keys, scripts
from storage.times import Clock, rfc3339, utcnow

# redis-py resends a command whose reply was lost, and for a script that changes data
# that would apply it twice (a version number skipped, a promotion answered 409). So
# nothing is resent: the caller gets StorageUnavailable (503) and decides. A connection
# Redis closed while idle (a restart) is not a failure here: the pool notices it on
# checkout and reconnects before sending.
NO_RETRY = Retry(NoBackoff(), 0)

ClientT = TypeVar("ClientT", bound="redis.Redis | redis.RedisCluster")

# The longest XREAD BLOCK when the client has no socket timeout to stay under.
LONGEST_BLOCK = 5.0

# Errors that mean "Redis cannot serve this now", not "this request is wrong".
UNAVAILABLE: tuple[type[Exception], ...] = (
    redis.ConnectionError,  # includes BusyLoadingError (LOADING) and MaxConnectionsError
    redis.TimeoutError,
    redis.exceptions.ClusterDownError,  # includes MasterDownError
    redis.exceptions.SlotNotCoveredError,  # a cluster slot whose primary is gone
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
)


@contextmanager
def guard() -> Iterator[None]:
    try:
        yield
    except UNAVAILABLE:
        # No host, port or reason: callers answer 503 and must not leak the address.
        raise StorageUnavailable("storage unavailable") from None
    except redis.exceptions.RedisClusterException as exc:
        # RedisCluster reports "no node answers" as this (not a RedisError), chained to
        # the connection error; anything else of this kind is a bug, not an outage.
        if isinstance(exc.__cause__, UNAVAILABLE):
            raise StorageUnavailable("storage unavailable") from None
        raise


def check(
    reply: Any,
    prompt_ref: str,
    version_ref: str = "",
    action: str = "",
    expected: Expected = UNGUARDED,
    environment: str = PRODUCTION,
    review_id: str = "",
) -> Any:
    """Raise the typed error for a script's error marker, else return the reply (the
    lifecycle refusals as storage/lifecycle.py words them)."""
    marker = reply[0]
    if marker == "ok":
        return reply
    if marker == "no_prompt":
        raise PromptNotFound(prompt_ref)
    if marker == "no_version":
        raise VersionNotFound(prompt_ref, version_ref)
    if marker == "no_production":
        raise NoProductionVersion(prompt_ref)
    if marker == "no_environment":
        raise EnvironmentNotFound(environment)
    if marker == "nothing_in_environment":
        raise NothingInEnvironment(prompt_ref, environment)
    if marker == "production_changed":
        assert expected is not UNGUARDED  # the scripts only check a guard that was given
        raise ProductionChanged(prompt_ref, expected, _number(reply[1]), environment)
    if marker == "review_required":
        raise ReviewRequired(environment, int(reply[1]))
    if marker == "no_target":
        reason, current, target = reply[1:4]
        raise lifecycle.no_rollback_target(
            reason, prompt_ref, _number(current), _number(target), environment
        )
    if marker == "state":
        raise lifecycle.refusal(action, reply[2], reply[1])
    if marker == "place":
        raise lifecycle.refusal("place", reply[2], reply[1])
    if marker == "place_here":
        raise lifecycle.refusal("place/here", reply[2], reply[1])
    if marker == "no_review":
        raise ReviewNotFound(review_id)
    if marker == "review_exists":
        raise ReviewExists(reply[1])
    if marker == "review_closed":
        raise ReviewClosed(review_id, reply[1])
    if marker == "forbidden":
        raise lifecycle.review_refusal(reply[1], review_id, reply[2])
    if marker == "already_approved":
        raise AlreadyApproved(review_id)
    if marker == "rollout_busy":
        raise lifecycle.rollout_busy(prompt_ref, reply[2], reply[1], reply[3])
    if marker == "candidate":
        raise lifecycle.candidate_refusal(reply[1], reply[2])
    if marker == "no_baseline":
        raise lifecycle.no_baseline(prompt_ref, reply[2], reply[1])
    raise RuntimeError(f"unexpected script reply {marker!r}")


def _number(text: str) -> int | None:
    return int(text) if text != "" else None


# Passes of a script around the promotion check before giving up. Each further pass
# means that another change moved the environment or edited one of the two versions
# between two passes (_common.lua's contract_check): progress for someone, so only a
# storm of concurrent promotions of one prompt gets near this.
CHECK_PASSES = 50


def version_reply(reply: Sequence[Any]) -> PromptVersion:
    return codec.version_of(reply[1], reply[2])


def promotion_reply(reply: Sequence[Any]) -> Promotion:
    return Promotion(version_reply(reply), codec.record(codec.fields(reply[3])))


class RedisCore(StorageCore, Generic[ClientT]):
    """The Redis backends' shared body: every operation is a Lua script (or, for a few
    reads and the signing keys, plain commands) sent through one redis-py client.

    :class:`RedisStorage` (one server) and ``ClusterStorage`` (storage/redis/cluster.py) differ
    only through these override points; nothing here asks which backend it runs as:

    * :meth:`from_url` builds the client, and the backend on it, from a storage URL;
    * :meth:`_register_scripts` gives the script objects :meth:`_run` calls (EVALSHA,
      with the NOSCRIPT reload that suits the deployment);
    * :meth:`_read_reply` sends read_version.lua, the hot read, where it is answered
      fastest (a read lane, a replica);
    * :meth:`ping` says whether the backend can serve, :meth:`rate_limit_settings` points
      the rate limiter at the same servers;
    * :meth:`_socket_timeout` tells how long a blocking read (``XREAD BLOCK``, for
      :meth:`wait_for_events`) may wait on one command;
    * a backend that opens connections besides ``client`` (read lanes) extends
      :meth:`close`.
    """

    def __init__(self, client: ClientT, clock: Clock = utcnow) -> None:
        """Use ``client`` (a redis-py or fakeredis client with ``decode_responses=True``)."""
        super().__init__(clock)
        if not client.get_encoder().decode_responses:
            raise ValueError(
                f"{type(self).__name__} needs a client made with decode_responses=True"
            )
        self.client = client
        self._scripts: dict[str, Script] = self._register_scripts()
        self._versions: Memo[tuple[str | None, ...], PromptVersion] = Memo()

    # -- override points

    @classmethod
    @abc.abstractmethod
    def from_url(cls, url: str, clock: Clock = utcnow) -> Self:
        """The backend on a new client for ``url`` (``storage_from_url`` picks the class
        by the URL's scheme)."""

    @abc.abstractmethod
    def _register_scripts(self) -> dict[str, Script]:
        """Every script of storage/redis/lua on ``self.client``, by name
        (storage/redis/scripts.py)."""

    @abc.abstractmethod
    def _read_reply(self, keys_: list[str], args: list[str]) -> Any:
        """read_version.lua's raw reply for ``keys_`` and ``args``; connection errors
        propagate (``_read`` turns them into StorageUnavailable)."""

    @abc.abstractmethod
    def _socket_timeout(self) -> float | None:
        """Seconds the client waits for any reply (None: no limit)."""

    def close(self) -> None:
        self.client.close()

    # -- plumbing

    def _run(self, script: str, keys_: list[str], args: list[Any]) -> Any:
        with guard():
            return self._scripts[script](keys=keys_, args=args)

    def _prompt_script(self, script: str, org: str, args: list[Any], *extra: str) -> Any:
        return self._run(script, [keys.names(org), keys.prompt_prefix(org), *extra], args)

    def _change_script(
        self,
        script: str,
        keys_: list[str],
        args: list[Any],
        org: str,
        actor: str | None,
        request_id: str | None,
        now: str,
    ) -> Any:
        """A script of scripts.CHANGE_SCRIPTS, with its event's keys and arguments."""
        event_keys, event_args = scripts.event_context(
            org, actor, request_id, now, self.event_log_size
        )
        return self._run(script, [*keys_, *event_keys], [*args, *event_args])

    def _prompt_change(
        self,
        script: str,
        org: str,
        args: list[Any],
        actor: str | None,
        request_id: str | None,
        now: str,
        *extra: str,
    ) -> Any:
        prompt_keys = [keys.names(org), keys.prompt_prefix(org), *extra]
        return self._change_script(script, prompt_keys, args, org, actor, request_id, now)

    def _checked_change(
        self,
        script: str,
        org: str,
        prompt_ref: str,
        args: Callable[[list[BreakingChange]], list[Any]],
        decide: Callable[[list[BreakingChange], Sequence[Any]], bool],
        actor: str | None,
        request_id: str | None,
        now: str,
    ) -> Any:
        """A script that moves a version into an environment, run in passes around the
        promotion check (storage/contracts.py), which runs here, between them: ``args``
        gives the script's ARGV (before the check's fingerprint and outcome) from the
        changes the last check found; ``decide`` turns a check's changes (and the
        script's "check" reply) into its outcome, or raises the refusal. Returns the
        reply of the pass that did not ask for a check."""
        changes: list[BreakingChange] = []
        fingerprint, outcome = "", "0"
        for _ in range(CHECK_PASSES):
            argv = [*args(changes), fingerprint, outcome]
            reply = self._prompt_change(script, org, argv, actor, request_id, now)
            if reply[0] != "check":
                return reply
            fingerprint = reply[1]
            candidate = codec.version_of(reply[2], reply[3])
            current = codec.version_of(reply[2], reply[4])
            changes = contracts.breaking_changes(current, candidate)
            outcome = "1" if decide(changes, reply) else "0"
        raise Conflict(lifecycle.CHECK_RACE.format(prompt=prompt_ref))

    def _now(self) -> str:
        return rfc3339(self.clock())

    def _index_org(self, org: str) -> None:
        # Before the org's own write: the set is in another slot, so the two cannot be
        # one step, and this order leaves it a superset (list_orgs checks each org).
        with guard():
            self.client.sadd(keys.ORGS, org)

    def _hgetall(self, key: str) -> codec.Fields:
        with guard():
            return self.client.hgetall(key)  # type: ignore[return-value]

    def _ttl_ms(self, expires_at: datetime) -> int:
        """Milliseconds from the storage clock's now to ``expires_at`` (at least 1: an
        already expired record is stored for a millisecond rather than forever)."""
        return max(1, math.ceil((expires_at - self.clock()).total_seconds() * 1000))
