"""In-process storage: dicts under one lock, for ``promptsvc serve`` and tests.

It gives the same guarantees as the Redis backend (the shared conformance suite proves
it), but lives inside one process: gunicorn with several workers must use Redis.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import MutableMapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

from storage.base import (
    DELIVERY_HISTORY_SIZE,
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
    PromptSnapshot,
    PromptVersion,
    RateLimitSettings,
    RealmSession,
    RefreshToken,
    RefreshTokenReused,
    SessionNotFound,
    SigningKey,
    Storage,
    User,
    UserExists,
    UserNotFound,
    VersionNotFound,
    Webhook,
    WebhookNotFound,
    decode_cursor,
    decode_number_cursor,
    encode_cursor,
    event_position,
    message_id,
    new_id,
    rollback_notes,
    utcnow,
    version_number,
)
from storage.templates import TemplateError, extract_variables


@dataclass(slots=True)
class _PromptState:
    prompt: Prompt
    counter: int = 0  # last number handed out; never goes down
    versions: dict[int, PromptVersion] = field(default_factory=dict)  # ascending numbers
    numbers: dict[str, int] = field(default_factory=dict)  # version_id -> number
    production: int | None = None
    history: list[PromotionRecord] = field(default_factory=list)  # oldest first


@dataclass(slots=True)
class _Family:
    session_id: str | None
    expires_at: datetime  # that of its newest token


@dataclass(slots=True)
class _Queued:
    task: DeliveryTask
    claimed_at: float | None = None  # time.monotonic() of the last claim; None: not claimed


@dataclass(slots=True)
class _Hooks:
    """An org's webhooks and delivery queue (see Storage.claim_deliveries)."""

    webhooks: dict[str, Webhook] = field(default_factory=dict)  # oldest first
    since: dict[str, tuple[int, int]] = field(default_factory=dict)  # log position at creation
    cursor: tuple[int, int] = (0, 0)  # the newest event fanned out to messages
    queue: dict[str, _Queued] = field(default_factory=dict)  # by ticket, oldest first
    retries: list[tuple[datetime, DeliveryTask]] = field(default_factory=list)
    deliveries: dict[str, deque[Delivery]] = field(default_factory=dict)  # newest first


@dataclass(slots=True)
class _OrgState:
    by_name: dict[str, _PromptState] = field(default_factory=dict)
    by_id: dict[str, _PromptState] = field(default_factory=dict)
    keys: dict[str, ApiKey] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)  # by username, oldest first
    user_ids: dict[str, str] = field(default_factory=dict)  # user_id -> username
    # Login flow state; each record expires at its expires_at (see _live).
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    devices: dict[str, DeviceAuthorization] = field(default_factory=dict)
    user_codes: dict[str, str] = field(default_factory=dict)  # user_code -> device hash
    sessions: dict[str, RealmSession] = field(default_factory=dict)
    session_families: dict[str, set[str]] = field(default_factory=dict)
    tokens: dict[str, RefreshToken] = field(default_factory=dict)
    families: dict[str, _Family] = field(default_factory=dict)
    events: deque[Event] = field(default_factory=deque)  # oldest first
    last_event: tuple[int, int] = (0, 0)  # position of the newest id handed out
    events_dropped: bool = False  # the log went over its bound at least once
    hooks: _Hooks = field(default_factory=_Hooks)

    def is_empty(self) -> bool:
        """No prompts, keys or users (login state alone does not count)."""
        return not (self.by_name or self.keys or self.users)


class _Expiring(Protocol):
    @property
    def expires_at(self) -> datetime: ...


E = TypeVar("E", bound=_Expiring)

# Expired flow records are dropped when met, and all of them every this many writes, so
# records nobody asks for again (abandoned logins) cannot pile up.
SWEEP_EVERY = 512


def _live(records: MutableMapping[str, E], key: str, now: datetime) -> E | None:
    """``records[key]`` unless absent or expired (an expired one is dropped)."""
    record = records.get(key)
    if record is not None and record.expires_at <= now:
        del records[key]
        return None
    return record


def _variables(content: str, prompt_type: str) -> tuple[str, ...]:
    try:
        return tuple(extract_variables(content, prompt_type))
    except TemplateError as exc:
        raise InvalidInput(str(exc)) from None


class MemoryStorage(Storage):
    """Storage in this process's memory; everything is lost when it exits."""

    def __init__(self, clock: Clock = utcnow) -> None:
        super().__init__(clock)
        # One lock for everything: each operation is short, and one lock makes every
        # multi-record change (promotion above all) atomic for readers too.
        self._lock = threading.Lock()
        # Waiters for new events (wait_for_events) sleep on the same lock.
        self._appended = threading.Condition(self._lock)
        self._orgs: dict[str, _OrgState] = {}
        self._signing: list[SigningKey] = []
        self._session_secret: str | None = None
        self._flow_writes = 0
        self._tickets = itertools.count(1)

    def ping(self) -> None:
        return None

    def rate_limit_settings(self) -> RateLimitSettings:
        # Counters in this process, like the data: limits' own memory storage.
        return RateLimitSettings("memory://")

    # -- lookups (call with the lock held)

    def _state(self, org: str, prompt_ref: str) -> _PromptState:
        org_state = self._orgs.get(org)
        if org_state is not None:
            state = org_state.by_name.get(prompt_ref) or org_state.by_id.get(prompt_ref)
            if state is not None:
                return state
        raise PromptNotFound(prompt_ref)

    @staticmethod
    def _number(state: _PromptState, prompt_ref: str, version_ref: str) -> int:
        number = version_number(version_ref)
        if number is not None:
            if number in state.versions:
                return number
        elif version_ref in state.numbers:
            return state.numbers[version_ref]
        raise VersionNotFound(prompt_ref, version_ref)

    @staticmethod
    def _prompt(state: _PromptState) -> Prompt:
        latest = next(reversed(state.versions)) if state.versions else None
        return replace(state.prompt, latest_version=latest, production_version=state.production)

    def _record(
        self,
        org_state: _OrgState,
        kind: str,
        prompt: Prompt,
        version: PromptVersion | None,
        actor: str | None,
        request_id: str | None,
        now: datetime,
        previous_version: int | None = None,
    ) -> None:
        """Append the event of a change made under the lock, and wake the waiters."""
        # Ids as Redis makes them: milliseconds, and a sequence within one millisecond;
        # never lower than the last one, whatever the clock does.
        ms = int(now.timestamp() * 1000)
        last_ms, last_seq = org_state.last_event
        position = (ms, 0) if ms > last_ms else (last_ms, last_seq + 1)
        org_state.last_event = position
        org_state.events.append(
            Event(
                id=f"{position[0]}-{position[1]}",
                type=kind,
                prompt_id=prompt.prompt_id,
                prompt_name=prompt.name,
                version=version.version if version else None,
                version_id=version.version_id if version else None,
                # A deleted version has no status any more.
                status=version.status if version and kind != "version.deleted" else None,
                previous_version=previous_version,
                actor=actor,
                at=now,
                request_id=request_id,
            )
        )
        while len(org_state.events) > self.event_log_size:
            org_state.events.popleft()
            org_state.events_dropped = True
        self._appended.notify_all()

    @staticmethod
    def _set_status(state: _PromptState, number: int, status: str, now: datetime) -> PromptVersion:
        version = replace(state.versions[number], status=status, updated_at=now)
        state.versions[number] = version
        return version

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
        with self._lock:
            org_state = self._orgs.setdefault(org, _OrgState())
            if name in org_state.by_name:
                raise PromptExists(name)
            prompt = Prompt(new_id("pmt_"), name, prompt_type, description, now, now, None, None)
            state = _PromptState(prompt)
            org_state.by_name[name] = state
            org_state.by_id[prompt.prompt_id] = state
            self._record(org_state, "prompt.created", prompt, None, actor, request_id, now)
            return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        with self._lock:
            return self._prompt(self._state(org, prompt_ref))

    def list_prompts(self, org: str, limit: int = 50, cursor: str | None = None) -> Page[Prompt]:
        after = decode_cursor(cursor) if cursor else None
        with self._lock:
            org_state = self._orgs.get(org)
            names = sorted(org_state.by_name) if org_state else []
            if after is not None:
                names = [n for n in names if n > after]
            page = names[:limit]
            items = [self._prompt(org_state.by_name[n]) for n in page] if org_state else []
        more = len(names) > limit
        return Page(items, encode_cursor(page[-1]) if more else None)

    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            org_state = self._orgs[org]
            del org_state.by_name[state.prompt.name]
            del org_state.by_id[state.prompt.prompt_id]
            self._record(org_state, "prompt.deleted", state.prompt, None, actor, request_id, now)

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
        # A private copy: the caller keeps no handle on a stored (immutable) record.
        meta = json.loads(json.dumps(metadata or {}))
        with self._lock:
            state = self._state(org, prompt_ref)
            prompt = state.prompt
            variables = _variables(content, prompt.prompt_type)
            state.counter += 1
            version = PromptVersion(
                prompt_id=prompt.prompt_id,
                version_id=new_id("v_"),
                name=prompt.name,
                version=state.counter,
                content=content,
                variables=variables,
                status="draft",
                prompt_type=prompt.prompt_type,
                metadata=meta,
                tags=tuple(tags or ()),
                created_at=now,
                updated_at=now,
                promoted_at=None,
                promoted_by=None,
                created_by=created_by,
            )
            state.versions[version.version] = version
            state.numbers[version.version_id] = version.version
            state.prompt = replace(prompt, updated_at=now)
            self._record(
                self._orgs[org], "version.created", prompt, version, created_by, request_id, now
            )
            return version

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            return state.versions[self._number(state, prompt_ref, version_ref)]

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            if not state.versions:
                raise VersionNotFound(prompt_ref, "latest")
            return state.versions[next(reversed(state.versions))]

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        with self._lock:
            state = self._state(org, prompt_ref)
            if state.production is None:
                raise NoProductionVersion(prompt_ref)
            return state.versions[state.production]

    def list_versions(
        self,
        org: str,
        prompt_ref: str,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[PromptVersion]:
        before = decode_number_cursor(cursor)
        with self._lock:
            state = self._state(org, prompt_ref)
            found: list[PromptVersion] = []
            more = False
            for number in reversed(state.versions):
                if before is not None and number >= before:
                    continue
                version = state.versions[number]
                if status is not None and version.status != status:
                    continue
                if len(found) == limit:
                    more = True
                    break
                found.append(version)
        return Page(found, encode_cursor(str(found[-1].version)) if more else None)

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
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            current = state.versions[number]
            if current.status != "draft":
                raise LifecycleError(
                    f"version {number} is {current.status}: only draft content can be edited"
                )
            variables = _variables(content, current.prompt_type)
            version = replace(current, content=content, variables=variables, updated_at=now)
            state.versions[number] = version
            self._record(
                self._orgs[org], "version.updated", state.prompt, version, actor, request_id, now
            )
            return version

    @staticmethod
    def _check_expected(state: _PromptState, prompt_ref: str, expected: Expected) -> None:
        if expected is not UNGUARDED and expected != state.production:
            raise ProductionChanged(prompt_ref, expected, state.production)

    def _publish(
        self,
        org: str,
        state: _PromptState,
        number: int,
        promoted_by: str,
        previous: int | None,
        notes: str | None,
        now: datetime,
        request_id: str | None,
    ) -> Promotion:
        """``number`` becomes production and the promotion is recorded, in the history
        and in the event log (the caller has already moved the previous production
        version out)."""
        version = replace(
            state.versions[number],
            status="published",
            updated_at=now,
            promoted_at=now,
            promoted_by=promoted_by,
        )
        state.versions[number] = version
        record = PromotionRecord(
            history_id=new_id("h_"),
            prompt_id=state.prompt.prompt_id,
            version_number=number,
            promoted_by=promoted_by,
            promoted_at=now,
            previous_version=previous,
            notes=notes,
        )
        state.production = number
        state.history.append(record)
        state.prompt = replace(state.prompt, updated_at=now)
        self._record(
            self._orgs[org],
            "version.promoted",
            state.prompt,
            version,
            promoted_by,
            request_id,
            now,
            previous_version=previous,
        )
        return Promotion(version, record)

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
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            self._check_expected(state, prompt_ref, expected_production)
            status = state.versions[number].status
            if status != "draft":
                raise LifecycleError(f"version {number} is {status}: only a draft can be promoted")
            previous = state.production
            if previous is not None:
                self._set_status(state, previous, "archived" if archive_previous else "draft", now)
            return self._publish(org, state, number, promoted_by, previous, notes, now, request_id)

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
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            self._check_expected(state, prompt_ref, expected_production)
            current = state.production
            if current is None:
                raise NoRollbackTarget("no_production", prompt_ref, None)
            target = to_version
            if target is None:
                # The newest record is the promotion that made ``current`` production.
                target = state.history[-1].previous_version
                if target is None:
                    raise NoRollbackTarget("first", prompt_ref, current)
                if target not in state.versions:
                    raise NoRollbackTarget("deleted", prompt_ref, current, target)
            elif target not in state.versions:
                raise NoRollbackTarget("missing", prompt_ref, current, target)
            if target == current:
                raise NoRollbackTarget("current", prompt_ref, current, target)
            if state.versions[target].promoted_at is None:
                raise NoRollbackTarget("never", prompt_ref, current, target)
            self._set_status(state, current, "archived", now)
            notes = rollback_notes(target) if notes is None else notes
            return self._publish(org, state, target, promoted_by, current, notes, now, request_id)

    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            status = state.versions[number].status
            if status == "published":
                raise LifecycleError(
                    f"version {number} is published: promote another version instead"
                )
            if status != "draft":
                raise LifecycleError(f"version {number} is {status}: only a draft can be archived")
            version = self._set_status(state, number, "archived", now)
            self._record(
                self._orgs[org], "version.archived", state.prompt, version, actor, request_id, now
            )
            return version

    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            status = state.versions[number].status
            if status != "archived":
                raise LifecycleError(
                    f"version {number} is {status}: only an archived version can be unarchived"
                )
            version = self._set_status(state, number, "draft", now)
            self._record(
                self._orgs[org], "version.unarchived", state.prompt, version, actor, request_id, now
            )
            return version

    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        now = self.clock()
        with self._lock:
            state = self._state(org, prompt_ref)
            number = self._number(state, prompt_ref, version_ref)
            version = state.versions[number]
            if version.status == "published":
                raise LifecycleError(
                    f"version {number} is published: promote another version before deleting it"
                )
            del state.versions[number]
            del state.numbers[version.version_id]
            state.prompt = replace(state.prompt, updated_at=now)
            self._record(
                self._orgs[org], "version.deleted", state.prompt, version, actor, request_id, now
            )

    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        # Positions are 1-based promotion sequence numbers; pages go newest first.
        before = decode_number_cursor(cursor)
        with self._lock:
            history = self._state(org, prompt_ref).history
            end = len(history) if before is None else min(before - 1, len(history))
            start = max(end - limit, 0)
            items = list(reversed(history[start:end]))
        return Page(items, encode_cursor(str(start + 1)) if start > 0 else None)

    # -- change events

    def _events_after(self, org: str, after: tuple[int, int], limit: int) -> list[Event]:
        org_state = self._orgs.get(org)
        if org_state is None:
            return []
        found: list[Event] = []
        # Newest first from the end: a follower asks for the few newest events.
        for event in reversed(org_state.events):
            if event_position(event.id) <= after:
                break
            found.append(event)
        found.reverse()
        return found[:limit]

    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        position = event_position(after)
        with self._lock:
            return self._events_after(org, position, limit)

    def event_log_bounds(self, org: str) -> EventLogBounds:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None or not org_state.events:
                return EventLogBounds(None, None)
            events = org_state.events
            return EventLogBounds(events[0].id, events[-1].id, org_state.events_dropped)

    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        position = event_position(after)
        with self._appended:
            found: list[Event] = []

            def arrived() -> bool:
                found[:] = self._events_after(org, position, limit)
                return bool(found)

            self._appended.wait_for(arrived, timeout)
            return found

    # -- webhooks

    def _hooks(self, org: str, webhook_id: str | None = None) -> _Hooks:
        hooks = self._orgs.setdefault(org, _OrgState()).hooks
        if webhook_id is not None and webhook_id not in hooks.webhooks:
            raise WebhookNotFound(webhook_id)
        return hooks

    def add_webhook(self, org: str, webhook: Webhook) -> None:
        with self._lock:
            org_state = self._orgs.setdefault(org, _OrgState())
            hooks = org_state.hooks
            if not hooks.webhooks and not hooks.since:
                hooks.cursor = org_state.last_event  # the first webhook starts from now
            hooks.webhooks[webhook.webhook_id] = webhook
            hooks.since[webhook.webhook_id] = org_state.last_event
            hooks.deliveries[webhook.webhook_id] = deque(maxlen=DELIVERY_HISTORY_SIZE)

    def list_webhooks(self, org: str) -> list[Webhook]:
        with self._lock:
            return list(self._hooks(org).webhooks.values())

    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        with self._lock:
            return self._hooks(org, webhook_id).webhooks[webhook_id]

    def delete_webhook(self, org: str, webhook_id: str) -> None:
        with self._lock:
            hooks = self._hooks(org, webhook_id)
            del hooks.webhooks[webhook_id], hooks.deliveries[webhook_id]

    def webhook_orgs(self) -> list[str]:
        with self._lock:
            return [org for org, state in self._orgs.items() if state.hooks.since]

    def _queue(self, hooks: _Hooks, task: DeliveryTask) -> None:
        ticket = str(next(self._tickets))
        hooks.queue[ticket] = _Queued(replace(task, ticket=ticket))

    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        with self._lock:
            hooks = self._hooks(org, webhook_id)
            self._queue(
                hooks, DeliveryTask("", webhook_id, message_id, None, event_type, 1, payload)
            )

    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        with self._lock:
            hooks = self._hooks(org)
            for event in self._events_after(org, hooks.cursor, limit):
                position = event_position(event.id)
                for webhook in hooks.webhooks.values():
                    if position > hooks.since[webhook.webhook_id] and webhook.wants(event.type):
                        mid = message_id(webhook.webhook_id, event.id)
                        payload = event.to_json()
                        task = DeliveryTask(
                            "", webhook.webhook_id, mid, event.id, event.type, 1, payload
                        )
                        self._queue(hooks, task)
                hooks.cursor = position
            now, due = self.clock(), []
            for retry in hooks.retries:
                if retry[0] <= now:
                    due.append(retry)
                    self._queue(hooks, retry[1])
            for retry in due:
                hooks.retries.remove(retry)
            claimed: list[DeliveryTask] = []
            moment = time.monotonic()
            for ticket, queued in list(hooks.queue.items()):
                if len(claimed) == limit:
                    break
                if queued.task.webhook_id not in hooks.webhooks:
                    del hooks.queue[ticket]
                elif queued.claimed_at is None or moment - queued.claimed_at >= lease:
                    queued.claimed_at = moment
                    claimed.append(queued.task)
            return claimed

    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        with self._lock:
            hooks = self._hooks(org)
            hooks.queue.pop(task.ticket, None)
            history = hooks.deliveries.get(task.webhook_id)
            if history is None:  # deleted meanwhile
                return
            history.appendleft(attempt)
            if retry_at is not None:
                hooks.retries.append((retry_at, replace(task, attempt=task.attempt + 1)))

    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        with self._lock:
            return list(self._hooks(org, webhook_id).deliveries[webhook_id])[:limit]

    # -- orgs and API keys

    def org_exists(self, org: str) -> bool:
        with self._lock:
            org_state = self._orgs.get(org)
            return bool(org_state and (org_state.keys or org_state.users))

    def add_api_key(self, key: ApiKey) -> None:
        with self._lock:
            keys = self._orgs.setdefault(key.org, _OrgState()).keys
            if key.client_id in keys:
                raise ApiKeyExists(key.client_id)
            keys[key.client_id] = key

    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return org_state.keys.get(client_id) if org_state else None

    def list_api_keys(self, org: str) -> list[ApiKey]:
        with self._lock:
            org_state = self._orgs.get(org)
            return list(org_state.keys.values()) if org_state else []

    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        with self._lock:
            org_state = self._orgs.get(org)
            key = org_state.keys.get(client_id) if org_state else None
            if org_state is None or key is None:
                raise ApiKeyNotFound(client_id)
            revoked = replace(key, revoked=True)
            org_state.keys[client_id] = revoked
            return revoked

    # -- users

    def add_user(self, user: User) -> None:
        with self._lock:
            org_state = self._orgs.setdefault(user.org, _OrgState())
            if user.username in org_state.users:
                raise UserExists(user.username)
            org_state.users[user.username] = user
            org_state.user_ids[user.user_id] = user.username

    def get_user(self, org: str, username: str) -> User | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return org_state.users.get(username) if org_state else None

    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        with self._lock:
            org_state = self._orgs.get(org)
            username = org_state.user_ids.get(user_id) if org_state else None
            return org_state.users[username] if org_state and username is not None else None

    def list_users(self, org: str) -> list[User]:
        with self._lock:
            org_state = self._orgs.get(org)
            return list(org_state.users.values()) if org_state else []

    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            user = org_state.users.get(username) if org_state else None
            if org_state is None or user is None:
                raise UserNotFound(username)
            user = replace(
                user,
                role=user.role if role is None else role,
                disabled=user.disabled if disabled is None else disabled,
                password_hash=user.password_hash if password_hash is None else password_hash,
                updated_at=now,
            )
            org_state.users[username] = user
            return user

    # -- login flow state (helpers: call with the lock held)

    def _flow(self, org: str) -> _OrgState:
        """The org's state, for a write that adds a flow record."""
        self._added()
        return self._orgs.setdefault(org, _OrgState())

    def _added(self) -> None:
        self._flow_writes += 1
        if self._flow_writes % SWEEP_EVERY == 0:
            self._sweep(self.clock())

    def _sweep(self, now: datetime) -> None:
        for state in self._orgs.values():
            for records in (state.codes, state.sessions, state.tokens, state.families):
                for key in [k for k, r in records.items() if r.expires_at <= now]:
                    del records[key]
            for device in [d for d in state.devices.values() if d.expires_at <= now]:
                self._drop_device(state, device)
            for sid in [s for s in state.session_families if s not in state.sessions]:
                del state.session_families[sid]

    def add_authorization_code(self, code: AuthorizationCode) -> None:
        with self._lock:
            self._flow(code.org).codes[code.code_hash] = code

    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None or _live(org_state.codes, code_hash, now) is None:
                return None
            return org_state.codes.pop(code_hash)

    # Device authorizations: ``devices`` by device code digest, ``user_codes`` points a
    # user code at its device code digest; both go together.

    def _device(self, org_state: _OrgState, device_code_hash: str) -> DeviceAuthorization | None:
        device = org_state.devices.get(device_code_hash)
        if device is not None and device.expires_at <= self.clock():
            self._drop_device(org_state, device)
            return None
        return device

    @staticmethod
    def _drop_device(org_state: _OrgState, device: DeviceAuthorization) -> None:
        del org_state.devices[device.device_code_hash]
        if org_state.user_codes.get(device.user_code) == device.device_code_hash:
            del org_state.user_codes[device.user_code]

    def _by_user_code(self, org: str, user_code: str) -> DeviceAuthorization | None:
        org_state = self._orgs.get(org)
        device_code_hash = org_state.user_codes.get(user_code) if org_state else None
        if org_state is None or device_code_hash is None:
            return None
        return self._device(org_state, device_code_hash)

    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        with self._lock:
            org_state = self._flow(device.org)
            taken = self._by_user_code(device.org, device.user_code) is not None
            if taken or self._device(org_state, device.device_code_hash) is not None:
                raise DeviceCodeExists("device code or user code in use")
            org_state.devices[device.device_code_hash] = device
            org_state.user_codes[device.user_code] = device.device_code_hash

    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return self._device(org_state, device_code_hash) if org_state else None

    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            return self._by_user_code(org, user_code)

    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        with self._lock:
            device = self._by_user_code(org, user_code)
            if device is None:
                return None
            if device.status != "pending":
                raise DeviceAlreadyDecided(f"device authorization is {device.status} already")
            status = "approved" if approved else "denied"
            decided = replace(device, status=status, user_id=user_id, session_id=session_id)
            self._orgs[org].devices[device.device_code_hash] = decided
            return decided

    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            device = self._device(org_state, device_code_hash) if org_state else None
            if org_state is None or device is None:
                return None
            org_state.devices[device_code_hash] = replace(device, last_polled_at=now)
            return device

    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        with self._lock:
            org_state = self._orgs.get(org)
            device = self._device(org_state, device_code_hash) if org_state else None
            if org_state is None or device is None or device.status != "approved":
                return None
            self._drop_device(org_state, device)
            return device

    # Sessions and refresh families: ``families`` holds each live family (revoking
    # drops it), ``tokens`` every token, used ones too, until it expires; a token
    # counts only while its family lives and, if it has one, its session.

    def add_session(self, session: RealmSession) -> None:
        with self._lock:
            self._flow(session.org).sessions[session.session_id] = session

    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return _live(org_state.sessions, session_id, self.clock()) if org_state else None

    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None:
                return None
            session = _live(org_state.sessions, session_id, self.clock())
            org_state.sessions.pop(session_id, None)
            for family_id in org_state.session_families.pop(session_id, set()):
                org_state.families.pop(family_id, None)
            return session

    def start_refresh_family(self, token: RefreshToken) -> None:
        now = self.clock()
        with self._lock:
            org_state = self._flow(token.org)
            if token.session_id is not None:
                if _live(org_state.sessions, token.session_id, now) is None:
                    raise SessionNotFound(f"session {token.session_id} has ended")
                org_state.session_families.setdefault(token.session_id, set()).add(token.family_id)
            org_state.families[token.family_id] = _Family(token.session_id, token.expires_at)
            org_state.tokens[token.token_hash] = replace(token, used=False)

    def _token(self, org_state: _OrgState, token_hash: str) -> RefreshToken | None:
        """A token whose family (and session, if any) still lives."""
        now = self.clock()
        token = _live(org_state.tokens, token_hash, now)
        if token is None or _live(org_state.families, token.family_id, now) is None:
            return None
        session = token.session_id
        if session is not None and _live(org_state.sessions, session, now) is None:
            return None
        return token

    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        with self._lock:
            org_state = self._orgs.get(org)
            return self._token(org_state, token_hash) if org_state else None

    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        now = self.clock()
        with self._lock:
            org_state = self._orgs.get(org)
            token = self._token(org_state, token_hash) if org_state else None
            if org_state is None or token is None:
                return None
            if token.used:
                del org_state.families[token.family_id]
                raise RefreshTokenReused(token.family_id)
            self._added()
            successor = replace(
                token,
                token_hash=new_token_hash,
                scope=token.scope if scope is None else scope,
                issued_at=now,
                expires_at=expires_at,
            )
            org_state.tokens[token_hash] = replace(token, used=True)
            org_state.tokens[new_token_hash] = successor
            family = org_state.families[token.family_id]
            family.expires_at = max(family.expires_at, expires_at)
            return successor

    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is not None:
                org_state.families.pop(family_id, None)

    # -- backup and restore

    def list_orgs(self) -> list[str]:
        with self._lock:
            return sorted(org for org, state in self._orgs.items() if not state.is_empty())

    def export_org(self, org: str) -> OrgSnapshot:
        with self._lock:
            org_state = self._orgs.get(org)
            if org_state is None:
                return OrgSnapshot(org, (), (), ())
            prompts = tuple(
                PromptSnapshot(
                    prompt=self._prompt(state),
                    next_version=state.counter,
                    versions=tuple(state.versions.values()),
                    history=tuple(state.history),
                )
                for _, state in sorted(org_state.by_name.items())
            )
            keys = tuple(org_state.keys.values())
            return OrgSnapshot(org, prompts, keys, tuple(org_state.users.values()))

    def import_org(self, snapshot: OrgSnapshot) -> None:
        by_name: dict[str, _PromptState] = {}
        for item in snapshot.prompts:
            versions = sorted(item.versions, key=lambda v: v.version)
            published = [v.version for v in versions if v.status == "published"]
            state = _PromptState(
                prompt=replace(item.prompt, latest_version=None, production_version=None),
                counter=item.next_version,
                versions={v.version: v for v in versions},
                numbers={v.version_id: v.version for v in versions},
                production=published[0] if published else None,
                history=list(item.history),
            )
            by_name[item.prompt.name] = state
        with self._lock:
            org_state = self._orgs.setdefault(snapshot.org, _OrgState())
            if not org_state.is_empty():
                raise OrgNotEmpty(snapshot.org)
            # Into the org's own state: whatever login state it holds stays.
            org_state.by_name = by_name
            org_state.by_id = {state.prompt.prompt_id: state for state in by_name.values()}
            org_state.keys = {key.client_id: key for key in snapshot.api_keys}
            org_state.users = {user.username: user for user in snapshot.users}
            org_state.user_ids = {user.user_id: user.username for user in snapshot.users}

    # -- signing keys

    def signing_keys(self) -> list[SigningKey]:
        with self._lock:
            return list(self._signing)

    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        with self._lock:
            if not self._signing:
                self._signing.append(candidate)
            return self._signing[-1]

    def add_signing_key(self, key: SigningKey) -> None:
        with self._lock:
            self._signing.append(key)

    def remove_signing_key(self, kid: str) -> None:
        with self._lock:
            self._signing = [k for k in self._signing if k.kid != kid]

    # -- session secret

    def ensure_session_secret(self, candidate: str) -> str:
        with self._lock:
            if self._session_secret is None:
                self._session_secret = candidate
            return self._session_secret
