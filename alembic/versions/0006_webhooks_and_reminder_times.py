"""webhook deliveries, and reminders that fire: a due time, a status, a delivery

Not 0004 or 0005: those were checkpoint revisions of the one history there was, and a
database recording one of them is upgraded from the server revisions it implies
(`app.db.migrations.LEGACY_SERVER_REVISIONS`).

Reminders set before this revision have no due time (their `due` was never read): they
stay unscheduled, as they were.

Revision ID: 0006
Revises: 0003
Create Date: 2026-12-01 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("delivery_id", sa.String(length=36), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("delivery_id"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_webhook_deliveries_run_id"), ["run_id"], unique=False)
        batch_op.create_index("webhook_deliveries_due", ["status", "next_attempt_at"], unique=False)

    with op.batch_alter_table("reminders", schema=None) as batch_op:
        batch_op.add_column(sa.Column("due_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("status", sa.String(length=16), nullable=False, server_default="unscheduled")
        )
        batch_op.add_column(sa.Column("assistant_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("run_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_reminders_due_at"), ["due_at"], unique=False)
    # The default served the rows already there; the model gives every new row its status.
    with op.batch_alter_table("reminders", schema=None) as batch_op:
        batch_op.alter_column("status", existing_type=sa.String(length=16), server_default=None)


def downgrade() -> None:
    with op.batch_alter_table("reminders", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reminders_due_at"))
        batch_op.drop_column("delivered_at")
        batch_op.drop_column("run_id")
        batch_op.drop_column("claimed_until")
        batch_op.drop_column("assistant_id")
        batch_op.drop_column("status")
        batch_op.drop_column("due_at")

    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("webhook_deliveries_due")
        batch_op.drop_index(batch_op.f("ix_webhook_deliveries_run_id"))
    op.drop_table("webhook_deliveries")
