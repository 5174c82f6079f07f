"""The Redis backends' plumbing: the client, the scripts, and the one place where a
script's reply or a connection failure becomes a typed error."""

from __future__ import annotations

import abc
import json
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from storage import release
from storage.errors import (
    Conflict,
    EnvironmentNotFound,
    NoProductionVersion,
    NothingInEnvironment,
    PromptNotFound,
    ReviewNotFound,
    StorageError,
    StorageUnavailable,
    VersionNotFound,
)
from storage.event_records import Event
from storage.interface import StorageCore
from storage.memo import Memo
from storage.neighbours import StoredNeighbours
from storage.records import PRODUCTION, PromptVersion
from storage.redis import change, codec, keys, scripts, state
from storage.redis.change import Write
from storage.redis.state import Guard, Loaded
from storage.release.methods import ReleaseMethods, Target
from storage.times import Clock, utcnow

if TYPE_CHECKING:
    from storage.interface import Storage

# redis-py resends a command whose reply was lost, and for a script that changes data
# that would apply it twice (a version number skipped, a promotion answered 409). So
# nothing is resent: the caller gets StorageUnavailable (503) and decides. A connection
# Redis closed while idle (a restart) is not a failure here: the pool notices it on
# checkout and reconnects before sending.
NO_RETRY = Retry(NoBackoff(), 0)

ClientT = TypeVar("ClientT", bound="redis.Redis | redis.RedisCluster")

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


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means Redis could not be reached, as opposed to a bad request.

    RedisCluster reports "no node answers" as RedisClusterException("Redis Cluster
    cannot be connected"), which is not a RedisError, chained to the connection error of
    the last node it tried; anything else of that kind is a bug, not an outage.
    """
    if isinstance(exc, UNAVAILABLE):
        return True
    return isinstance(exc, RedisClusterException) and isinstance(exc.__cause__, UNAVAILABLE)


@contextmanager
def guard() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if not unreachable(exc):
            raise
        # No host, port or reason: callers answer 503 and must not leak the address.
        raise StorageUnavailable("storage unavailable") from None


def check(reply: Any, prompt_ref: str, version_ref: str = "", environment: str = PRODUCTION) -> Any:
    """Raise the typed error for a script's error marker, else return the reply."""
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
    raise RuntimeError(f"unexpected script reply {marker!r}")


# Loads of a prompt's state before a change gives up. Each further load means that
# another change of the prompt was applied since the last one: progress for someone, so
# only a storm of concurrent changes of one prompt gets near this.
ATTEMPTS = 50
# Review ids as new_id makes them: anything else names no review (and no other key).
REVIEW_ID = re.compile(r"rv_[0-9a-f]{32}")
RACE = "the prompt kept changing while this change was decided: try again"


def change_args(guards: list[Guard], writes: list[Write], events: Sequence[Event]) -> list[str]:
    """apply_change.lua's guards, writes and events, as its first three arguments."""
    entries = [codec.event_fields(event) for event in events]
    return [json.dumps(guards), json.dumps(writes), json.dumps(entries)]


class RedisCore(ReleaseMethods, StorageCore, Generic[ClientT]):
    """The Redis backends' shared body over one redis-py client. The one-server and
    the cluster backend differ only through the override points below (and
    :meth:`close`, for connections of their own); nothing here asks which one runs."""

    def __init__(self, client: ClientT, clock: Clock = utcnow) -> None:
        """Use ``client`` (a redis-py or fakeredis client with ``decode_responses=True``)."""
        super().__init__(clock)
        if not client.get_encoder().decode_responses:
            raise ValueError(
                f"{type(self).__name__} needs a client made with decode_responses=True"
            )
        self.client = client
        self._scripts: dict[str, Script] = scripts.register(client, self.script_class)
        self._versions: Memo[tuple[str | None, ...], PromptVersion] = Memo()

    # -- override points

    # What runs each script: redis-py's Script loads it again wherever a server
    # answers NOSCRIPT and runs it again (storage/redis/scripts.py).
    script_class: type[Script] = Script

    @abc.abstractmethod
    def _read_reply(self, keys_: list[str], args: list[str]) -> Any:
        """read_version.lua's raw reply for ``keys_`` and ``args``; connection errors
        propagate (``_read`` turns them into StorageUnavailable)."""

    def _read_replies(self, keys_: list[str], args: Sequence[list[str]]) -> list[Any]:
        """read_version.lua's raw replies for ``keys_`` and each of ``args`` (a server
        sends them at once: one round trip)."""
        return [self._read_reply(keys_, one) for one in args]

    def close(self) -> None:
        self.client.close()

    # -- plumbing

    def _run(self, script: str, keys_: list[str], args: list[Any]) -> Any:
        with guard():
            return self._scripts[script](keys=keys_, args=args)

    def _prompt_script(self, script: str, org: str, args: list[Any], *extra: str) -> Any:
        return self._run(script, [keys.names(org), keys.prompt_prefix(org), *extra], args)

    def _load(self, org: str, target: Target, user_id: str | None = None) -> Loaded:
        """The release state of ``target``'s prompt (lua/load_state.lua), with the
        stored user ``user_id``; raises PromptNotFound, VersionNotFound, ReviewNotFound."""
        prompt_ref, version_ref = target.prompt_ref or "", target.version_ref
        mode, value = ("", "") if version_ref is None else scripts.selector(version_ref)
        history, review_id = "1" if target.history else "0", target.review_id or ""
        args = [prompt_ref, mode, value, review_id, history, user_id or ""]
        reply = self._prompt_script("load_state", org, args)
        if reply[0] == "no_review":
            raise ReviewNotFound(review_id)
        check(reply, prompt_ref, version_ref or "")
        return state.loaded(reply, lambda pid, n: self._stored_version(org, pid, "number", str(n)))

    def _stored_version(
        self, org: str, prompt_id: str, mode: str, value: str
    ) -> PromptVersion | None:
        """read_version.lua's version ``value`` (a number or an id, as ``mode`` says) of
        prompt ``prompt_id``; None when there is none."""
        reply = self._prompt_script("read_version", org, [prompt_id, mode, value])
        return self._memoized(reply[1], reply[2]) if reply[0] == "ok" else None

    def _memoized(
        self, prompt_values: Sequence[str | None], version_values: Sequence[str | None]
    ) -> PromptVersion:
        """The version read_version.lua answered as these values, decoded once."""
        key = (*prompt_values, *version_values)
        version = self._versions.get(key)
        if version is None:
            size = sum(len(value) for value in key if value is not None)
            version = self._versions.put(key, codec.version_of(prompt_values, version_values), size)
        return version

    def _release(
        self,
        org: str,
        target: Target,
        kind: type[release.Request],
        actor: release.Actor,
        request_id: str | None,
        **fields: Any,
    ) -> Any:
        """Decide with the release engine on the state lua/load_state.lua reads, and
        apply the change while that state is unchanged (lua/apply_change.lua); when it
        moved in between, load and decide again."""
        if target.review_id is not None:
            if not REVIEW_ID.fullmatch(target.review_id):
                raise ReviewNotFound(target.review_id)
            fields["review_id"] = target.review_id
        user_id = actor.identity if target.approver else None
        now = self.clock()
        for _ in range(ATTEMPTS):
            loaded = self._load(org, target, user_id)
            who = replace(actor, record=loaded.user) if target.approver else actor
            asked = {} if loaded.number is None else {"version": loaded.number}
            request = kind(now=now, actor=who, request_id=request_id, **asked, **fields)
            try:
                decided = release.decide(self._with_neighbours(org, loaded), request)
            except StorageError:
                # A version fetched after the load may be newer than the rest of it.
                if loaded.versions.fetched and not self._apply(org, loaded.guards, [], []):
                    continue
                raise
            writes = change.writes(loaded, decided, now)
            guards = loaded.guards + self._include_guards(org, decided, writes)
            if self._apply(org, guards, writes, decided.events):
                if decided.refusal is not None:
                    raise decided.refusal
                return decided.answer
        raise Conflict(RACE)

    def _include_guards(
        self, org: str, decided: release.Change, writes: list[Write]
    ) -> list[Guard]:
        """An edit's new includes, looked up now and guarded in the step that writes: a
        prompt (or pinned version) deleted since the caller's checks refuses the edit,
        and each included prompt's revision moves (``writes``), so a deletion deciding
        meanwhile decides again, as create_version.lua does for a new version."""
        edited = decided.rewritten()
        names = sorted({i.name for v in edited for i in v.own_includes if i.name != v.name})
        if not names:
            return []
        found = cast("list[str | None]", self.client.hmget(keys.names(org), names))
        pids = dict(zip(names, found, strict=True))
        guards: list[Guard] = []
        kept: set[tuple[str, int | str | None]] = set()
        for name, pid in pids.items():
            guards.append(["names", name, pid])
            if pid is None:
                continue
            rev = cast("str | None", self.client.hget(keys.prompt(org, pid), "rev"))
            guards.append([f"p:{pid}", "rev", rev])
            if rev is not None:  # absent: load_state.lua sets it (and the frozen flags)
                writes.append(["HINCRBY", f"p:{pid}", "rev", "1"])
            kept.add((name, None))
            for include in (i for v in edited for i in v.own_includes if i.name == name):
                number = include.ref
                if isinstance(number, int) and self.client.zrangebyscore(
                    keys.versions(org, pid), number, number
                ):
                    kept.add((name, number))
        for version in edited:
            release.check_included_present(
                version,
                lambda i: (i.name, i.ref if isinstance(i.ref, int) else None) in kept,
            )
        return guards

    def _with_neighbours(self, org: str, loaded: Loaded) -> release.State:
        """``loaded``'s state with the org's other prompts read through this storage's
        reads (what the load brought of them kept)."""
        neighbours = StoredNeighbours(cast("Storage", self), org, includers=loaded.includers)
        return replace(loaded.state, neighbours=neighbours)

    def _apply(
        self, org: str, guards: list[Guard], writes: list[Write], events: Sequence[Event]
    ) -> bool:
        """lua/apply_change.lua: True when the guards held and the writes were made."""
        reply = self._run(
            "apply_change",
            [keys.org_prefix(org), keys.events(org)],
            [*change_args(guards, writes, events), str(self.event_log_size)],
        )
        return bool(reply[0] == "ok")

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
