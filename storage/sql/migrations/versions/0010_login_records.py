"""Refresh families are revoked by deleting them and die with their session, checked on
read (storage/login_flows.py): revoked families go, with their tokens, and so do the
``revoked`` column and the index of families by session.

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
        batch.drop_index("ix_refresh_families_org_session_id")
        batch.drop_column("revoked")


def downgrade() -> None:
    with op.batch_alter_table("refresh_families") as batch:
        batch.create_index("ix_refresh_families_org_session_id", ["org", "session_id"])
        batch.add_column(
            sa.Column("revoked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
