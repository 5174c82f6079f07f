"""Model configuration: a version may carry its ``config`` (model, params, tools,
response_format) as JSON; versions made before this revision have none.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("versions", sa.Column("config", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("versions", "config")
