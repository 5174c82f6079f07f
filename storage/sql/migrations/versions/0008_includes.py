"""Includes (one prompt inside another): the reverse index, a row per prompt name a
version's own content includes. Content written before this revision included nothing:
the index starts empty.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "includes",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id", "version"],
            ["versions.org", "versions.prompt_id", "versions.version"],
            name=op.f("fk_includes_org_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "name", "prompt_id", "version", name=op.f("pk_includes")),
    )


def downgrade() -> None:
    op.drop_table("includes")
