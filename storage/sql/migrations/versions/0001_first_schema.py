"""The first schema: prompts, versions, history, the event log, webhooks and their
queue, API keys, users, login state, signing keys and the session secret.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.sql.tables import UtcDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# An autoincrementing 64-bit key; SQLite's rowid alias must be spelled INTEGER.
SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("client_id", sa.String(length=200), nullable=False),
        sa.Column("secret_hash", sa.Text(), nullable=False),
        sa.Column("role", sa.String(length=40), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("org", "client_id", name=op.f("uq_api_keys_org_client_id")),
    )
    op.create_table(
        "authorization_codes",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("code_hash", sa.String(length=128), nullable=False),
        sa.Column("client_id", sa.String(length=200), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=True),
        sa.Column("code_challenge", sa.String(length=200), nullable=False),
        sa.Column("code_challenge_method", sa.String(length=16), nullable=False),
        sa.Column("nonce", sa.Text(), nullable=True),
        sa.Column("auth_time", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("org", "code_hash", name=op.f("pk_authorization_codes")),
    )
    op.create_index(
        op.f("ix_authorization_codes_expires_at"),
        "authorization_codes",
        ["expires_at"],
        unique=False,
    )
    op.create_table(
        "device_authorizations",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("device_code_hash", sa.String(length=128), nullable=False),
        sa.Column("user_code", sa.String(length=64), nullable=False),
        sa.Column("client_id", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("interval", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("session_id", sa.String(length=128), nullable=True),
        sa.Column("last_polled_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("org", "device_code_hash", name=op.f("pk_device_authorizations")),
        sa.UniqueConstraint(
            "org", "user_code", name=op.f("uq_device_authorizations_org_user_code")
        ),
    )
    op.create_index(
        op.f("ix_device_authorizations_expires_at"),
        "device_authorizations",
        ["expires_at"],
        unique=False,
    )
    op.create_table(
        "event_logs",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("last_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("trimmed", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("org", name=op.f("pk_event_logs")),
    )
    op.create_table(
        "events",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("ms", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("prompt_name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("version_id", sa.String(length=40), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=True),
        sa.Column("previous_version", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=64), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("request_id", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("org", "ms", "seq", name=op.f("pk_events")),
    )
    op.create_table(
        "instance_secrets",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_instance_secrets")),
    )
    op.create_table(
        "prompts",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prompt_type", sa.String(length=10), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("counter", sa.Integer(), nullable=False),
        sa.Column("latest_version", sa.Integer(), nullable=True),
        sa.Column("production_version", sa.Integer(), nullable=True),
        sa.Column("promotions", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("org", "prompt_id", name=op.f("pk_prompts")),
        sa.UniqueConstraint("org", "name", name=op.f("uq_prompts_org_name")),
    )
    op.create_table(
        "realm_sessions",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("org", "session_id", name=op.f("pk_realm_sessions")),
    )
    op.create_index(
        op.f("ix_realm_sessions_expires_at"), "realm_sessions", ["expires_at"], unique=False
    )
    op.create_table(
        "refresh_families",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("family_id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=True),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("org", "family_id", name=op.f("pk_refresh_families")),
    )
    op.create_index(
        op.f("ix_refresh_families_expires_at"), "refresh_families", ["expires_at"], unique=False
    )
    op.create_index(
        op.f("ix_refresh_families_org_session_id"),
        "refresh_families",
        ["org", "session_id"],
        unique=False,
    )
    op.create_table(
        "refresh_tokens",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("token_hash", sa.String(length=128), nullable=False),
        sa.Column("family_id", sa.String(length=64), nullable=False),
        sa.Column("client_id", sa.String(length=200), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=True),
        sa.Column("issued_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("org", "token_hash", name=op.f("pk_refresh_tokens")),
    )
    op.create_index(
        op.f("ix_refresh_tokens_expires_at"), "refresh_tokens", ["expires_at"], unique=False
    )
    op.create_index(
        op.f("ix_refresh_tokens_org_family_id"),
        "refresh_tokens",
        ["org", "family_id"],
        unique=False,
    )
    op.create_table(
        "signing_keys",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("kid", sa.String(length=100), nullable=False),
        sa.Column("private_pem", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_signing_keys")),
        sa.UniqueConstraint("kid", name=op.f("uq_signing_keys_kid")),
    )
    op.create_table(
        "users",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("username", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=40), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_users")),
        sa.UniqueConstraint("org", "user_id", name=op.f("uq_users_org_user_id")),
        sa.UniqueConstraint("org", "username", name=op.f("uq_users_org_username")),
    )
    op.create_table(
        "webhook_cursors",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("ms", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("org", name=op.f("pk_webhook_cursors")),
    )
    op.create_table(
        "webhooks",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("webhook_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("secret", sa.String(length=200), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("since_ms", sa.BigInteger(), nullable=False),
        sa.Column("since_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_webhooks")),
        sa.UniqueConstraint("org", "webhook_id", name=op.f("uq_webhooks_org_webhook_id")),
    )
    op.create_index(op.f("ix_webhooks_org_seq"), "webhooks", ["org", "seq"], unique=False)
    op.create_table(
        "deliveries",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("webhook_id", sa.String(length=40), nullable=False),
        sa.Column("message_id", sa.String(length=120), nullable=False),
        sa.Column("event_id", sa.String(length=42), nullable=True),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "webhook_id"],
            ["webhooks.org", "webhooks.webhook_id"],
            name=op.f("fk_deliveries_org_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_deliveries")),
    )
    op.create_index(
        op.f("ix_deliveries_org_webhook_id_seq"),
        "deliveries",
        ["org", "webhook_id", "seq"],
        unique=False,
    )
    op.create_table(
        "delivery_queue",
        sa.Column("ticket", SEQ, autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("webhook_id", sa.String(length=40), nullable=False),
        sa.Column("message_id", sa.String(length=120), nullable=False),
        sa.Column("event_id", sa.String(length=42), nullable=True),
        sa.Column("event_type", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("due_at", UtcDateTime(), nullable=True),
        sa.Column("claimed_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org", "webhook_id"],
            ["webhooks.org", "webhooks.webhook_id"],
            name=op.f("fk_delivery_queue_org_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("ticket", name=op.f("pk_delivery_queue")),
    )
    op.create_index(
        op.f("ix_delivery_queue_org_ticket"), "delivery_queue", ["org", "ticket"], unique=False
    )
    op.create_table(
        "history",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("history_id", sa.String(length=40), nullable=False),
        sa.Column("version_number", sa.Integer(), nullable=False),
        sa.Column("promoted_by", sa.String(length=64), nullable=False),
        sa.Column("promoted_at", UtcDateTime(), nullable=False),
        sa.Column("previous_version", sa.Integer(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_history_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "prompt_id", "position", name=op.f("pk_history")),
        sa.UniqueConstraint("org", "history_id", name=op.f("uq_history_org_history_id")),
    )
    op.create_table(
        "versions",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.String(length=40), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("variables", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("tags", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("promoted_at", UtcDateTime(), nullable=True),
        sa.Column("promoted_by", sa.String(length=64), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_versions_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "prompt_id", "version", name=op.f("pk_versions")),
        sa.UniqueConstraint("org", "version_id", name=op.f("uq_versions_org_version_id")),
    )


def downgrade() -> None:
    op.drop_table("versions")
    op.drop_table("history")
    op.drop_index(op.f("ix_delivery_queue_org_ticket"), table_name="delivery_queue")
    op.drop_table("delivery_queue")
    op.drop_index(op.f("ix_deliveries_org_webhook_id_seq"), table_name="deliveries")
    op.drop_table("deliveries")
    op.drop_index(op.f("ix_webhooks_org_seq"), table_name="webhooks")
    op.drop_table("webhooks")
    op.drop_table("webhook_cursors")
    op.drop_table("users")
    op.drop_table("signing_keys")
    op.drop_index(op.f("ix_refresh_tokens_org_family_id"), table_name="refresh_tokens")
    op.drop_index(op.f("ix_refresh_tokens_expires_at"), table_name="refresh_tokens")
    op.drop_table("refresh_tokens")
    op.drop_index(op.f("ix_refresh_families_org_session_id"), table_name="refresh_families")
    op.drop_index(op.f("ix_refresh_families_expires_at"), table_name="refresh_families")
    op.drop_table("refresh_families")
    op.drop_index(op.f("ix_realm_sessions_expires_at"), table_name="realm_sessions")
    op.drop_table("realm_sessions")
    op.drop_table("prompts")
    op.drop_table("instance_secrets")
    op.drop_table("events")
    op.drop_table("event_logs")
    op.drop_index(op.f("ix_device_authorizations_expires_at"), table_name="device_authorizations")
    op.drop_table("device_authorizations")
    op.drop_index(op.f("ix_authorization_codes_expires_at"), table_name="authorization_codes")
    op.drop_table("authorization_codes")
    op.drop_table("api_keys")
