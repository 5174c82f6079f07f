"""Storage: the interface (storage/interface), its records, errors and lifecycle rules,
and the backends, chosen by URL scheme (see :func:`storage_from_url`).

Callers import what they use from here; backends import from the module that holds it.
"""

from __future__ import annotations

from storage.archive_records import OrgSnapshot, PromptSnapshot
from storage.cursors import decode_cursor, decode_number_cursor, encode_cursor
from storage.environment_page import (
    DEFAULT_ENVIRONMENT_PAGE,
    MAX_ENVIRONMENT_PAGE,
    EnvironmentPage,
)
from storage.errors import (
    AlreadyApproved,
    ApiKeyExists,
    ApiKeyNotFound,
    BreakingPromotion,
    ConfigInvalid,
    Conflict,
    ContractInvalid,
    DeviceAlreadyDecided,
    DeviceCodeExists,
    EnvironmentExists,
    EnvironmentNotFound,
    IncludeRefused,
    InUse,
    InvalidInput,
    LifecycleError,
    NoProductionVersion,
    NoRollbackTarget,
    NotFound,
    NothingInEnvironment,
    OrgNotEmpty,
    ProductionChanged,
    PromptExists,
    PromptNotFound,
    RefreshTokenReused,
    ReviewClosed,
    ReviewExists,
    ReviewForbidden,
    ReviewNotFound,
    ReviewRequired,
    ReviewStale,
    RolloutInProgress,
    RolloutNotFound,
    SessionNotFound,
    StorageError,
    StorageUnavailable,
    TooManyWebhooks,
    UserExists,
    UserNotFound,
    VersionFrozen,
    VersionNotFound,
    WebhookNotFound,
)
from storage.event_records import Event, EventLogBounds
from storage.identity_records import ApiKey, SigningKey, User
from storage.ids import event_position, message_id, new_id, version_number
from storage.interface import (
    DELIVERY_HISTORY_SIZE,
    EVENT_LOG_SIZE,
    MAX_WEBHOOKS,
    EventStore,
    IdentityStore,
    OrgArchive,
    PromptStore,
    ReleaseStore,
    RolloutStore,
    Storage,
    WebhookStore,
)
from storage.lifecycle import UNGUARDED, Expected, rollback_notes
from storage.login_records import (
    DEVICE_STATUSES,
    AuthorizationCode,
    DeviceAuthorization,
    RealmSession,
    RefreshToken,
)
from storage.records import (
    ALL_EVENTS,
    EVENT_TYPES,
    PRODUCTION,
    PROMPT_TYPES,
    REVIEW_STATUSES,
    STATUSES,
    Approval,
    BreakingChange,
    Environment,
    IncludeReads,
    InRollout,
    Page,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptType,
    PromptVersion,
    RateLimitSettings,
    Review,
    Rollout,
    Status,
)
from storage.times import Clock, rfc3339, utcnow
from storage.webhook_records import Delivery, DeliveryTask, Webhook

__all__ = [
    "ALL_EVENTS",
    "DEFAULT_ENVIRONMENT_PAGE",
    "DELIVERY_HISTORY_SIZE",
    "DEVICE_STATUSES",
    "EVENT_LOG_SIZE",
    "EVENT_TYPES",
    "MAX_ENVIRONMENT_PAGE",
    "MAX_WEBHOOKS",
    "PRODUCTION",
    "PROMPT_TYPES",
    "REVIEW_STATUSES",
    "STATUSES",
    "UNGUARDED",
    "AlreadyApproved",
    "ApiKey",
    "ApiKeyExists",
    "ApiKeyNotFound",
    "Approval",
    "AuthorizationCode",
    "BreakingChange",
    "BreakingPromotion",
    "Clock",
    "ConfigInvalid",
    "Conflict",
    "ContractInvalid",
    "Delivery",
    "DeliveryTask",
    "DeviceAlreadyDecided",
    "DeviceAuthorization",
    "DeviceCodeExists",
    "Environment",
    "EnvironmentExists",
    "EnvironmentNotFound",
    "EnvironmentPage",
    "Event",
    "EventLogBounds",
    "EventStore",
    "Expected",
    "IdentityStore",
    "InRollout",
    "InUse",
    "IncludeReads",
    "IncludeRefused",
    "InvalidInput",
    "LifecycleError",
    "NoProductionVersion",
    "NoRollbackTarget",
    "NotFound",
    "NothingInEnvironment",
    "OrgArchive",
    "OrgNotEmpty",
    "OrgSnapshot",
    "Page",
    "ProductionChanged",
    "Promotion",
    "PromotionRecord",
    "Prompt",
    "PromptExists",
    "PromptNotFound",
    "PromptSnapshot",
    "PromptStore",
    "PromptType",
    "PromptVersion",
    "RateLimitSettings",
    "RealmSession",
    "RefreshToken",
    "RefreshTokenReused",
    "ReleaseStore",
    "Review",
    "ReviewClosed",
    "ReviewExists",
    "ReviewForbidden",
    "ReviewNotFound",
    "ReviewRequired",
    "ReviewStale",
    "Rollout",
    "RolloutInProgress",
    "RolloutNotFound",
    "RolloutStore",
    "SessionNotFound",
    "SigningKey",
    "Status",
    "Storage",
    "StorageError",
    "StorageUnavailable",
    "TooManyWebhooks",
    "User",
    "UserExists",
    "UserNotFound",
    "VersionFrozen",
    "VersionNotFound",
    "Webhook",
    "WebhookNotFound",
    "WebhookStore",
    "decode_cursor",
    "decode_number_cursor",
    "describe_url",
    "encode_cursor",
    "event_position",
    "message_id",
    "new_id",
    "rfc3339",
    "rollback_notes",
    "storage_from_url",
    "utcnow",
    "version_number",
]


def storage_from_url(url: str, clock: Clock = utcnow) -> Storage:
    """``memory://``, ``redis://host:port/db``, ``rediss://...``,
    ``redis+cluster://host:port[,host:port...]``, ``sqlite:///relative/path.db``,
    ``sqlite:////absolute/path.db`` or ``postgresql://user:password@host:port/db``."""
    scheme = url.split("://", 1)[0].lower()
    if scheme == "memory":
        from storage.memory import MemoryStorage

        return MemoryStorage(clock=clock)
    if scheme in ("redis", "rediss"):
        from storage.redis import RedisStorage

        return RedisStorage.from_url(url, clock=clock)
    if scheme == "redis+cluster":
        from storage.redis.cluster import ClusterStorage

        return ClusterStorage.from_url(url, clock=clock)
    if scheme in ("sqlite", "postgresql", "postgres"):
        from storage.sql.storage import SqlStorage

        return SqlStorage.from_url(url, clock=clock)
    raise ValueError(
        f"unsupported storage URL scheme {scheme!r}: "
        "use memory://, redis://, rediss://, redis+cluster://, sqlite:/// or postgresql://"
    )


def describe_url(url: str) -> str:
    """Where a storage URL keeps its data, for people (never a password)."""
    scheme = url.split("://", 1)[0].lower()
    if scheme == "memory":
        return "memory of this process (gone when it stops)"
    if scheme in ("sqlite", "postgresql", "postgres"):
        from storage.sql.engine import UnsupportedUrl, describe

        try:
            return describe(url)
        except UnsupportedUrl:
            return url
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if scheme == "redis+cluster":
        return f"Redis Cluster at {parts.netloc.rsplit('@', 1)[-1]}"
    database = parts.path.strip("/") or "0"
    return f"Redis at {parts.hostname}:{parts.port or 6379}, db {database}"
