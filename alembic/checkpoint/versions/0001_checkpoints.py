"""Checkpoint tables: threads, checkpoints, blobs, item logs and pending writes.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 13:16:01.746569
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "checkpoint_blobs",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "channel", "version", name=op.f("pk_checkpoint_blobs")
        ),
    )
    op.create_table(
        "checkpoint_items",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "channel", "seq", name=op.f("pk_checkpoint_items")
        ),
    )
    op.create_table(
        "checkpoint_threads",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("thread_id", sa.Text(), nullable=False),
        sa.Column("put_count", sa.BigInteger(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("last_write_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoint_threads")),
        sa.UniqueConstraint("thread_id", name=op.f("uq_checkpoint_threads_thread_id")),
    )
    op.create_table(
        "checkpoint_writes",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("task_path", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "thread",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name=op.f("pk_checkpoint_writes"),
        ),
    )
    op.create_table(
        "checkpoints",
        sa.Column("thread", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("parent_checkpoint_id", sa.Text(), nullable=True),
        sa.Column("v", sa.Integer(), nullable=False),
        sa.Column("ts", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("channel_versions", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("versions_seen", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("updated_channels", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("inline_values", sa.Text(), nullable=True),
        sa.Column("stored_values", sa.JSON(none_as_null=True), nullable=True),
        sa.PrimaryKeyConstraint(
            "thread", "checkpoint_ns", "checkpoint_id", name=op.f("pk_checkpoints")
        ),
    )


def downgrade() -> None:
    op.drop_table("checkpoints")
    op.drop_table("checkpoint_writes")
    op.drop_table("checkpoint_threads")
    op.drop_table("checkpoint_items")
    op.drop_table("checkpoint_blobs")
