"""thread_ttls: a thread's time to live

Threads created or changed with a `ttl` are deleted (or pruned to their latest turn) that
many minutes after their last change; the sweep finds them by `expires_at`. A table of
its own, so that a thread's row, which every run rewrites, stays as it was.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 15:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "thread_ttls",
        sa.Column(
            "thread_id",
            sa.String(length=36).with_variant(sa.Uuid(as_uuid=False), "postgresql"),
            nullable=False,
        ),
        sa.Column("strategy", sa.String(length=16), nullable=False),
        sa.Column("minutes", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.thread_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("thread_id"),
    )
    with op.batch_alter_table("thread_ttls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_thread_ttls_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("thread_ttls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_thread_ttls_expires_at"))
    op.drop_table("thread_ttls")
