"""The SQL backend's tables (SQLAlchemy Core) on one ``metadata``: here prompts,
versions, environments, reviews, rollouts, events and webhooks, with the column types
every table uses; identity_tables.py and usage_tables.py hold the rest.

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

from storage.stored import utc
from storage.times import rfc3339

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
        return dialect.type_descriptor(String(27) if dialect.name == "sqlite" else self.impl)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is not None and dialect.name == "sqlite":
            return rfc3339(value)  # a naive time is taken to be UTC, as below
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else utc(value)


def org_column() -> Column[str]:
    return Column("org", String(63), nullable=False)


def prompt_key() -> ForeignKeyConstraint:
    """The key of a table whose rows belong to a prompt: they go with it."""
    return ForeignKeyConstraint(
        ["org", "prompt_id"], ["prompts.org", "prompts.prompt_id"], ondelete="CASCADE"
    )


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
    prompt_key(),
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
    prompt_key(),
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
    prompt_key(),
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
    prompt_key(),
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
    prompt_key(),
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
    org_column(),
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


def _message() -> list[Any]:
    """What a delivery, queued or made, says of its message and webhook (it goes with
    the webhook)."""
    return [
        org_column(),
        Column("webhook_id", String(40), nullable=False),
        Column("message_id", String(120), nullable=False),
        Column("event_id", String(42)),
        Column("event_type", String(32), nullable=False),
        Column("attempt", Integer, nullable=False),
        ForeignKeyConstraint(
            ["org", "webhook_id"], ["webhooks.org", "webhooks.webhook_id"], ondelete="CASCADE"
        ),
    ]


# Messages to deliver. ``due_at`` (storage clock) holds back a retry until then;
# ``claimed_at`` (seconds since the epoch, the real clock, like a Redis lease) is when a
# worker took it, and a claim older than the lease is taken again.
delivery_queue = Table(
    "delivery_queue",
    metadata,
    Column("ticket", Seq, primary_key=True, autoincrement=True),
    *_message(),
    Column("payload", Text, nullable=False),  # JSON
    Column("due_at", UtcDateTime),
    Column("claimed_at", Float),
    Index(None, "org", "ticket"),
)

deliveries = Table(
    "deliveries",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    *_message(),
    Column("status_code", Integer),
    Column("error", Text),
    Column("at", UtcDateTime, nullable=False),
    Index(None, "org", "webhook_id", "seq"),
)
