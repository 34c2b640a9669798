"""assistant_versions: what each assistant was at each of its versions

An assistant kept only its current fields, and `version` counted its changes, so
`POST /assistants/{id}/versions` and `/latest` had nothing to list or go back to. Each
version is now a row of its own. The upgrade gives every existing assistant one, its
current fields at its current version (the earlier ones were never kept); the downgrade
drops the table, the assistants' rows staying at the version they are at.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 14:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIELDS = ("assistant_id", "version", "graph_id", "name", "description", "config", "context")


def upgrade() -> None:
    versions = op.create_table(
        "assistant_versions",
        sa.Column("assistant_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("graph_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["assistant_id"], ["assistants.assistant_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("assistant_id", "version"),
    )
    assistants = sa.table(
        "assistants", *(sa.column(name) for name in (*FIELDS, "metadata", "updated_at"))
    )
    op.execute(
        versions.insert().from_select(
            [*FIELDS, "metadata", "created_at"],
            sa.select(*(assistants.c[name] for name in FIELDS)).add_columns(
                assistants.c.metadata, assistants.c.updated_at
            ),
        )
    )


def downgrade() -> None:
    op.drop_table("assistant_versions")
