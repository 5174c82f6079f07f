"""Variable contracts and gradual rollout: versions carry a variables schema and
examples; history records say whether a promotion was breaking and which rollout it
completed; events name a rollout and its percent; rollouts get their table.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from storage.sql.tables import UtcDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("versions", sa.Column("variables_schema", sa.Text(), nullable=True))
    op.add_column("versions", sa.Column("examples", sa.Text(), nullable=True))
    op.add_column("history", sa.Column("breaking", sa.Boolean(), nullable=True))
    op.add_column("history", sa.Column("rollout_id", sa.String(length=40), nullable=True))
    op.add_column("events", sa.Column("rollout_id", sa.String(length=40), nullable=True))
    op.add_column("events", sa.Column("percent", sa.Integer(), nullable=True))
    op.create_table(
        "rollouts",
        sa.Column("org", sa.String(length=63), nullable=False),
        sa.Column("prompt_id", sa.String(length=40), nullable=False),
        sa.Column("environment", sa.String(length=32), nullable=False),
        sa.Column("rollout_id", sa.String(length=40), nullable=False),
        sa.Column("baseline_version", sa.Integer(), nullable=True),
        sa.Column("candidate_version", sa.Integer(), nullable=False),
        sa.Column("percent", sa.Integer(), nullable=False),
        sa.Column("started_by", sa.String(length=64), nullable=False),
        sa.Column("started_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org", "prompt_id"],
            ["prompts.org", "prompts.prompt_id"],
            name=op.f("fk_rollouts_org_prompts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org", "prompt_id", "environment", name=op.f("pk_rollouts")),
    )


def downgrade() -> None:
    op.drop_table("rollouts")
    op.drop_column("events", "percent")
    op.drop_column("events", "rollout_id")
    op.drop_column("history", "rollout_id")
    op.drop_column("history", "breaking")
    op.drop_column("versions", "examples")
    op.drop_column("versions", "variables_schema")
