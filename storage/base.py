"""The storage interface: records, errors and the abstract ``Storage``.

Everything promptsvc keeps goes through :class:`Storage`. These lifecycle rules are part
of the interface, and every backend enforces them itself, inside the atomic step of each
operation (memory under its lock, Redis and Redis Cluster inside the Lua scripts), so no
caller (API, CLI, tests) can break them; the conformance suite in tests/storage checks
them on every backend:

* at most one version per prompt is ``published``;
* only ``draft`` content can be edited;
* a published version cannot be archived or deleted directly;
* version numbers increase from 1 and are never reused, whatever is deleted.

Every prompt operation is scoped by ``org`` (the realm slug): no call can see or touch
another org's data. A prompt is addressed by its name or its ``pmt_`` id
(``prompt_ref``); a version by its ``v_`` id or its number as a decimal string
(``version_ref``).

Each record says once how clients see it: ``to_json()`` gives the JSON-ready dict that
the API and the operator commands send, times spelled by :func:`rfc3339`, fields kept
only for storage (secret hashes, private keys, ``created_by``) left out. It lives on
the record rather than in the API because identity shows records too and may not import
promptsvc. A record whose secret is shown once, at creation, is answered as its
``to_json()`` plus that secret. New records follow the same pattern; the OpenAPI schemas
(promptsvc/api/schemas.py) only document these dicts, and tests/api/test_api_records.py
holds every record's JSON to its schema.

Users and the state of the login flows (authorization codes, device authorizations,
realm sessions, refresh token families) are per org too; see "People and login" on
:class:`Storage`.

Every change of a prompt or a version also appends one :class:`Event` to its org's
event log, in the same atomic step (memory under its lock, Redis inside the change's Lua
script), so the log holds exactly the changes that happened, in the order they
happened. A refused change writes none. The log keeps at least the newest
``event_log_size`` events of each org. Event ids are opaque to clients and increase
within an org; :func:`event_position` orders them.

Exception tree (one root, mapped to HTTP in one place by the API)::

    StorageError
    ├── NotFound                  -> 404
    │   ├── PromptNotFound
    │   ├── VersionNotFound
    │   ├── NoProductionVersion
    │   ├── ApiKeyNotFound
    │   ├── UserNotFound
    │   ├── SessionNotFound       (a refresh family for a session that has ended)
    │   └── WebhookNotFound
    ├── Conflict                  -> 409
    │   ├── PromptExists
    │   ├── ApiKeyExists
    │   ├── UserExists
    │   ├── DeviceCodeExists      (a device or user code already in use)
    │   ├── DeviceAlreadyDecided  (approve/deny of a device authorization not pending)
    │   ├── RefreshTokenReused    (a used refresh token again: its family is revoked)
    │   ├── OrgNotEmpty           (a restore into an org that has data)
    │   ├── LifecycleError        (a transition the rules forbid)
    │   │   └── NoRollbackTarget
    │   └── ProductionChanged     (a guarded promotion or rollback whose expected
    │                              production version is not the current one)
    ├── InvalidInput              -> 400 (bad cursor, chat content that is not a message list)
    └── StorageUnavailable        -> 503 (the backend does not answer)
"""

from __future__ import annotations

import abc
import base64
import binascii
import enum
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar

PromptType = Literal["text", "chat"]
Status = Literal["draft", "published", "archived"]
PROMPT_TYPES: tuple[str, ...] = ("text", "chat")
STATUSES: tuple[str, ...] = ("draft", "published", "archived")
EVENT_TYPES: tuple[str, ...] = (
    "prompt.created",
    "prompt.deleted",
    "version.created",
    "version.updated",
    "version.promoted",
    "version.archived",
    "version.unarchived",
    "version.deleted",
)
# The least number of events the log keeps per org.
EVENT_LOG_SIZE = 10_000
# A webhook subscribed to this gets every event type.
ALL_EVENTS = "*"
# The delivery attempts each webhook keeps in its history, newest first.
DELIVERY_HISTORY_SIZE = 100

T = TypeVar("T")
Clock = Callable[[], datetime]


class _Unguarded(enum.Enum):
    UNGUARDED = "unguarded"


# A promotion or rollback's expectation of the production version at the moment of the
# change: a number, None for "no production version", or UNGUARDED for no check at all
# (None cannot say that: it is an expectation of its own).
UNGUARDED: Final = _Unguarded.UNGUARDED
Expected: TypeAlias = int | Literal[_Unguarded.UNGUARDED] | None


def utcnow() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """``2025-01-02T03:04:05.123456Z``: the one spelling of a time, in JSON and in Redis.

    UTC with a ``Z`` and always six fraction digits, so the strings sort as the times
    do. A naive datetime is taken to be UTC already (the storage clock is UTC).
    """
    if moment.utcoffset():  # None (naive) and zero need no conversion
        moment = moment.astimezone(UTC)
    # isoformat is several times cheaper than strftime; [:26] drops any "+00:00".
    return moment.isoformat(timespec="microseconds")[:26] + "Z"


def new_id(prefix: str) -> str:
    """An opaque unique id: ``pmt_`` (prompt), ``v_`` (version) or ``h_`` (history)."""
    return prefix + uuid.uuid4().hex


def rollback_notes(number: int) -> str:
    """A rollback's notes when none are given (storage/lua/rollback.lua spells the same)."""
    return f"rollback to v{number}"


def encode_cursor(position: str) -> str:
    """Opaque cursor for a listing position (last name, number or sequence returned)."""
    return base64.urlsafe_b64encode(position.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """Inverse of encode_cursor; InvalidInput for text that is not such a cursor.

    Backends still check that the decoded position has the form they expect.
    """
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        return raw.decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("invalid cursor") from None


def decode_number_cursor(cursor: str | None) -> int | None:
    """A cursor holding a version number or promotion sequence; None for no cursor."""
    if not cursor:
        return None
    number = version_number(decode_cursor(cursor))
    if number is None:
        raise InvalidInput("invalid cursor")
    return number


def version_number(version_ref: str) -> int | None:
    """The number a version ref names, or None when it is not one.

    Only ASCII digits count: ``str.isdigit`` alone also accepts superscripts and the
    digits of other scripts.
    """
    if version_ref.isascii() and version_ref.isdigit():
        return int(version_ref)
    return None


# An event id: "<milliseconds>-<sequence>", the form of a Redis stream id, on every backend.
_EVENT_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
_ID_PART_LIMIT = 2**64


def event_position(event_id: str) -> tuple[int, int]:
    """Where ``event_id`` sits in its org's log: ids of one org compare as these do.

    InvalidInput for text that is not an event id.
    """
    match = _EVENT_ID.fullmatch(event_id)
    if match is None:
        raise InvalidInput(f"{event_id[:40]!r} is not an event id")
    position = (int(match[1]), int(match[2]))
    if max(position) >= _ID_PART_LIMIT:
        raise InvalidInput(f"{event_id[:40]!r} is not an event id")
    return position


def message_id(webhook_id: str, event_id: str) -> str:
    """The ``webhook-id`` of an event's message to a webhook: the same on every attempt.

    storage/lua/claim_deliveries.lua spells the same.
    """
    return f"msg_{webhook_id.removeprefix('wh_')}_{event_id}"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Prompt:
    prompt_id: str  # "pmt_..."
    name: str
    prompt_type: str  # PromptType
    description: str | None
    created_at: datetime
    updated_at: datetime
    latest_version: int | None  # highest existing version number
    production_version: int | None  # number of the published version

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_id": self.prompt_id,
            "name": self.name,
            "prompt_type": self.prompt_type,
            "description": self.description,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "latest_version": self.latest_version,
            "production_version": self.production_version,
        }


@dataclass(frozen=True, slots=True)
class PromptVersion:
    prompt_id: str
    version_id: str  # "v_..."
    name: str
    version: int
    content: str
    variables: tuple[str, ...]
    status: str  # Status
    prompt_type: str
    metadata: dict[str, object]
    tags: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    promoted_at: datetime | None
    promoted_by: str | None  # user uuid
    created_by: str  # user uuid; stored, never in an API response

    @property
    def is_production(self) -> bool:
        # At most one version is published, and that one is production.
        return self.status == "published"

    def to_json(self) -> dict[str, Any]:
        """Runs on every read the API's body memo misses: keep it a plain dict literal."""
        return {
            "prompt_id": self.prompt_id,
            "version_id": self.version_id,
            "name": self.name,
            "version": self.version,
            "content": self.content,
            "variables": list(self.variables),
            "status": self.status,
            "is_production": self.is_production,
            "prompt_type": self.prompt_type,
            "metadata": self.metadata,
            "tags": list(self.tags),
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "promoted_at": None if self.promoted_at is None else rfc3339(self.promoted_at),
            "promoted_by": self.promoted_by,
        }


@dataclass(frozen=True, slots=True)
class PromotionRecord:
    history_id: str  # "h_..."
    prompt_id: str
    version_number: int
    promoted_by: str
    promoted_at: datetime
    previous_version: int | None
    notes: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "history_id": self.history_id,
            "prompt_id": self.prompt_id,
            "version_number": self.version_number,
            "promoted_by": self.promoted_by,
            "promoted_at": rfc3339(self.promoted_at),
            "previous_version": self.previous_version,
            "notes": self.notes,
        }


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key (OAuth client) of one org. The secret is only ever stored hashed."""

    org: str
    client_id: str
    secret_hash: str
    role: str
    user_id: str  # the key's service-account user (token ``sub``)
    description: str | None
    created_at: datetime
    revoked: bool = False

    def to_json(self) -> dict[str, Any]:
        """Without the secret's hash, and without the org: every caller already names it."""
        return {
            "client_id": self.client_id,
            "role": self.role,
            "description": self.description,
            "user_id": self.user_id,
            "created_at": rfc3339(self.created_at),
            "revoked": self.revoked,
        }


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A token signing key, shared by every worker and host on the same storage."""

    kid: str
    private_pem: str
    created_at: datetime

    def to_json(self, *, signing: bool) -> dict[str, Any]:
        """Never the private key. ``signing``: whether this key signs new tokens."""
        return {"kid": self.kid, "created_at": rfc3339(self.created_at), "signing": signing}


@dataclass(frozen=True, slots=True)
class User:
    """A person of one org. The password is only ever stored hashed (identity hashes)."""

    org: str
    user_id: str  # uuid; the token ``sub`` and what created_by/promoted_by record
    username: str  # unique per org, never changes
    role: str
    disabled: bool
    created_at: datetime
    updated_at: datetime
    password_hash: str

    def to_json(self) -> dict[str, Any]:
        """Without the password hash, and without the org: every caller already names it."""
        return {
            "user_id": self.user_id,
            "username": self.username,
            "role": self.role,
            "disabled": self.disabled,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class Event:
    """One change in an org's event log.

    ``version``, ``version_id`` and ``status`` (the version's status after the change)
    are None for prompt events; ``previous_version`` is the production version a
    promotion replaced (None when there was none, and for other events). ``actor`` is
    the user id that made the change and ``request_id`` the request that asked for it,
    when the caller gave them.
    """

    id: str  # increases within an org (event_position)
    type: str  # one of EVENT_TYPES
    prompt_id: str
    prompt_name: str
    version: int | None
    version_id: str | None
    status: str | None
    previous_version: int | None
    actor: str | None
    at: datetime
    request_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "prompt_id": self.prompt_id,
            "prompt_name": self.prompt_name,
            "version": self.version,
            "version_id": self.version_id,
            "status": self.status,
            "previous_version": self.previous_version,
            "actor": self.actor,
            "at": rfc3339(self.at),
            "request_id": self.request_id,
        }


@dataclass(frozen=True, slots=True)
class AuthorizationCode:
    """An authorization code (single use, short-lived): what the token request needs
    to check and to issue tokens."""

    org: str
    code_hash: str  # digest of the code the client holds
    client_id: str
    redirect_uri: str
    scope: str
    user_id: str
    session_id: str | None  # the realm session the login made
    code_challenge: str
    code_challenge_method: str
    nonce: str | None
    auth_time: datetime  # when the person authenticated
    expires_at: datetime


DEVICE_STATUSES: tuple[str, ...] = ("pending", "approved", "denied")


@dataclass(frozen=True, slots=True)
class DeviceAuthorization:
    """A device authorization request (RFC 8628) and how the person answered it."""

    org: str
    device_code_hash: str  # digest of the device code the client polls with
    user_code: str  # what the person types on the verification page (as normalized)
    client_id: str
    scope: str
    interval: int  # seconds the client is told to wait between polls
    created_at: datetime
    expires_at: datetime
    status: str = "pending"  # one of DEVICE_STATUSES
    user_id: str | None = None  # who approved or denied
    session_id: str | None = None  # the approving person's realm session
    last_polled_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RealmSession:
    """A person signed in to a realm: what the login page's cookie points at."""

    org: str
    session_id: str
    user_id: str
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class RefreshToken:
    """One refresh token of a family (the chain of rotations that began at one login)."""

    org: str
    token_hash: str  # digest of the token the client holds
    family_id: str
    client_id: str
    user_id: str
    scope: str
    session_id: str | None  # the family ends with this session (None: it has none)
    issued_at: datetime
    expires_at: datetime
    used: bool = False  # rotated already; presenting it again is a replay


@dataclass(frozen=True, slots=True)
class PromptSnapshot:
    """One prompt with everything it keeps, as a backup holds it.

    ``next_version`` is the last version number handed out: higher than every kept
    version when the newest ones were deleted, and it must survive a restore so numbers
    are never reused. ``versions`` ascend by number; ``history`` is in promotion order,
    oldest first. ``prompt``'s latest and production numbers follow from ``versions``.
    """

    prompt: Prompt
    next_version: int
    versions: tuple[PromptVersion, ...]
    history: tuple[PromotionRecord, ...]


@dataclass(frozen=True, slots=True)
class OrgSnapshot:
    """Everything one org keeps that outlives a login: prompts (by name), API keys and
    users (each oldest first, secrets and passwords as hashes). Login flow state
    (codes, sessions, refresh tokens) is not in it: it lives minutes to days, and a
    person signs in again."""

    org: str
    prompts: tuple[PromptSnapshot, ...]
    api_keys: tuple[ApiKey, ...]
    users: tuple[User, ...]

    def is_empty(self) -> bool:
        return not (self.prompts or self.api_keys or self.users)


@dataclass(frozen=True, slots=True)
class EventLogBounds:
    """The ids of the oldest and the newest event an org's log keeps (None: empty), and
    whether it has dropped older events to stay within its bound.

    A reader whose last id is older than ``oldest`` has missed events only when
    ``trimmed``: a log that never dropped one still holds everything after any id.
    """

    oldest: str | None
    newest: str | None
    trimmed: bool = False


@dataclass(frozen=True, slots=True)
class Webhook:
    """A webhook subscription of one org. ``secret`` signs deliveries: it is stored, shown
    once at creation, never listed. ``events`` are event types, or ``("*",)`` for all."""

    webhook_id: str  # "wh_..."
    url: str
    events: tuple[str, ...]
    description: str | None
    secret: str  # "whsec_" + base64
    created_at: datetime

    def wants(self, event_type: str) -> bool:
        return ALL_EVENTS in self.events or event_type in self.events

    def to_json(self) -> dict[str, Any]:
        """Without the secret."""
        return {
            "webhook_id": self.webhook_id,
            "url": self.url,
            "events": list(self.events),
            "description": self.description,
            "created_at": rfc3339(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    """One attempt to deliver one message (an event, or a ``ping``) to one webhook.

    ``status_code`` is the receiver's answer (None when there was none) and ``error``
    says why the attempt failed without one (timeout, refused address, ...). The attempt
    delivered the message when the status is 2xx.
    """

    webhook_id: str
    message_id: str  # the webhook-id header: the same on every attempt of one message
    event_id: str | None  # None for a ping
    event_type: str
    attempt: int  # 1 for the first
    status_code: int | None
    error: str | None
    at: datetime

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def to_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "attempt": self.attempt,
            "status_code": self.status_code,
            "error": self.error,
            "delivered": self.delivered,
            "at": rfc3339(self.at),
        }


@dataclass(frozen=True, slots=True)
class DeliveryTask:
    """A message claimed from an org's delivery queue, to send to one webhook.

    ``ticket`` names the claim for :meth:`Storage.finish_delivery` (opaque). ``payload``
    is the JSON body; ``attempt`` counts from 1.
    """

    ticket: str
    webhook_id: str
    message_id: str
    event_id: str | None
    event_type: str
    attempt: int
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Promotion:
    version: PromptVersion
    record: PromotionRecord

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version.to_json(), "promotion": self.record.to_json()}


# --------------------------------------------------------------------------- errors


class StorageError(Exception):
    """Root of every error raised by a storage backend."""


class NotFound(StorageError):
    pass


class PromptNotFound(NotFound):
    def __init__(self, prompt_ref: str) -> None:
        super().__init__(f"prompt '{prompt_ref}' not found")
        self.prompt_ref = prompt_ref


class VersionNotFound(NotFound):
    def __init__(self, prompt_ref: str, version_ref: str) -> None:
        super().__init__(f"version '{version_ref}' of prompt '{prompt_ref}' not found")
        self.prompt_ref = prompt_ref
        self.version_ref = version_ref


class NoProductionVersion(NotFound):
    def __init__(self, prompt_ref: str) -> None:
        super().__init__(f"prompt '{prompt_ref}' has no production version")
        self.prompt_ref = prompt_ref


class ApiKeyNotFound(NotFound):
    def __init__(self, client_id: str) -> None:
        super().__init__(f"API key '{client_id}' not found")
        self.client_id = client_id


class WebhookNotFound(NotFound):
    def __init__(self, webhook_id: str) -> None:
        super().__init__(f"webhook '{webhook_id}' not found")
        self.webhook_id = webhook_id


class Conflict(StorageError):
    pass


class PromptExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"prompt '{name}' already exists")
        self.name = name


class ApiKeyExists(Conflict):
    def __init__(self, client_id: str) -> None:
        super().__init__(f"API key '{client_id}' already exists")
        self.client_id = client_id


class UserNotFound(NotFound):
    def __init__(self, username: str) -> None:
        super().__init__(f"user '{username}' not found")
        self.username = username


class UserExists(Conflict):
    def __init__(self, username: str) -> None:
        super().__init__(f"user '{username}' already exists")
        self.username = username


class SessionNotFound(NotFound):
    """The realm session is gone (ended or expired)."""


class DeviceCodeExists(Conflict):
    """The device code or the user code is in use already: make new ones."""


class DeviceAlreadyDecided(Conflict):
    """The device authorization was approved or denied already."""


class RefreshTokenReused(Conflict):
    """A refresh token was presented after it had been rotated; its whole family is
    revoked by the same atomic step that found out."""

    def __init__(self, family_id: str) -> None:
        super().__init__("refresh token reused: its family is revoked")
        self.family_id = family_id


class OrgNotEmpty(Conflict):
    def __init__(self, org: str) -> None:
        super().__init__(
            f"org '{org}' is not empty (it has prompts, API keys or users): "
            "a restore only writes into an empty org, and nothing was written"
        )
        self.org = org


class LifecycleError(Conflict):
    """A transition the lifecycle rules (module docstring) forbid; the message says which."""


class ProductionChanged(Conflict):
    """Production is not the version the caller expected; nothing was changed."""

    def __init__(self, prompt_ref: str, expected: int | None, current: int | None) -> None:
        now = (
            "there is no production version"
            if current is None
            else f"production is version {current}"
        )
        wanted = "no production version" if expected is None else f"version {expected}"
        super().__init__(f"prompt '{prompt_ref}': {now}, expected {wanted}; nothing was changed")
        self.prompt_ref = prompt_ref
        self.expected = expected
        self.current = current


class NoRollbackTarget(LifecycleError):
    """A rollback with nothing to roll back to; ``reason`` says why."""

    MESSAGES: Final = {
        "no_production": "prompt '{prompt}' has no production version to roll back from",
        "first": "version {current} is the first production version of prompt '{prompt}': "
        "there is no earlier one to roll back to",
        "deleted": "version {target}, production before version {current}, has been deleted",
        "missing": "version {target} of prompt '{prompt}' does not exist (never created, or "
        "deleted)",
        "never": "version {target} of prompt '{prompt}' has never been production",
        "current": "version {target} is production already",
    }

    def __init__(
        self, reason: str, prompt_ref: str, current: int | None, target: int | None = None
    ) -> None:
        super().__init__(
            self.MESSAGES[reason].format(prompt=prompt_ref, current=current, target=target)
        )
        self.reason = reason


class InvalidInput(StorageError):
    pass


class StorageUnavailable(StorageError):
    """The backend did not answer. Never carries connection details to callers."""


# --------------------------------------------------------------------------- interface


@dataclass(frozen=True, slots=True)
class RateLimitSettings:
    """Where a rate limiter keeps its counters: a storage URI of the ``limits`` library
    (``memory://``, ``redis://``, ``redis+cluster://...``) and the keyword options for
    that storage (flask-limiter's ``storage_uri`` and ``storage_options``)."""

    uri: str
    options: dict[str, Any] = field(default_factory=dict)


class Storage(abc.ABC):
    """Everything promptsvc keeps. Backends: memory (lock), Redis (Lua), Redis Cluster.

    Timestamps come from ``clock`` so tests can move time without sleeping.

    Every method that changes a prompt or a version takes, besides its own arguments,
    who made the change (``actor``, a user id; ``created_by`` and ``promoted_by`` where
    the method already has them) and the id of the request that asked for it
    (``request_id``): both go into the change's event.

    People and login
    ----------------
    Users are kept like API keys: per org, added once, listed oldest first; their role,
    disabled flag and password hash can change, their username and user id never do.

    The login flows keep four kinds of short-lived state, each with an ``expires_at``
    set by the caller. Redis drops a record at that moment (a key TTL, counted from
    the storage clock when the record is written); memory compares ``expires_at`` with
    the storage clock on every access. An expired record is simply absent.

    * Authorization codes: added, then *taken* once (read and deleted in one step), so
      of any number of concurrent token requests with one code exactly one gets it.
    * Device authorizations (RFC 8628): found by device code (the polling client) or
      user code (the verification page); the person's answer is recorded once
      (:meth:`decide_device_authorization`); each poll records its time and returns the
      previous one (for ``slow_down``); once approved, :meth:`consume_device_authorization`
      hands it out exactly once and deletes it.
    * Realm sessions: who signed in, until when; :meth:`end_session` (logout) deletes it
      and revokes every refresh token family started in it.
    * Refresh tokens, in families: one family per login, started by
      :meth:`start_refresh_family`, grown by :meth:`rotate_refresh_token` (the presented
      token is marked used and its successor stored, in one step). Presenting a used
      token revokes the whole family. A family also dies with its session, and by
      :meth:`revoke_refresh_family`. A family lives as long as its newest token.

    Everything a client or browser presents as a secret (code, device code, refresh
    token) is stored and looked up by a digest the caller computes (the ``*_hash``
    fields), so a copy of storage holds nothing that can be presented. Session ids and
    user codes are kept as given. Whether a user is disabled is checked by the flows
    against the user record, not here.
    """

    # The least number of events kept per org; the oldest beyond it may be dropped.
    event_log_size: int = EVENT_LOG_SIZE

    def __init__(self, clock: Clock = utcnow) -> None:
        self.clock = clock

    # -- health
    @abc.abstractmethod
    def ping(self) -> None:
        """Return if the backend answers, else raise StorageUnavailable."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    @abc.abstractmethod
    def rate_limit_settings(self) -> RateLimitSettings:
        """Where rate-limit counters go so that they are shared as widely as this
        backend's data is (one process for memory, every worker and host for Redis)."""

    # -- prompts
    @abc.abstractmethod
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
        """Create a prompt. Raises PromptExists. The caller validated the name."""

    @abc.abstractmethod
    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        """By name or ``pmt_`` id. Raises PromptNotFound."""

    @abc.abstractmethod
    def list_prompts(self, org: str, limit: int = 50, cursor: str | None = None) -> Page[Prompt]:
        """Prompts ordered by name. Raises InvalidInput for a cursor it did not issue."""

    @abc.abstractmethod
    def delete_prompt(
        self, org: str, prompt_ref: str, *, actor: str | None = None, request_id: str | None = None
    ) -> None:
        """Delete a prompt with all its versions and history. Raises PromptNotFound.

        A prompt created later under the same name starts again at version 1.
        """

    # -- versions
    @abc.abstractmethod
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
        """New draft with the next number (atomic, never reused).

        Variables are extracted from the content. For a chat prompt the content must be
        a JSON list of {"role", "content"} messages, else InvalidInput.
        """

    @abc.abstractmethod
    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        """By ``v_`` id or number string. Raises PromptNotFound / VersionNotFound."""

    @abc.abstractmethod
    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        """Highest existing version number, any status. Raises PromptNotFound /
        VersionNotFound (prompt has no versions)."""

    @abc.abstractmethod
    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        """The published version. Raises PromptNotFound / NoProductionVersion."""

    @abc.abstractmethod
    def list_versions(
        self,
        org: str,
        prompt_ref: str,
        status: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[PromptVersion]:
        """Newest first, optionally only one status."""

    @abc.abstractmethod
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
        """Replace a draft's content (variables re-extracted). Non-draft: LifecycleError."""

    @abc.abstractmethod
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
        """Atomically: the draft becomes published (promoted_at/by set), the previously
        published version becomes archived (or draft when ``archive_previous`` is
        False), and a history record is written. Non-draft: LifecycleError.

        With ``expected_production`` (a number, or None for "no production version"),
        the same atomic step first checks that production is that version, and when it
        is not, changes nothing and raises ProductionChanged carrying the current one.
        """

    @abc.abstractmethod
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
        """Atomically make an earlier production version production again.

        The target is ``to_version``, or else the version that was production before
        the current one (the newest promotion record's previous version); whatever its
        status now (archived or draft), it becomes published with promoted_at/by set,
        the current production version becomes archived, and a promotion record is
        written (``notes`` default to "rollback to v<N>"). ``expected_production``
        guards the step as in :meth:`promote`, and is checked first. The event is a
        ``version.promoted`` with the replaced version as ``previous_version``, as for
        any promotion.

        LifecycleError when there is nothing to roll back to: no production version,
        no earlier one, a target that was deleted, that was never production, or that
        is production now.
        """

    @abc.abstractmethod
    def archive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        """draft -> archived. Published or archived: LifecycleError."""

    @abc.abstractmethod
    def unarchive_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> PromptVersion:
        """archived -> draft. Anything else: LifecycleError."""

    @abc.abstractmethod
    def delete_version(
        self,
        org: str,
        prompt_ref: str,
        version_ref: str,
        *,
        actor: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Delete a draft or archived version; numbering is unchanged. Published:
        LifecycleError."""

    @abc.abstractmethod
    def list_history(
        self, org: str, prompt_ref: str, limit: int = 50, cursor: str | None = None
    ) -> Page[PromotionRecord]:
        """Promotion records, newest promotion first."""

    # -- change events
    @abc.abstractmethod
    def events_after(self, org: str, after: str, limit: int) -> list[Event]:
        """Up to ``limit`` events of the org's log with ids above ``after``, oldest
        first. Events older than the log keeps are gone: compare ``after`` with
        :meth:`event_log_bounds` to know whether any were missed."""

    @abc.abstractmethod
    def event_log_bounds(self, org: str) -> EventLogBounds:
        """The oldest and the newest event id the org's log keeps, and whether it has
        dropped any, read together."""

    @abc.abstractmethod
    def wait_for_events(self, org: str, after: str, timeout: float, limit: int) -> list[Event]:
        """As :meth:`events_after`, but when there are none yet, block until one is
        written or ``timeout`` seconds pass (then: an empty list)."""

    # -- webhooks and their delivery queue
    @abc.abstractmethod
    def add_webhook(self, org: str, webhook: Webhook) -> None:
        """Subscribe ``webhook``: it gets the org's events written from now on."""

    @abc.abstractmethod
    def list_webhooks(self, org: str) -> list[Webhook]:
        """Every webhook of the org, oldest first."""

    @abc.abstractmethod
    def get_webhook(self, org: str, webhook_id: str) -> Webhook:
        """Raises WebhookNotFound."""

    @abc.abstractmethod
    def delete_webhook(self, org: str, webhook_id: str) -> None:
        """Remove the webhook and its delivery history; its pending messages are dropped
        when next claimed. Raises WebhookNotFound."""

    @abc.abstractmethod
    def webhook_orgs(self) -> list[str]:
        """The orgs that have (or had) webhooks: where delivery workers look for work."""

    @abc.abstractmethod
    def enqueue_message(
        self, org: str, webhook_id: str, message_id: str, event_type: str, payload: dict[str, Any]
    ) -> None:
        """Queue one message that is not from the event log (a ``ping``) for one webhook.
        Raises WebhookNotFound."""

    @abc.abstractmethod
    def claim_deliveries(
        self, org: str, consumer: str, limit: int, lease: float
    ) -> list[DeliveryTask]:
        """Up to ``limit`` messages of the org for ``consumer`` to send, in one step:

        * events written since the last claim become one message per webhook that wants
          them (``message_id`` made from the webhook and the event, so it is the same on
          every attempt);
        * retries whose time (:meth:`finish_delivery`, on this storage's clock) has come
          are queued again;
        * messages claimed more than ``lease`` seconds ago and never finished (their
          worker died) are claimed again, then new ones.

        Messages of webhooks deleted since they were queued are dropped, not returned.
        """

    @abc.abstractmethod
    def finish_delivery(
        self, org: str, task: DeliveryTask, attempt: Delivery, retry_at: datetime | None
    ) -> None:
        """Record ``attempt`` in the webhook's history and take ``task`` off the queue;
        with ``retry_at``, queue the message again for then (attempt + 1). Nothing is
        recorded or retried for a webhook deleted meanwhile."""

    @abc.abstractmethod
    def list_deliveries(self, org: str, webhook_id: str, limit: int) -> list[Delivery]:
        """The webhook's delivery attempts, newest first (at most DELIVERY_HISTORY_SIZE
        are kept). Raises WebhookNotFound."""

    # -- orgs and API keys
    @abc.abstractmethod
    def org_exists(self, org: str) -> bool:
        """An org (realm) exists once it has a key (revoked or not) or a user."""

    @abc.abstractmethod
    def add_api_key(self, key: ApiKey) -> None:
        """Store a new key. Raises ApiKeyExists if its client_id is taken in that org."""

    @abc.abstractmethod
    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        """The key, revoked or not; None when absent."""

    @abc.abstractmethod
    def list_api_keys(self, org: str) -> list[ApiKey]:
        """Every key of the org, oldest first."""

    @abc.abstractmethod
    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        """Mark revoked (idempotent). Raises ApiKeyNotFound."""

    # -- users

    @abc.abstractmethod
    def add_user(self, user: User) -> None:
        """Store a new user. Raises UserExists if the username is taken in that org
        (user ids are uuids and never collide)."""

    @abc.abstractmethod
    def get_user(self, org: str, username: str) -> User | None:
        """The user, disabled or not; None when absent."""

    @abc.abstractmethod
    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        """The user with this user id in this org; None when absent."""

    @abc.abstractmethod
    def list_users(self, org: str) -> list[User]:
        """Every user of the org, oldest first."""

    @abc.abstractmethod
    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        """Change what is given (None leaves a field alone); ``updated_at`` moves to now
        even when nothing else changes. Returns the user as stored. Raises UserNotFound."""

    # -- authorization codes

    @abc.abstractmethod
    def add_authorization_code(self, code: AuthorizationCode) -> None:
        """Keep ``code`` until its ``expires_at``."""

    @abc.abstractmethod
    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        """The code, deleted in the same step; None when absent, expired or taken already.
        Of concurrent calls with one code, exactly one gets it."""

    # -- device authorizations

    @abc.abstractmethod
    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        """Keep a new (pending) device authorization until its ``expires_at``. Raises
        DeviceCodeExists when its device code or its user code is in use in the org."""

    @abc.abstractmethod
    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """By device code digest; None when absent or expired."""

    @abc.abstractmethod
    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        """By user code (the verification page); None when absent or expired."""

    @abc.abstractmethod
    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        """Record the person's answer (``approved`` or denied) with who gave it, in one
        step. Returns the decided record; None when absent or expired. Raises
        DeviceAlreadyDecided when it is not pending."""

    @abc.abstractmethod
    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """A client's poll: record its time (the clock's now) as ``last_polled_at`` and
        return the record as it was *before*, so ``last_polled_at`` there is the previous
        poll (None on the first). None when absent or expired."""

    @abc.abstractmethod
    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """If approved: delete it and return it, in one step (exactly one of concurrent
        callers gets it). None when pending, denied, absent, expired or consumed."""

    # -- realm sessions

    @abc.abstractmethod
    def add_session(self, session: RealmSession) -> None:
        """Keep a new session until its ``expires_at``."""

    @abc.abstractmethod
    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        """The session; None when absent, expired or ended."""

    @abc.abstractmethod
    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        """Logout: delete the session and revoke every refresh family started in it, in
        one step. Returns the session it ended; None when there was none (idempotent)."""

    # -- refresh tokens

    @abc.abstractmethod
    def start_refresh_family(self, token: RefreshToken) -> None:
        """Store the first token of a new family ``token.family_id`` (a new uuid per
        login). With ``token.session_id`` the family joins that session and ends with
        it; raises SessionNotFound when that session has ended or expired already."""

    @abc.abstractmethod
    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        """The token, ``used`` or not, while its family lives; None when absent, expired,
        or its family was revoked or its session ended. A ``used`` token found here is a
        replay: the caller revokes its family."""

    @abc.abstractmethod
    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        """In one step: mark the presented token used and store its successor (same
        family, client, user and session; ``scope`` narrowed when given, issued now,
        ``expires_at`` as given). Returns the successor; None when the token is absent
        or expired, or its family or session has ended.

        Raises RefreshTokenReused when the token was used already, after revoking its
        family in the same step: of concurrent rotations of one token exactly one
        succeeds, and the others revoke the family (the successor included).
        """

    @abc.abstractmethod
    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        """Revoke every token of the family (idempotent)."""

    # -- backup and restore

    @abc.abstractmethod
    def list_orgs(self) -> list[str]:
        """Every org that has a prompt, an API key or a user, sorted."""

    @abc.abstractmethod
    def export_org(self, org: str) -> OrgSnapshot:
        """Everything ``org`` keeps, exactly as stored (ids, numbers and the version
        counters, statuses, times, secret and password hashes). Each prompt is read in
        one atomic step, so it is consistent in itself; a prompt created or deleted
        meanwhile is in the snapshot or not. An org without data gives an empty
        snapshot."""

    @abc.abstractmethod
    def import_org(self, snapshot: OrgSnapshot) -> None:
        """Write ``snapshot`` exactly as given, with every index and counter the other
        operations use, in one atomic step. Only into an org without prompts, API keys
        or users: otherwise OrgNotEmpty, and nothing is written. The caller checked that
        the snapshot is consistent (promptsvc.backup does)."""

    # -- signing keys (global, not per org)
    @abc.abstractmethod
    def signing_keys(self) -> list[SigningKey]:
        """Every kept signing key, oldest first; the last one signs new tokens."""

    @abc.abstractmethod
    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        """Keep ``candidate`` only if no key is kept yet; return the key that signs.

        Many workers starting at once each offer a candidate; exactly one wins, and all
        of them get the winner back.
        """

    @abc.abstractmethod
    def add_signing_key(self, key: SigningKey) -> None:
        """Append a key (rotation): it signs from now on, older ones still verify."""

    @abc.abstractmethod
    def remove_signing_key(self, kid: str) -> None:
        """Drop a retired key (no-op when absent)."""

    # -- the web console's session secret (global, not per org)
    @abc.abstractmethod
    def ensure_session_secret(self, candidate: str) -> str:
        """Keep ``candidate`` only if no session secret is kept yet; return the kept one.

        Like :meth:`ensure_signing_key`: of many workers starting at once, exactly one
        candidate wins and every worker signs sessions with it.
        """
