"""Key owners: an API key records the person (a user id) whose work its changes count
as; keys made before this revision, like a bootstrap file's, have none.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("owner", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("api_keys", "owner")
