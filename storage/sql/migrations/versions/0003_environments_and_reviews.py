"""Environments and reviews: environments, placements and reviews; history records and
events name an environment and a review; versions mirror their placements.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.sql.tables import UtcDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("versions", sa.Column("placements", sa.Text(), nullable=True))
    op.add_column("history", sa.Column("environment", sa.String(length=32), nullable=True))
    op.add_column("history", sa.Column("review_id", sa.String(length=40), nullable=True))
    op.add_column("history", sa.Column("approved_by", sa.Text(), nullable=True))
    op.add_column("events", sa.Column("environment", sa.String(length=32), nullable=True))
    op.add_column("events", sa.Column("review_id", sa.String(length=40), nullable=True))
    op.create_table(
        "environments",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("seq", SEQ, nullable=False),
        sa.Column("required_approvals", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("org", "name", name=op.f("pk_environments")),
    )
    op.create_table(
        "placements",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_placements_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "prompt_id", "environment", name=op.f("pk_placements")),
    )
    op.create_table(
        "reviews",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("review_id", sa.String(length=40), nullable=False),
        sa.Column("seq", SEQ, nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("decided_at", UtcDateTime(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_reviews_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "review_id", name=op.f("pk_reviews")),
    )
    op.create_index(op.f("ix_reviews_org_seq"), "reviews", ["org", "seq"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_reviews_org_seq"), table_name="reviews")
    op.drop_table("reviews")
    op.drop_table("placements")
    op.drop_table("environments")
    op.drop_column("events", "review_id")
    op.drop_column("events", "environment")
    op.drop_column("history", "approved_by")
    op.drop_column("history", "review_id")
    op.drop_column("history", "environment")
    op.drop_column("versions", "placements")
