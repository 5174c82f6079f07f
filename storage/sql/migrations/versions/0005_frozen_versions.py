"""What a reviewed release guarantees (storage/release decides it): a version is frozen once
placed, a rollout's candidate or baseline, or named by an open or applied review, and
records who wrote it (``authors``, JSON; null: its ``created_by`` alone). Reviews keep
their content digest and the requester's person in their JSON body: no column.

Existing versions are frozen as the rule would have frozen them: published once
(``promoted_at``), placed, in a promotion record, in a rollout or an open or applied
review.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "versions", sa.Column("frozen", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column("versions", sa.Column("authors", sa.Text(), nullable=True))
    v = sa.table(
        "versions",
        sa.column("org"),
        sa.column("prompt_id"),
        sa.column("version"),
        sa.column("promoted_at"),
        sa.column("placements"),
        sa.column("frozen", sa.Boolean()),
    )

    def naming(table: str, *columns: str) -> sa.ColumnElement[bool]:
        rows = sa.table(table, sa.column("org"), sa.column("prompt_id"), *map(sa.column, columns))
        return sa.or_(
            *(
                sa.exists().where(
                    rows.c.org == v.c.org,
                    rows.c.prompt_id == v.c.prompt_id,
                    rows.c[column] == v.c.version,
                )
                for column in columns
            )
        )

    reviews = sa.table(
        "reviews",
        sa.column("org"),
        sa.column("prompt_id"),
        sa.column("version"),
        sa.column("status"),
    )
    op.execute(
        v.update()
        .where(
            sa.or_(
                v.c.promoted_at.is_not(None),
                v.c.placements.is_not(None),
                naming("history", "version_number", "previous_version"),
                naming("rollouts", "candidate_version", "baseline_version"),
                sa.exists().where(
                    reviews.c.org == v.c.org,
                    reviews.c.prompt_id == v.c.prompt_id,
                    reviews.c.version == v.c.version,
                    reviews.c.status.in_(("open", "applied")),
                ),
            )
        )
        .values(frozen=True)
    )


def downgrade() -> None:
    op.drop_column("versions", "authors")
    op.drop_column("versions", "frozen")
