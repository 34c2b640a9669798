"""runs: whether the request that made a run waits for its answer

`runs/wait` creates a run and waits for its answer. When another process executes the
run (API replicas with workers), the waiter read the run's row and then its checkpoint
to answer: two statements, and the checkpoint's values decoded again, on every such turn.
A run made by a waiting request is marked; the worker that ends it sends its answer
with the notification of its end, when it fits in one.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 11:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("awaited", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("awaited")
