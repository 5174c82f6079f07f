"""Redis storage: every change is one Lua script, every read one round trip.

:class:`BaseRedisStorage` holds every operation, shared by both Redis backends:
:class:`RedisStorage` here (one server) and ``ClusterStorage`` (storage/cluster.py).

Key layout: storage/keys.py. Scripts: storage/lua/*.lua, one per atomic operation,
KEYS/ARGV in each header, registered once per client by storage/scripts.py and run with
EVALSHA (loaded again when a server answers NOSCRIPT). Each script touches only keys of
one org, all under the org's ``{<org>}`` hash tag, so the same scripts run on Redis
Cluster.

Lifecycle rules are checked inside the scripts, where no other client can interleave;
a script answers an error marker and :func:`_check` raises the typed error. Any
connection-level failure becomes :class:`StorageUnavailable` without host details.
"""

from __future__ import annotations

import abc
import json
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, Generic, Self, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.retry import Retry

from storage import codec, keys, redis_snapshot, scripts
from storage.base import (
    DELIVERY_HISTORY_SIZE,
    STATUSES,
    UNGUARDED,
    ApiKey,
    ApiKeyExists,
    ApiKeyNotFound,
    AuthorizationCode,
    Clock,
    Delivery,
    DeliveryTask,
    DeviceAlreadyDecided,
    DeviceAuthorization,
    DeviceCodeExists,
    Event,
    EventLogBounds,
    Expected,
    InvalidInput,
    LifecycleError,
    NoProductionVersion,
    NoRollbackTarget,
    OrgNotEmpty,
    OrgSnapshot,
    Page,
    ProductionChanged,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptExists,
    PromptNotFound,
    PromptVersion,
    RateLimitSettings,
    RealmSession,
    RefreshToken,
    RefreshTokenReused,
    SessionNotFound,
    SigningKey,
    Storage,
    StorageUnavailable,
    User,
    UserExists,
    UserNotFound,
    VersionNotFound,
    Webhook,
    WebhookNotFound,
    decode_cursor,
    encode_cursor,
    event_position,
    new_id,
    rfc3339,
    utcnow,
)
from storage.memo import Memo
from storage.read_lane import ReadLane

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

# The message of each lifecycle refusal, by operation and the version's current status.
_REFUSALS = {
    "edit": "version {n} is {status}: only draft content can be edited",
    "promote": "version {n} is {status}: only a draft can be promoted",
    "archive": "version {n} is {status}: only a draft can be archived",
    "archive/published": "version {n} is published: promote another version instead",
    "unarchive": "version {n} is {status}: only an archived version can be unarchived",
    "delete": "version {n} is published: promote another version before deleting it",
}


@contextmanager
def _guard() -> Iterator[None]:
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


def _check(
    reply: Any,
    prompt_ref: str,
    version_ref: str = "",
    action: str = "",
    expected: Expected = UNGUARDED,
) -> Any:
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
    if marker == "invalid":
        raise InvalidInput(reply[1])
    if marker == "production_changed":
        assert expected is not UNGUARDED  # the scripts only check a guard that was given
        raise ProductionChanged(prompt_ref, expected, _number(reply[1]))
    if marker == "no_target":
        reason, current, target = reply[1:4]
        raise NoRollbackTarget(reason, prompt_ref, _number(current), _number(target))
    if marker == "state":
        status, number = reply[1], reply[2]
        template = _REFUSALS.get(f"{action}/{status}", _REFUSALS[action])
        raise LifecycleError(template.format(n=number, status=status))
    raise RuntimeError(f"unexpected script reply {marker!r}")


def _number(text: str) -> int | None:
    return int(text) if text != "" else None


def _version(reply: Sequence[Any]) -> PromptVersion:
    return codec.version_of(reply[1], reply[2])


def _promotion(reply: Sequence[Any]) -> Promotion:
    return Promotion(_version(reply), codec.record(codec.fields(reply[3])))


class BaseRedisStorage(Storage, Generic[ClientT]):
    """The Redis backends' shared body: every operation is a Lua script (or, for a few
    reads and the signing keys, plain commands) sent through one redis-py client.

    :class:`RedisStorage` (one server) and ``ClusterStorage`` (storage/cluster.py) differ
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
        """Every script of storage/lua on ``self.client``, by name (storage/scripts.py)."""

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
        with _guard():
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

    def _now(self) -> str:
        return rfc3339(self.clock())

    # -- prompts

    def create_prompt(
        self,
        org: str,
        name: str,
        prompt_type: str = "text",
        description: str | None = None,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> Prompt:
        now = self.clock()
        prompt = Prompt(new_id("pmt_"), name, prompt_type, description, now, now, None, None)
        self._index_org(org)
        created = self._change_script(
            "create_prompt",
            [keys.names(org), keys.prompt_list(org), keys.prompt(org, prompt.prompt_id)],
            [name, prompt.prompt_id, *codec.prompt_fields(prompt)],
            org,
            actor,
            request_id,
            rfc3339(now),
        )
        if not created:
            raise PromptExists(name)
        return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        reply = _check(self._prompt_script("get_prompt", org, [prompt_ref]), prompt_ref)
        return codec.prompt(reply[1])

    def list_prompts(self, org: str, limit: int = 50, cursor: str | None = None) -> Page[Prompt]:
        after = decode_cursor(cursor) if cursor else ""
        found = self._prompt_script("list_prompts", org, [after, limit + 1], keys.prompt_list(org))
        items = [codec.prompt(summary) for summary in found[:limit]]
        more = len(found) > limit
        return Page(items, encode_cursor(items[-1].name) if more else None)

    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        reply = self._prompt_change(
            "delete_prompt",
            org,
            [prompt_ref],
            actor,
            request_id,
            self._now(),
            keys.prompt_list(org),
        )
        _check(reply, prompt_ref)

    # -- versions

    def create_version(
        self,
        org: str,
        prompt_ref: str,
        content: str,
        created_by: str,
        metadata: dict[str, object] | None = None,
        tags: list[str] | None = None,
        *,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        at = rfc3339(now)
        version_id = new_id("v_")
        meta, tag_list = json.dumps(metadata or {}), list(tags or ())
        as_text, as_chat, not_chat = scripts.variables(content)
        args = [prompt_ref, version_id, content, created_by, meta, json.dumps(tag_list)]
        args += [as_text, as_chat, not_chat, at]
        reply = self._prompt_change("create_version", org, args, created_by, request_id, at)
        _check(reply, prompt_ref)
        prompt = codec.named(codec.PROMPT_OF_VERSION, reply[1])
        variables = as_chat if prompt["prompt_type"] == "chat" else as_text
        # Built here rather than read back: the script would only echo the content.
        return PromptVersion(
            prompt_id=prompt["prompt_id"],
            version_id=version_id,
            name=prompt["name"],
            version=int(reply[2]),
            content=content,
            variables=tuple(json.loads(variables)),
            status="draft",
            prompt_type=prompt["prompt_type"],
            metadata=json.loads(meta),
            tags=tuple(tag_list),
            created_at=now,
            updated_at=now,
            promoted_at=None,
            promoted_by=None,
            created_by=created_by,
        )

    def _read(self, org: str, prompt_ref: str, mode: str, value: str, ref: str) -> PromptVersion:
        """read_version.lua's answer as a PromptVersion, the decoding memoized on every
        stored field of it (storage/memo.py): the same stored version gives the same
        object, so callers can memoize by identity what they derive from it."""
        with _guard():
            reply = self._read_reply(
                [keys.names(org), keys.prompt_prefix(org)], [prompt_ref, mode, value]
            )
        _check(reply, prompt_ref, ref)
        key = (*reply[1], *reply[2])
        version = self._versions.get(key)
        if version is None:
            size = sum(len(value) for value in key if value is not None)
            version = self._versions.put(key, _version(reply), size)
        return version

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, *scripts.selector(version_ref), version_ref)

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, "latest", "", "latest")

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, "production", "", "production")

    def list_versions(
        self,
        org: str,
        prompt_ref: str,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[PromptVersion]:
        before = scripts.position(cursor)
        wanted = "" if status is None else status if status in STATUSES else "-"
        args = [prompt_ref, wanted, before, limit + 1]
        reply = _check(self._prompt_script("list_versions", org, args), prompt_ref)
        items = [codec.version_of(reply[1], values) for values in reply[2][:limit]]
        more = len(reply[2]) > limit
        return Page(items, encode_cursor(str(items[-1].version)) if more else None)

    def _change(
        self,
        script: str,
        action: str,
        org: str,
        prompt_ref: str,
        version_ref: str,
        args: list[Any],
        actor: str | None,
        request_id: str | None,
        now: str,
    ) -> Any:
        """A change script of one version: ARGV starts with the prompt and version refs,
        ``now`` is the script's own time argument and its event's."""
        argv = [prompt_ref, *scripts.selector(version_ref), *args]
        reply = self._prompt_change(script, org, argv, actor, request_id, now)
        return _check(reply, prompt_ref, version_ref, action)

    def edit_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        content: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self._now()
        args = [content, *scripts.variables(content), now]
        reply = self._change(
            "edit_version", "edit", org, prompt_ref, version_ref, args, actor, request_id, now
        )
        return _version(reply)

    def promote(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        promoted_by: str,
        notes: str | None = None,
        archive_previous: bool = True,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
    ) -> Promotion:
        now = self._now()
        args = [
            prompt_ref,
            *scripts.selector(version_ref),
            promoted_by,
            notes or "",
            "0" if notes is None else "1",
            "1" if archive_previous else "0",
            now,
            new_id("h_"),
            scripts.expected(expected_production),
        ]
        reply = self._prompt_change("promote", org, args, promoted_by, request_id, now)
        return _promotion(_check(reply, prompt_ref, version_ref, "promote", expected_production))

    def rollback(
        self,
        org: str,
        prompt_ref: str,
        promoted_by: str,
        notes: str | None = None,
        to_version: int | None = None,
        expected_production: Expected = UNGUARDED,
        *,
        request_id: str | None = None,
    ) -> Promotion:
        now = self._now()
        args = [
            prompt_ref,
            "" if to_version is None else str(to_version),
            promoted_by,
            notes or "",
            "0" if notes is None else "1",
            scripts.expected(expected_production),
            now,
            new_id("h_"),
        ]
        reply = self._prompt_change("rollback", org, args, promoted_by, request_id, now)
        return _promotion(_check(reply, prompt_ref, expected=expected_production))

    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self._now()
        reply = self._change(
            "archive_version",
            "archive",
            org,
            prompt_ref,
            version_ref,
            [now],
            actor,
            request_id,
            now,
        )
        return _version(reply)

    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self._now()
        reply = self._change(
            "unarchive_version",
            "unarchive",
            org,
            prompt_ref,
            version_ref,
            [now],
            actor,
            request_id,
            now,
        )
        return _version(reply)

    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        now = self._now()
        self._change(
            "delete_version", "delete", org, prompt_ref, version_ref, [now], actor, request_id, now
        )

    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        args = [prompt_ref, scripts.position(cursor), limit + 1]
        found = _check(self._prompt_script("list_history", org, args), prompt_ref)[1:]
        page = found[:limit]
        items = [codec.record(codec.fields(flat)) for _, flat in page]
        return Page(items, encode_cursor(str(page[-1][0])) if len(found) > limit else None)

    # -- change events

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        event_position(after)  # InvalidInput for text that is not an id, as on every backend
        with _guard():
            entries: Any = self.client.xrange(keys.events(org), min="(" + after, count=limit)
        return codec.events(entries)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        oldest, newest, trimmed = self._run(
            "event_log_bounds", [keys.events(org)], [self.event_log_size]
        )
        return EventLogBounds(oldest or None, newest or None, trimmed == 1)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        event_position(after)
        if timeout <= 0:
            return self.events_after(org, after, limit)
        deadline = time.monotonic() + timeout
        # Each XREAD blocks for at most half the socket timeout, so that the client
        # never mistakes a wait for a dead server.
        socket_timeout = self._socket_timeout()
        longest = LONGEST_BLOCK if socket_timeout is None else socket_timeout / 2
        while True:
            remaining = deadline - time.monotonic()
            block = min(remaining, longest)
            with _guard():
                # BLOCK 0 would wait forever: at least 1 ms.
                reply: Any = self.client.xread(
                    {keys.events(org): after}, count=limit, block=max(1, int(block * 1000))
                )
            if reply:  # [[stream key, entries]]
                return codec.events(reply[0][1])
            if remaining <= longest:
                return []

    # -- webhooks

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        with _guard():
            # A set of its own slot, outside the script (a script stays in the org's slot).
            self.client.sadd(keys.WEBHOOK_ORGS, org)
        self._run(
            "add_webhook",
            [
                keys.webhooks(org),
                keys.webhook_ids(org),
                keys.webhook_since(org),
                keys.delivery_cursor(org),
                keys.events(org),
                keys.delivery_queue(org),
            ],
            [webhook.webhook_id, codec.webhook_value(webhook)],
        )

    def list_webhooks(self, org: str) -> list[Webhook]:
        with _guard():
            ids: list[str] = self.client.lrange(keys.webhook_ids(org), 0, -1)  # type: ignore[assignment]
            if not ids:
                return []
            found: list[str | None] = self.client.hmget(keys.webhooks(org), ids)  # type: ignore[assignment]
        return [codec.webhook(text) for text in found if text is not None]

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        with _guard():
            text: str | None = self.client.hget(keys.webhooks(org), webhook_id)  # type: ignore[assignment]
        if text is None:
            raise WebhookNotFound(webhook_id)
        return codec.webhook(text)

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        hook_keys = [keys.webhooks(org), keys.webhook_ids(org), keys.webhook_since(org)]
        log = keys.delivery_log(org, webhook_id)
        if not self._run("delete_webhook", [*hook_keys, log], [webhook_id]):
            raise WebhookNotFound(webhook_id)

    def webhook_orgs(self) -> list[str]:
        with _guard():
            return sorted(self.client.smembers(keys.WEBHOOK_ORGS))  # type: ignore[arg-type]

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        job = codec.job_value(
            DeliveryTask("", webhook_id, message_id, None, event_type, 1, payload)
        )
        queue_keys = [keys.webhooks(org), keys.delivery_queue(org)]
        if not self._run("enqueue_message", queue_keys, [webhook_id, job]):
            raise WebhookNotFound(webhook_id)

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        now_ms = int(self.clock().timestamp() * 1000)
        flat = self._run(
            "claim_deliveries",
            [
                keys.events(org),
                keys.webhooks(org),
                keys.webhook_since(org),
                keys.delivery_cursor(org),
                keys.delivery_queue(org),
                keys.delivery_retries(org),
            ],
            [consumer, limit, max(1, int(lease * 1000)), now_ms],
        )
        return [codec.task(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        retry = ["", ""]
        if retry_at is not None:
            again = codec.job_value(replace(task, attempt=task.attempt + 1))
            retry = [str(int(retry_at.timestamp() * 1000)), again]
        self._run(
            "finish_delivery",
            [
                keys.delivery_queue(org),
                keys.delivery_retries(org),
                keys.webhooks(org),
                keys.delivery_log(org, task.webhook_id),
            ],
            [
                task.ticket,
                task.webhook_id,
                codec.delivery_value(attempt),
                DELIVERY_HISTORY_SIZE,
                *retry,
            ],
        )

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        with _guard():
            pipe = self.client.pipeline(transaction=False)
            pipe.hexists(keys.webhooks(org), webhook_id)
            pipe.lrange(keys.delivery_log(org, webhook_id), 0, limit - 1)
            exists, found = pipe.execute()
        if not exists:
            raise WebhookNotFound(webhook_id)
        return [codec.delivery(text) for text in found]

    # -- orgs and API keys

    def org_exists(self, org: str) -> bool:
        with _guard():
            return bool(self.client.exists(keys.api_keys(org), keys.users(org)))

    def add_api_key(self, key: ApiKey) -> None:
        hash_key = keys.api_key(key.org, key.client_id)
        args = [key.client_id, *codec.api_key_fields(key)]
        self._index_org(key.org)
        if not self._run("add_api_key", [keys.api_keys(key.org), hash_key], args):
            raise ApiKeyExists(key.client_id)

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        with _guard():
            found: dict[str, str] = self.client.hgetall(keys.api_key(org, client_id))  # type: ignore[assignment]
        return codec.api_key(found) if found else None

    def list_api_keys(self, org: str) -> list[ApiKey]:
        found = self._run("list_records", [keys.api_keys(org), keys.api_key(org, "")], [])
        return [codec.api_key(codec.fields(flat)) for flat in found]

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        found = self._run("revoke_api_key", [keys.api_key(org, client_id)], [])
        if not found:
            raise ApiKeyNotFound(client_id)
        return codec.api_key(codec.fields(found))

    # -- users

    def add_user(self, user: User) -> None:
        org = user.org
        keys_ = [keys.users(org), keys.user(org, user.username), keys.user_ids(org)]
        self._index_org(org)
        if not self._run(
            "add_user", keys_, [user.username, user.user_id, *codec.user_fields(user)]
        ):
            raise UserExists(user.username)

    def get_user(self, org: str, username: str) -> User | None:
        return self._user(self._hgetall(keys.user(org, username)))

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        found = self._run("get_user_by_id", [keys.user_ids(org), keys.user_prefix(org)], [user_id])
        return self._user(codec.fields(found))

    @staticmethod
    def _user(found: codec.Fields) -> User | None:
        return codec.user(found) if found else None

    def list_users(self, org: str) -> list[User]:
        found = self._run("list_records", [keys.users(org), keys.user_prefix(org)], [])
        return [codec.user(codec.fields(flat)) for flat in found]

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        changes = codec.pairs(
            {
                "role": role,
                "disabled": None if disabled is None else "1" if disabled else "0",
                "password_hash": password_hash,
                "updated_at": self._now(),
            }
        )
        found = self._run("update_user", [keys.user(org, username)], changes)
        if not found:
            raise UserNotFound(username)
        return codec.user(codec.fields(found))

    # -- login flow state

    def _hgetall(self, key: str) -> codec.Fields:
        with _guard():
            return self.client.hgetall(key)  # type: ignore[return-value]

    def _ttl_ms(self, expires_at: datetime) -> int:
        """Milliseconds from the storage clock's now to ``expires_at`` (at least 1: an
        already expired record is stored for a millisecond rather than forever)."""
        return max(1, math.ceil((expires_at - self.clock()).total_seconds() * 1000))

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        key = keys.authorization_code(code.org, code.code_hash)
        args = [self._ttl_ms(code.expires_at), *codec.authorization_code_fields(code)]
        self._run("add_expiring", [key], args)

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        found = self._run("take_authorization_code", [keys.authorization_code(org, code_hash)], [])
        return codec.authorization_code(codec.fields(found)) if found else None

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        org = device.org
        keys_ = [keys.device(org, device.device_code_hash), keys.user_code(org, device.user_code)]
        args = [self._ttl_ms(device.expires_at), device.device_code_hash]
        if not self._run("add_device_authorization", keys_, [*args, *codec.device_fields(device)]):
            raise DeviceCodeExists("device code or user code in use")

    @staticmethod
    def _device(found: Sequence[str]) -> DeviceAuthorization | None:
        return codec.device(codec.fields(found)) if found else None

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        found = self._hgetall(keys.device(org, device_code_hash))
        return codec.device(found) if found else None

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        keys_ = [keys.user_code(org, user_code), keys.device_prefix(org)]
        return self._device(self._run("get_device_authorization_by_user_code", keys_, []))

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        keys_ = [keys.user_code(org, user_code), keys.device_prefix(org)]
        args = ["approved" if approved else "denied", user_id, session_id or ""]
        reply = self._run("decide_device_authorization", keys_, args)
        if reply[0] == "decided":
            raise DeviceAlreadyDecided(f"device authorization is {reply[1]} already")
        return self._device(reply[1]) if reply[0] == "ok" else None

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        key = keys.device(org, device_code_hash)
        return self._device(self._run("poll_device_authorization", [key], [self._now()]))

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        keys_ = [keys.device(org, device_code_hash), keys.user_code_prefix(org)]
        return self._device(self._run("consume_device_authorization", keys_, []))

    def add_session(self, session: RealmSession) -> None:
        key = keys.session(session.org, session.session_id)
        args = [self._ttl_ms(session.expires_at), *codec.session_fields(session)]
        self._run("add_expiring", [key], args)

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        found = self._hgetall(keys.session(org, session_id))
        return codec.session(found) if found else None

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        keys_ = [
            keys.session(org, session_id),
            keys.session_families(org, session_id),
            keys.family_prefix(org),
        ]
        found = self._run("end_session", keys_, [])
        return codec.session(codec.fields(found)) if found else None

    def start_refresh_family(self, token: RefreshToken) -> None:
        org, session_id = token.org, token.session_id or ""
        keys_ = [
            keys.refresh_token(org, token.token_hash),
            keys.family(org, token.family_id),
            keys.session(org, session_id),
            keys.session_families(org, session_id),
        ]
        args = [self._ttl_ms(token.expires_at), token.family_id, session_id]
        fields = codec.refresh_token_fields(replace(token, used=False))
        if not self._run("start_refresh_family", keys_, [*args, *fields]):
            raise SessionNotFound(f"session {session_id} has ended")

    def _refresh_keys(self, org: str, token_hash: str) -> list[str]:
        """KEYS[1..3] of the refresh token scripts (storage/lua/_refresh.lua)."""
        return [
            keys.refresh_token(org, token_hash),
            keys.family_prefix(org),
            keys.session_prefix(org),
        ]

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        found = self._run("get_refresh_token", self._refresh_keys(org, token_hash), [])
        return codec.refresh_token(codec.fields(found)) if found else None

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        keys_ = [*self._refresh_keys(org, token_hash), keys.refresh_token(org, new_token_hash)]
        args = [
            new_token_hash,
            self._now(),
            rfc3339(expires_at),
            self._ttl_ms(expires_at),
            "0" if scope is None else "1",
            scope or "",
        ]
        reply = self._run("rotate_refresh_token", keys_, args)
        if reply[0] == "reused":
            raise RefreshTokenReused(reply[1])
        return codec.refresh_token(codec.fields(reply[1])) if reply[0] == "ok" else None

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        with _guard():
            self.client.delete(keys.family(org, family_id))

    # -- backup and restore

    def _index_org(self, org: str) -> None:
        # Before the org's own write: the set is in another slot, so the two cannot be
        # one step, and this order leaves it a superset (list_orgs checks each org).
        with _guard():
            self.client.sadd(keys.ORGS, org)

    def list_orgs(self) -> list[str]:
        """The set of orgs, less those whose data is gone.

        Orgs written before the set existed are added to it once, by one SCAN over every
        primary for their key lists, user lists and names hashes; ``ps:{_global}:orgs:complete``
        then records that it was done, so later calls read the set alone.
        """
        with _guard():
            if not self.client.exists(keys.ORGS_COMPLETE):
                found = {
                    org
                    for pattern in keys.ORG_INDEX_PATTERNS
                    for key in self.client.scan_iter(match=pattern, count=1000)
                    if (org := keys.org_of_index_key(key)) is not None
                }
                if found:
                    self.client.sadd(keys.ORGS, *found)
                self.client.set(keys.ORGS_COMPLETE, "1")
            orgs: set[str] = self.client.smembers(keys.ORGS)  # type: ignore[assignment]
            return sorted(
                org
                for org in orgs
                if self.client.exists(*redis_snapshot.guards(org))  # one slot: one command
            )

    def export_org(self, org: str) -> OrgSnapshot:
        with _guard():
            names: dict[str, str] = self.client.hgetall(keys.names(org))  # type: ignore[assignment]
        prompts = []
        for name in sorted(names):
            reply = self._prompt_script("export_prompt", org, [names[name]])
            if reply[0] == "ok":  # else deleted since the names were read
                prompts.append(redis_snapshot.prompt_snapshot(reply))
        return OrgSnapshot(
            org, tuple(prompts), tuple(self.list_api_keys(org)), tuple(self.list_users(org))
        )

    def import_org(self, snapshot: OrgSnapshot) -> None:
        org = snapshot.org
        self._index_org(org)
        guards = redis_snapshot.guards(org)
        args = [len(guards), *guards, *redis_snapshot.writes(snapshot)]
        reply = self._run("restore_org", [keys.org_prefix(org)], args)
        if reply[0] != "ok":
            raise OrgNotEmpty(org)

    # -- signing keys

    def signing_keys(self) -> list[SigningKey]:
        with _guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrange(keys.SIGNING_ORDER, 0, -1)
            pipe.hgetall(keys.SIGNING_KEYS)
            kids, by_kid = pipe.execute()
        return [codec.signing_key(by_kid[kid]) for kid in kids if kid in by_kid]

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        signing = [keys.SIGNING_ORDER, keys.SIGNING_KEYS]
        found = self._run(
            "ensure_signing_key", signing, [candidate.kid, codec.signing_key_value(candidate)]
        )
        return codec.signing_key(found)

    def add_signing_key(self, key: SigningKey) -> None:
        with _guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.rpush(keys.SIGNING_ORDER, key.kid)
            pipe.hset(keys.SIGNING_KEYS, key.kid, codec.signing_key_value(key))
            pipe.execute()

    def remove_signing_key(self, kid: str) -> None:
        with _guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrem(keys.SIGNING_ORDER, 0, kid)
            pipe.hdel(keys.SIGNING_KEYS, kid)
            pipe.execute()

    # -- session secret

    def ensure_session_secret(self, candidate: str) -> str:
        with _guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.set(keys.SESSION_SECRET, candidate, nx=True)
            pipe.get(keys.SESSION_SECRET)
            _, kept = pipe.execute()
        return str(kept)


class RedisStorage(BaseRedisStorage[redis.Redis]):
    """Storage on one Redis server (``redis://``, ``rediss://``)."""

    def __init__(self, client: redis.Redis, clock: Clock = utcnow) -> None:
        """Use ``client`` (a redis-py or fakeredis client with ``decode_responses=True``)."""
        super().__init__(client, clock)
        # The hot read skips redis-py's client layer (storage/read_lane.py).
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

    def _register_scripts(self) -> dict[str, Script]:
        # redis-py's Script: on NOSCRIPT it loads the script and runs it again.
        return scripts.register(self.client)

    def _read_reply(self, keys_: list[str], args: list[str]) -> Any:
        """read_version.lua's raw reply, sent over the read lane."""
        return self._read_lane(keys_, args)

    def _socket_timeout(self) -> float | None:
        timeout: float | None = self.client.connection_pool.connection_kwargs.get("socket_timeout")
        return timeout

    def ping(self) -> None:
        with _guard():
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
