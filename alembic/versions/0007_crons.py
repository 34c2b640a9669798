"""crons: runs on a schedule, on a thread or each on a new one

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "crons",
        sa.Column("cron_id", sa.String(length=36), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("assistant_id", sa.String(length=36), nullable=False),
        sa.Column("thread_id", sa.String(length=36), nullable=True),
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("timezone", sa.String(length=200), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("on_run_completed", sa.String(length=16), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("cron_id"),
    )
    with op.batch_alter_table("crons", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_crons_assistant_id"), ["assistant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_crons_next_run_at"), ["next_run_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_crons_owner"), ["owner"], unique=False)
        batch_op.create_index(batch_op.f("ix_crons_thread_id"), ["thread_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("crons", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_crons_thread_id"))
        batch_op.drop_index(batch_op.f("ix_crons_owner"))
        batch_op.drop_index(batch_op.f("ix_crons_next_run_at"))
        batch_op.drop_index(batch_op.f("ix_crons_assistant_id"))
    op.drop_table("crons")
