"""Event logs count the events they keep (trimming without counting them every time);
rate-limit counters shared by every worker.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("event_logs", sa.Column("kept", sa.Integer(), nullable=False, server_default="0"))
    op.execute(
        "UPDATE event_logs SET kept = "
        "(SELECT COUNT(*) FROM events WHERE events.org = event_logs.org)"
    )
    op.create_table(
        "rate_limit_entries",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_rate_limit_entries")),
    )
    op.create_index(
        op.f("ix_rate_limit_entries_key_at"), "rate_limit_entries", ["key", "at"], unique=False
    )
    op.create_index(
        op.f("ix_rate_limit_entries_expires_at"),
        "rate_limit_entries",
        ["expires_at"],
        unique=False,
    )
    op.create_table(
        "rate_limit_counters",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_rate_limit_counters")),
    )
    op.create_index(
        op.f("ix_rate_limit_counters_expires_at"),
        "rate_limit_counters",
        ["expires_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_rate_limit_counters_expires_at"), table_name="rate_limit_counters")
    op.drop_table("rate_limit_counters")
    op.drop_index(op.f("ix_rate_limit_entries_expires_at"), table_name="rate_limit_entries")
    op.drop_index(op.f("ix_rate_limit_entries_key_at"), table_name="rate_limit_entries")
    op.drop_table("rate_limit_entries")
    with op.batch_alter_table("event_logs") as batch:
        batch.drop_column("kept")
