"""Refresh families are revoked by deleting them (storage/login_flows.py): revoked
families go, with their tokens, and so does the ``revoked`` column.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        sa.text(
            "DELETE FROM refresh_tokens WHERE EXISTS (SELECT 1 FROM refresh_families f"
            " WHERE f.org = refresh_tokens.org AND f.family_id = refresh_tokens.family_id"
            " AND f.revoked)"
        )
    )
    op.execute(sa.text("DELETE FROM refresh_families WHERE revoked"))
    with op.batch_alter_table("refresh_families") as batch:
        batch.drop_column("revoked")


def downgrade() -> None:
    with op.batch_alter_table("refresh_families") as batch:
        batch.add_column(
            sa.Column("revoked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
