"""Every table of the SQL backend, described once (SQLAlchemy Core).

The newest migration (storage/sql/migrations/versions) builds exactly this schema;
tests/storage/sql/test_migrations.py holds the two to each other.

Conventions:

* Every per-org row carries ``org``, its keys and foreign keys start with it, and every
  lookup names it, as every Redis key does: ids are unique within an org, so an org's
  data can be copied into another org of the same database (an archive's import).
* Times are :class:`UtcDateTime`: aware UTC datetimes in Python, microseconds kept.
* JSON values (metadata, tags, variables, payloads, event lists) are ``Text`` holding
  JSON, written and read by the backend: the same bytes on every dialect, and no JSON
  type coercion on the read path.
* ``seq`` columns are autoincrementing integers that give insertion order where times
  can tie (a test clock stands still): keys, users, webhooks, deliveries, the queue.
* Tables keyed by a prompt (or a webhook) delete with it (``ON DELETE CASCADE``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

# Constraint names spelled out, so migrations can name what they change on every dialect.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# An autoincrementing 64-bit key; SQLite's rowid alias must be spelled INTEGER.
Seq = BigInteger().with_variant(Integer(), "sqlite")


class UtcDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime with microseconds.

    PostgreSQL keeps ``timestamptz``. SQLite has no time type: there it is text in the
    one spelling of :func:`storage.times.rfc3339` (sorts as the times do), parsed by
    ``datetime.fromisoformat``, cheaper than SQLAlchemy's own SQLite datetime parsing.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(27))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        if dialect.name == "sqlite":
            return value.astimezone(UTC).isoformat(timespec="microseconds")[:26] + "Z"
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else utc(value)


def utc(value: str | datetime) -> datetime:
    """A stored time as an aware UTC datetime (what UtcDateTime reads; storage/sql's
    read lane reads rows without SQLAlchemy and calls it itself)."""
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def _org() -> Column[str]:
    return Column("org", String(63), nullable=False)


# --------------------------------------------------------------------------- prompts

prompts = Table(
    "prompts",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("prompt_type", String(10), nullable=False),
    Column("description", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # The last version number handed out: never goes down, survives deletions.
    Column("counter", Integer, nullable=False, default=0),
    Column("latest_version", Integer),  # highest existing number
    Column("production_version", Integer),  # the published version's number
    Column("promotions", Integer, nullable=False, default=0),  # history records written
    UniqueConstraint("org", "name"),
)

versions = Table(
    "versions",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("version_id", String(40), nullable=False),
    Column("content", Text, nullable=False),
    Column("variables", Text, nullable=False),  # JSON list
    Column("status", String(10), nullable=False),
    Column("metadata", Text, nullable=False),  # JSON object
    Column("tags", Text, nullable=False),  # JSON list
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("promoted_at", UtcDateTime),
    Column("promoted_by", String(64)),
    Column("created_by", String(64), nullable=False),
    # JSON list of the environments other than production that hold it (null: none),
    # mirroring ``placements`` so a version read needs no second lookup.
    Column("placements", Text),
    Column("variables_schema", Text),  # JSON object as declared (null: implied)
    Column("examples", Text),  # JSON list (null: none)
    # Placed once, or in a rollout or a review: its content never changes (section 30).
    Column("frozen", Boolean, nullable=False, server_default=false()),
    Column("authors", Text),  # JSON list of who wrote it (null: created_by alone)
    Column("config", Text),  # JSON object: the model configuration as given (null: none)
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
    UniqueConstraint("org", "version_id"),
)

# The reverse index of includes: one row per prompt ``name`` a version's own content
# includes (PromptVersion.included_names); it goes with the version.
includes = Table(
    "includes",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("version", Integer, primary_key=True),
    ForeignKeyConstraint(
        ["org", "prompt_id", "version"],
        ["versions.org", "versions.prompt_id", "versions.version"],
        ondelete="CASCADE",
    ),
)

history = Table(
    "history",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("position", Integer, primary_key=True),  # 1-based promotion sequence
    Column("history_id", String(40), nullable=False),
    Column("version_number", Integer, nullable=False),
    Column("promoted_by", String(64), nullable=False),
    Column("promoted_at", UtcDateTime, nullable=False),
    Column("previous_version", Integer),
    Column("notes", Text),
    Column("environment", String(32)),  # null: production (records before environments)
    Column("review_id", String(40)),
    Column("approved_by", Text),  # JSON list of user ids (null: none)
    Column("breaking", Boolean),  # null: not breaking (records before contracts)
    Column("rollout_id", String(40)),  # the rollout this promotion completed
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
    UniqueConstraint("org", "history_id"),
)

# --------------------------------------------------------------------------- environments

# An org's environments other than a default production (production once changed);
# ``seq`` orders them by creation.
environments = Table(
    "environments",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("name", String(32), primary_key=True),
    Column("seq", Seq, nullable=False),
    Column("required_approvals", Integer, nullable=False),
    Column("description", Text),
    Column("created_at", UtcDateTime),
)

# The version each environment other than production holds, per prompt.
placements = Table(
    "placements",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("environment", String(32), primary_key=True),
    Column("version", Integer, nullable=False),
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
)

# Reviews: the columns filtered and changed in SQL, the rest as JSON (storage/sql/rows.py).
reviews = Table(
    "reviews",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("review_id", String(40), primary_key=True),
    Column("seq", Seq, nullable=False),  # request order within the org
    Column("prompt_id", String(40), nullable=False),
    Column("environment", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("status", String(10), nullable=False),
    Column("decided_at", UtcDateTime),
    Column("body", Text, nullable=False),  # the rest of the review, JSON
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
    Index(None, "org", "seq"),
)

# At most one rollout per prompt and environment: the candidate served to ``percent``
# of rollout keys while the environment keeps its version (the baseline).
rollouts = Table(
    "rollouts",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("environment", String(32), primary_key=True),
    Column("rollout_id", String(40), nullable=False),
    Column("baseline_version", Integer),
    Column("candidate_version", Integer, nullable=False),
    Column("percent", Integer, nullable=False),
    Column("started_by", String(64), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
)

# --------------------------------------------------------------------------- events

# One row per org that has ever had an event: the last id handed out (ids never go
# down, whatever the clock does), how many events are kept, and whether any were
# dropped. Writers lock this row, so ids are handed out in commit order.
event_logs = Table(
    "event_logs",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("last_ms", BigInteger, nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("kept", Integer, nullable=False, server_default="0"),  # events in the log
    Column("trimmed", Boolean, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("ms", BigInteger, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("type", String(32), nullable=False),
    Column("prompt_id", String(40), nullable=False),
    Column("prompt_name", String(200), nullable=False),
    Column("version", Integer),
    Column("version_id", String(40)),
    Column("status", String(10)),
    Column("previous_version", Integer),
    Column("actor", String(64)),
    Column("at", UtcDateTime, nullable=False),
    Column("request_id", String(200)),
    Column("environment", String(32)),
    Column("review_id", String(40)),
    Column("rollout_id", String(40)),
    Column("percent", Integer),  # a rollout event's percent
    Column("reason", String(16)),  # why a rollout was aborted
    Column("guard", Text),  # JSON: the figures of a guard's abort
)

# --------------------------------------------------------------------------- webhooks

webhooks = Table(
    "webhooks",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    _org(),
    Column("webhook_id", String(40), nullable=False),
    Column("url", Text, nullable=False),
    Column("events", Text, nullable=False),  # JSON list of event types
    Column("description", Text),
    Column("secret", String(200), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    # The org's newest event id at creation: the webhook gets the events after it.
    Column("since_ms", BigInteger, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    UniqueConstraint("org", "webhook_id"),
    Index(None, "org", "seq"),
)

# One row per org that has (or had) webhooks: the newest event fanned out to messages.
webhook_cursors = Table(
    "webhook_cursors",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("ms", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
)

# Messages to deliver. ``due_at`` (storage clock) holds back a retry until then;
# ``claimed_at`` (seconds since the epoch, the real clock, like a Redis lease) is when a
# worker took it, and a claim older than the lease is taken again.
delivery_queue = Table(
    "delivery_queue",
    metadata,
    Column("ticket", Seq, primary_key=True, autoincrement=True),
    _org(),
    Column("webhook_id", String(40), nullable=False),
    Column("message_id", String(120), nullable=False),
    Column("event_id", String(42)),
    Column("event_type", String(32), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("payload", Text, nullable=False),  # JSON
    Column("due_at", UtcDateTime),
    Column("claimed_at", Float),
    ForeignKeyConstraint(
        ["org", "webhook_id"], ["webhooks.org", "webhooks.webhook_id"], ondelete="CASCADE"
    ),
    Index(None, "org", "ticket"),
)

deliveries = Table(
    "deliveries",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    _org(),
    Column("webhook_id", String(40), nullable=False),
    Column("message_id", String(120), nullable=False),
    Column("event_id", String(42)),
    Column("event_type", String(32), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status_code", Integer),
    Column("error", Text),
    Column("at", UtcDateTime, nullable=False),
    ForeignKeyConstraint(
        ["org", "webhook_id"], ["webhooks.org", "webhooks.webhook_id"], ondelete="CASCADE"
    ),
    Index(None, "org", "webhook_id", "seq"),
)

# --------------------------------------------------------------------------- identity

api_keys = Table(
    "api_keys",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    _org(),
    Column("client_id", String(200), nullable=False),
    Column("secret_hash", Text, nullable=False),
    Column("role", String(40), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("description", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("revoked", Boolean, nullable=False),
    Column("owner", String(64)),
    UniqueConstraint("org", "client_id"),
)

users = Table(
    "users",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    _org(),
    Column("user_id", String(64), nullable=False),
    Column("username", String(200), nullable=False),
    Column("role", String(40), nullable=False),
    Column("disabled", Boolean, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("password_hash", Text, nullable=False),
    UniqueConstraint("org", "username"),
    UniqueConstraint("org", "user_id"),
)

authorization_codes = Table(
    "authorization_codes",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("code_hash", String(128), primary_key=True),
    Column("client_id", String(200), nullable=False),
    Column("redirect_uri", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("session_id", String(128)),
    Column("code_challenge", String(200), nullable=False),
    Column("code_challenge_method", String(16), nullable=False),
    Column("nonce", Text),
    Column("auth_time", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

device_authorizations = Table(
    "device_authorizations",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("device_code_hash", String(128), primary_key=True),
    Column("user_code", String(64), nullable=False),
    Column("client_id", String(200), nullable=False),
    Column("scope", Text, nullable=False),
    Column("interval", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
    Column("status", String(10), nullable=False),
    Column("user_id", String(64)),
    Column("session_id", String(128)),
    Column("last_polled_at", UtcDateTime),
    UniqueConstraint("org", "user_code"),
)

realm_sessions = Table(
    "realm_sessions",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("session_id", String(128), primary_key=True),
    Column("user_id", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

# A family lives as long as its newest token (``expires_at``); revoking deletes it.
refresh_families = Table(
    "refresh_families",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("family_id", String(64), primary_key=True),
    Column("session_id", String(128)),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("token_hash", String(128), primary_key=True),
    Column("family_id", String(64), nullable=False),
    Column("client_id", String(200), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("scope", Text, nullable=False),
    Column("session_id", String(128)),
    Column("issued_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
    Column("used", Boolean, nullable=False),
    Index(None, "org", "family_id"),
)

# Global, not per org: token signing keys (oldest first; the last one signs) and the
# console's session secret.
signing_keys = Table(
    "signing_keys",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    Column("kid", String(100), nullable=False, unique=True),
    Column("private_pem", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

instance_secrets = Table(
    "instance_secrets",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("value", Text, nullable=False),
)

# --------------------------------------------------------------------------- rate limits

# The counters of rate limits (identity/ratelimit.py), shared by every worker on the
# database, as the ``limits`` library keeps them elsewhere: moving windows as one row
# per request counted (dropped once out of their window), fixed windows as a counter.
rate_limit_entries = Table(
    "rate_limit_entries",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    Column("key", String(255), nullable=False),
    Column("at", Float, nullable=False),  # seconds since the epoch
    Column("expires_at", Float, nullable=False),
    Index(None, "key", "at"),
    Index(None, "expires_at"),
)

rate_limit_counters = Table(
    "rate_limit_counters",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("count", Integer, nullable=False),
    Column("expires_at", Float, nullable=False, index=True),
)

# --------------------------------------------------------------------------- usage


def _counters() -> list[Column[Any]]:
    """A usage counter's columns (storage/usage_records.py COUNTERS)."""
    return [
        Column("renders", BigInteger, nullable=False),
        Column("ok", BigInteger, nullable=False),
        Column("errors", BigInteger, nullable=False),
        Column("score_sum", Float, nullable=False),
        Column("score_count", BigInteger, nullable=False),
    ]


# Usage counters per bucket (storage/usage_records.py): one row per prompt, span
# ("hour" or "day"), bucket start and key; "" stands for a null environment, rollout or
# arm (a key column cannot be null). Reports add to the rows; old buckets are deleted.
usage_counts = Table(
    "usage_counts",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("prompt_id", String(40), primary_key=True),
    Column("span", String(4), primary_key=True),
    Column("bucket_start", UtcDateTime, primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("environment", String(64), primary_key=True),
    Column("rollout_id", String(40), primary_key=True),
    Column("arm", String(9), primary_key=True),
    *_counters(),
    ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    ),
    Index(None, "span", "bucket_start"),  # the retention rule's deletes
)

# A rollout's arms, counted since it started (its guard reads them).
usage_arms = Table(
    "usage_arms",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("rollout_id", String(40), primary_key=True),
    Column("arm", String(9), primary_key=True),
    *_counters(),
    Column("updated_at", UtcDateTime, nullable=False),
)

# A rollout's guard, by the rollout's id (or a review's, until it starts the rollout).
rollout_guards = Table(
    "rollout_guards",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("guarded_id", String(40), primary_key=True),
    Column("metric", String(10), nullable=False),
    Column("threshold", Float, nullable=False),
    Column("min_samples", Integer, nullable=False),
)
