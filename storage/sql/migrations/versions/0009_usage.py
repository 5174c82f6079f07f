"""Usage and guarded rollouts: usage counters per bucket, a rollout's arms, rollout
guards; events say why a rollout was aborted (and a guard's figures).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.sql.tables import UtcDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _counters() -> list[sa.Column[object]]:
    return [
        sa.Column("renders", sa.BigInteger(), nullable=False),
        sa.Column("ok", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("score_sum", sa.Float(), nullable=False),
        sa.Column("score_count", sa.BigInteger(), nullable=False),
    ]


def upgrade() -> None:
    op.add_column("events", sa.Column("reason", sa.String(length=16), nullable=True))
    op.add_column("events", sa.Column("guard", sa.Text(), nullable=True))
    op.create_table(
        "usage_counts",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("span", sa.String(length=4), nullable=False),
        sa.Column("bucket_start", UtcDateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("environment", sa.String(length=64), nullable=False),
        sa.Column("rollout_id", sa.String(length=40), nullable=False),
        sa.Column("arm", sa.String(length=9), nullable=False),
        *_counters(),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_usage_counts_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "org",
            "prompt_id",
            "span",
            "bucket_start",
            "version",
            "environment",
            "rollout_id",
            "arm",
            name=op.f("pk_usage_counts"),
        ),
    )
    op.create_index(
        op.f("ix_usage_counts_span_bucket_start"), "usage_counts", ["span", "bucket_start"]
    )
    op.create_table(
        "usage_arms",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("rollout_id", sa.String(length=40), nullable=False),
        sa.Column("arm", sa.String(length=9), nullable=False),
        *_counters(),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("org", "rollout_id", "arm", name=op.f("pk_usage_arms")),
    )
    op.create_table(
        "rollout_guards",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("guarded_id", sa.String(length=40), nullable=False),
        sa.Column("metric", sa.String(length=10), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("min_samples", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("org", "guarded_id", name=op.f("pk_rollout_guards")),
    )


def downgrade() -> None:
    op.drop_table("rollout_guards")
    op.drop_table("usage_arms")
    op.drop_table("usage_counts")
    op.drop_column("events", "guard")
    op.drop_column("events", "reason")
